// The in-process target's detections on the frame executor (server/inference_on_executor.h):
// a hosted scheduler's batch takes its place in the executor's earliest-deadline-first order as
// a frame handed over when it was asked for (budget_ms later), runs on an executor thread, and
// after Shutdown every request is answered and the executor never runs the scheduler again.
#include "server/inference_on_executor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "fake_detector.h"
#include "gate.h"

namespace veil {
namespace {

using namespace std::chrono_literals;

using test::Gate;

// A frame's work: holds the executor's one thread until released, or records when it ran.
struct FrameClient : FrameExecutor::Client {
  Gate entered, release, ran;
  bool block = false;
  std::mutex* mu = nullptr;
  std::vector<std::string>* order = nullptr;
  std::optional<double> RunOne() override {
    if (block) {
      entered.Open();
      release.Wait();
    }
    if (order) {
      std::lock_guard lk(*mu);
      order->push_back("frame");
    }
    ran.Open();
    return std::nullopt;
  }
};

struct Hosted {
  MetricsRegistry metrics;
  std::shared_ptr<FrameExecutor> ex;
  std::shared_ptr<InferenceOnExecutor> host;
  test::FakeDetector* det = nullptr;
  std::unique_ptr<InferenceScheduler> s;
  Hosted(int threads, double budget_ms) {
    ex = *FrameExecutor::Start(threads);
    host = std::make_shared<InferenceOnExecutor>(ex, budget_ms);
    auto r = InferenceScheduler::CreateHosted(
        {},
        [this]() -> Result<std::unique_ptr<Detector>> {
          auto d = std::make_unique<test::FakeDetector>();
          det = d.get();
          return std::unique_ptr<Detector>(std::move(d));
        },
        &metrics, "local", host.get());
    EXPECT_TRUE(r.ok()) << r.error();
    s = std::move(*r);
  }
  ~Hosted() { s->Shutdown(); }
};

std::future<DetectResult> Submit(InferenceScheduler& s, uint64_t session, int64_t frame,
                                 std::function<void()> on_done = {}, double slack_ms = 0) {
  auto p = std::make_shared<std::promise<DetectResult>>();
  auto f = p->get_future();
  DetectRequest r;
  r.session = session;
  r.frame_index = frame;
  r.image = cv::Mat(36, 64, CV_8UC3, cv::Scalar::all(7));
  r.slack_ms = slack_ms;
  r.done = [p, on_done](DetectResult&& res) {
    if (on_done) on_done();
    p->set_value(std::move(res));
  };
  s.Submit(std::move(r));
  return f;
}

// A hosted scheduler on an executor of one thread that a frame's work holds until Release, and a
// second frame due frame_in_ms from now; what runs records itself in `order`.
struct BusyExecutor {
  Hosted h;
  std::mutex mu;
  std::vector<std::string> order;
  FrameClient blocker, frame;
  BusyExecutor(double budget_ms, double frame_in_ms) : h(1, budget_ms) {
    blocker.block = true;
    frame.mu = &mu;
    frame.order = &order;
    h.ex->Ready(&blocker, NowMs());  // the executor's one thread is busy until released
    blocker.entered.Wait();
    h.ex->Ready(&frame, NowMs() + frame_in_ms);
  }
  std::function<void()> Record(std::string what) {
    return [this, what] {
      std::lock_guard lk(mu);
      order.push_back(what);
    };
  }
  // Lets the executor go on and waits for the frame (removed before it ran, it never would).
  void RunAll() {
    blocker.release.Open();
    EXPECT_TRUE(frame.ran.Wait());
    h.ex->Remove(&frame);
    h.ex->Remove(&blocker);
  }
};

TEST(InferenceOnExecutor, ADetectionRunsOnAnExecutorThreadInDeadlineOrder) {
  for (const bool frame_first : {false, true}) {
    SCOPED_TRACE(frame_first ? "a frame due before the detection" : "a frame due after it");
    BusyExecutor b(50, frame_first ? 5 : 500);  // a detection is due 50 ms after it was asked for
    std::thread::id ran_on;
    const auto record = b.Record("detection");
    auto res = Submit(*b.h.s, 1, 0, [&] {
      ran_on = std::this_thread::get_id();
      record();
    });
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(b.h.det->Calls(), 0);  // nothing runs it but the executor
    b.RunAll();
    EXPECT_EQ(res.get().outcome, DetectOutcome::kOk);
    EXPECT_NE(ran_on, std::this_thread::get_id());
    ASSERT_EQ(b.order.size(), 2u);
    EXPECT_EQ(b.order[0], frame_first ? "frame" : "detection");
  }
}

// privacy.detect_slack_ms: a request's slack orders it that much later, against the frames and
// against the other requests waiting.
TEST(InferenceOnExecutor, ARequestsSlackLetsWhatIsDueSoonerGoFirst) {
  for (const double slack : {0.0, 80.0}) {
    SCOPED_TRACE("slack " + std::to_string(slack) + " ms");
    // A detection is due 50 ms (plus its slack) after it was asked for; the frame in 100 ms:
    // after a detection without slack, before one with 80.
    BusyExecutor b(50, 100);
    // Two sessions' requests: the one asked for first has the slack, the second none.
    auto slacked = Submit(*b.h.s, 1, 0, b.Record("slacked"), slack);
    auto urgent = Submit(*b.h.s, 2, 0, b.Record("urgent"));
    b.RunAll();
    EXPECT_EQ(slacked.get().outcome, DetectOutcome::kOk);
    EXPECT_EQ(urgent.get().outcome, DetectOutcome::kOk);
    const std::vector<std::string> want = slack == 0 ? std::vector<std::string>{"slacked", "urgent", "frame"}
                                                     : std::vector<std::string>{"urgent", "frame", "slacked"};
    EXPECT_EQ(b.order, want);
  }
}

TEST(InferenceOnExecutor, EverySessionsRequestIsAnsweredAndShutdownStopsTheRuns) {
  Hosted h(2, 33);
  std::vector<std::future<DetectResult>> got;
  for (uint64_t session = 1; session <= 6; ++session) got.push_back(Submit(*h.s, session, int64_t(session)));
  for (size_t i = 0; i < got.size(); ++i) {
    DetectResult r = got[i].get();
    EXPECT_EQ(r.outcome, DetectOutcome::kOk);
    EXPECT_EQ(r.frame_index, int64_t(i + 1));
  }
  h.det->Close();  // the next batch holds an executor thread
  auto running = Submit(*h.s, 1, 10);
  h.det->WaitCalls(7);
  auto waiting = Submit(*h.s, 2, 11);
  std::thread stopper([&] { h.s->Shutdown(); });
  std::this_thread::sleep_for(10ms);
  h.det->Open();
  stopper.join();  // returned only once the batch in flight ended
  EXPECT_EQ(running.get().outcome, DetectOutcome::kOk);
  EXPECT_EQ(waiting.get().outcome, DetectOutcome::kShutdown);
  EXPECT_EQ(Submit(*h.s, 3, 12).get().outcome, DetectOutcome::kShutdown);
  EXPECT_EQ(h.det->Calls(), 7);
  EXPECT_EQ(h.ex->stats().clients, 0u);  // the executor forgot it
}

}  // namespace
}  // namespace veil
