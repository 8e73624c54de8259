// Fan-out to viewers: a slow viewer drops (counted) and restarts at a
// keyframe; the fast viewers and the publisher never wait for it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "transport/rtp/fanout.h"

namespace veil {
namespace {

RtpFramePtr MakeRtpFrame(uint32_t ts, bool key) {
  auto f = std::make_shared<RtpFrame>();
  f->rtp_ts = ts;
  f->keyframe = key;
  f->packets.push_back(std::vector<uint8_t>(100, uint8_t(ts)));
  return f;
}

TEST(Fanout, SlowViewerDropsToTheNextKeyframeAndNobodyWaits) {
  std::atomic<int> drops_reported{0};
  std::mutex mu;
  std::vector<uint32_t> fast_got, slow_got;
  // 16 frames of queue: the fast viewer may be descheduled for 30 ms on a loaded CI machine
  // (with 4 it lost 12 frames there once) and still get every one; the slow viewer, at 30 ms
  // per frame, falls ~70 frames behind the 2 ms cadence all the same.
  Fanout fan(16, {}, [&] { ++drops_reported; });
  ASSERT_TRUE(fan.Add("fast", [&](const RtpFrame& f) {
                   std::lock_guard lk(mu);
                   fast_got.push_back(f.rtp_ts);
                   return true;
                 }).ok());
  ASSERT_TRUE(fan.Add("slow", [&](const RtpFrame& f) {
                   std::this_thread::sleep_for(std::chrono::milliseconds(30));
                   std::lock_guard lk(mu);
                   slow_got.push_back(f.rtp_ts);
                   return true;
                 }).ok());
  EXPECT_FALSE(fan.Add("fast", [](const RtpFrame&) { return true; }).ok());
  double worst_publish_ms = 0;
  for (uint32_t i = 0; i < 100; ++i) {  // a keyframe every 10 frames, one every 2 ms
    const double t0 = NowMs();
    fan.Publish(MakeRtpFrame(i, i % 10 == 0));
    worst_publish_ms = std::max(worst_publish_ms, NowMs() - t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto stats = fan.Stats();
  std::lock_guard lk(mu);
  EXPECT_EQ(fast_got.size(), 100u) << "the fast viewer got every frame";
  EXPECT_EQ(stats.at("fast").frames_dropped, 0u);
  EXPECT_GT(stats.at("slow").frames_dropped, 50u);
  EXPECT_EQ(stats.at("slow").frames_dropped + stats.at("slow").frames_sent + stats.at("slow").queued, 100u)
      << "every frame is either sent, queued or counted as dropped";
  EXPECT_GT(drops_reported.load(), 0);
  EXPECT_EQ(fan.total_dropped(), stats.at("slow").frames_dropped);
  EXPECT_LT(worst_publish_ms, 20.0) << "publishing never waits for a viewer";
  // After a drop the slow viewer restarts at a keyframe: each run of frames it got is contiguous from a keyframe.
  ASSERT_FALSE(slow_got.empty());
  EXPECT_EQ(slow_got[0] % 10, 0u);
  for (size_t i = 1; i < slow_got.size(); ++i)
    if (slow_got[i] != slow_got[i - 1] + 1) {
      EXPECT_EQ(slow_got[i] % 10, 0u) << "resumed on a non-key frame";
    }
}

TEST(Fanout, NewViewerStartsAtAKeyframeAndRemovalStopsIt) {
  std::atomic<int> got{0};
  Fanout fan(8, {}, {});
  fan.Publish(MakeRtpFrame(0, true));  // nobody yet
  ASSERT_TRUE(fan.Add("v", [&](const RtpFrame&) { return ++got, true; }).ok());
  fan.Publish(MakeRtpFrame(1, false));  // not decodable without the keyframe: skipped
  fan.Publish(MakeRtpFrame(2, true));
  fan.Publish(MakeRtpFrame(3, false));
  for (int i = 0; i < 100 && got < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(got.load(), 2);
  EXPECT_EQ(fan.Stats().at("v").frames_dropped, 1u);
  EXPECT_TRUE(fan.Remove("v"));
  EXPECT_FALSE(fan.Remove("v"));
  fan.Publish(MakeRtpFrame(4, true));
  EXPECT_EQ(fan.size(), 0u);
}

// An inline viewer (a UDP socket that never waits) is sent to inside Publish, on the publishing
// thread: no queue and no thread to wake. It still starts at a keyframe and is counted, and
// on_sent runs there too.
TEST(Fanout, InlineViewerIsSentOnThePublishingThread) {
  std::vector<uint32_t> got, told;
  std::thread::id sent_on;
  Fanout fan(8, [&](const RtpFrame& f, double) { told.push_back(f.rtp_ts); }, {});
  ASSERT_TRUE(fan.Add(
                     "v",
                     [&](const RtpFrame& f) {
                       got.push_back(f.rtp_ts);
                       sent_on = std::this_thread::get_id();
                       return f.rtp_ts != 3;  // the third frame's send fails
                     },
                     /*inline_send=*/true)
                  .ok());
  fan.Publish(MakeRtpFrame(1, false));  // not decodable without a keyframe: skipped
  fan.Publish(MakeRtpFrame(2, true));
  fan.Publish(MakeRtpFrame(3, false));
  fan.Publish(MakeRtpFrame(4, false));
  // Sent by the time Publish returned: nothing to wait for.
  EXPECT_EQ(got, (std::vector<uint32_t>{2, 3, 4}));
  EXPECT_EQ(told, (std::vector<uint32_t>{2, 4}));
  EXPECT_EQ(sent_on, std::this_thread::get_id());
  const ViewerStats st = fan.Stats().at("v");
  EXPECT_EQ(st.frames_sent, 2u);
  EXPECT_EQ(st.send_errors, 1u);
  EXPECT_EQ(st.frames_dropped, 1u);
  EXPECT_TRUE(fan.Remove("v"));
  fan.Publish(MakeRtpFrame(5, true));
  EXPECT_EQ(got.size(), 3u);
}

// Removing an inline viewer while a send to it is under way returns only after that send, and
// no send starts after it: the owner may free what the sink uses.
TEST(Fanout, RemovingAnInlineViewerWaitsOutItsSend) {
  std::atomic<int> sends{0};
  std::atomic<bool> entered{false}, release{false}, removed{false};
  Fanout fan(8, {}, {});
  ASSERT_TRUE(fan.Add(
                     "v",
                     [&](const RtpFrame&) {
                       ++sends;
                       entered = true;
                       while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                       return true;
                     },
                     /*inline_send=*/true)
                  .ok());
  std::thread publisher([&] { fan.Publish(MakeRtpFrame(1, true)); });
  while (!entered) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread remover([&] {
    fan.Remove("v");
    removed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(removed.load()) << "Remove returned while the sink was still sending";
  release = true;
  publisher.join();
  remover.join();
  EXPECT_TRUE(removed.load());
  fan.Publish(MakeRtpFrame(2, true));
  EXPECT_EQ(sends.load(), 1);
}

}  // namespace
}  // namespace veil
