#include "server/capacity.h"
#include "server/session_manager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace veil {
namespace {

CapacityOptions TwoCores() {
  CapacityOptions o;
  o.cores = 2;
  o.cpu_share = 0.5;  // 1000 ms/s for sessions
  return o;
}

SessionLoad Session(Mode m, int w = 0, int h = 0, double fps = 0, VideoCodec codec = VideoCodec::kVp8) {
  SessionLoad s;
  s.codec = codec;
  s.mode = m;
  s.width = w;
  s.height = h;
  s.fps = fps;
  return s;
}

TEST(Capacity, CostScalesWithPixelsAndFrameRateFromThePrior) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}});
  // The prior: 1.5x a 10-ms VP8 transcode at 720p30 = 450 ms/s; half the pixels half; 60 fps
  // twice. H.264's: 1.6x.
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kAnonymize)), 1.5 * 10 * 30, 1e-9);
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kAnonymize, 1280, 720)), 450, 1e-9);
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kAnonymize, 640, 720)), 225, 1e-9);
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kAnonymize, 1280, 720, 60)), 900, 1e-9);
  // A session measured below the assumed rate is still counted at it (a publisher may speed up).
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kAnonymize, 1280, 720, 12)), 450, 1e-9);
  EXPECT_NEAR(PriorRatio(Mode::kAnonymize, true, VideoCodec::kH264), 1.6, 1e-9);
  // Bypass forwards (a decode, no encode) unless the node re-encodes it.
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kBypass)), 0.3 * 10 * 30, 1e-9);
  CapacityOptions reencode = TwoCores();
  reencode.bypass_forward = false;
  EXPECT_NEAR(CapacityModel(reencode, {{VideoCodec::kVp8, 10.0}}).CostMsPerS(Session(Mode::kBypass)), 1.6 * 10 * 30, 1e-9);
  EXPECT_EQ(m.Samples(VideoCodec::kVp8, Mode::kAnonymize), 0);
}

// A node whose detection costs more (or less) than the default's, which the anonymize prior
// holds: the difference per 720p frame is added to every codec's anonymize prior, scaled with
// pixels like the rest, until the sessions' own CPU replaces it; no other mode moves.
TEST(Capacity, TheConfiguredDetectionsExtraCostIsOnTheAnonymizePriorUntilLearned) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}, {VideoCodec::kH264, 20.0}});
  m.SetPriorDetectionExtraMs(4.0);
  EXPECT_DOUBLE_EQ(m.PriorDetectionExtraMs(), 4.0);
  // VP8: 1.5 x 10 + 4 = 19 ms a 720p frame (1.9x); H.264: 1.6 x 20 + 4 = 36 (1.8x).
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize)), 19, 1e-9);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.9, 1e-9);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize, 0, 0, 0, VideoCodec::kH264)), 36, 1e-9);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize, 640, 360)), 19.0 / 4, 1e-9);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kBypass)), 0.3 * 10, 1e-9);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kFullBlur)), 0.75 * 10, 1e-9);
  // Learned: the sessions' own figure, which holds their detection already.
  m.Learn(Session(Mode::kAnonymize), 15.0);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize)), 15, 1e-9);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize, 0, 0, 0, VideoCodec::kH264)), 36, 1e-9);  // not learned
  // A cheaper detection lowers the prior, by at most half of it.
  m.SetPriorDetectionExtraMs(-2.0);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize, 0, 0, 0, VideoCodec::kH264)), 30, 1e-9);
  m.SetPriorDetectionExtraMs(-100.0);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize, 0, 0, 0, VideoCodec::kH264)), 0.5 * 1.6 * 20, 1e-9);
  m.SetPriorDetectionExtraMs(std::nan(""));
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize, 0, 0, 0, VideoCodec::kH264)), 32, 1e-9);
}

TEST(Capacity, LearnsTheRatioFromMeasuredCpuPerFrame) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}, {VideoCodec::kH264, 20.0}});
  // 360p (a quarter of 720p) measured at 5 ms/frame: 2.0x a quarter of the 10-ms transcode.
  m.Learn(Session(Mode::kAnonymize, 640, 360), 5.0);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 2.0, 1e-9);
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kAnonymize)), 2.0 * 10 * 30, 1e-9);
  // Early samples average; the other modes and codecs keep their priors.
  m.Learn(Session(Mode::kAnonymize, 1280, 720), 30.0);  // 3.0x
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 2.5, 1e-9);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kBypass), 0.3, 1e-9);
  EXPECT_NEAR(m.Ratio(VideoCodec::kH264, Mode::kAnonymize), 1.6, 1e-9);
  // After many samples it follows a changed cost, a tenth of the way per sample.
  for (int i = 0; i < 200; ++i) m.Learn(Session(Mode::kAnonymize, 1280, 720), 15.0);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.5, 1e-3);
  const double before = m.Ratio(VideoCodec::kVp8, Mode::kAnonymize);
  m.Learn(Session(Mode::kAnonymize, 1280, 720), 25.0);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), before + 0.1 * (2.5 - before), 1e-9);
  // Nonsense is ignored.
  m.Learn(Session(Mode::kAnonymize, 1280, 720), 0);
  m.Learn(Session(Mode::kAnonymize, 1280, 720), -3);
  EXPECT_EQ(m.Samples(VideoCodec::kVp8, Mode::kAnonymize), 203);
}

// Above 80% of the node's cores the sessions contend and each frame reads costlier than it is,
// so such an interval teaches the model nothing (SessionManager::LearnCosts).
TEST(Capacity, AnIntervalAboveFourFifthsOfTheCoresIsSaturated) {
  CapacityModel two(TwoCores(), {{VideoCodec::kVp8, 10.0}});
  EXPECT_FALSE(two.Saturated(1600, 1000));  // exactly 0.8 x 2 cores x 1000 ms
  EXPECT_TRUE(two.Saturated(1601, 1000));
  EXPECT_FALSE(two.Saturated(1320, 1000));  // 12 forwarded H.264 sessions measured at 132%
  EXPECT_TRUE(two.Saturated(1690, 1000));   // 16 of them, 169%
  EXPECT_TRUE(two.Saturated(1700, 1050));   // the interval's own length counts: 1700 > 1680
  EXPECT_FALSE(two.Saturated(1700, 1100));  // 1700 < 1760
  EXPECT_FALSE(two.Saturated(5000, 0));     // no interval
  CapacityModel one(CapacityOptions{1, 0.6, 30, 1280, 720}, {{VideoCodec::kVp8, 10.0}});
  EXPECT_TRUE(one.Saturated(900, 1000));
  EXPECT_FALSE(one.Saturated(700, 1000));
}

TEST(Capacity, SessionsThatFitAndTheLimit) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}});
  EXPECT_NEAR(m.BudgetMsPerS(), 1000, 1e-9);
  // 1000 / 450 -> 2; bypass (forwarded) 1000 / 90 -> 11.
  EXPECT_EQ(m.CapacitySessions(VideoCodec::kVp8, Mode::kAnonymize), 2);
  EXPECT_EQ(m.CapacitySessions(VideoCodec::kVp8, Mode::kBypass), 11);
  // Learned at 8.33 ms/frame (250 ms/s at 30 fps): exactly 4 fit in 1000 ms/s, and they count.
  for (int i = 0; i < 5; ++i) m.Learn(Session(Mode::kAnonymize, 1280, 720), 250.0 / 30);
  EXPECT_EQ(m.CapacitySessions(VideoCodec::kVp8, Mode::kAnonymize), 4);
  // A node too small for one session still takes one.
  CapacityModel tiny(CapacityOptions{1, 0.05, 30, 1280, 720}, {{VideoCodec::kVp8, 30.0}});
  EXPECT_EQ(tiny.CapacitySessions(VideoCodec::kVp8, Mode::kAnonymize), 1);
  // The limit: 2 cores x 33.3 ms / 10 ms.
  EXPECT_NEAR(m.LimitSessions(VideoCodec::kVp8), 2 * (1000.0 / 30) / 10, 1e-9);
  // An unmeasured codec is costed as the dearest measured one.
  CapacityModel only_vp8(TwoCores(), {{VideoCodec::kVp8, 14.0}});
  EXPECT_NEAR(only_vp8.TranscodeMs(VideoCodec::kH264), 14.0, 1e-9);
}

