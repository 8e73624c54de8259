// Whether a slow stretch was the machine's: one thread pinned to each core the process may use
// wakes every 20 ms (an absolute deadline), notes how late it woke, then runs a fixed piece of
// work (an xorshift walk over a 16-KB table: ALU and L1) timed by the wall clock and its own CPU
// clock. Once a second a line: the UTC time, and for each core the latest wake-up, the median and
// the largest time of the fixed work (ms). A stretch in which the host took the vCPUs away shows
// as late wake-ups (hundreds of ms) with no load of the guest's own to explain them; one in which
// the cores ran slower, as a higher median of the same work. Used by scripts/probe-stages.sh.
//
//   g++ -O2 -std=c++20 -pthread scripts/core-probe.cpp -o build/core-probe && build/core-probe [ITERATIONS]
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace {
double Ms(clockid_t c) {
  timespec t;
  clock_gettime(c, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}
volatile uint64_t sink;
uint64_t Work(int n) {
  static thread_local uint32_t table[4096];
  uint64_t x = 88172645463325252ull, s = 0;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    table[x & 4095] += uint32_t(x);
    s += table[(x >> 20) & 4095];
  }
  return s;
}
struct Second {
  double late_max = 0, work_max = 0;
  std::vector<double> work;
};
double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 150000;
  if (n <= 0 || n > 100000000) {
    std::fprintf(stderr, "usage: core-probe [ITERATIONS, 1..1e8]\n");
    return 2;
  }
  cpu_set_t set;
  sched_getaffinity(0, sizeof set, &set);
  std::vector<int> cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  std::mutex mu;
  std::vector<Second> secs(cpus.size());
  for (size_t k = 0; k < cpus.size(); ++k)
    std::thread([&, k] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[k], &one);
      pthread_setaffinity_np(pthread_self(), sizeof one, &one);
      timespec next;
      clock_gettime(CLOCK_MONOTONIC, &next);
      for (;;) {
        next.tv_nsec += 20000000;
        if (next.tv_nsec >= 1000000000) {
          next.tv_nsec -= 1000000000;
          ++next.tv_sec;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
        const double late = Ms(CLOCK_MONOTONIC) - (double(next.tv_sec) * 1e3 + double(next.tv_nsec) / 1e6);
        const double w0 = Ms(CLOCK_MONOTONIC);
        sink = Work(n);
        const double w = Ms(CLOCK_MONOTONIC) - w0;
        std::lock_guard lk(mu);
        Second& s = secs[k];
        s.late_max = std::max(s.late_max, late);
        s.work_max = std::max(s.work_max, w);
        s.work.push_back(w);
      }
    }).detach();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::lock_guard lk(mu);
    std::printf("%.1f", Ms(CLOCK_REALTIME) / 1e3);
    for (size_t k = 0; k < secs.size(); ++k) {
      std::printf(" | cpu%d late_max %.2f work_med %.3f work_max %.2f", cpus[k], secs[k].late_max, Median(secs[k].work),
                  secs[k].work_max);
      secs[k] = Second{};
    }
    std::printf("\n");
    std::fflush(stdout);
  }
}
