#include "cli/service.h"

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
  spdlog::set_default_logger(spdlog::stderr_color_mt("veil"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
}

const char* WaitForStop(const sigset_t& stop_signals) {
  int sig = 0;
  sigwait(&stop_signals, &sig);
  return sig == SIGTERM ? "SIGTERM" : "SIGINT";
}

}  // namespace veil::cli
