// Counters, gauges and histograms with labels, exported in the Prometheus
// text exposition format (version 0.0.4). Updates are lock-free atomics on
// the hot path; registration and export take a lock.
#pragma once
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace veil {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Lock-free add on an atomic double.
inline void AtomicAdd(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

class Counter {
 public:
  void Inc(double v = 1) { AtomicAdd(value_, v); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { AtomicAdd(value_, v); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  // Cumulative counts per bound (+Inf last), sum and count: one consistent-enough snapshot.
  std::vector<uint64_t> cumulative() const;
  double sum() const { return sum_.value(); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  // Estimated quantile (linear within the bucket), q in [0, 1].
  double Quantile(double q) const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // per bucket (not cumulative), +Inf last
  Counter sum_;
  std::atomic<uint64_t> count_{0};
};

// The quantile of cumulative bucket counts (as Histogram::cumulative() gives,
// +Inf last; e.g. the difference of two snapshots: a window), linear within a bucket.
double QuantileOfCounts(const std::vector<double>& bounds, const std::vector<uint64_t>& cumulative, double q);

// A histogram's quantile over its last `window_ms`: fed the histogram's cumulative counts with
// their time (e.g. once a second), it answers from the difference between the newest snapshot and
// the newest one at least window_ms older. Not thread-safe: one owner feeds and reads it.
class RecentQuantile {
 public:
  explicit RecentQuantile(double window_ms) : window_ms_(window_ms) {}
  void Add(double now_ms, std::vector<uint64_t> cumulative);
  // The quantile over the window, or -1 when the snapshots do not yet span it or it holds fewer
  // than min_count observations.
  double Get(const std::vector<double>& bounds, double q, uint64_t min_count) const;

 private:
  double window_ms_;
  std::deque<std::pair<double, std::vector<uint64_t>>> snaps_;
};

// Millisecond buckets for per-stage latencies (0.1 ms .. 1 s).
std::vector<double> LatencyBucketsMs();

// Series recorded in milliseconds (the code's unit) are exported in seconds, the
// Prometheus base unit: pass this as export_scale, and name the series *_seconds.
constexpr double kMsToSeconds = 0.001;

class MetricsRegistry {
 public:
  // Returns the series for (name, labels), creating it on first use. Names
  // must match [a-zA-Z_:][a-zA-Z0-9_:]*; `help` is kept from the first call.
  Counter& GetCounter(const std::string& name, const std::string& help, const Labels& labels = {});
  // export_scale: values (a gauge's; a histogram's bounds and sum) are multiplied by it in
  // ExportText, e.g. kMsToSeconds. Kept from the first call, like `help`.
  Gauge& GetGauge(const std::string& name, const std::string& help, const Labels& labels = {},
                  double export_scale = 1);
  Histogram& GetHistogram(const std::string& name, const std::string& help, const std::vector<double>& bounds,
                          const Labels& labels = {}, double export_scale = 1);
  // Drops every series with this label value (e.g. a deleted session).
  void RemoveSeriesWithLabel(const std::string& key, const std::string& value);
  std::string ExportText() const;

 private:
  enum class Kind { kCounter, kGauge, kHistogram };
  struct Family {
    Kind kind;
    std::string help;
    double scale = 1;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
    std::map<Labels, std::unique_ptr<Histogram>> histograms;
  };
  Family& GetFamily(const std::string& name, const std::string& help, Kind kind, double scale = 1);
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;  // guarded by mu_
};

}  // namespace veil
