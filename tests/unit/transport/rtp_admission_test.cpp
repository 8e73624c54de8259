// RtpAdmission packet by packet: the expected outcomes are written from RFC 3550 sequence
// arithmetic and the rules in rtp_admission.h, not computed by the code under test.
#include "transport/rtp/rtp_admission.h"

#include <gtest/gtest.h>

namespace veil {
namespace {

constexpr uint32_t kA = 0x1111, kB = 0x2222;

// Feeds n packets of one stream, 33 ms and 3000 ticks apart; returns the time after the last.
double Stream(RtpAdmission& a, uint32_t ssrc, uint16_t seq0, uint32_t ts0, int n, double t0) {
  for (int i = 0; i < n; ++i) {
    const auto v = a.Admit(96, ssrc, uint16_t(seq0 + i), ts0 + 3000u * i, t0 + 33.0 * i);
    EXPECT_TRUE(v.pass) << i;
  }
  return t0 + 33.0 * n;
}

TEST(RtpAdmission, OtherPayloadTypesAndSsrcsNeverReachAnEstablishedStream) {
  RtpAdmission a(96);
  EXPECT_FALSE(a.Admit(97, kA, 1, 0, 0).pass);
  double t = Stream(a, kA, 100, 0, 10, 0);
  EXPECT_FALSE(a.Admit(96, kB, 5000, 77, t).pass);  // forged: the established stream keeps going
  const auto v = a.Admit(96, kA, 110, 30000, t + 1);
  EXPECT_TRUE(v.pass);
  EXPECT_FALSE(v.rewritten);
  EXPECT_EQ(v.seq, 110);
  EXPECT_EQ(a.foreign(), 2u);
  EXPECT_EQ(a.ssrc_changes(), 0u);
}

TEST(RtpAdmission, AnyOtherSsrcTakesOverBeforeEstablishmentAndAfter250MsOfSilence) {
  RtpAdmission a(96);
  Stream(a, kA, 0, 0, 3, 0);  // garbage first: not established
  const auto first = a.Admit(96, kB, 900, 5, 100);
  EXPECT_TRUE(first.pass);  // takes over at once, with its own bases: nothing was established
  EXPECT_FALSE(first.rewritten);
  EXPECT_EQ(first.seq, 900);
  EXPECT_EQ(first.ts, 5u);
  double t = Stream(a, kB, 901, 8, 10, 133);
  EXPECT_FALSE(a.Admit(96, kA, 3, 0, t + 100).pass);  // B established, heard 100 ms ago
  EXPECT_TRUE(a.Admit(96, kA, 3, 0, t + 300).pass);   // B silent for 300 ms: a new publisher
  EXPECT_EQ(a.ssrc_changes(), 1u);
}

// A new publisher's stream (another SSRC, its own random sequence and timestamp bases) goes on
// from the old one's last packet out, so the jitter buffer sees one stream: with its own bases
// it took them for late packets of the old stream now and then and delivered nothing.
TEST(RtpAdmission, AnotherSsrcThatTakesOverIsRenumberedToContinueTheOldStream) {
  RtpAdmission a(96);
  double t = Stream(a, kA, 60000, 1000000, 20, 0);  // last out: seq 60019, ts 1057000, at t - 33
  const auto v = a.Admit(96, kB, 59990, 77, t + 300);  // a new publisher, its base 30 behind
  ASSERT_TRUE(v.pass);
  EXPECT_TRUE(v.rewritten);
  EXPECT_EQ(v.seq, 60020);
  EXPECT_EQ(v.ts, 1057000u + 29970u);  // 333 ms since the last packet at 90 kHz
  const auto next = a.Admit(96, kB, 59991, 3077, t + 333);
  EXPECT_EQ(next.seq, 60021);
  EXPECT_EQ(next.ts, 1057000u + 29970u + 3000u);
  EXPECT_EQ(a.ssrc_changes(), 1u);
  EXPECT_EQ(a.restarts(), 0u);
  // A third publisher takes over before the second was established: it goes on too.
  const auto third = a.Admit(96, kA, 5, 9, t + 340);
  EXPECT_TRUE(third.pass);
  EXPECT_EQ(third.seq, 60022);
  EXPECT_EQ(third.ts, 1057000u + 29970u + 3000u + 630u);  // 7 ms after B's last at 90 kHz
  // One 1 us later: one tick on, never the same timestamp.
  const auto fourth = a.Admit(96, kB, 1, 1, t + 340.001);
  EXPECT_EQ(fourth.seq, 60023);
  EXPECT_EQ(fourth.ts, 1057000u + 29970u + 3000u + 630u + 1u);
}

TEST(RtpAdmission, ASameSsrcRestartIsRenumberedToContinueTheOldStream) {
  RtpAdmission a(96);
  double t = Stream(a, kA, 60000, 1000000, 20, 0);  // last out: seq 60019, ts 1057000
  // After a 400 ms pause the publisher starts over from seq 7, ts 42.
  const auto v = a.Admit(96, kA, 7, 42, t + 400);
  ASSERT_TRUE(v.pass);
  EXPECT_TRUE(v.rewritten);
  EXPECT_EQ(v.seq, 60020);  // wraps correctly past 65535 later on
  // ts advances by the pause since the last packet (433 ms after it at 90 kHz = 38970 ticks).
  EXPECT_EQ(v.ts, 1057000u + 38970u);
  const auto next = a.Admit(96, kA, 8, 3042, t + 433);
  EXPECT_EQ(next.seq, 60021);
  EXPECT_EQ(next.ts, 1057000u + 38970u + 3000u);
  EXPECT_EQ(a.restarts(), 1u);
}

TEST(RtpAdmission, AJumpWithoutAPauseNeedsTheNextPacketToConfirmIt) {
  RtpAdmission a(96);
  double t = Stream(a, kA, 100, 0, 20, 0);
  EXPECT_FALSE(a.Admit(96, kA, 40000, 5, t).pass);  // one stray packet: dropped
  const auto ok = a.Admit(96, kA, 120, 60000, t + 1);  // the stream goes on untouched
  EXPECT_TRUE(ok.pass);
  EXPECT_FALSE(ok.rewritten);
  EXPECT_FALSE(a.Admit(96, kA, 30000, 5, t + 2).pass);  // candidate ...
  const auto v = a.Admit(96, kA, 30001, 3005, t + 3);   // ... confirmed by its successor
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.seq, 121);
  EXPECT_EQ(a.restarts(), 1u);
}

TEST(RtpAdmission, AbsurdPausesAndLongRunsStayDefined) {
  RtpAdmission a(96);
  double t = Stream(a, kA, 0, 0, 10, 0);
  // A pause of 10^12 ms: the timestamp advance is clamped instead of overflowing.
  const auto v = a.Admit(96, kA, 30000, 0, t + 1e12);
  EXPECT_TRUE(v.pass);
  // 70000 packets in sequence (the run counter saturates, the sequence wraps).
  for (int i = 1; i <= 70000; ++i) ASSERT_TRUE(a.Admit(96, kA, uint16_t(30000 + i), 3000u * i, t + 1e12 + i).pass) << i;
}

}  // namespace
}  // namespace veil
