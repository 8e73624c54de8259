// The session's load shedding (server/speed_control.h), driven by a fake clock and fake frame
// latencies: the order of the levels is the session's business (live_session_test); here,
// when a level is taken and when it is given back.
#include "server/speed_control.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace veil {
namespace {

constexpr double kBudget = 33.0;

// The level rules from the first window: no start-up grace (its own test below).
SpeedControlConfig NoWarmup() {
  SpeedControlConfig c;
  c.warmup_ms = 0;
  return c;
}

// One second of 30 frames, each leaving after `latency` ms, `stale` of them dropped instead;
// the window is judged at its end.
double Second(SpeedControl& c, double t, double latency, int stale = 0) {
  for (int i = 0; i < 30; ++i) {
    const double now = t + i * 1000.0 / 30;
    if (i < stale)
      c.OnStale(now);
    else
      c.OnFrame(now, latency);
    c.Level(now);
  }
  c.Level(t + 1000);
  return t + 1000;
}

TEST(SpeedControl, ShedsOneLevelPerOverusedWindowUpToItsLast) {
  SpeedControl c(NoWarmup(), kBudget, 3);
  double t = 0;
  t = Second(c, t, 10);  // comfortable
  EXPECT_EQ(c.level(), 0);
  t = Second(c, t, 30);  // p90 above 0.7 x budget
  EXPECT_EQ(c.level(), 1);
  t = Second(c, t, 30);
  EXPECT_EQ(c.level(), 2);
  EXPECT_FALSE(c.overloaded());
  t = Second(c, t, 30);
  EXPECT_EQ(c.level(), 3);
  t = Second(c, t, 30);  // nothing left to shed
  EXPECT_EQ(c.level(), 3);
  EXPECT_TRUE(c.overloaded());
  EXPECT_EQ(c.steps_up(), 3u);
}

// At the last level: late but in time (the p90 between 0.7 x budget and the budget: frames that
// waited behind other sessions' frames arriving at the same instants) is overloaded, and refuses
// new viewers; only frames gone stale or later than the budget are falling behind, which is what
// ends a session on the node.
TEST(SpeedControl, FallingBehindIsStaleOrLaterThanTheBudget) {
  SpeedControl c(NoWarmup(), kBudget, 1);
  double t = Second(c, 0, 30);  // level 1, the last
  t = Second(c, t, 30);
  EXPECT_TRUE(c.overloaded());
  EXPECT_FALSE(c.falling_behind()) << "every frame left within the frame interval";
  t = Second(c, t, 40);  // later than the budget
  EXPECT_TRUE(c.overloaded());
  EXPECT_TRUE(c.falling_behind());
  t = Second(c, t, 30, /*stale=*/3);  // 10% dropped as stale
  EXPECT_TRUE(c.falling_behind());
  t = Second(c, t, 30, /*stale=*/1);  // within the stale share, in time
  EXPECT_FALSE(c.falling_behind());
  t = Second(c, t, 10);  // calm
  EXPECT_FALSE(c.overloaded());
  EXPECT_FALSE(c.falling_behind());
  // Below the last level nothing is falling behind: there is still something to shed.
  SpeedControl d(NoWarmup(), kBudget, 3);
  Second(d, 0, 40);
  EXPECT_FALSE(d.falling_behind());
}

TEST(SpeedControl, StaleDropsAloneAreOveruse) {
  SpeedControl c(NoWarmup(), kBudget, 4);
  double t = Second(c, 0, 12, /*stale=*/3);  // fast frames, but 10% dropped: the worker is starved
  EXPECT_EQ(c.level(), 1);
  t = Second(c, t, 12, /*stale=*/1);  // one in 30 is within the 5% share
  EXPECT_EQ(c.level(), 1);
}

TEST(SpeedControl, GivesALevelBackOnlyAfterACalmStretch) {
  SpeedControlConfig cfg = NoWarmup();
  cfg.calm_ms = 5000;
  SpeedControl c(cfg, kBudget, 4);
  double t = Second(c, 0, 30);
  t = Second(c, t, 30);
  ASSERT_EQ(c.level(), 2);
  // Neither over nor calm (p90 between 0.4 and 0.7 of the budget): stays.
  for (int i = 0; i < 10; ++i) t = Second(c, t, 20);
  EXPECT_EQ(c.level(), 2);
  // Calm: one level back after 5 s, the next after 5 s more, never two at once.
  for (int i = 0; i < 4; ++i) t = Second(c, t, 8);
  EXPECT_EQ(c.level(), 2);
  t = Second(c, t, 8);
  t = Second(c, t, 8);
  EXPECT_EQ(c.level(), 1);
  for (int i = 0; i < 5; ++i) t = Second(c, t, 8);
  EXPECT_EQ(c.level(), 0);
  EXPECT_EQ(c.steps_down(), 2u);
}

TEST(SpeedControl, ALevelGivenBackThatOverloadsAgainWaitsTwiceAsLong) {
  SpeedControlConfig cfg = NoWarmup();
  cfg.calm_ms = 3000;
  cfg.calm_max_ms = 24000;
  SpeedControl c(cfg, kBudget, 4);
  double t = Second(c, 0, 30);
  ASSERT_EQ(c.level(), 1);
  for (int i = 0; i < 4; ++i) t = Second(c, t, 8);
  ASSERT_EQ(c.level(), 0);
  t = Second(c, t, 30);  // the level it gave back was needed
  ASSERT_EQ(c.level(), 1);
  EXPECT_DOUBLE_EQ(c.current_calm_ms(), 6000);
  for (int i = 0; i < 5; ++i) t = Second(c, t, 8);
  EXPECT_EQ(c.level(), 1);  // 5 s calm is no longer enough
  for (int i = 0; i < 2; ++i) t = Second(c, t, 8);
  EXPECT_EQ(c.level(), 0);
}

// The node's budget for take-backs: a grant fits beside the last second's CPU and the grants
// that second's reading does not hold yet; a reading of a second that began after a grant
// holds it.
TEST(TakeBackBudget, GrantsWhatFitsBesideTheLastSecondAndTheGrantsSince) {
  TakeBackBudget b;
  EXPECT_TRUE(b.TryTake(0, 500));  // no reading yet: as without the rule
  b.Update(0, 1400, 1500);         // a second from 0 that held the grant at 0
  EXPECT_TRUE(b.TryTake(1100, 40));
  EXPECT_TRUE(b.TryTake(1200, 40));   // 1480
  EXPECT_FALSE(b.TryTake(1300, 40));  // 1520: no room
  EXPECT_TRUE(b.TryTake(1300, 20));   // 1500: fits
  EXPECT_EQ(b.granted(), 4u);
  EXPECT_EQ(b.held(), 1u);
  // The second from 1000 was read while the grants at 1100-1300 ran part of it: they stay.
  b.Update(1000, 1400, 1500);
  EXPECT_FALSE(b.TryTake(2100, 40));
  // The second from 2000 holds them, at what they cost: room again.
  b.Update(2000, 1420, 1500);
  EXPECT_TRUE(b.TryTake(3100, 40));
  // A node over its budget gives nothing back, whatever a level costs.
  b.Update(3200, 1600, 1500);
  EXPECT_FALSE(b.TryTake(4300, 1));
  EXPECT_EQ(b.held(), 3u);
}

// A calm stretch whose take-back the node refuses keeps its level and asks again at the next
// calm window, without a new stretch; two sessions calm together on a node with room for one
// level take back one, and the other only once a reading shows room.
TEST(SpeedControl, ATakeBackTheNodeHasNoRoomForWaitsForRoom) {
  SpeedControlConfig cfg = NoWarmup();
  cfg.calm_ms = 3000;
  auto budget = std::make_shared<TakeBackBudget>();
  SpeedControl a(cfg, kBudget, 4), b(cfg, kBudget, 4);
  for (SpeedControl* c : {&a, &b}) c->set_take_back_permit([budget](double now) { return budget->TryTake(now, 30); });
  double t = 0;
  for (SpeedControl* c : {&a, &b}) Second(*c, t, 30);
  t += 1000;
  ASSERT_EQ(a.level(), 1);
  ASSERT_EQ(b.level(), 1);
  budget->Update(0, 1450, 1500);  // room for one 30-ms/s level, not two
  for (int i = 0; i < 3; ++i) {
    for (SpeedControl* c : {&a, &b}) Second(*c, t, 8);
    t += 1000;
  }
  EXPECT_EQ(a.level(), 0);  // asked first
  EXPECT_EQ(b.level(), 1);
  EXPECT_EQ(b.take_backs_held(), 1u);
  // Still no room: b stays, asking every calm window.
  budget->Update(t - 1000, 1490, 1500);
  for (SpeedControl* c : {&a, &b}) Second(*c, t, 8);
  t += 1000;
  EXPECT_EQ(b.level(), 1);
  EXPECT_EQ(b.take_backs_held(), 2u);
  // Room: the next calm window takes it back, with no new calm stretch.
  budget->Update(t - 1000, 1400, 1500);
  for (SpeedControl* c : {&a, &b}) Second(*c, t, 8);
  t += 1000;
  EXPECT_EQ(b.level(), 0);
  EXPECT_EQ(b.steps_down(), 1u);
  EXPECT_EQ(a.take_backs_held(), 0u);  // granted at its first ask
}

// A lone 720p session's own work takes 0.4-0.5 of the frame interval on a small node: under
// `low` alone a level it took for a passing load (another process, a slow spell) never came
// back (measured: level 6 of 6 for the 20 s after a 12-s hog). While the node has room (its CPU
// under its budget) a window is calm under low_with_room instead; without room, as before.
TEST(SpeedControl, WhileTheNodeHasRoomALevelComesBackAtAHigherP90) {
  SpeedControlConfig cfg = NoWarmup();
  cfg.calm_ms = 5000;
  cfg.low = 0.4;             // 13.2 ms of the 33-ms budget
  cfg.low_with_room = 0.55;  // 18.15 ms
  SpeedControl c(cfg, kBudget, 4);
  double t = Second(c, 0, 30);
  t = Second(c, t, 30);
  ASSERT_EQ(c.level(), 2);
  // 16.5 ms: calm only with room. Without it the level stays, however long.
  for (int i = 0; i < 12; ++i) t = Second(c, t, 16.5);
  EXPECT_EQ(c.level(), 2);
  c.set_node_room(true);
  for (int i = 0; i < 4; ++i) t = Second(c, t, 16.5);
  EXPECT_EQ(c.level(), 2) << "a calm stretch is still calm_ms long";
  t = Second(c, t, 16.5);
  t = Second(c, t, 16.5);
  EXPECT_EQ(c.level(), 1);
  // With room, a p90 over low_with_room (19.8 ms) is not calm: the level stays.
  for (int i = 0; i < 12; ++i) t = Second(c, t, 19.8);
  EXPECT_EQ(c.level(), 1);
  // The room gone in mid-stretch: the stretch ends with it.
  for (int i = 0; i < 4; ++i) t = Second(c, t, 16.5);
  c.set_node_room(false);
  for (int i = 0; i < 4; ++i) t = Second(c, t, 16.5);
  EXPECT_EQ(c.level(), 1);
  // low_with_room at or under low: no such rule.
  SpeedControlConfig off = cfg;
  off.low_with_room = 0.3;
  SpeedControl d(off, kBudget, 4);
  d.set_node_room(true);
  double u = Second(d, 0, 30);
  ASSERT_EQ(d.level(), 1);
  for (int i = 0; i < 12; ++i) u = Second(d, u, 16.5);
  EXPECT_EQ(d.level(), 1);
  for (int i = 0; i < 6; ++i) u = Second(d, u, 8);
  EXPECT_EQ(d.level(), 0);
  // At or over high: with room, any window that is not over is calm (0.65 x budget here).
  SpeedControlConfig wide = cfg;
  wide.low_with_room = 0.9;
  SpeedControl e(wide, kBudget, 4);
  double v = Second(e, 0, 30);
  ASSERT_EQ(e.level(), 1);
  for (int i = 0; i < 8; ++i) v = Second(e, v, 21.5);
  EXPECT_EQ(e.level(), 1) << "no room: 21.5 ms is not calm";
  e.set_node_room(true);
  for (int i = 0; i < 6; ++i) v = Second(e, v, 21.5);
  EXPECT_EQ(e.level(), 0);
}

// A session's first frames are late by themselves (its first keyframe and detection, the jitter
// buffer's first burst): the windows of its first warmup_ms are not judged, either way, and the
// ones after are, from the first frame's time on, not the control's construction.
TEST(SpeedControl, TheFirstSecondsAreNotJudged) {
  SpeedControlConfig cfg;
  EXPECT_DOUBLE_EQ(cfg.warmup_ms, 3000);  // the default
  SpeedControl c(cfg, kBudget, 4);
  double t = 10000;  // the first frame comes 10 s after the control was made
  t = Second(c, t, 60, 10);  // late and stale: a start-up burst
  t = Second(c, t, 60);
  EXPECT_EQ(c.level(), 0);
  EXPECT_EQ(c.warmup_windows(), 2u);
  t = Second(c, t, 8);  // the 3rd window ends at 3.0 s: judged (calm, nothing to give back)
  EXPECT_EQ(c.level(), 0);
  EXPECT_EQ(c.warmup_windows(), 2u);
  t = Second(c, t, 30);  // overuse after the warm-up sheds as usual
  EXPECT_EQ(c.level(), 1);
  EXPECT_FALSE(c.overloaded());
  // With the grace off, the same start-up burst sheds at once.
  SpeedControl d(NoWarmup(), kBudget, 4);
  Second(d, 10000, 60, 10);
  EXPECT_EQ(d.level(), 1);
  EXPECT_EQ(d.warmup_windows(), 0u);
}

// A start from the node's load (SessionManager::StartLevel): taken while no window has been
// judged, even before the encoder exists (max level 0 then: it applies when the encoder's steps
// are known), never lowering a level, up to the last; refused once a window was judged; and
// given back by calm windows like a level taken for overuse.
TEST(SpeedControl, AStartLevelHoldsFromTheFirstFrameAndCalmTakesItBack) {
  SpeedControlConfig cfg;  // the default 3-s warm-up
  SpeedControl c(cfg, kBudget, 0);  // no encoder yet
  EXPECT_TRUE(c.warming_up());
  EXPECT_TRUE(c.StartAt(2));
  EXPECT_EQ(c.level(), 0);  // nothing to shed yet
  c.set_max_level(6);       // the encoder opened
  EXPECT_EQ(c.level(), 2);
  EXPECT_TRUE(c.StartAt(1));  // a lower start lowers nothing
  EXPECT_EQ(c.level(), 2);
  EXPECT_EQ(c.start_level(), 2);
  EXPECT_TRUE(c.StartAt(9));  // past the last level: the last
  EXPECT_EQ(c.level(), 6);
  SpeedControl d(cfg, kBudget, 4);
  ASSERT_TRUE(d.StartAt(2));
  double t = 0;
  for (int i = 0; i < 2; ++i) t = Second(d, t, 60, 10);  // the warm-up: late, not judged
  EXPECT_EQ(d.level(), 2);
  EXPECT_TRUE(d.warming_up());
  t = Second(d, t, 8);  // the first judged window (ends at 3.0 s): calm
  EXPECT_FALSE(d.warming_up());
  EXPECT_FALSE(d.StartAt(4));  // too late for a start
  EXPECT_EQ(d.level(), 2);
  for (int i = 0; i < 5; ++i) t = Second(d, t, 8);  // 5 s calm (shed_calm_s): one level back
  EXPECT_EQ(d.level(), 1);
  EXPECT_EQ(d.steps_up(), 0u);  // a start is not counted as overuse
  EXPECT_EQ(d.steps_down(), 1u);
  for (int i = 0; i < 5; ++i) t = Second(d, t, 8);
  EXPECT_EQ(d.level(), 0);
  // With shedding off, no start is taken.
  SpeedControlConfig off;
  off.enabled = false;
  SpeedControl e(off, kBudget, 4);
  EXPECT_FALSE(e.StartAt(2));
  EXPECT_EQ(e.Level(0), 0);
}

TEST(SpeedControl, DisabledStaysAtTheConfiguredLevel) {
  SpeedControlConfig cfg;
  cfg.enabled = false;
  SpeedControl c(cfg, kBudget, 4);
  double t = 0;
  for (int i = 0; i < 5; ++i) t = Second(c, t, 60, 10);
  EXPECT_EQ(c.Level(t), 0);
}

TEST(SpeedControl, ANewEncoderWithFewerStepsClampsTheLevel) {
  SpeedControl c(NoWarmup(), kBudget, 4);
  double t = 0;
  for (int i = 0; i < 4; ++i) t = Second(c, t, 30);
  ASSERT_EQ(c.level(), 4);
  c.set_max_level(2);
  EXPECT_EQ(c.level(), 2);
}

TEST(SpeedControl, RejectsAbsurdSettings) {
  SpeedControlConfig c;
  EXPECT_TRUE(Validate(c).ok());
  c.low = 0.8;  // above high
  EXPECT_FALSE(Validate(c).ok());
  c = {};
  c.window_ms = 10;
  EXPECT_FALSE(Validate(c).ok());
  c = {};
  c.calm_ms = 100000;  // above calm_max_ms
  EXPECT_FALSE(Validate(c).ok());
  c = {};
  c.warmup_ms = -1;
  EXPECT_FALSE(Validate(c).ok());
  c = {};
  c.low_with_room = 0;
  EXPECT_FALSE(Validate(c).ok());
  c.low_with_room = 6;
  EXPECT_FALSE(Validate(c).ok());
  c.low_with_room = 0.3;  // under low: allowed, and no such rule
  EXPECT_TRUE(Validate(c).ok());
  c.low_with_room = 0.9;  // over high: allowed, any window not over is calm (below)
  EXPECT_TRUE(Validate(c).ok());
}

// judge_early: a window whose frames already decide that they fail the budget is judged then,
// with the verdict its end would give; one they do not decide waits for its end, as without the
// option. Frames every 1000/30 ms; `late` of a window's first frames leave after `late_ms` (40:
// past the 33-ms budget), the others after 10.
struct EarlyRun {
  SpeedControl c;
  int frame = 0;  // times from the frame's index, exact at whole seconds (frame 30: 1000 ms)
  explicit EarlyRun(bool early, double warmup_ms = 0)
      : c([&] {
          SpeedControlConfig cfg;
          cfg.warmup_ms = warmup_ms;
          cfg.judge_early = early;
          return cfg;
        }(), kBudget, 6) {}
  // `frames` frames, the first `late` of them late; the level after each frame.
  std::vector<int> Frames(int frames, int late, double late_ms = 40) {
    std::vector<int> levels;
    for (int i = 0; i < frames; ++i, ++frame) {
      const double t = frame * 1000.0 / 30;
      c.OnFrame(t, i < late ? late_ms : 10.0);
      levels.push_back(c.Level(t));
    }
    return levels;
  }
};

TEST(SpeedControl, JudgedEarlyOnceTheFramesDecideTheWindow) {
  EarlyRun on(true), off(false);
  // A full calm window (frames 0-30, judged at 1000 ms); each window after it holds 30 frames.
  on.Frames(31, 0);
  off.Frames(31, 0);
  // Late from here on (frames 31-60, the second window from 1000 ms). A window of 31 is over
  // from its 4th late frame (p90: the 28th of 31); judged at the first frame at least 250 ms
  // into the window (frame 38, 1267 ms).
  std::vector<int> a = on.Frames(30, 30), b = off.Frames(30, 30);
  EXPECT_EQ(a[6], 0);
  EXPECT_EQ(a[7], 1) << "the first frame 250 ms into a window that four late frames decided";
  EXPECT_EQ(a[14], 1);
  EXPECT_EQ(a[15], 2) << "the next window (from 1267 ms), decided the same way at 1533 ms";
  EXPECT_EQ(b[7], 0);
  EXPECT_EQ(b[28], 0);
  EXPECT_EQ(b[29], 1) << "without the option, at the window's end (2000 ms)";
  EXPECT_GE(on.c.early_verdicts(), 2u);
  EXPECT_EQ(off.c.early_verdicts(), 0u);
  EXPECT_EQ(on.c.steps_up(), on.c.early_verdicts()) << "every step here came early";
}

TEST(SpeedControl, AWindowItsFramesDoNotDecideWaitsForItsEnd) {
  EarlyRun on(true);
  on.Frames(31, 0);
  // Three late frames of 30: the p90 (the 27th) is on time, so the window is not over at its
  // end, and nothing is taken before it either.
  std::vector<int> a = on.Frames(30, 3);
  for (int l : a) EXPECT_EQ(l, 0);
  EXPECT_EQ(on.c.early_verdicts(), 0u);
  // Four of 30: decided, early (at 250 ms into the window).
  a = on.Frames(30, 4);
  EXPECT_EQ(a[6], 0);
  EXPECT_EQ(a[7], 1);
  EXPECT_EQ(on.c.early_verdicts(), 1u);
  // Every frame late against 0.7 x budget but in time (30 ms): over at the window's end only,
  // the window that began with the early verdict (frame 68), 1000 ms later (frame 98).
  a = on.Frames(30, 30, /*late_ms=*/30);
  EXPECT_EQ(a[6], 1);
  EXPECT_EQ(a[7], 2) << "judged at its end";
  EXPECT_EQ(a[29], 2);
  EXPECT_EQ(on.c.early_verdicts(), 1u);
}

TEST(SpeedControl, NoEarlyVerdictInTheWarmupNorBeforeAFullWindow) {
  EarlyRun fresh(true);
  // The first window has no length to go by: judged at its end, as without the option.
  std::vector<int> a = fresh.Frames(31, 31);
  EXPECT_EQ(a[29], 0);
  EXPECT_EQ(a[30], 1);
  EXPECT_EQ(fresh.c.early_verdicts(), 0u);

  EarlyRun warm(true, /*warmup_ms=*/3000);
  a = warm.Frames(90, 90);  // 3 s late from the first frame: windows in the warm-up are not judged
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], 0) << "frame " << i;
  EXPECT_EQ(warm.c.early_verdicts(), 0u);
  a = warm.Frames(30, 30);  // past it: the window ending at 3000 ms at its end, the next early
  EXPECT_EQ(a[0], 1) << "the window that ended at 3000 ms, judged at its end";
  EXPECT_EQ(a[7], 1);
  EXPECT_EQ(a[8], 2) << "250 ms into the window that began at 3000 ms";
  EXPECT_GE(warm.c.early_verdicts(), 1u);
}

}  // namespace
}  // namespace veil
