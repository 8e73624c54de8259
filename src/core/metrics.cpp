#include "core/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace veil {
namespace {

bool ValidName(const std::string& n) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string Escape(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\') o += "\\\\";
    else if (c == '"') o += "\\\"";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

std::string Num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// A scaled value: 12 significant digits, so 33.3 ms reads 0.0333, not 0.033299999999999996.
std::string Scaled(double v, double scale) {
  if (scale == 1 || std::isnan(v) || std::isinf(v)) return Num(v);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v * scale);
  return buf;
}

std::string LabelText(const Labels& labels, const std::string& extra_key = "", const std::string& extra_val = "") {
  if (labels.empty() && extra_key.empty()) return "";
  std::string o = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    o += (first ? "" : ",") + k + "=\"" + Escape(v) + "\"";
    first = false;
  }
  if (!extra_key.empty()) o += (first ? "" : ",") + extra_key + "=\"" + extra_val + "\"";
  return o + "}";
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  if (bounds_.empty() || !std::is_sorted(bounds_.begin(), bounds_.end()))
    throw std::invalid_argument("histogram bounds must be non-empty and sorted");
  buckets_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::Observe(double v) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.Inc(v);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::cumulative() const {
  std::vector<uint64_t> c(bounds_.size() + 1);
  uint64_t acc = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) c[i] = acc += buckets_[i].load(std::memory_order_relaxed);
  return c;
}

double Histogram::Quantile(double q) const { return QuantileOfCounts(bounds_, cumulative(), q); }

void RecentQuantile::Add(double now_ms, std::vector<uint64_t> cumulative) {
  snaps_.emplace_back(now_ms, std::move(cumulative));
  // Keep the newest snapshot at least a window older than now, and everything after it.
  while (snaps_.size() > 2 && now_ms - snaps_[1].first >= window_ms_) snaps_.pop_front();
}

double RecentQuantile::Get(const std::vector<double>& bounds, double q, uint64_t min_count) const {
  if (snaps_.size() < 2) return -1;
  const auto& [t0, c0] = snaps_.front();
  const auto& [t1, c1] = snaps_.back();
  if (t1 - t0 < window_ms_ || c0.size() != c1.size() || c1.empty()) return -1;
  std::vector<uint64_t> w(c1.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = c1[i] >= c0[i] ? c1[i] - c0[i] : 0;
  if (w.back() < min_count) return -1;  // +Inf last: the window's count
  return QuantileOfCounts(bounds, w, q);
}

double QuantileOfCounts(const std::vector<double>& bounds, const std::vector<uint64_t>& c, double q) {
  if (c.empty() || c.size() != bounds.size() + 1) return 0;
  const uint64_t n = c.back();
  if (n == 0) return 0;
  const double rank = std::clamp(q, 0.0, 1.0) * n;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i] >= rank) {
      if (i == bounds.size()) return bounds.back();  // in +Inf: the best we can say
      const double lo = i == 0 ? 0 : bounds[i - 1], hi = bounds[i];
      const uint64_t below = i == 0 ? 0 : c[i - 1], in = c[i] - below;
      return in ? lo + (hi - lo) * (rank - below) / in : hi;
    }
  }
  return bounds.back();
}

std::vector<double> LatencyBucketsMs() {
  return {0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 25, 33.3, 40, 50, 75, 100, 150, 250, 500, 1000};
}

MetricsRegistry::Family& MetricsRegistry::GetFamily(const std::string& name, const std::string& help, Kind kind,
                                                    double scale) {
  if (!ValidName(name)) throw std::invalid_argument("invalid metric name '" + name + "'");
  auto [it, fresh] = families_.try_emplace(name);
  if (fresh) {
    it->second.kind = kind;
    it->second.help = help;
    it->second.scale = scale;
  } else if (it->second.kind != kind) {
    throw std::invalid_argument("metric '" + name + "' registered with another type");
  }
  return it->second;
}

Counter& MetricsRegistry::GetCounter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lk(mu_);
  auto& slot = GetFamily(name, help, Kind::kCounter).counters[labels];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& MetricsRegistry::GetGauge(const std::string& name, const std::string& help, const Labels& labels,
                                 double export_scale) {
  std::lock_guard lk(mu_);
  auto& slot = GetFamily(name, help, Kind::kGauge, export_scale).gauges[labels];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& MetricsRegistry::GetHistogram(const std::string& name, const std::string& help,
                                         const std::vector<double>& bounds, const Labels& labels,
                                         double export_scale) {
  std::lock_guard lk(mu_);
  auto& slot = GetFamily(name, help, Kind::kHistogram, export_scale).histograms[labels];
  if (!slot) slot = std::make_unique<Histogram>(bounds);
  return *slot;
}

void MetricsRegistry::RemoveSeriesWithLabel(const std::string& key, const std::string& value) {
  std::lock_guard lk(mu_);
  auto has = [&](const Labels& l) {
    return std::any_of(l.begin(), l.end(), [&](const auto& kv) { return kv.first == key && kv.second == value; });
  };
  for (auto& [name, f] : families_) {
    std::erase_if(f.counters, [&](const auto& e) { return has(e.first); });
    std::erase_if(f.gauges, [&](const auto& e) { return has(e.first); });
    std::erase_if(f.histograms, [&](const auto& e) { return has(e.first); });
  }
}

std::string MetricsRegistry::ExportText() const {
  std::lock_guard lk(mu_);
  std::string o;
  for (const auto& [name, f] : families_) {
    const char* type = f.kind == Kind::kCounter ? "counter" : f.kind == Kind::kGauge ? "gauge" : "histogram";
    o += "# HELP " + name + " " + f.help + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& [l, c] : f.counters) o += name + LabelText(l) + " " + Num(c->value()) + "\n";
    for (const auto& [l, g] : f.gauges) o += name + LabelText(l) + " " + Scaled(g->value(), f.scale) + "\n";
    for (const auto& [l, h] : f.histograms) {
      const auto c = h->cumulative();
      for (size_t i = 0; i < c.size(); ++i) {
        const std::string le = i < h->bounds().size() ? Scaled(h->bounds()[i], f.scale) : "+Inf";
        o += name + "_bucket" + LabelText(l, "le", le) + " " + std::to_string(c[i]) + "\n";
      }
      o += name + "_sum" + LabelText(l) + " " + Scaled(h->sum(), f.scale) + "\n";
      o += name + "_count" + LabelText(l) + " " + std::to_string(c.back()) + "\n";
    }
  }
  return o;
}

}  // namespace veil
