// What the long-running commands (veil serve, veil worker) share: stop
// signals taken by one waiting thread, and timestamped logs on stderr.
#pragma once
#include <csignal>

namespace veil::cli {

// Blocks SIGINT and SIGTERM in this and every later thread (WaitForStop
// takes them), ignores SIGPIPE, fixes malloc's mmap threshold (bounded RSS over a long
// run), logs to stderr. Call before any thread starts.
void PrepareService(sigset_t* stop_signals);
// Waits for SIGINT or SIGTERM; returns its name.
const char* WaitForStop(const sigset_t& stop_signals);
// Waits up to timeout_ms for SIGINT or SIGTERM: the signal, or 0.
int WaitForStopFor(const sigset_t& stop_signals, int timeout_ms);

}  // namespace veil::cli