// server.admit_p99_ms: a node with a session already past the mark at its p99 takes no more,
// whatever its CPU budget says, and names the worst session; off at 0.
TEST(Capacity, AdmissionByLatencyNamesTheWorstSession) {
  EXPECT_EQ(AdmitP99Refusal({}, 30), "");
  EXPECT_EQ(AdmitP99Refusal({{"a", 24.0}, {"b", 29.9}}, 30), "");
  const std::string why = AdmitP99Refusal({{"a", 31.0}, {"b", 36.5}, {"c", 12.0}}, 30);
  EXPECT_NE(why.find("session b's processing p99 is 36.5 ms over its last 5 s, above 30 ms (server.admit_p99_ms)"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.rfind("at capacity: ", 0), 0u) << "a capacity refusal (503 + Retry-After): " << why;
  EXPECT_EQ(AdmitP99Refusal({{"a", 31.0}}, 0), "") << "0: off";
}

// A session as the learner reads it: counters that only grow.
struct Reading {
  SessionReading r;
  explicit Reading(Mode m = Mode::kAnonymize, int w = 1280, int h = 720) {
    r.load.mode = m;
    r.load.width = w;
    r.load.height = h;
    r.load.fps = 30;
  }
  // One second of it: `frames` frames at `ms` of its threads' CPU each.
  Reading& Run(double ms, uint64_t frames = 30) {
    r.cpu_ms += ms * double(frames);
    r.frames += frames;
    return *this;
  }
  // The same, `encode_ms` of each frame's `ms` its encode at speed step `step`.
  Reading& RunEncoding(double ms, double encode_ms, int step, uint64_t frames = 30) {
    r.encode_cpu_ms[step] += encode_ms * double(frames);
    r.encode_frames[step] += frames;
    return Run(ms, frames);
  }
};

using Readings = std::map<std::string, SessionReading>;
constexpr double kNoContention = 1.0;  // the process's CPU = the sessions' threads' (share 1)

// Steps the learner once with these sessions; the process took `share` x their threads' CPU.
CostLearner::StepResult StepOnce(CostLearner& l, CapacityModel& m, std::map<std::string, Reading*> sessions,
                                 double thread_ms, double share = kNoContention) {
  Readings rs;
  for (auto& [id, s] : sessions) rs[id] = s->r;
  return l.Step(m, rs, thread_ms * share, 1000);
}

TEST(CostLearner, LearnsASessionFromItsFourthSecondOn) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}});
  CostLearner l;
  Reading a;
  // Its start-up: its first three seconds cost twice what it costs running, and teach nothing.
  EXPECT_EQ(StepOnce(l, m, {{"a", &a.Run(30)}}, 900).outcome, CostLearner::Outcome::kChanged);  // created
  for (int i = 0; i < 2; ++i) {
    const auto r = StepOnce(l, m, {{"a", &a.Run(30)}}, 900);
    EXPECT_EQ(r.outcome, CostLearner::Outcome::kLearned);
    EXPECT_EQ(r.learned, 0);
  }
  EXPECT_EQ(m.Samples(VideoCodec::kVp8, Mode::kAnonymize), 0);
  const auto r = StepOnce(l, m, {{"a", &a.Run(15)}}, 450);
  EXPECT_EQ(r.learned, 1);
  EXPECT_EQ(m.Samples(VideoCodec::kVp8, Mode::kAnonymize), 1);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.5, 1e-9);  // 15 ms a frame / 10-ms transcode
}

TEST(CostLearner, SharesOutTheProcessCpuBeyondTheSessionsThreadsUpToThreeTimes) {
  for (const auto& [share, ratio] : std::vector<std::pair<double, double>>{{2.0, 2.0}, {5.0, 3.0}, {0.5, 1.0}}) {
    CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}});
    CostLearner l;
    Reading a;
    for (int i = 0; i < 3; ++i) StepOnce(l, m, {{"a", &a.Run(10)}}, 300);
    // 10 ms a frame on its threads: inference and packetization elsewhere in the process double it
    // (share 2); a share of 5 is capped at 3; a process that read below its threads counts as 1.
    EXPECT_EQ(StepOnce(l, m, {{"a", &a.Run(10)}}, 300, share).learned, 1) << share;
    EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), ratio, 1e-9) << share;
  }
}

TEST(CostLearner, AnIntervalInWhichASessionStartedOrEndedTeachesNothing) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}});
  CostLearner l;
  Reading a, b, c;
  for (int i = 0; i < 3; ++i) StepOnce(l, m, {{"a", &a.Run(10)}, {"b", &b.Run(10)}}, 600);
  // c's set-up lands in the process's CPU (3x the threads here): nothing learned from a or b.
  auto r = StepOnce(l, m, {{"a", &a.Run(10)}, {"b", &b.Run(10)}, {"c", &c.Run(20)}}, 1200, 3.0);
  EXPECT_EQ(r.outcome, CostLearner::Outcome::kChanged);
  EXPECT_EQ(m.Samples(VideoCodec::kVp8, Mode::kAnonymize), 0);
  // c ends (its tear-down in the process's CPU): nothing again.
  r = StepOnce(l, m, {{"a", &a.Run(10)}, {"b", &b.Run(10)}}, 600, 3.0);
  EXPECT_EQ(r.outcome, CostLearner::Outcome::kChanged);
  EXPECT_EQ(m.Samples(VideoCodec::kVp8, Mode::kAnonymize), 0);
  // One starts and another ends in the same second: the same count of sessions, still a change.
  Reading d;
  r = StepOnce(l, m, {{"a", &a.Run(10)}, {"d", &d.Run(10)}}, 600, 3.0);
  EXPECT_EQ(r.outcome, CostLearner::Outcome::kChanged);
  // A steady second: a is learned at its 10 ms a frame; d is still warming up.
  r = StepOnce(l, m, {{"a", &a.Run(10)}, {"d", &d.Run(10)}}, 600);
  EXPECT_EQ(r.outcome, CostLearner::Outcome::kLearned);
  EXPECT_EQ(r.learned, 1);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.0, 1e-9);
}

TEST(CostLearner, ANewSessionUnderAnEndedOnesIdWarmsUpAgain) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}});
  CostLearner l;
  Reading a;
  for (int i = 0; i < 4; ++i) StepOnce(l, m, {{"a", &a.Run(10)}}, 300);
  ASSERT_EQ(m.Samples(VideoCodec::kVp8, Mode::kAnonymize), 1);
  Reading again;  // the same id, counters from zero
  EXPECT_EQ(StepOnce(l, m, {{"a", &again.Run(40)}}, 1200).outcome, CostLearner::Outcome::kChanged);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(StepOnce(l, m, {{"a", &again.Run(40)}}, 1200).learned, 0);
  EXPECT_EQ(m.Samples(VideoCodec::kVp8, Mode::kAnonymize), 1);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.0, 1e-9);
}

TEST(CostLearner, ASaturatedIntervalTeachesNothingAndIsCounted) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}});
  CostLearner l;
  Reading a, b, c;
  auto three = [&](double ms) {
    return std::map<std::string, Reading*>{{"a", &a.Run(ms)}, {"b", &b.Run(ms)}, {"c", &c.Run(ms)}};
  };
  for (int i = 0; i < 3; ++i) StepOnce(l, m, three(10), 900);
  // Three sessions at 18 ms a frame take 1620 ms a second of a 2-core node: over 0.8 x 2000.
  EXPECT_EQ(StepOnce(l, m, three(18), 1620).outcome, CostLearner::Outcome::kSaturated);
  EXPECT_EQ(l.saturated_steps(), 1);
  EXPECT_EQ(m.Samples(VideoCodec::kVp8, Mode::kAnonymize), 0);
  // At 17 ms a frame (1530 ms a second) they are learned.
  EXPECT_EQ(StepOnce(l, m, three(17), 1530).learned, 3);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.7, 1e-9);
  EXPECT_EQ(l.saturated_steps(), 1);
}

