// Where sessions' periodic keyframes fall: spread over the period, holes refilled.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "server/keyframe_phases.h"

namespace veil {
namespace {

// The smallest distance between two phases on the circle of the period.
double MinGap(std::vector<double> p, double period) {
  std::sort(p.begin(), p.end());
  double g = period;
  for (size_t i = 0; i < p.size(); ++i) g = std::min(g, (i + 1 < p.size() ? p[i + 1] : p[0] + period) - p[i]);
  return g;
}

TEST(KeyframePhases, SessionsSpreadOverThePeriod) {
  KeyframePhases k(2000);
  EXPECT_EQ(k.Take(1), 0);
  EXPECT_EQ(k.Take(2), 1000);
  std::vector<double> p{0, 1000, k.Take(3), k.Take(4)};
  EXPECT_DOUBLE_EQ(MinGap(p, 2000), 500);  // 4 sessions: a quarter period apart
  for (uint64_t id = 5; id <= 8; ++id) p.push_back(k.Take(id));
  EXPECT_DOUBLE_EQ(MinGap(p, 2000), 250);  // 8: an eighth
  for (double x : p) {
    EXPECT_GE(x, 0);
    EXPECT_LT(x, 2000);
  }
  EXPECT_EQ(k.Take(3), p[2]) << "an id keeps its phase";
}

TEST(KeyframePhases, AnEndedSessionsPhaseIsTheNextOnesToTake) {
  KeyframePhases k(1000);
  for (uint64_t id = 1; id <= 4; ++id) k.Take(id);  // 0, 500, 250, 750
  const double freed = k.Take(2);
  k.Release(2);
  k.Release(2);  // twice: harmless
  EXPECT_EQ(k.Take(9), freed);
}

TEST(KeyframePhases, NextAtIsTheFirstTimeAtItsPhase) {
  // Period 2000 counted from 100, phase 500: 600, 2600, 4600, ...
  EXPECT_DOUBLE_EQ(KeyframePhases::NextAt(0, 100, 500, 2000), 600);
  EXPECT_DOUBLE_EQ(KeyframePhases::NextAt(600, 100, 500, 2000), 600);
  EXPECT_DOUBLE_EQ(KeyframePhases::NextAt(600.5, 100, 500, 2000), 2600);
  EXPECT_DOUBLE_EQ(KeyframePhases::NextAt(10000, 100, 500, 2000), 10600);
  EXPECT_DOUBLE_EQ(KeyframePhases::NextAt(-5000, 100, 500, 2000), -3400);
}

}  // namespace
}  // namespace veil
