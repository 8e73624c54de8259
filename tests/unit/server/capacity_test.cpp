#include "server/capacity.h"

#include <gtest/gtest.h>

#include <thread>

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
  // The prior: 2.3x a 10-ms transcode at 720p30 = 690 ms/s; half the pixels half; 60 fps twice.
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kAnonymize)), 2.3 * 10 * 30, 1e-9);
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kAnonymize, 1280, 720)), 690, 1e-9);
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kAnonymize, 640, 720)), 345, 1e-9);
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kAnonymize, 1280, 720, 60)), 1380, 1e-9);
  // A session measured below the assumed rate is still counted at it (a publisher may speed up).
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kAnonymize, 1280, 720, 12)), 690, 1e-9);
  // Bypass forwards (a decode, no encode) unless the node re-encodes it.
  EXPECT_NEAR(m.CostMsPerS(Session(Mode::kBypass)), 0.4 * 10 * 30, 1e-9);
  CapacityOptions reencode = TwoCores();
  reencode.bypass_forward = false;
  EXPECT_NEAR(CapacityModel(reencode, {{VideoCodec::kVp8, 10.0}}).CostMsPerS(Session(Mode::kBypass)), 1.6 * 10 * 30, 1e-9);
  EXPECT_EQ(m.Samples(VideoCodec::kVp8, Mode::kAnonymize), 0);
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
  EXPECT_NEAR(m.Ratio(VideoCodec::kVp8, Mode::kBypass), 0.4, 1e-9);
  EXPECT_NEAR(m.Ratio(VideoCodec::kH264, Mode::kAnonymize), 2.3, 1e-9);
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
  // 1000 / 690 -> 1; bypass (forwarded) 1000 / 120 -> 8.
  EXPECT_EQ(m.CapacitySessions(VideoCodec::kVp8, Mode::kAnonymize), 1);
  EXPECT_EQ(m.CapacitySessions(VideoCodec::kVp8, Mode::kBypass), 8);
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

TEST(Capacity, TheStandaloneTranscodeIsTimed) {
  EncoderOptions fast, slow;
  fast.vp8_speed = -16;
  slow.vp8_speed = -4;
  // 24 frames each, as the server times them: fewer left too little between the two against noise.
  auto f = MeasureTranscodeMs(VideoCodec::kVp8, fast, 24);
  auto s = MeasureTranscodeMs(VideoCodec::kVp8, slow, 24);
  ASSERT_TRUE(f.ok()) << f.error();
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_GT(*f, 0.2);
  // It times the encoder: libvpx's slowest realtime speed costs more than its fastest (decode
  // included, 7.1 vs 6.0 ms, about 1.2x on the 2-core Xeon VM; thread CPU, so other processes
  // do not count).
  EXPECT_GT(*s, *f) << "fast " << *f << " ms, slow " << *s << " ms";
  auto h = MeasureTranscodeMs(VideoCodec::kH264, EncoderOptions{}, 6);
  ASSERT_TRUE(h.ok()) << h.error();
}

TEST(Capacity, UsableCoresFollowsTheAffinityMask) {
  const double c = UsableCores();
  EXPECT_GE(c, 1.0);
  EXPECT_LE(c, double(std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace
}  // namespace veil