TEST(CostLearner, ASessionSheddingChangingModeWithoutASizeOrFramesIsLeftOut) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}});
  CostLearner l;
  Reading steady, shedding, switching(Mode::kBypass), unsized(Mode::kAnonymize, 0, 0), stalled;
  auto all = [&](uint64_t stalled_frames) {
    return std::map<std::string, Reading*>{{"steady", &steady.Run(10)},
                                           {"shedding", &shedding.Run(5)},
                                           {"switching", &switching.Run(4)},
                                           {"unsized", &unsized.Run(0, 0)},
                                           {"stalled", &stalled.Run(50, stalled_frames)}};
  };
  for (int i = 0; i < 3; ++i) StepOnce(l, m, all(30), 500);
  shedding.r.shed_level = 1;                 // a faster encoder, sparser detection (5 ms: below the model)
  switching.r.load.mode = Mode::kAnonymize;  // bypass until now: its second is half of each
  const auto r = StepOnce(l, m, all(9), 500);  // and "stalled" decoded 9 frames
  EXPECT_EQ(r.outcome, CostLearner::Outcome::kLearned);
  EXPECT_EQ(r.learned, 1);
  EXPECT_EQ(m.Samples(VideoCodec::kVp8, Mode::kAnonymize), 1);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.0, 1e-9);  // steady's 10 ms a frame
  EXPECT_EQ(m.Samples(VideoCodec::kVp8, Mode::kBypass), 0);
}

TEST(CostLearner, ASheddingSessionOnlyRaisesTheModel) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}});  // the prior: 1.5 x 10 = 15 ms a frame
  CostLearner l;
  Reading a;
  a.r.shed_level = 2;
  for (int i = 0; i < 3; ++i) StepOnce(l, m, {{"a", &a.Run(12)}}, 360);
  // Shedding at 12 ms a frame, under the model's 15: what it would cost unshed is unknown.
  EXPECT_EQ(StepOnce(l, m, {{"a", &a.Run(12)}}, 360).learned, 0);
  EXPECT_EQ(m.Samples(VideoCodec::kVp8, Mode::kAnonymize), 0);
  // Shedding and still at 30 ms a frame: the model is low whatever the unshed cost is.
  EXPECT_EQ(StepOnce(l, m, {{"a", &a.Run(30)}}, 900).learned, 1);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 3.0, 1e-9);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize, 640, 360)), 3.0 * 10 / 4, 1e-9);
  // Now at 25 ms (under 30) it teaches nothing; unshed, it would.
  EXPECT_EQ(StepOnce(l, m, {{"a", &a.Run(25)}}, 750).learned, 0);
  a.r.shed_level = 0;
  EXPECT_EQ(StepOnce(l, m, {{"a", &a.Run(25)}}, 750).learned, 1);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 2.75, 1e-9);
}

TEST(Capacity, PlansTheEncoderAtTheAdmitStepOnceThatStepWasMeasured) {
  CapacityOptions o = TwoCores();
  o.plan_speed_step = 1;
  // A 10-ms transcode of which the encode is 7 ms; the prior: 1.5 x 10 = 15 ms a frame.
  CapacityModel m(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}});
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 0), 7.0, 1e-9);
  EXPECT_EQ(m.EncodeMs(VideoCodec::kVp8, 1), -1);
  // Step 1 not measured yet: planned at the configured speed's cost.
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), 15, 1e-9);
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kAnonymize)), 15 * 30, 1e-9);
  // A 360p session's encodes at step 1: 1 ms a frame, 4 ms a 720p frame; 3 ms less than step 0's.
  m.LearnEncode(VideoCodec::kVp8, 1, 640, 360, 1.0);
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 1), 4.0, 1e-9);
  EXPECT_EQ(m.EncodeSamples(VideoCodec::kVp8, 1), 1);
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), 12, 1e-9);
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kAnonymize, 640, 360)), 12 * 30 / 4.0, 1e-9);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize)), 15, 1e-9);  // at the configured speed
  // Step 0 measured in a session (8 ms) replaces the transcode's prior: 4 ms planned off.
  m.LearnEncode(VideoCodec::kVp8, 0, 1280, 720, 8.0);
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), 11, 1e-9);
  // full_blur encodes a mosaic, whose steps its own sessions have not measured: nothing planned off.
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kFullBlur)), PriorRatio(Mode::kFullBlur) * 10, 1e-9);
  // A forwarding bypass session runs no encoder.
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kBypass)), 0.3 * 10, 1e-9);
  // Capacity counts the planned cost: 1000 ms/s / (11 x 30) = 3.03 -> 3; at step 0, 15 x 30 -> 2.
  EXPECT_EQ(m.CapacitySessions(VideoCodec::kVp8, Mode::kAnonymize), 3);
  EXPECT_EQ(m.CapacitySessions(VideoCodec::kVp8, Mode::kBypass), 11);
  // server.admit_speed_step 0 plans nothing away.
  o.plan_speed_step = 0;
  CapacityModel at0(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}});
  at0.LearnEncode(VideoCodec::kVp8, 1, 1280, 720, 4.0);
  EXPECT_NEAR(at0.PlannedMsPerFrame(Session(Mode::kAnonymize)), 15, 1e-9);
  EXPECT_EQ(at0.CapacitySessions(VideoCodec::kVp8, Mode::kAnonymize), 2);
  // Nor does a step that costs more than step 0, and no plan goes below a fifth of the full cost.
  o.plan_speed_step = 2;
  CapacityModel odd(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}});
  odd.LearnEncode(VideoCodec::kVp8, 2, 1280, 720, 9.0);
  EXPECT_NEAR(odd.PlannedMsPerFrame(Session(Mode::kAnonymize)), 15, 1e-9);
  odd.Learn(Session(Mode::kAnonymize, 1280, 720), 5.0);  // 0.5x: 5 ms a frame
  odd.LearnEncode(VideoCodec::kVp8, 0, 1280, 720, 30.0);
  EXPECT_NEAR(odd.PlannedMsPerFrame(Session(Mode::kAnonymize)), 1.0, 1e-9);
}

// server.shed_start_by_load: what a session costs at each step up to the plan step, and the
// lowest step at which the sessions starting together fit beside the settled ones.
TEST(Capacity, SessionsStartingTogetherBeginAtTheLowestStepThatFits) {
  CapacityOptions o = TwoCores();  // 1000 ms/s
  o.plan_speed_step = 2;
  // A 10-ms transcode, its encode 7 ms; the prior 1.5 x 10 = 15 ms a frame; the plan step's prior
  // share 0.5: 3.5 ms of the encode planned off, 11.5 ms.
  CapacityModel m(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}}, {}, {{VideoCodec::kVp8, 0.5}});
  const SessionLoad a = Session(Mode::kAnonymize);
  EXPECT_NEAR(m.MsPerFrameAtStep(a, 0), 15, 1e-9);
  EXPECT_NEAR(m.MsPerFrameAtStep(a, 2), 11.5, 1e-9);
  EXPECT_NEAR(m.MsPerFrameAtStep(a, 5), 11.5, 1e-9);  // past the plan step: the plan step's
  EXPECT_EQ(m.MsPerFrameAtStep(a, 1), -1);            // not measured
  for (int i = 0; i < CapacityModel::kMinPlanSamples - 1; ++i) m.LearnEncode(VideoCodec::kVp8, 1, 1280, 720, 5.0);
  EXPECT_EQ(m.MsPerFrameAtStep(a, 1), -1) << "9 seconds are too few";
  m.LearnEncode(VideoCodec::kVp8, 1, 1280, 720, 5.0);
  EXPECT_NEAR(m.MsPerFrameAtStep(a, 1), 13, 1e-9);  // 2 ms of the encode saved
  EXPECT_NEAR(m.MsPerFrameAtStep(Session(Mode::kAnonymize, 640, 360), 1), 3.25, 1e-9);  // a quarter of the pixels
  EXPECT_NEAR(m.MsPerFrameAtStep(Session(Mode::kBypass), 1), 3, 1e-9);  // forwarding: no encoder, 0.3 x 10
  // A step that saved less than nothing counts as step 0's; none below the plan step's.
  for (int i = 0; i < CapacityModel::kMinPlanSamples; ++i) m.LearnEncode(VideoCodec::kVp8, 1, 1280, 720, 30.0);
  EXPECT_NEAR(m.MsPerFrameAtStep(a, 1), 15, 1e-9);
  // Two sessions starting, at 30 fps, that cost 840, 720 and 630 ms/s at steps 0, 1, 2.
  const std::vector<double> two = {840, 720, 630};
  EXPECT_EQ(LowestStepThatFits(100, two, 1000), 0);
  EXPECT_EQ(LowestStepThatFits(160, two, 1000), 0);   // 1000: just fits
  EXPECT_EQ(LowestStepThatFits(250, two, 1000), 1);
  EXPECT_EQ(LowestStepThatFits(300, two, 1000), 2);
  EXPECT_EQ(LowestStepThatFits(800, two, 1000), 2);   // nothing fits: the plan step, not more
  EXPECT_EQ(LowestStepThatFits(250, {840, -1, 630}, 1000), 2);  // step 1 not known: skipped
  EXPECT_EQ(LowestStepThatFits(0, {840}, 500), 0);    // the plan step is 0
}

