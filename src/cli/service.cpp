#include "cli/service.h"

#include <malloc.h>

#include <pthread.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace veil::cli {

void PrepareService(sigset_t* stop_signals) {
  sigemptyset(stop_signals);
  sigaddset(stop_signals, SIGINT);
  sigaddset(stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // A fixed mmap threshold: blocks of 256 KiB and more (frames, codec and detection buffers)
  // are mapped and unmapped on their own. glibc otherwise raises the threshold after the first
  // such block is freed, and later frames land in per-thread arenas that keep their pages:
  // idle RSS rose from 275 to 477 MB over 9 soak cycles, against 118 -> 124 MB with this
  // (scripts/soak.py; docs/figures.md "Soak and churn"). Its price: a block allocated per frame
  // is a fresh mapping whose pages fault in, so such blocks are pooled (FramePool, the detection
  // copies, media/ffmpeg_codec.h EncoderInput; docs/figures.md "x264's input frames from a pool").
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  spdlog::set_default_logger(spdlog::stderr_color_mt("veil"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
}

const char* WaitForStop(const sigset_t& stop_signals) {
  int sig = 0;
  sigwait(&stop_signals, &sig);
  return sig == SIGTERM ? "SIGTERM" : "SIGINT";
}

int WaitForStopFor(const sigset_t& stop_signals, int timeout_ms) {
  const timespec ts{timeout_ms / 1000, long(timeout_ms % 1000) * 1000000L};
  const int sig = sigtimedwait(&stop_signals, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

}  // namespace veil::cli
