#include "server/session_history.h"

#include <gtest/gtest.h>

#include "core/metrics.h"

namespace veil {
namespace {

HistoryTotals Totals(uint64_t in, uint64_t fail_closed, uint64_t stale, const Histogram& h) {
  return {in, fail_closed, stale, h.cumulative()};
}

TEST(SessionHistory, OnePointPerIntervalWithRatesAndTheIntervalsP99) {
  Histogram h(LatencyBucketsMs());
  SessionHistory hist(300, 1000, LatencyBucketsMs());
  EXPECT_FALSE(hist.Update(0, 1e12, Totals(0, 0, 0, h)));  // the baseline
  for (int i = 0; i < 30; ++i) h.Observe(12);
  EXPECT_FALSE(hist.Update(500, 1e12 + 500, Totals(15, 0, 0, h)));  // not an interval yet
  EXPECT_TRUE(hist.Update(1000, 1e12 + 1000, Totals(30, 3, 1, h)));
  for (int i = 0; i < 60; ++i) h.Observe(i == 0 ? 90 : 12);
  EXPECT_TRUE(hist.Update(3000, 1e12 + 3000, Totals(90, 3, 5, h)));  // a late tick: 2 s
  EXPECT_TRUE(hist.Update(4000, 1e12 + 4000, Totals(90, 3, 5, h)));   // nothing arrived
  const auto p = hist.Points();
  ASSERT_EQ(p.size(), 3u);
  EXPECT_DOUBLE_EQ(p[0].received_fps, 30);
  EXPECT_DOUBLE_EQ(p[0].fail_closed_per_s, 3);
  EXPECT_DOUBLE_EQ(p[0].stale_per_s, 1);
  EXPECT_GT(p[0].processing_p99_ms, 10);
  EXPECT_LE(p[0].processing_p99_ms, 15);
  EXPECT_DOUBLE_EQ(p[0].t_unix_ms, 1e12 + 1000);
  EXPECT_DOUBLE_EQ(p[1].received_fps, 30);  // 60 frames over 2 s
  EXPECT_DOUBLE_EQ(p[1].stale_per_s, 2);
  EXPECT_GT(p[1].processing_p99_ms, 15);  // the 90-ms frame is the window's p99, not the lifetime's
  EXPECT_DOUBLE_EQ(p[2].received_fps, 0);
  EXPECT_LT(p[2].processing_p99_ms, 0);  // no frame left: no figure (null in the API)
}

TEST(SessionHistory, IsBoundedOldestDropped) {
  Histogram h({10});
  SessionHistory hist(5, 1000, {10});
  hist.Update(0, 0, Totals(0, 0, 0, h));
  for (int i = 1; i <= 12; ++i) EXPECT_TRUE(hist.Update(i * 1000.0, i * 1000.0, Totals(uint64_t(i) * 30, 0, 0, h)));
  const auto p = hist.Points();
  ASSERT_EQ(p.size(), 5u);
  EXPECT_DOUBLE_EQ(p.front().t_unix_ms, 8000);
  EXPECT_DOUBLE_EQ(p.back().t_unix_ms, 12000);
  EXPECT_EQ(hist.capacity(), 5u);
}

TEST(SessionHistory, CountersThatGoBackCountAsZero) {
  Histogram h({10});
  SessionHistory hist(10, 100, {10});
  hist.Update(0, 0, Totals(100, 10, 10, h));
  hist.Update(100, 100, Totals(50, 5, 5, h));
  const auto p = hist.Points();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].received_fps, 0);
  EXPECT_EQ(p[0].fail_closed_per_s, 0);
  EXPECT_EQ(p[0].stale_per_s, 0);
}

}  // namespace
}  // namespace veil