// With the startup's pair of standalone encodes (step 0 and the plan step on the same pictures),
// the plan saves that pair's share of step 0's encode cost from the start, and while the
// sessions' own figures at the plan step are few or save less.
TEST(Capacity, PlansTheEncoderStepWithTheStandalonePairsShare) {
  CapacityOptions o = TwoCores();
  o.plan_speed_step = 1;
  // Step 0's encode 7 ms; step 1's took 0.8 of step 0's on the same pictures: 1.4 ms saved.
  CapacityModel m(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}}, {{VideoCodec::kVp8, 0.8}});
  EXPECT_NEAR(m.PlanEncodeRatio(VideoCodec::kVp8), 0.8, 1e-9);
  EXPECT_EQ(m.PlanEncodeRatio(VideoCodec::kH264), -1);  // not timed
  const double prior = PriorRatio(Mode::kAnonymize) * 10;
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), prior - 1.4, 1e-9);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize)), prior, 1e-9);  // at the configured speed
  // The sessions' step 0 (8 ms) sets what the share is of: 1.6 ms saved.
  m.LearnEncode(VideoCodec::kVp8, 0, 1280, 720, 8.0);
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), prior - 1.6, 1e-9);
  // Their step 1 read dearer than step 0 (shedding after cuts): reported, not planned with.
  m.LearnEncode(VideoCodec::kVp8, 1, 1280, 720, 9.0);
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 1), 9.0, 1e-9);
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), prior - 1.6, 1e-9);
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kBypass)), PriorRatio(Mode::kBypass) * 10, 1e-9);  // forwards
  // A plan step timed dearer than step 0 saves nothing; plan step 0 saves nothing.
  CapacityModel dear(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}}, {{VideoCodec::kVp8, 1.07}});
  EXPECT_NEAR(dear.PlanEncodeRatio(VideoCodec::kVp8), 1.0, 1e-9);
  EXPECT_NEAR(dear.PlannedMsPerFrame(Session(Mode::kAnonymize)), prior, 1e-9);
  o.plan_speed_step = 0;
  CapacityModel at0(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}}, {{VideoCodec::kVp8, 0.8}});
  EXPECT_NEAR(at0.PlannedMsPerFrame(Session(Mode::kAnonymize)), prior, 1e-9);
}

// The transcode timed again (server.retime_s): the figure is the cheapest of the last three
// timings, startup's among them; the priors and the limit follow it, a learned cost keeps its CPU
// per frame, and the encode part and the plan step's share come with the timing that is kept.
TEST(Capacity, ATranscodeTimedAgainCountsAsTheCheapestOfTheLastThree) {
  CapacityOptions o = TwoCores();
  o.plan_speed_step = 1;
  // Startup read 14 ms (a burst of other work), its encode 10 ms, the plan step 0.9 of it.
  CapacityModel m(o, {{VideoCodec::kVp8, 14.0}}, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 0.9}});
  m.Learn(Session(Mode::kAnonymize, 1280, 720), 21.0);  // 1.5x the 14-ms figure
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.5, 1e-9);
  EXPECT_EQ(m.KeptTimings(VideoCodec::kVp8), std::vector<double>{14.0});
  // Timed again at 10 ms (encode 7, share 0.8): the cheapest of 14 and 10.
  m.Retime(VideoCodec::kVp8, {10.0, 7.0, 0.8, {}});
  EXPECT_EQ(m.KeptTimings(VideoCodec::kVp8), (std::vector<double>{14.0, 10.0}));
  EXPECT_NEAR(m.TranscodeMs(VideoCodec::kVp8), 10.0, 1e-9);
  EXPECT_NEAR(m.LimitSessions(VideoCodec::kVp8), 2 * (1000.0 / 30) / 10, 1e-9);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kBypass)), PriorRatio(Mode::kBypass) * 10, 1e-9);  // the prior follows
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize)), 21.0, 1e-9);  // the learned cost stays
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 2.1, 1e-9);
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 0), 7.0, 1e-9);
  EXPECT_NEAR(m.PlanEncodeRatio(VideoCodec::kVp8), 0.8, 1e-9);
  // Planned: 21 less the step's share of step 0's encode, 0.2 x 7.
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), 21.0 - 1.4, 1e-9);
  // Two slower reads: 10 is still among the last three.
  m.Retime(VideoCodec::kVp8, {13.0, 9.0, 0.85, {}});
  m.Retime(VideoCodec::kVp8, {12.0, 8.5, 0.85, {}});
  EXPECT_EQ(m.KeptTimings(VideoCodec::kVp8), (std::vector<double>{10.0, 13.0, 12.0}));
  EXPECT_NEAR(m.TranscodeMs(VideoCodec::kVp8), 10.0, 1e-9);
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 0), 7.0, 1e-9);
  // A third pushes it out: the machine stayed slower. The cheapest left, 12 ms, with its encode
  // part and share; the learned cost still 21 ms a frame (1.75x).
  m.Retime(VideoCodec::kVp8, {12.5, 9.5, 0.9, {}});
  EXPECT_EQ(m.KeptTimings(VideoCodec::kVp8), (std::vector<double>{13.0, 12.0, 12.5}));
  EXPECT_NEAR(m.TranscodeMs(VideoCodec::kVp8), 12.0, 1e-9);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kBypass)), PriorRatio(Mode::kBypass) * 12, 1e-9);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize)), 21.0, 1e-9);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.75, 1e-9);
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 0), 8.5, 1e-9);
  EXPECT_NEAR(m.PlanEncodeRatio(VideoCodec::kVp8), 0.85, 1e-9);
  // Learning goes on against the new figure: a sample of 24 ms a frame is 2.0x of 12.
  m.Learn(Session(Mode::kAnonymize, 1280, 720), 24.0);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize)), 22.5, 1e-9);  // (21 + 24) / 2: two samples average
  // What is kept across restarts is the same CPU per frame.
  const CapacityMemory mem = m.Memory();
  ASSERT_EQ(mem.costs.size(), 1u);
  EXPECT_NEAR(mem.costs[0].ratio * mem.costs[0].transcode_ms, 22.5, 1e-9);
  // Nonsense is ignored; a codec not timed at startup is not timed now.
  m.Retime(VideoCodec::kVp8, {0, 0, 0, {}});
  m.Retime(VideoCodec::kVp8, {-3, 1, 0.5, {}});
  EXPECT_EQ(m.KeptTimings(VideoCodec::kVp8).size(), 3u);
  EXPECT_NEAR(m.TranscodeMs(VideoCodec::kVp8), 12.0, 1e-9);
  m.Retime(VideoCodec::kH264, {5.0, 3.0, 0.5, {}});
  EXPECT_TRUE(m.KeptTimings(VideoCodec::kH264).empty());
  EXPECT_NEAR(m.TranscodeMs(VideoCodec::kH264), 12.0, 1e-9);  // an unmeasured codec: the dearest measured
}

