// What a node's startup transcode timing holds (issue 12; docs/figures.md "what the startup
// timing holds"). Built and run by scripts/timing-probe.sh against the build's static libraries.
//   timing-probe timing [ROUNDS]   TimeTranscode (what `veil serve` times at startup, VP8 with the
//                                  plan step 3, H.264 with 2), ROUNDS times; the page faults each took.
//   timing-probe frames [FRAMES]   one codec pair opened afresh and run FRAMES frames of the same
//                                  synthetic pan, twice: each frame's CPU ms and page faults where
//                                  it faulted, and the mean CPU of frames 1-12 (what a pass times)
//                                  against 13-24.
// Env: MMAP256 (non-empty: glibc's mmap threshold fixed at 256 KiB, as `veil serve` runs,
// cli/service.cpp), H264 (non-empty: `frames` runs H.264), CORE (`frames` pins itself to it; 0).
#include <malloc.h>
#include <sys/resource.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
#include <libavutil/log.h>
}

#include "core/clock.h"
#include "core/frame.h"
#include "core/thread_cpu.h"
#include "media/codec.h"
#include "server/transcode_timing.h"

using namespace veil;

namespace {

int64_t ProcessFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return int64_t(u.ru_minflt) + int64_t(u.ru_majflt);
}

void Timing(int rounds) {
  const EncoderOptions enc;
  for (int r = 0; r < rounds; ++r)
    for (VideoCodec c : {VideoCodec::kVp8, VideoCodec::kH264}) {
      const int64_t f0 = ProcessFaults();
      const double t0 = NowMs();
      auto t = TimeTranscode(c, enc, c == VideoCodec::kVp8 ? 3 : 2);
      std::printf("round %d %s: %.2f ms a frame (", r, Name(c), t ? t->total_ms : -1.0);
      if (t)
        for (const auto& [core, ms] : t->by_core) std::printf(" core %d %.2f", core, ms);
      std::printf(" ), %lld page faults, %.0f ms\n", (long long)(ProcessFaults() - f0), NowMs() - t0);
      std::fflush(stdout);
    }
}

int Frames(int frames) {
  const char* h264_env = std::getenv("H264");
  const bool h264 = h264_env && *h264_env;
  const VideoCodec vc = h264 ? VideoCodec::kH264 : VideoCodec::kVp8;
  constexpr int W = SyntheticPan::kWidth, H = SyntheticPan::kHeight;
  const SyntheticPan pan(frames + 1);  // the pictures the server's timing encodes
  const VideoInfo vi = SyntheticPan::Info();
  EncoderOptions o;
  o.codec = Name(vc);
  if (h264) o.x264_profile = "baseline";
  for (int pass = 0; pass < 2; ++pass) {
    auto enc = VideoEncoder::Open(vc, vi, o);
    auto dec = VideoDecoder::Open(vc, 1);
    if (!enc || !dec) {
      std::fprintf(stderr, "cannot open the %s codecs\n", Name(vc));
      return 1;
    }
    FramePtr f = MakeFrame(W, H);
    std::vector<EncodedFrame> packets;
    std::vector<FramePtr> decoded;
    double first = 0, second = 0;
    std::printf("%s pass %d, frame CPU ms / page faults where it faulted:", Name(vc), pass);
    for (int i = 0; i <= frames; ++i) {
      pan.Fill(i, *f);
      f->pts = int64_t(i) * 3000;
      packets.clear();
      const int64_t f0 = ThreadPageFaults();
      const double t0 = ThreadCpuMs();
      (void)(*enc)->Encode(*f, i == 0, packets);
      for (const EncodedFrame& p : packets) {
        decoded.clear();
        (void)(*dec)->Decode(p.data.data(), p.data.size(), p.pts, decoded);
      }
      const double ms = ThreadCpuMs() - t0;
      const int64_t faults = ThreadPageFaults() - f0;
      if (i >= 1 && i <= 12) first += ms;
      if (i >= 13 && i <= 24) second += ms;
      if (faults > 20) std::printf(" [%d] %.1f/%lld", i, ms, (long long)faults);
    }
    std::printf("\n  frames 1-12: %.2f ms a frame; 13-24: %.2f\n", first / 12, frames >= 24 ? second / 12 : 0.0);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  av_log_set_level(AV_LOG_ERROR);
  const char* mmap256 = std::getenv("MMAP256");
  if (mmap256 && *mmap256) mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  const char* what = argc > 1 ? argv[1] : "timing";
  if (std::strcmp(what, "timing") == 0) {
    Timing(argc > 2 ? std::max(1, std::atoi(argv[2])) : 3);
    return 0;
  }
  if (std::strcmp(what, "frames") == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(std::getenv("CORE") ? std::atoi(std::getenv("CORE")) : 0, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    return Frames(argc > 2 ? std::max(24, std::atoi(argv[2])) : 30);
  }
  std::fprintf(stderr, "usage: timing-probe timing [ROUNDS] | frames [FRAMES]\n");
  return 2;
}
