// PacedHandOver (server/live_session.h): the deadline a frame keeps when it arrives bunched with
// the frames before it (network jitter, a retransmission that held the frames after it).
#include <gtest/gtest.h>

#include "server/live_session.h"

namespace veil {
namespace {

constexpr uint32_t kStep = 3000;  // 90 kHz: 33.3 ms, one frame at 30 fps

TEST(PacedHandOver, AFrameOnTimeOrLateIsPacedAtItsHandOver) {
  // The frame before was paced at 1000 ms; this one comes a frame later, or later still.
  EXPECT_DOUBLE_EQ(PacedHandOver(1033.4, 1000 + kStep, 1000.0, 1000, 100.0), 1033.4);
  EXPECT_DOUBLE_EQ(PacedHandOver(1200.0, 1000 + kStep, 1000.0, 1000, 100.0), 1200.0);
}

TEST(PacedHandOver, ABunchKeepsItsOwnSpacing) {
  // Three frames held behind a retransmission and handed over together at 1100 ms: the first is
  // due as it came, each next one a frame interval after the one before.
  double paced = PacedHandOver(1100.0, 0, 1000.0, 0 - kStep, 100.0);
  EXPECT_DOUBLE_EQ(paced, 1100.0);
  paced = PacedHandOver(1100.0, kStep, paced, 0, 100.0);
  EXPECT_NEAR(paced, 1133.33, 0.01);
  paced = PacedHandOver(1100.0, 2 * kStep, paced, kStep, 100.0);
  EXPECT_NEAR(paced, 1166.67, 0.01);
}

TEST(PacedHandOver, NeverMoreThanTheAllowanceAfterTheHandOver) {
  // A publisher that sends faster than its timestamps (or a long bunch) gains at most the
  // allowance; with none, every frame is paced at its hand-over.
  double paced = 1000.0;
  for (uint32_t i = 1; i <= 20; ++i) paced = PacedHandOver(1000.0, i * kStep, paced, (i - 1) * kStep, 100.0);
  EXPECT_DOUBLE_EQ(paced, 1100.0);
  EXPECT_DOUBLE_EQ(PacedHandOver(1000.0, kStep, 990.0, 0, 0.0), 1000.0);
}

TEST(PacedHandOver, ATimestampJumpCountsAsNoSpacingOrTheAllowance) {
  // Back (a restart, a wrap the wrong way): no spacing, the frame before's pace if later.
  EXPECT_DOUBLE_EQ(PacedHandOver(1000.0, 5000, 1010.0, 900000, 100.0), 1010.0);
  // Forward by an hour: at most the allowance.
  EXPECT_DOUBLE_EQ(PacedHandOver(1000.0, 90000u * 3600, 1000.0, 0, 100.0), 1100.0);
  // The 32-bit timestamp wraps: a step of one frame across it.
  EXPECT_NEAR(PacedHandOver(1000.0, 1000, 1000.0, 1000 - kStep, 100.0), 1033.33, 0.01);
}

}  // namespace
}  // namespace veil