// How long an idle node waits to time its transcode again: server.retime_first_s (at most
// retime_s) until three timings are kept, startup's among them; retime_s after; never when
// retime_s is 0.
TEST(Capacity, AnIdleNodeRetimesSoonerUntilItKeepsThreeTimings) {
  EXPECT_EQ(RetimeWaitS(60, 5, 1), 5);  // startup's timing alone
  EXPECT_EQ(RetimeWaitS(60, 5, 2), 5);
  EXPECT_EQ(RetimeWaitS(60, 5, CapacityModel::kKeptTimings), 60);
  EXPECT_EQ(RetimeWaitS(60, 0, 1), 60);  // off: retime_s throughout
  EXPECT_EQ(RetimeWaitS(2, 5, 1), 2);    // never slower than retime_s
  EXPECT_EQ(RetimeWaitS(0, 5, 1), 0);    // timed at startup only
}

// The sessions' own ratio at the plan step, once both steps have kMinPlanSamples seconds, is
// planned with where it saves more than the standalone pair (the synthetic pan is easier on
// motion search than camera pictures); where it saves less, the pair's stands.
TEST(Capacity, PlansWithTheSessionsOwnStepShareWhenItSavesMore) {
  CapacityOptions o = TwoCores();
  o.plan_speed_step = 1;
  // Step 0's encode 7 ms at startup; the pair: step 1 took 0.95 of step 0.
  CapacityModel m(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}}, {{VideoCodec::kVp8, 0.95}});
  const double prior = PriorRatio(Mode::kAnonymize) * 10;
  EXPECT_EQ(m.SessionsPlanEncodeRatio(VideoCodec::kVp8), -1);
  // The sessions: 8 ms at step 0, 6 at step 1 (0.75), one second short of kMinPlanSamples at step 1.
  for (int i = 0; i < CapacityModel::kMinPlanSamples; ++i) m.LearnEncode(VideoCodec::kVp8, 0, 1280, 720, 8.0);
  for (int i = 0; i + 1 < CapacityModel::kMinPlanSamples; ++i) m.LearnEncode(VideoCodec::kVp8, 1, 1280, 720, 6.0);
  EXPECT_EQ(m.SessionsPlanEncodeRatio(VideoCodec::kVp8), -1);
  EXPECT_NEAR(m.PlanEncodeRatio(VideoCodec::kVp8), 0.95, 1e-9);
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), prior - 8 * 0.05, 1e-9);
  // The tenth second: 0.75 saves more than 0.95, 2 ms of step 0's 8 planned off.
  m.LearnEncode(VideoCodec::kVp8, 1, 640, 360, 1.5);  // 6 ms a 720p frame
  EXPECT_NEAR(m.SessionsPlanEncodeRatio(VideoCodec::kVp8), 0.75, 1e-9);
  EXPECT_NEAR(m.PlanEncodeRatio(VideoCodec::kVp8), 0.75, 1e-9);
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), prior - 2, 1e-9);
  // Without a startup pair (not timed), the sessions' alone.
  CapacityModel solo(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}});
  for (int i = 0; i < CapacityModel::kMinPlanSamples; ++i) {
    solo.LearnEncode(VideoCodec::kVp8, 0, 1280, 720, 8.0);
    solo.LearnEncode(VideoCodec::kVp8, 1, 1280, 720, 6.0);
  }
  EXPECT_NEAR(solo.PlanEncodeRatio(VideoCodec::kVp8), 0.75, 1e-9);
  // Sessions whose step 1 read dearer than the pair's share (shedding on hard frames): the pair's.
  CapacityModel dear(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}}, {{VideoCodec::kVp8, 0.9}});
  for (int i = 0; i < CapacityModel::kMinPlanSamples; ++i) {
    dear.LearnEncode(VideoCodec::kVp8, 0, 1280, 720, 8.0);
    dear.LearnEncode(VideoCodec::kVp8, 1, 1280, 720, 8.5);
  }
  EXPECT_NEAR(dear.SessionsPlanEncodeRatio(VideoCodec::kVp8), 8.5 / 8.0, 1e-9);
  EXPECT_NEAR(dear.PlanEncodeRatio(VideoCodec::kVp8), 0.9, 1e-9);
  EXPECT_NEAR(dear.PlannedMsPerFrame(Session(Mode::kAnonymize)), prior - 8 * 0.1, 1e-9);
  // Plan step 0: nothing planned off, whatever the sessions measured.
  o.plan_speed_step = 0;
  CapacityModel at0(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}}, {{VideoCodec::kVp8, 0.8}});
  for (int i = 0; i < CapacityModel::kMinPlanSamples; ++i) {
    at0.LearnEncode(VideoCodec::kVp8, 0, 1280, 720, 8.0);
    at0.LearnEncode(VideoCodec::kVp8, 1, 1280, 720, 4.0);
  }
  EXPECT_NEAR(at0.PlannedMsPerFrame(Session(Mode::kAnonymize)), prior, 1e-9);
}

// Before the sessions measured the plan step, a prior share stands in for theirs (where it saves
// more than the startup pair); their own figure replaces it once measured, even when it saves less.
TEST(Capacity, ThePriorShareStandsInForTheSessionsUntilTheyMeasuredIt) {
  CapacityOptions o = TwoCores();
  o.plan_speed_step = 2;
  CapacityModel m(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}}, {{VideoCodec::kVp8, 0.96}},
                  {{VideoCodec::kVp8, 0.8}});
  const double prior = PriorRatio(Mode::kAnonymize) * 10;
  EXPECT_NEAR(m.PlanEncodeRatio(VideoCodec::kVp8), 0.8, 1e-9);
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), prior - 7 * 0.2, 1e-9);
  // The sessions: 8 ms at step 0, 7.2 at step 2 (0.9): theirs, not the prior's; the pair's 0.96
  // saves less still.
  for (int i = 0; i < CapacityModel::kMinPlanSamples; ++i) {
    m.LearnEncode(VideoCodec::kVp8, 0, 1280, 720, 8.0);
    m.LearnEncode(VideoCodec::kVp8, 2, 1280, 720, 7.2);
  }
  EXPECT_NEAR(m.PlanEncodeRatio(VideoCodec::kVp8), 0.9, 1e-9);
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), prior - 8 * 0.1, 1e-9);
  // A prior that saves less than the pair: the pair's.
  CapacityModel low(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}}, {{VideoCodec::kVp8, 0.7}},
                    {{VideoCodec::kVp8, 0.8}});
  EXPECT_NEAR(low.PlanEncodeRatio(VideoCodec::kVp8), 0.7, 1e-9);
  // No pair timed: the prior alone.
  CapacityModel solo(o, {{VideoCodec::kH264, 10.0}}, {{VideoCodec::kH264, 7.0}}, {}, {{VideoCodec::kH264, 0.4}});
  EXPECT_NEAR(solo.PlanEncodeRatio(VideoCodec::kH264), 0.4, 1e-9);
  EXPECT_EQ(solo.PlanEncodeRatio(VideoCodec::kVp8), -1);
}

