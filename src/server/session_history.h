// A bounded ring of one live session's figures, one point per interval (the
// operator page's sparklines): received fps, processing p99 over the
// interval, fail-closed frames and stale drops per second. Fed from the
// session's counters by the housekeeping thread; read by the HTTP threads.
#pragma once
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace veil {

struct HistoryPoint {
  double t_unix_ms = 0;          // wall clock at the end of the interval
  double received_fps = 0;       // frames received and decoded per second
  double processing_p99_ms = -1;  // -1: no frame left in the interval
  double fail_closed_per_s = 0;  // whole-frame mosaics for lack of a fresh detection
  double stale_per_s = 0;        // frames dropped as stale
};

// The session's running totals at one moment.
struct HistoryTotals {
  uint64_t frames_in = 0, fail_closed = 0, stale = 0;
  std::vector<uint64_t> processing;  // cumulative bucket counts of the processing histogram (+Inf last)
};

class SessionHistory {
 public:
  // capacity points, one per interval_ms; bounds: the processing histogram's.
  SessionHistory(size_t capacity, double interval_ms, std::vector<double> bounds);
  // True when Update() at now_ms would record a point or set the baseline: the
  // caller gathers the totals only then.
  bool Due(double now_ms) const { return last_ms_ < 0 || now_ms - last_ms_ >= interval_ms_; }
  // Records a point when interval_ms has passed since the last one (the first
  // call only sets the baseline). now_ms: monotonic; unix_ms: wall clock.
  // Returns true when a point was added.
  bool Update(double now_ms, double unix_ms, const HistoryTotals& t);
  std::vector<HistoryPoint> Points() const;  // oldest first
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  const double interval_ms_;
  const std::vector<double> bounds_;
  double last_ms_ = -1;   // only the updating thread touches these
  HistoryTotals last_;
  mutable std::mutex mu_;
  std::deque<HistoryPoint> points_;  // guarded by mu_
};

}  // namespace veil
