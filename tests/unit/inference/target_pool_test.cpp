#include "inference/target_pool.h"

#include <gtest/gtest.h>

namespace veil {
namespace {

TEST(TargetPool, FewestActiveStreamsWins) {
  TargetPool p({"a", "b", "c"});
  EXPECT_EQ(*p.Assign(1), 0);
  EXPECT_EQ(*p.Assign(2), 1);
  EXPECT_EQ(*p.Assign(3), 2);
  EXPECT_EQ(*p.Assign(4), 0);
  EXPECT_EQ(*p.Assign(1), 0);  // stable: same session, same target, no double count
  EXPECT_EQ(p.Snapshot()[0].active_streams, 2);
}

TEST(TargetPool, TiesGoToTheLowestRecentLatency) {
  TargetPool p({"slow", "fast"});
  p.RecordLatency(0, 30);
  p.RecordLatency(1, 10);
  EXPECT_EQ(*p.Assign(1), 1);
  EXPECT_EQ(*p.Assign(2), 0);  // fewer streams beats latency
}

TEST(TargetPool, RestartsNeverStackSessionsWhileATargetIsIdle) {
  // The field report's cause 5: a round-robin counter that advanced on every
  // pipeline restart put two sessions on one worker. Restart sessions many times.
  TargetPool p({"w0", "w1"});
  for (int round = 0; round < 50; ++round) {
    const uint64_t a = 2 * round, b = 2 * round + 1;
    ASSERT_TRUE(p.Assign(a).ok());
    ASSERT_TRUE(p.Assign(b).ok());
    ASSERT_NE(p.TargetOf(a), p.TargetOf(b)) << "round " << round;
    if (round % 3 == 0) {
      p.Release(a);  // one session restarts alone
      ASSERT_TRUE(p.Assign(a + 1000).ok());
      ASSERT_NE(p.TargetOf(a + 1000), p.TargetOf(b));
      p.Release(a + 1000);
    } else {
      p.Release(a);
    }
    p.Release(b);
  }
  for (const auto& t : p.Snapshot()) EXPECT_EQ(t.active_streams, 0);
}

TEST(TargetPool, DownTargetReturnsItsSessionsAndTakesNoNewOnes) {
  TargetPool p({"a", "b"});
  p.Assign(1);
  p.Assign(2);
  p.Assign(3);
  auto moved = p.SetHealthy(0, false, "timeout");
  EXPECT_EQ(moved.size(), 2u);  // sessions 1 and 3
  for (uint64_t s : moved) EXPECT_EQ(*p.Assign(s), 1);
  EXPECT_EQ(p.Snapshot()[0].down_reason, "timeout");
  p.SetHealthy(1, false, "dead");
  EXPECT_FALSE(p.AnyHealthy());
  EXPECT_FALSE(p.Assign(9).ok());
  p.SetHealthy(0, true);
  EXPECT_EQ(*p.Assign(9), 0);  // a recovered target takes new sessions
}

}  // namespace
}  // namespace veil