// The plan step is held to each codec's ladder: x264 from veryfast has three steps (0-2), so a
// plan step of 3 plans H.264 at its last step, 2, and what its sessions measured there counts
// (without the hold it would look for step 3's encodes, which no H.264 session ever takes, and
// plan the configured speed's full cost). VP8's ladder has five: it plans at 3.
TEST(Capacity, ThePlanStepIsHeldToEachCodecsLadder) {
  CapacityOptions o = TwoCores();
  o.plan_speed_step = 3;
  o.last_speed_step = {{VideoCodec::kVp8, 4}, {VideoCodec::kH264, 2}};
  EXPECT_EQ(PlanStepOf(o, VideoCodec::kVp8), 3);
  EXPECT_EQ(PlanStepOf(o, VideoCodec::kH264), 2);
  CapacityModel m(o, {{VideoCodec::kVp8, 10.0}, {VideoCodec::kH264, 12.0}});
  EXPECT_EQ(m.PlanStep(VideoCodec::kH264), 2);
  const double vp8 = PriorRatio(Mode::kAnonymize) * 10, h264 = PriorRatio(Mode::kAnonymize, true, VideoCodec::kH264) * 12;
  for (int i = 0; i < CapacityModel::kMinPlanSamples; ++i) {
    m.LearnEncode(VideoCodec::kH264, 0, 1280, 720, 9.0);
    m.LearnEncode(VideoCodec::kH264, 2, 1280, 720, 3.6);  // ultrafast: 0.4 of veryfast
    m.LearnEncode(VideoCodec::kVp8, 0, 1280, 720, 8.0);
    m.LearnEncode(VideoCodec::kVp8, 2, 1280, 720, 6.4);  // 0.8: not the plan step
    m.LearnEncode(VideoCodec::kVp8, 3, 1280, 720, 5.6);  // 0.7
  }
  const SessionLoad h = Session(Mode::kAnonymize, 0, 0, 0, VideoCodec::kH264), v = Session(Mode::kAnonymize);
  EXPECT_NEAR(m.PlanEncodeRatio(VideoCodec::kH264), 0.4, 1e-9);
  EXPECT_NEAR(m.PlannedMsPerFrame(h), h264 - 9 * 0.6, 1e-9);
  EXPECT_NEAR(m.PlanEncodeRatio(VideoCodec::kVp8), 0.7, 1e-9);
  EXPECT_NEAR(m.PlannedMsPerFrame(v), vp8 - 8 * 0.3, 1e-9);
  // A step at or past a codec's plan step costs the planned figure; one before it, its own.
  EXPECT_NEAR(m.MsPerFrameAtStep(h, 3), m.PlannedMsPerFrame(h), 1e-9);
  EXPECT_NEAR(m.MsPerFrameAtStep(v, 2), vp8 - 8 * 0.2, 1e-9);
  // A ladder of one step (libvpx's own adaptive speed): nothing planned away.
  o.last_speed_step[VideoCodec::kVp8] = 0;
  EXPECT_EQ(PlanStepOf(o, VideoCodec::kVp8), 0);
  CapacityModel flat(o, {{VideoCodec::kVp8, 10.0}});
  EXPECT_NEAR(flat.PlannedMsPerFrame(v), vp8, 1e-9);
  // No ladder given: the plan step as configured.
  EXPECT_EQ(PlanStepOf(TwoCores(), VideoCodec::kH264), TwoCores().plan_speed_step);
}

// A full_blur session encodes a whole-frame mosaic: its encodes per speed step are learned apart
// from the camera picture's, and its plan step saves only what full_blur sessions measured it
// saving; before they have, nothing (the standalone pair and the prior are camera pictures; on
// a mosaic VP8's faster steps saved nothing, x264's half).
TEST(Capacity, AMosaicPicturesPlanStepSavesOnlyWhatFullBlurSessionsMeasured) {
  CapacityOptions o = TwoCores();
  o.plan_speed_step = 2;
  // Transcode 10 ms, its encode 7; the pair saved a fifth at step 2, the prior too.
  CapacityModel m(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}}, {{VideoCodec::kVp8, 0.8}},
                  {{VideoCodec::kVp8, 0.8}});
  const double blur = PriorRatio(Mode::kFullBlur) * 10, anon = PriorRatio(Mode::kAnonymize) * 10;
  const double h264_blur_ms = PriorRatio(Mode::kFullBlur, true, VideoCodec::kH264) * 10;
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), anon - 7 * 0.2, 1e-9);
  EXPECT_EQ(m.PlanEncodeRatio(VideoCodec::kVp8, EncodePicture::kMosaic), 1);
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kFullBlur)), blur, 1e-9) << "nothing planned away yet";
  // Camera pictures' steps measured (0.75): anonymize plans with them, full_blur does not.
  for (int i = 0; i < CapacityModel::kMinPlanSamples; ++i) {
    m.LearnEncode(VideoCodec::kVp8, 0, 1280, 720, 8.0);
    m.LearnEncode(VideoCodec::kVp8, 2, 1280, 720, 6.0);
  }
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), anon - 8 * 0.25, 1e-9);
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kFullBlur)), blur, 1e-9);
  EXPECT_EQ(m.EncodeSamples(VideoCodec::kVp8, 0, EncodePicture::kMosaic), 0);
  // A mosaic's step 0 not measured yet: the camera picture's, the dearer.
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 0, EncodePicture::kMosaic), 8.0, 1e-9);
  EXPECT_EQ(m.EncodeMs(VideoCodec::kVp8, 2, EncodePicture::kMosaic), -1);
  // full_blur sessions measure their own: 5.6 ms at step 0, 5.5 at step 2 (VP8 on a mosaic, one
  // second short at step 2 first: still nothing).
  for (int i = 0; i < CapacityModel::kMinPlanSamples; ++i) m.LearnEncode(VideoCodec::kVp8, 0, 1280, 720, 5.6, EncodePicture::kMosaic);
  for (int i = 0; i + 1 < CapacityModel::kMinPlanSamples; ++i)
    m.LearnEncode(VideoCodec::kVp8, 2, 1280, 720, 5.5, EncodePicture::kMosaic);
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kFullBlur)), blur, 1e-9);
  m.LearnEncode(VideoCodec::kVp8, 2, 1280, 720, 5.5, EncodePicture::kMosaic);
  EXPECT_NEAR(m.PlanEncodeRatio(VideoCodec::kVp8, EncodePicture::kMosaic), 5.5 / 5.6, 1e-9);
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kFullBlur)), blur - 0.1, 1e-9);
  // The camera picture's figures are as they were.
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 0), 8.0, 1e-9);
  EXPECT_NEAR(m.PlanEncodeRatio(VideoCodec::kVp8), 0.75, 1e-9);
  // A mosaic whose steps save more than the camera's (x264: 8 -> 4 ms) plans with its own half.
  CapacityModel h(o, {{VideoCodec::kH264, 10.0}}, {{VideoCodec::kH264, 7.0}}, {{VideoCodec::kH264, 0.8}},
                  {{VideoCodec::kH264, 0.8}});
  for (int i = 0; i < CapacityModel::kMinPlanSamples; ++i) {
    h.LearnEncode(VideoCodec::kH264, 0, 1280, 720, 8.0, EncodePicture::kMosaic);
    h.LearnEncode(VideoCodec::kH264, 2, 1280, 720, 4.0, EncodePicture::kMosaic);
  }
  EXPECT_NEAR(h.PlannedMsPerFrame(Session(Mode::kFullBlur, 0, 0, 0, VideoCodec::kH264)), h264_blur_ms - 4, 1e-9);
  const double h264_anon = PriorRatio(Mode::kAnonymize, true, VideoCodec::kH264) * 10;
  EXPECT_NEAR(h.PlannedMsPerFrame(Session(Mode::kAnonymize, 0, 0, 0, VideoCodec::kH264)), h264_anon - 7 * 0.2, 1e-9);
  // A mosaic prior stands in until its sessions measured the step: x264's 0.5 of step 0's encode
  // (the camera picture's 7 ms until a mosaic's is measured); then their own replaces it.
  CapacityModel hp(o, {{VideoCodec::kH264, 10.0}}, {{VideoCodec::kH264, 7.0}}, {{VideoCodec::kH264, 0.8}},
                   {{VideoCodec::kH264, 0.8}}, {{VideoCodec::kH264, 0.5}});
  const SessionLoad h264_blur = Session(Mode::kFullBlur, 0, 0, 0, VideoCodec::kH264);
  EXPECT_NEAR(hp.PlanEncodeRatio(VideoCodec::kH264, EncodePicture::kMosaic), 0.5, 1e-9);
  EXPECT_NEAR(hp.PlannedMsPerFrame(h264_blur), h264_blur_ms - 3.5, 1e-9);
  for (int i = 0; i < CapacityModel::kMinPlanSamples; ++i) {
    hp.LearnEncode(VideoCodec::kH264, 0, 1280, 720, 6.0, EncodePicture::kMosaic);
    hp.LearnEncode(VideoCodec::kH264, 2, 1280, 720, 4.8, EncodePicture::kMosaic);
  }
  EXPECT_NEAR(hp.PlanEncodeRatio(VideoCodec::kH264, EncodePicture::kMosaic), 0.8, 1e-9);
  EXPECT_NEAR(hp.PlannedMsPerFrame(h264_blur), h264_blur_ms - 1.2, 1e-9);
  // VP8's mosaic prior saves nothing.
  CapacityModel vp(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}}, {{VideoCodec::kVp8, 0.8}},
                   {{VideoCodec::kVp8, 0.8}}, {{VideoCodec::kVp8, PriorPlanEncodeRatio(VideoCodec::kVp8, 2, true, EncodePicture::kMosaic)}});
  EXPECT_NEAR(vp.PlannedMsPerFrame(Session(Mode::kFullBlur)), blur, 1e-9);
}

