#include "core/thread_cpu.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

namespace veil {

void NameThisThread(std::string_view kind) {
  std::string name = "veil-" + std::string(kind);
  name.resize(std::min<size_t>(name.size(), 15));  // the kernel's limit (16 with the NUL)
  pthread_setname_np(pthread_self(), name.c_str());
}

ThreadNameScope::ThreadNameScope(std::string_view kind) {
  ok_ = pthread_getname_np(pthread_self(), was_, sizeof was_) == 0;
  if (ok_) NameThisThread(kind);
}

ThreadNameScope::~ThreadNameScope() {
  if (ok_) pthread_setname_np(pthread_self(), was_);
}

int64_t ThreadPageFaults() {
  rusage u{};
  if (getrusage(RUSAGE_THREAD, &u) != 0) return 0;
  return int64_t(u.ru_minflt) + int64_t(u.ru_majflt);
}

std::string ThreadKindOf(std::string_view name) {
  constexpr std::string_view kPrefix = "veil-";
  if (name == "veil") return "main";
  if (name.substr(0, kPrefix.size()) == kPrefix && name.size() > kPrefix.size())
    return std::string(name.substr(kPrefix.size()));
  return "unnamed";
}

bool ReadThreadStat(int64_t tid, std::string* name, uint64_t* cpu_ticks) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  if (!f || !std::getline(f, line)) return false;
  // "tid (name) state ppid ...": the name may hold spaces and parentheses; it ends at the last ')'.
  const size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  *name = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields{std::istream_iterator<std::string>(rest), std::istream_iterator<std::string>()};
  // Fields from "state" (the 3rd of the line) on: utime is the 14th of the line, stime the 15th.
  if (fields.size() < 13) return false;
  char* end = nullptr;
  const unsigned long long utime = std::strtoull(fields[11].c_str(), &end, 10);
  if (*end != '\0') return false;
  const unsigned long long stime = std::strtoull(fields[12].c_str(), &end, 10);
  if (*end != '\0') return false;
  *cpu_ticks = utime + stime;
  return true;
}

const std::map<std::string, double>& ThreadCpuSampler::Sample() {
  static const double kTicksPerS = [] {
    const long t = sysconf(_SC_CLK_TCK);
    return t > 0 ? double(t) : 100.0;
  }();
  std::map<int64_t, uint64_t> now;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      const long long tid = std::strtoll(e->d_name, &end, 10);
      if (end == e->d_name || *end != '\0') continue;  // "." and ".."
      std::string name;
      uint64_t ticks = 0;
      if (!ReadThreadStat(tid, &name, &ticks)) continue;  // ended meanwhile
      // A thread seen before adds what it took since; a new one all it took so far. (The kernel
      // may reuse an ended thread's id: the new thread then starts below the old figure, and
      // counts from zero.)
      auto it = last_ticks_.find(tid);
      const uint64_t before = it != last_ticks_.end() && it->second <= ticks ? it->second : 0;
      totals_[ThreadKindOf(name)] += double(ticks - before) / kTicksPerS;
      now[tid] = ticks;
    }
    closedir(d);
  }
  last_ticks_ = std::move(now);
  return totals_;
}

}  // namespace veil
