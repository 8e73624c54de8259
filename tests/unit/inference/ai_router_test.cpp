// AiRouter over two in-process targets with scriptable detectors: assignment
// by fewest streams, a failing or stalled target marked down and its sessions
// moved at once, rejoin after probes, and no healthy target at all.
#include "inference/ai_router.h"

#include <gtest/gtest.h>

#include <future>

#include "core/clock.h"
#include "fake_detector.h"

namespace veil {
namespace {

using test::FakeDetector;

struct Rig {
  MetricsRegistry metrics;
  std::vector<FakeDetector*> dets;  // dets[0]: target a, dets[1]: target b
  std::mutex ev_mu;
  std::vector<std::string> events;
  std::unique_ptr<AiRouter> router;

  Rig() {
    RouterConfig c;
    c.targets = {{"a", ""}, {"b", ""}};
    c.probe_interval_ms = 20;
    c.probe_timeout_ms = 150;
    c.rejoin_probes = 2;
    auto r = AiRouter::Start(
        c,
        [this]() -> Result<std::unique_ptr<Detector>> {
          auto d = std::make_unique<FakeDetector>();
          dets.push_back(d.get());
          return std::unique_ptr<Detector>(std::move(d));
        },
        &metrics,
        [this](const std::string& type, const std::string& session, const std::string& detail) {
          std::lock_guard lk(ev_mu);
          events.push_back(type + " " + session + " " + detail);
        });
    EXPECT_TRUE(r.ok()) << r.error();
    if (r.ok()) router = std::move(*r);
  }
  ~Rig() {
    for (auto* d : dets) d->Open();
    router.reset();
  }
  // Submits one request and waits for its answer.
  DetectResult Detect(uint64_t session, int64_t frame = 1) {
    auto p = std::make_shared<std::promise<DetectResult>>();
    auto fut = p->get_future();
    DetectRequest q;
    q.session = session;
    q.frame_index = frame;
    q.image = cv::Mat(8, 8, CV_8UC3, cv::Scalar(7, 0, 0));
    q.done = [p](DetectResult&& r) { p->set_value(std::move(r)); };
    router->Submit(std::move(q));
    return fut.get();
  }
  int Count(const std::string& prefix) {
    std::lock_guard lk(ev_mu);
    int n = 0;
    for (const auto& e : events) n += e.rfind(prefix, 0) == 0;
    return n;
  }
  // Events are emitted after the health change they report: wait for them too.
  bool WaitCount(const std::string& prefix, int n, double ms = 3000) {
    const double end = NowMs() + ms;
    while (NowMs() < end) {
      if (Count(prefix) >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  bool WaitHealthy(int t, bool healthy, double ms = 3000) {
    const double end = NowMs() + ms;
    while (NowMs() < end) {
      if (router->Snapshot()[size_t(t)].healthy == healthy) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
};

TEST(AiRouter, FailingTargetIsMarkedDownAndItsSessionsMoveAtOnce) {
  Rig rig;
  ASSERT_TRUE(rig.router);
  ASSERT_EQ(rig.dets.size(), 2u);
  for (uint64_t s = 1; s <= 4; ++s) rig.router->Attach(s, std::to_string(s));
  auto snap = rig.router->Snapshot();
  EXPECT_EQ(snap[0].active_streams, 2);
  EXPECT_EQ(snap[1].active_streams, 2);
  uint64_t on_a = 0;
  for (uint64_t s = 1; s <= 4; ++s)
    if (rig.router->TargetOf(s) == "a") on_a = s;
  ASSERT_NE(on_a, 0u);
  EXPECT_EQ(rig.Detect(on_a).outcome, DetectOutcome::kOk);

  rig.dets[0]->fail = true;
  const DetectResult failed = rig.Detect(on_a, 2);
  EXPECT_EQ(failed.outcome,
            DetectOutcome::kFailed);  // this frame is fail-closed by the privacy stage
  // Marked down by that very failure: every session of a is on b already.
  for (uint64_t s = 1; s <= 4; ++s) EXPECT_EQ(rig.router->TargetOf(s), "b") << s;
  snap = rig.router->Snapshot();
  EXPECT_FALSE(snap[0].healthy);
  EXPECT_NE(snap[0].down_reason.find("injected failure"), std::string::npos) << snap[0].down_reason;
  EXPECT_EQ(snap[1].active_streams, 4);
  EXPECT_EQ(rig.Count("ai_target_down"), 1);
  EXPECT_EQ(rig.Count("session_moved"), 2);
  EXPECT_EQ(rig.Detect(on_a, 3).outcome, DetectOutcome::kOk);  // the next frame is served by b
  EXPECT_EQ(rig.router->NotReadyReason(), "");

  // While a is down its probes fail; healed, it rejoins after two good probes and takes the next
  // session.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(rig.router->Snapshot()[0].healthy);
  rig.dets[0]->fail = false;
  ASSERT_TRUE(rig.WaitHealthy(0, true)) << "a never rejoined";
  EXPECT_TRUE(rig.WaitCount("ai_target_up", 1));
  EXPECT_EQ(rig.Count("ai_target_up"), 1);
  EXPECT_EQ(rig.router->Attach(5, "s5"), "a");
  EXPECT_EQ(rig.router->TargetOf(on_a), "b") << "nothing moves back on its own";
  const std::string text = rig.metrics.ExportText();
  EXPECT_NE(text.find("veil_ai_target_down_total{target=\"a\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("veil_ai_session_moves_total 2"), std::string::npos);
}

TEST(AiRouter, StalledTargetIsMarkedDownByItsProbe) {
  Rig rig;
  ASSERT_TRUE(rig.router);
  rig.router->Attach(1, "s1");  // a
  rig.router->Attach(2, "s2");  // b
  ASSERT_EQ(rig.router->TargetOf(1), "a");
  rig.dets[0]->Close();  // a's detector holds every call: no answer, no error
  auto p = std::make_shared<std::promise<DetectResult>>();
  DetectRequest q;
  q.session = 1;
  q.image = cv::Mat(8, 8, CV_8UC3, cv::Scalar::all(0));
  q.done = [p](DetectResult&& r) { p->set_value(std::move(r)); };
  const double t0 = NowMs();
  rig.router->Submit(std::move(q));
  ASSERT_TRUE(rig.WaitHealthy(0, false, 2000))
      << "a stalled target must be marked down by its probe";
  const double down_ms = NowMs() - t0;
  std::printf("stalled target marked down after %.0f ms\n", down_ms);
  EXPECT_LT(down_ms, 1000);
  // Marking down comes first, moving its sessions right after (ASan builds showed the gap).
  for (int i = 0; i < 200 && rig.router->TargetOf(1) != "b"; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(rig.router->TargetOf(1), "b");
  EXPECT_NE(rig.router->Snapshot()[0].down_reason.find("stalled"), std::string::npos);
  rig.dets[0]->Open();
  EXPECT_EQ(p->get_future().get().outcome, DetectOutcome::kOk);  // the held call still answers
  EXPECT_TRUE(rig.WaitHealthy(0, true));
}

TEST(AiRouter, NoHealthyTargetAnswersAtOnceAndSaysWhy) {
  Rig rig;
  ASSERT_TRUE(rig.router);
  rig.router->Attach(1, "s1");
  rig.router->Attach(2, "s2");
  rig.dets[0]->fail = true;
  rig.dets[1]->fail = true;
  EXPECT_EQ(rig.Detect(1).outcome, DetectOutcome::kFailed);
  EXPECT_EQ(rig.Detect(1, 2).outcome, DetectOutcome::kFailed);  // moved to b, which fails too
  ASSERT_FALSE(rig.router->Snapshot()[0].healthy);
  ASSERT_FALSE(rig.router->Snapshot()[1].healthy);
  const DetectResult r = rig.Detect(2, 3);
  EXPECT_EQ(r.outcome, DetectOutcome::kFailed);
  EXPECT_EQ(r.error, "no healthy AI target");
  EXPECT_EQ(rig.router->TargetOf(1), "");
  const std::string why = rig.router->NotReadyReason();
  EXPECT_NE(why.find("no healthy AI target"), std::string::npos) << why;
  EXPECT_NE(why.find("a: "), std::string::npos) << why;
  EXPECT_NE(why.find("b: "), std::string::npos) << why;
  // Healed: the sessions left without a target get one as soon as a target is up.
  rig.dets[1]->fail = false;
  ASSERT_TRUE(rig.WaitHealthy(1, true));
  // The target is marked up, then its orphans are assigned under the same health lock: a
  // snapshot can fall between the two (a loaded CI machine caught it once), so wait for both,
  // and for both orphans: they are reassigned one after the other (an ASan run caught session 2
  // still unassigned after session 1 had its target).
  for (int i = 0; i < 200 && (rig.router->TargetOf(1) != "b" || rig.router->TargetOf(2) != "b"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(rig.router->TargetOf(1), "b");
  EXPECT_EQ(rig.router->TargetOf(2), "b");
  EXPECT_EQ(rig.Detect(1, 4).outcome, DetectOutcome::kOk);
  EXPECT_EQ(rig.router->NotReadyReason(), "");
}

// Issue 13, suspected and settled: a session's worker may submit a last frame after the session
// was detached; the router assigned it again, and active_streams stayed one too high for good.
TEST(AiRouter, ADetachedSessionIsNeverRegisteredAgain) {
  Rig rig;
  ASSERT_TRUE(rig.router);
  rig.router->Attach(1, "s1");
  EXPECT_EQ(rig.Detect(1).outcome, DetectOutcome::kOk);
  rig.router->Detach(1);
  const DetectResult late = rig.Detect(1, 2);
  EXPECT_EQ(late.outcome, DetectOutcome::kFailed);
  EXPECT_NE(late.error.find("not attached"), std::string::npos) << late.error;
  for (const auto& t : rig.router->Snapshot()) EXPECT_EQ(t.active_streams, 0) << t.name;
  EXPECT_EQ(rig.router->TargetOf(1), "");
  EXPECT_TRUE(rig.router->Snapshot()[0].healthy && rig.router->Snapshot()[1].healthy)
      << "a late frame of an ended session marks no target down";
}

TEST(AiRouter, ParsesTargetListsAndRejectsBadOnes) {
  auto t = ParseTargets("local, 127.0.0.1:8001,grpc://worker-2.lan:9000");
  ASSERT_TRUE(t.ok()) << t.error();
  ASSERT_EQ(t->size(), 3u);
  EXPECT_TRUE((*t)[0].local());
  EXPECT_EQ((*t)[1].endpoint, "127.0.0.1:8001");
  EXPECT_EQ((*t)[2].name, "worker-2.lan:9000");
  for (const char* bad : {"", ",", "local,local", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000",
                          "h:p", "a b:1", "local,,x:1", "127.0.0.1:1,127.0.0.1:1"})
    EXPECT_FALSE(ParseTargets(bad).ok()) << bad;
}

}  // namespace
}  // namespace veil