// The learner files a session's encodes under the picture its mode encodes, and costs a
// full_blur session's faster steps at the mosaic's step 0.
TEST(CostLearner, AFullBlurSessionsEncodesAreLearnedAsAMosaics) {
  CapacityOptions o = TwoCores();
  o.plan_speed_step = 1;
  CapacityModel m(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}});
  CostLearner l;
  Reading blur(Mode::kFullBlur), anon(Mode::kAnonymize);
  blur.r.encoder_steps = anon.r.encoder_steps = 4;
  for (int i = 0; i < 3; ++i)
    StepOnce(l, m, {{"b", &blur.RunEncoding(8, 5, 0)}, {"a", &anon.RunEncoding(14, 8, 0)}}, 660);
  EXPECT_EQ(StepOnce(l, m, {{"b", &blur.RunEncoding(8, 5, 0)}, {"a", &anon.RunEncoding(14, 8, 0)}}, 660).learned, 2);
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 0, EncodePicture::kMosaic), 5.0, 1e-9);
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 0), 8.0, 1e-9);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kFullBlur), 0.8, 1e-9);
  // Shedding encoder speed alone: 7.5 ms a frame with 4.5-ms encodes at step 1; at the mosaic's
  // step 0 (5 ms) that is 8 ms a frame, not 11 at the camera picture's 8.
  blur.r.shed_level = 1;
  EXPECT_EQ(StepOnce(l, m, {{"b", &blur.RunEncoding(7.5, 4.5, 1)}, {"a", &anon.RunEncoding(14, 8, 0)}}, 645).learned, 2);
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 1, EncodePicture::kMosaic), 4.5, 1e-9);
  EXPECT_EQ(m.EncodeSamples(VideoCodec::kVp8, 1), 0) << "nothing filed under the camera picture";
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kFullBlur), 0.8, 1e-9);
}

// The plan step's share taken within the same seconds: a loaded second costs every encode more,
// and a faster step is mostly measured in loaded seconds, so the two steps' own figures read the
// share high (2026-12-06: VP8 step 2 0.94 of step 0 after an auto run, 0.75 after a ramp). Step 2
// beside step 0 in the same seconds gives the share under one contention.
TEST(CostLearner, ThePlanStepsShareIsTakenWithinTheSameSeconds) {
  CapacityOptions o = TwoCores();
  o.plan_speed_step = 2;
  CapacityModel m(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}});
  CostLearner l;
  Reading a, b, c;
  a.r.encoder_steps = b.r.encoder_steps = c.r.encoder_steps = 4;
  // Calm seconds: a alone at step 0, 8-ms encodes.
  for (int i = 0; i < 15; ++i) StepOnce(l, m, {{"a", &a.RunEncoding(11, 8, 0)}}, 330);
  // Loaded seconds: b joins at step 2 (its warm-up seconds teach nothing), a at step 1 for 6
  // seconds (step 2 measured, no step 0 beside it), then 9 seconds of a's 10-ms encodes at step 0
  // beside b's 7.5.
  for (int i = 0; i < 3; ++i) StepOnce(l, m, {{"a", &a.RunEncoding(13, 10, 0)}, {"b", &b.RunEncoding(10, 7.5, 2)}}, 690);
  for (int i = 0; i < 6; ++i) StepOnce(l, m, {{"a", &a.RunEncoding(12, 9, 1)}, {"b", &b.RunEncoding(10, 7.5, 2)}}, 660);
  EXPECT_EQ(m.PairedEncodeRatioSamples(VideoCodec::kVp8, 2), 0);
  for (int i = 0; i < 9; ++i) StepOnce(l, m, {{"a", &a.RunEncoding(13, 10, 0)}, {"b", &b.RunEncoding(10, 7.5, 2)}}, 690);
  EXPECT_EQ(m.PairedEncodeRatioSamples(VideoCodec::kVp8, 2), 9);
  EXPECT_EQ(m.EncodeSamples(VideoCodec::kVp8, 2), 15);
  const double separate = m.EncodeMs(VideoCodec::kVp8, 2) / m.EncodeMs(VideoCodec::kVp8, 0);
  EXPECT_GT(separate, 0.77) << "the steps' own figures: step 0 mostly calm, step 2 loaded";
  EXPECT_NEAR(m.SessionsPlanEncodeRatio(VideoCodec::kVp8), separate, 1e-9) << "9 seconds side by side: not yet";
  StepOnce(l, m, {{"a", &a.RunEncoding(13, 10, 0)}, {"b", &b.RunEncoding(10, 7.5, 2)}}, 690);
  EXPECT_EQ(m.PairedEncodeRatioSamples(VideoCodec::kVp8, 2), 10);
  EXPECT_NEAR(m.SessionsPlanEncodeRatio(VideoCodec::kVp8), 0.75, 1e-9);
  EXPECT_NEAR(m.PlanEncodeRatio(VideoCodec::kVp8), 0.75, 1e-9);
  // A second with step 2 alone pairs with nothing; a session that changed step within a second
  // pairs with itself (the two halves' frames weighed by their counts), per 720p frame.
  StepOnce(l, m, {{"b", &b.RunEncoding(10, 7.5, 2)}}, 300);
  StepOnce(l, m, {{"b", &b.RunEncoding(10, 7.5, 2)}}, 300);
  EXPECT_EQ(m.PairedEncodeRatioSamples(VideoCodec::kVp8, 2), 10);
  Reading half(Mode::kAnonymize, 640, 360);
  half.r.encoder_steps = 4;
  for (int i = 0; i < 4; ++i) {
    half.RunEncoding(4, 2.5, 0, 15);
    StepOnce(l, m, {{"h", &half.RunEncoding(4, 1.5, 2, 15)}}, 120);
  }
  EXPECT_EQ(m.PairedEncodeRatioSamples(VideoCodec::kVp8, 2), 11);
  // A mosaic's seconds are paired apart, and only with a mosaic's.
  EXPECT_EQ(m.PairedEncodeRatioSamples(VideoCodec::kVp8, 2, EncodePicture::kMosaic), 0);
}

// full_blur's prior per codec: a mosaic encodes cheaply in VP8 (its sessions learned 0.72-0.86x
// the older timing on 2026-12-06), less so in x264 (0.78-1.15x): each the largest, rounded up
// (0.9, 1.2), rescaled to the warm timing (VP8 / 1.2, H.264 / 0.88), and both under anonymize's.
TEST(Capacity, FullBlursPriorFollowsTheCodec) {
  EXPECT_EQ(PriorRatio(Mode::kFullBlur, true, VideoCodec::kVp8), 0.75);
  EXPECT_EQ(PriorRatio(Mode::kFullBlur, true, VideoCodec::kH264), 1.4);
  EXPECT_LT(PriorRatio(Mode::kFullBlur, true, VideoCodec::kVp8), PriorRatio(Mode::kAnonymize, true, VideoCodec::kVp8));
  EXPECT_LT(PriorRatio(Mode::kFullBlur, true, VideoCodec::kH264), PriorRatio(Mode::kAnonymize, true, VideoCodec::kH264));
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}, {VideoCodec::kH264, 10.0}});
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kFullBlur)), 7.5, 1e-9);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kFullBlur, 0, 0, 0, VideoCodec::kH264)), 14.0, 1e-9);
  EXPECT_NEAR(m.CostMsPerFrame(Session(Mode::kAnonymize, 0, 0, 0, VideoCodec::kH264)), 16.0, 1e-9);
}

