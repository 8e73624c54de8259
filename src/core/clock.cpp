#include "core/clock.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <cmath>
#include <numeric>

namespace veil {
namespace {
double Ms(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}
}  // namespace

double NowMs() { return Ms(CLOCK_MONOTONIC); }
double ProcessCpuMs() { return Ms(CLOCK_PROCESS_CPUTIME_ID); }
double ThreadCpuMs() { return Ms(CLOCK_THREAD_CPUTIME_ID); }

double StageStats::total() const { return std::accumulate(samples_.begin(), samples_.end(), 0.0); }
double StageStats::mean() const { return samples_.empty() ? 0.0 : total() / samples_.size(); }
double StageStats::percentile(double p) const {
  if (samples_.empty()) return 0.0;
  std::vector<double> s = samples_;
  std::sort(s.begin(), s.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * (s.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank)), hi = static_cast<size_t>(std::ceil(rank));
  return s[lo] + (s[hi] - s[lo]) * (rank - lo);
}

double UnixMs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return double(ts.tv_sec) * 1000.0 + double(ts.tv_nsec) / 1e6;
}

std::string UtcNowIso() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  gmtime_r(&ts.tv_sec, &t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday,
                t.tm_hour, t.tm_min, t.tm_sec, int(ts.tv_nsec / 1000000));
  return buf;
}

}  // namespace veil
