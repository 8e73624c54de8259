#include "server/session_history.h"

#include "core/metrics.h"

namespace veil {

SessionHistory::SessionHistory(size_t capacity, double interval_ms, std::vector<double> bounds)
    : capacity_(capacity ? capacity : 1), interval_ms_(interval_ms > 0 ? interval_ms : 1000), bounds_(std::move(bounds)) {}

bool SessionHistory::Update(double now_ms, double unix_ms, const HistoryTotals& t) {
  if (last_ms_ < 0) {
    last_ms_ = now_ms;
    last_ = t;
    return false;
  }
  if (!Due(now_ms)) return false;
  const double dt_ms = now_ms - last_ms_;
  const double dt = dt_ms / 1000.0;
  auto rate = [dt](uint64_t now, uint64_t before) { return now >= before ? double(now - before) / dt : 0.0; };
  HistoryPoint p;
  p.t_unix_ms = unix_ms;
  p.received_fps = rate(t.frames_in, last_.frames_in);
  p.fail_closed_per_s = rate(t.fail_closed, last_.fail_closed);
  p.stale_per_s = rate(t.stale, last_.stale);
  if (t.processing.size() == bounds_.size() + 1 && last_.processing.size() == t.processing.size()) {
    std::vector<uint64_t> window(t.processing.size());
    for (size_t i = 0; i < window.size(); ++i)
      window[i] = t.processing[i] >= last_.processing[i] ? t.processing[i] - last_.processing[i] : 0;
    if (window.back() > 0) p.processing_p99_ms = QuantileOfCounts(bounds_, window, 0.99);
  }
  last_ms_ = now_ms;
  last_ = t;
  std::lock_guard lk(mu_);
  points_.push_back(p);
  while (points_.size() > capacity_) points_.pop_front();
  return true;
}

std::vector<HistoryPoint> SessionHistory::Points() const {
  std::lock_guard lk(mu_);
  return {points_.begin(), points_.end()};
}

}  // namespace veil
