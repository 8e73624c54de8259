#include "server/period_phases.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace veil {

double PeriodPhases::Take(uint64_t id) {
  MutexLock lk(mu_);
  if (auto it = taken_.find(id); it != taken_.end()) return it->second;
  double phase = 0;
  if (!taken_.empty()) {
    std::vector<double> p;
    for (const auto& [k, v] : taken_) p.push_back(v);
    std::sort(p.begin(), p.end());
    double best_gap = -1;
    for (size_t i = 0; i < p.size(); ++i) {
      // The gap after p[i], up to the next phase (the last one wraps around the period).
      const double next = i + 1 < p.size() ? p[i + 1] : p[0] + period_ms_;
      if (next - p[i] > best_gap) {
        best_gap = next - p[i];
        phase = std::fmod(p[i] + best_gap / 2, period_ms_);
      }
    }
  }
  taken_[id] = phase;
  return phase;
}

void PeriodPhases::Release(uint64_t id) {
  MutexLock lk(mu_);
  taken_.erase(id);
}

double PeriodPhases::NextAt(double now_ms, double epoch_ms, double phase_ms, double period_ms) {
  if (!(period_ms > 0)) return now_ms;
  const double k = std::ceil((now_ms - epoch_ms - phase_ms) / period_ms);
  return epoch_ms + phase_ms + k * period_ms;
}

}  // namespace veil
