// Where sessions' periodic keyframes and detections fall: spread over the period, holes refilled.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "server/live_session.h"
#include "server/period_phases.h"

namespace veil {
namespace {

// The smallest distance between two phases on the circle of the period.
double MinGap(std::vector<double> p, double period) {
  std::sort(p.begin(), p.end());
  double g = period;
  for (size_t i = 0; i < p.size(); ++i) g = std::min(g, (i + 1 < p.size() ? p[i + 1] : p[0] + period) - p[i]);
  return g;
}

TEST(PeriodPhases, SessionsSpreadOverThePeriod) {
  PeriodPhases k(2000);
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

TEST(PeriodPhases, AnEndedSessionsPhaseIsTheNextOnesToTake) {
  PeriodPhases k(1000);
  for (uint64_t id = 1; id <= 4; ++id) k.Take(id);  // 0, 500, 250, 750
  const double freed = k.Take(2);
  k.Release(2);
  k.Release(2);  // twice: harmless
  EXPECT_EQ(k.Take(9), freed);
}

TEST(PeriodPhases, NextAtIsTheFirstTimeAtItsPhase) {
  // Period 2000 counted from 100, phase 500: 600, 2600, 4600, ...
  EXPECT_DOUBLE_EQ(PeriodPhases::NextAt(0, 100, 500, 2000), 600);
  EXPECT_DOUBLE_EQ(PeriodPhases::NextAt(600, 100, 500, 2000), 600);
  EXPECT_DOUBLE_EQ(PeriodPhases::NextAt(600.5, 100, 500, 2000), 2600);
  EXPECT_DOUBLE_EQ(PeriodPhases::NextAt(10000, 100, 500, 2000), 10600);
  EXPECT_DOUBLE_EQ(PeriodPhases::NextAt(-5000, 100, 500, 2000), -3400);
}

// A session's detection slot puts its detections at its phase of the detection period, whenever
// its first frame came and whatever its frame count was: the slot frames arrive within half a
// frame of the phase, so four sessions started together detect a quarter period apart.
TEST(DetectSlot, SlotFramesArriveAtTheSessionsPhase) {
  const double fps = 30, frame_ms = 1000 / fps, epoch = 1234.5;
  PeriodPhases phases(1.0);
  for (int cadence : {2, 3, 5}) {
    const double period = cadence * frame_ms;
    for (uint64_t id = 1; id <= 4; ++id) {
      const double phase = phases.Take(id);
      const int64_t first_index = int64_t(id * 37 + cadence);  // frames counted before this one
      const double first_ms = epoch + 5000 + id * 211.7 + cadence * 3.1;
      const int64_t slot = DetectSlot(first_index, first_ms, cadence, fps, phase, epoch);
      int slots = 0;
      for (int64_t k = first_index; k < first_index + 10 * cadence; ++k) {
        if ((k + slot) % cadence != 0) continue;
        ++slots;
        const double t = first_ms + double(k - first_index) * frame_ms;
        const double into = std::fmod(t - epoch, period);  // where in its period the frame arrived
        double off = std::fabs(into - phase * period);
        off = std::min(off, period - off);
        EXPECT_LE(off, frame_ms / 2 + 1e-9) << "cadence " << cadence << " session " << id << " frame " << k;
      }
      EXPECT_EQ(slots, 10);
    }
    for (uint64_t id = 1; id <= 4; ++id) phases.Release(id);
  }
  EXPECT_EQ(DetectSlot(7, 100, 1, fps, 0.5, 0), 0);  // every frame detects: any slot will do
}

}  // namespace
}  // namespace veil
