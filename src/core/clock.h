// Wall and CPU clocks, and per-stage timing statistics.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace veil {

double NowMs();            // monotonic wall clock
double ProcessCpuMs();     // CPU of all threads of this process
double ThreadCpuMs();      // CPU of the calling thread
std::string UtcNowIso();
double UnixMs();           // wall clock, ms since 1970-01-01 UTC   // wall clock, e.g. 2026-11-29T21:09:35.123Z

// Collects samples (ms) of one stage; reports mean, percentiles, total.
class StageStats {
 public:
  void Add(double ms) { samples_.push_back(ms); }
  size_t count() const { return samples_.size(); }
  double total() const;
  double mean() const;
  double percentile(double p) const;  // p in [0,100]
  const std::vector<double>& samples() const { return samples_; }

 private:
  std::vector<double> samples_;
};

// Measures a scope's wall time into a StageStats.
class ScopedTimer {
 public:
  explicit ScopedTimer(StageStats& s) : s_(s), t0_(NowMs()) {}
  ~ScopedTimer() { s_.Add(NowMs() - t0_); }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  StageStats& s_;
  double t0_;
};

}  // namespace veil
