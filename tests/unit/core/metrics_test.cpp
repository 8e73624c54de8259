#include "core/metrics.h"

#include <gtest/gtest.h>

#include <thread>

namespace veil {
namespace {

TEST(Metrics, ExportsPrometheusTextFormat) {
  MetricsRegistry r;
  r.GetCounter("veil_stale_drops_total", "Frames dropped as stale", {{"session", "s1"}}).Inc(3);
  r.GetGauge("veil_sessions_active", "Active sessions").Set(2);
  auto& h = r.GetHistogram("veil_stage_ms", "Stage latency", {1, 5, 10}, {{"stage", "detect"}});
  h.Observe(0.5);
  h.Observe(4);
  h.Observe(7);
  h.Observe(50);
  const std::string t = r.ExportText();
  EXPECT_NE(t.find("# TYPE veil_stale_drops_total counter\nveil_stale_drops_total{session=\"s1\"} 3\n"), std::string::npos) << t;
  EXPECT_NE(t.find("# HELP veil_sessions_active Active sessions\n# TYPE veil_sessions_active gauge\nveil_sessions_active 2\n"),
            std::string::npos) << t;
  EXPECT_NE(t.find("veil_stage_ms_bucket{stage=\"detect\",le=\"1\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("veil_stage_ms_bucket{stage=\"detect\",le=\"5\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("veil_stage_ms_bucket{stage=\"detect\",le=\"10\"} 3\n"), std::string::npos) << t;
  EXPECT_NE(t.find("veil_stage_ms_bucket{stage=\"detect\",le=\"+Inf\"} 4\n"), std::string::npos) << t;
  EXPECT_NE(t.find("veil_stage_ms_sum{stage=\"detect\"} 61.5\n"), std::string::npos) << t;
  EXPECT_NE(t.find("veil_stage_ms_count{stage=\"detect\"} 4\n"), std::string::npos) << t;
}

// Recorded in ms (the code's unit), exported in seconds (Prometheus' base unit); quantiles stay in ms.
TEST(Metrics, ExportScaleTurnsMillisecondsIntoSeconds) {
  MetricsRegistry r;
  auto& h = r.GetHistogram("veil_stage_seconds", "Stage latency, s", {1, 33.3, 100}, {}, kMsToSeconds);
  h.Observe(0.5);
  h.Observe(20);
  h.Observe(250);
  r.GetGauge("veil_jitter_seconds", "Jitter, s", {}, kMsToSeconds).Set(12.5);
  const std::string t = r.ExportText();
  EXPECT_NE(t.find("veil_stage_seconds_bucket{le=\"0.001\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("veil_stage_seconds_bucket{le=\"0.0333\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("veil_stage_seconds_bucket{le=\"0.1\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("veil_stage_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos) << t;
  EXPECT_NE(t.find("veil_stage_seconds_sum 0.2705\n"), std::string::npos) << t;
  EXPECT_NE(t.find("veil_jitter_seconds 0.0125\n"), std::string::npos) << t;
  EXPECT_DOUBLE_EQ(h.sum(), 270.5);
  EXPECT_LE(h.Quantile(0.5), 33.3);
}

TEST(Metrics, EscapesLabelValuesAndRejectsBadNames) {
  MetricsRegistry r;
  r.GetCounter("x_total", "x", {{"id", "a\"b\\c\nd"}}).Inc();
  EXPECT_NE(r.ExportText().find("x_total{id=\"a\\\"b\\\\c\\nd\"} 1"), std::string::npos) << r.ExportText();
  EXPECT_THROW(r.GetCounter("9bad", "x"), std::invalid_argument);
  EXPECT_THROW(r.GetGauge("x_total", "x"), std::invalid_argument);  // same name, other type
}

TEST(Metrics, SameSeriesIsReturnedAndRemovalDropsIt) {
  MetricsRegistry r;
  Counter& a = r.GetCounter("c_total", "c", {{"session", "s1"}});
  Counter& b = r.GetCounter("c_total", "c", {{"session", "s1"}});
  EXPECT_EQ(&a, &b);
  r.GetCounter("c_total", "c", {{"session", "s2"}}).Inc();
  r.RemoveSeriesWithLabel("session", "s1");
  const std::string t = r.ExportText();
  EXPECT_EQ(t.find("s1"), std::string::npos);
  EXPECT_NE(t.find("s2"), std::string::npos);
}

// A window's quantile from two cumulative snapshots: what happened before the window does not count.
TEST(Metrics, QuantileOfAWindow) {
  Histogram h({10, 20, 50, 100});
  for (int i = 0; i < 10000; ++i) h.Observe(5);  // before the window: all fast
  const auto before = h.cumulative();
  for (int i = 0; i < 100; ++i) h.Observe(i < 50 ? 15 : 80);  // the window: half slow
  const auto after = h.cumulative();
  std::vector<uint64_t> window(after.size());
  for (size_t i = 0; i < after.size(); ++i) window[i] = after[i] - before[i];
  EXPECT_GT(QuantileOfCounts(h.bounds(), window, 0.99), 50);
  EXPECT_LE(QuantileOfCounts(h.bounds(), window, 0.99), 100);
  EXPECT_LT(h.Quantile(0.99), 50);  // the lifetime figure hides the slow window
  EXPECT_EQ(QuantileOfCounts(h.bounds(), std::vector<uint64_t>(after.size(), 0), 0.99), 0);  // empty window
  EXPECT_EQ(QuantileOfCounts(h.bounds(), {1, 2}, 0.5), 0);  // counts that do not fit the bounds
}

// A rolling window fed once a second: the p99 of the last 5 s, nothing before the window spans 5 s
// or holds enough frames, and what left the window no longer counts.
TEST(Metrics, RecentQuantileIsTheLastWindows) {
  Histogram h(LatencyBucketsMs());
  RecentQuantile r(5000);
  double t = 0;
  auto second = [&](double ms, int frames) {
    for (int i = 0; i < frames; ++i) h.Observe(ms);
    t += 1000;
    r.Add(t, h.cumulative());
  };
  r.Add(t, h.cumulative());
  for (int s = 0; s < 4; ++s) second(20, 30);
  EXPECT_EQ(r.Get(h.bounds(), 0.99, 60), -1) << "4 s do not span the 5-s window";
  second(20, 30);
  const double calm = r.Get(h.bounds(), 0.99, 60);
  EXPECT_GT(calm, 15);
  EXPECT_LE(calm, 20);  // 20-ms frames: inside the 15..20 bucket
  EXPECT_EQ(r.Get(h.bounds(), 0.99, 151), -1) << "150 frames in the window, fewer than asked for";
  second(45, 30);  // one slow second: 30 of the window's 150 frames
  EXPECT_GT(r.Get(h.bounds(), 0.99, 60), 40);
  EXPECT_LE(r.Get(h.bounds(), 0.99, 60), 50);
  for (int s = 0; s < 5; ++s) second(20, 30);  // 5 calm seconds: the slow one left the window
  EXPECT_LE(r.Get(h.bounds(), 0.99, 60), 20);
  EXPECT_GT(h.Quantile(0.99), 20) << "the lifetime figure still holds the slow second";
}

TEST(Metrics, QuantileEstimate) {
  Histogram h({10, 20, 30, 40});
  for (int i = 0; i < 100; ++i) h.Observe(i < 90 ? 15 : 35);
  EXPECT_NEAR(h.Quantile(0.5), 15.6, 0.1);  // inside the 10-20 bucket
  EXPECT_GT(h.Quantile(0.99), 30);
  EXPECT_EQ(Histogram({1}).Quantile(0.5), 0);
}

TEST(Metrics, ConcurrentUpdatesAreNotLost) {
  MetricsRegistry r;
  Counter& c = r.GetCounter("n_total", "n");
  Histogram& h = r.GetHistogram("h_ms", "h", LatencyBucketsMs());
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.Inc();
        h.Observe(1.5);
        if (i % 1000 == 0) (void)r.ExportText();
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(c.value(), 40000);
  EXPECT_EQ(h.count(), 40000u);
  EXPECT_DOUBLE_EQ(h.sum(), 60000);
}

}  // namespace
}  // namespace veil
