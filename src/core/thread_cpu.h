// Which of the process's threads take its CPU, by kind: veil names its own threads
// ("veil-frame", "veil-http", ...; NameThisThread), and ThreadCpuSampler adds up the kernel's
// CPU accounting of every thread of the process (/proc/self/task) by that name. So a node's
// CPU beyond the frames (packetizing, GStreamer's streaming threads, HTTP, inference) shows
// per kind in `veil_thread_cpu_seconds_total`, and `top -H` or `perf report --sort comm` name
// veil's threads too.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace veil {

// Names the calling thread "veil-<kind>" (Linux keeps 15 characters; a longer kind is cut).
// Threads this thread then creates start with the same name until they set their own.
void NameThisThread(std::string_view kind);

// The calling thread named "veil-<kind>" while it lives, its own name again after: threads it
// starts meanwhile (a library's pool) begin with that name.
class ThreadNameScope {
 public:
  explicit ThreadNameScope(std::string_view kind);
  ~ThreadNameScope();
  ThreadNameScope(const ThreadNameScope&) = delete;
  ThreadNameScope& operator=(const ThreadNameScope&) = delete;

 private:
  char was_[16] = {};
  bool ok_ = false;
};

// The kind a thread's name stands for: "frame" for "veil-frame"; "main" for the process's own
// name "veil"; "unnamed" for a name veil did not give (GStreamer's streaming threads name
// themselves, e.g. "src:src" or "jb:src"; libraries' worker threads).
std::string ThreadKindOf(std::string_view thread_name);

// CPU seconds of the process's threads by kind, added up from the kernel's per-thread
// accounting at each Sample(): what each thread took since the previous sample (or since it
// started) goes to its kind's total. A thread that ended between two samples loses what it
// took after the first of them (sample often: a second's worth at most). Not thread-safe: one
// owner samples.
class ThreadCpuSampler {
 public:
  // Reads every thread of the process now; returns the totals so far by kind.
  const std::map<std::string, double>& Sample();
  const std::map<std::string, double>& totals() const { return totals_; }

 private:
  std::map<int64_t, uint64_t> last_ticks_;  // tid -> its CPU (clock ticks) at the last sample
  std::map<std::string, double> totals_;    // kind -> CPU seconds
};

// Page faults the kernel has counted to the calling thread (minor and major; getrusage
// RUSAGE_THREAD), 0 where it cannot tell: a first touch of a fresh mapping, as a freshly
// opened codec makes in its first frames.
int64_t ThreadPageFaults();

// One thread of this process as the kernel reports it (/proc/self/task/<tid>/stat): its name and
// its CPU (user + system) in clock ticks. False: the thread is gone, or its line did not parse.
bool ReadThreadStat(int64_t tid, std::string* name, uint64_t* cpu_ticks);

}  // namespace veil