// Forwarding and re-encoding bypass per codec: x264's warm timing reads 0.88x the older one, so
// its priors are the older 0.3 and 1.6 over that, rounded up; VP8's stay (planned dearer).
TEST(Capacity, BypassPriorsFollowTheCodec) {
  EXPECT_EQ(PriorRatio(Mode::kBypass, true, VideoCodec::kVp8), 0.3);
  EXPECT_EQ(PriorRatio(Mode::kBypass, true, VideoCodec::kH264), 0.35);
  EXPECT_EQ(PriorRatio(Mode::kBypass, false, VideoCodec::kVp8), 1.6);
  EXPECT_EQ(PriorRatio(Mode::kBypass, false, VideoCodec::kH264), 1.8);
  for (VideoCodec c : {VideoCodec::kVp8, VideoCodec::kH264})
    EXPECT_LT(PriorRatio(Mode::kBypass, true, c), PriorRatio(Mode::kFullBlur, true, c)) << Name(c);
}

// The prior shares: the default ladders only, each step cheaper than the one before, none past
// the steps measured.
TEST(Capacity, PriorPlanSharesFollowTheDefaultLadderOnly) {
  for (VideoCodec c : {VideoCodec::kVp8, VideoCodec::kH264}) {
    EXPECT_EQ(PriorPlanEncodeRatio(c, 0, true), 1);
    EXPECT_EQ(PriorPlanEncodeRatio(c, 1, false), -1) << "other encoder settings: no prior";
    double last = 1;
    int steps = 0;
    for (int k = 1; k < VideoEncoder::kMaxSpeedSteps; ++k) {
      const double r = PriorPlanEncodeRatio(c, k, true);
      if (r < 0) break;
      EXPECT_LT(r, last) << Name(c) << " step " << k;
      EXPECT_GT(r, 0.2) << Name(c) << " step " << k;
      last = r;
      ++steps;
    }
    EXPECT_GE(steps, 2) << Name(c);
    EXPECT_EQ(PriorPlanEncodeRatio(c, steps + 1, true), -1);
  }
  // A mosaic's (full_blur): VP8's steps save nothing on it, x264's do; never dearer than step 0.
  for (int k = 1; k <= 3; ++k) EXPECT_EQ(PriorPlanEncodeRatio(VideoCodec::kVp8, k, true, EncodePicture::kMosaic), 1.0);
  EXPECT_EQ(PriorPlanEncodeRatio(VideoCodec::kH264, 1, true, EncodePicture::kMosaic), 0.8);
  EXPECT_EQ(PriorPlanEncodeRatio(VideoCodec::kH264, 2, true, EncodePicture::kMosaic), 0.5);
  EXPECT_EQ(PriorPlanEncodeRatio(VideoCodec::kH264, 3, true, EncodePicture::kMosaic), -1);
  EXPECT_EQ(PriorPlanEncodeRatio(VideoCodec::kH264, 2, false, EncodePicture::kMosaic), -1);
}

TEST(CostLearner, ASessionSheddingEncoderSpeedAloneIsLearnedAtStepZerosEncodeCost) {
  // Transcode 10 ms, its encode 7: the session's encodes at step 0 are costed 7 ms until measured.
  CapacityOptions o = TwoCores();
  o.plan_speed_step = 1;
  CapacityModel m(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}});
  CostLearner l;
  Reading a;
  a.r.encoder_steps = 4;
  for (int i = 0; i < 3; ++i) StepOnce(l, m, {{"a", &a.RunEncoding(15, 4, 1)}}, 450);
  // At step 1 (shed level 1, an encoder step) 15 ms a frame, 4 of them the encode: 18 at step 0.
  a.r.shed_level = 1;
  const auto r = StepOnce(l, m, {{"a", &a.RunEncoding(15, 4, 1)}}, 450);
  EXPECT_EQ(r.learned, 1);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.8, 1e-9);
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 1), 4.0, 1e-9);
  EXPECT_EQ(m.EncodeSamples(VideoCodec::kVp8, 1), 1);
  EXPECT_EQ(m.EncodeSamples(VideoCodec::kVp8, 0), 0);
  // Planned at step 1: 18 - (7 - 4) = 15 ms a frame.
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), 15, 1e-9);
  // Half its frames at step 0 (8 ms encodes: learned) and half at step 2 (3 ms), 12 ms a frame
  // in all: its step-2 encodes count at step 0's 8 ms, 14.5 ms a frame at step 0.
  a.r.shed_level = 2;
  const auto r2 = StepOnce(l, m, {{"a", &a.RunEncoding(12, 8, 0, 15).RunEncoding(12, 3, 2, 15)}}, 360);
  EXPECT_EQ(r2.learned, 1);
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 0), 8.0, 1e-9);
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 2), 3.0, 1e-9);
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), (1.8 + 1.45) / 2, 1e-9);
  // Past its encoder's steps (sparser detection), below the model: left out as before.
  a.r.shed_level = 5;
  EXPECT_EQ(StepOnce(l, m, {{"a", &a.RunEncoding(10, 3, 4)}}, 300).learned, 0);
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 4), 3.0, 1e-9);  // its encodes still teach step 4
}

// The process took half as much CPU again as the sessions' threads (detection, packetization):
// a session at the plan step is learned with that share on what it took, and its encodes'
// difference from step 0 is added as the encoder's own CPU, not scaled by the share. So a
// session measured at the plan step is planned at what it cost there.
TEST(CostLearner, TheEncodesDifferenceFromStepZeroIsNotScaledByTheProcessShare) {
  // Transcode 10 ms, its encode 7: step 0's encodes are costed 7 ms (not measured yet).
  CapacityOptions o = TwoCores();
  o.plan_speed_step = 2;
  CapacityModel m(o, {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}});
  CostLearner l;
  Reading a;
  a.r.encoder_steps = 4;
  a.r.shed_level = 2;  // encoder speed alone
  for (int i = 0; i < 3; ++i) StepOnce(l, m, {{"a", &a.RunEncoding(10, 3, 2)}}, 300, 1.5);
  const auto r = StepOnce(l, m, {{"a", &a.RunEncoding(10, 3, 2)}}, 300, 1.5);
  ASSERT_EQ(r.learned, 1);
  // 10 ms x 1.5 = 15 ms a frame as it ran; at step 0, 15 + (7 - 3) = 19 (1.9x), not
  // 15 + 4 x 1.5 = 21.
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.9, 1e-9);
  EXPECT_NEAR(m.EncodeMs(VideoCodec::kVp8, 2), 3.0, 1e-9);
  // Planned at step 2: 19 - (7 - 3) = 15, what it cost.
  EXPECT_NEAR(m.PlannedMsPerFrame(Session(Mode::kAnonymize)), 15.0, 1e-9);
}

TEST(CostLearner, EncodeCountersThatWentBackTeachNothing) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 7.0}});
  CostLearner l;
  Reading a;
  a.r.encoder_steps = 4;
  for (int i = 0; i < 4; ++i) StepOnce(l, m, {{"a", &a.RunEncoding(10, 5, 1)}}, 300);
  ASSERT_EQ(m.EncodeSamples(VideoCodec::kVp8, 1), 1);
  // A new encoder (another size) restarts nothing in the session, but a counter that went back
  // is not an interval's cost.
  a.r.encode_cpu_ms[1] = 10;
  a.r.encode_frames[1] = 2;
  StepOnce(l, m, {{"a", &a.Run(10)}}, 300);
  EXPECT_EQ(m.EncodeSamples(VideoCodec::kVp8, 1), 1);
  // Fewer than kMinFrames at a step teach nothing of that step.
  StepOnce(l, m, {{"a", &a.RunEncoding(10, 2, 3, 9)}}, 90);
  EXPECT_EQ(m.EncodeSamples(VideoCodec::kVp8, 3), 0);
}

TEST(CostLearner, NoCpuNoLearning) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}});
  CostLearner l;
  EXPECT_EQ(l.Step(m, {}, 50, 1000).outcome, CostLearner::Outcome::kIdle);
  Reading a;
  for (int i = 0; i < 4; ++i) StepOnce(l, m, {{"a", &a}}, 0);  // no frames, no CPU
  EXPECT_EQ(StepOnce(l, m, {{"a", &a}}, 0).outcome, CostLearner::Outcome::kIdle);
  EXPECT_EQ(m.Samples(VideoCodec::kVp8, Mode::kAnonymize), 0);
}

}  // namespace
}  // namespace veil
