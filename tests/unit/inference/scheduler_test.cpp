#include "inference/scheduler.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <thread>

#include "core/clock.h"
#include "fake_detector.h"

namespace veil {
namespace {

using test::FakeDetector;

cv::Mat Image(int value) { return cv::Mat(36, 64, CV_8UC3, cv::Scalar::all(value)); }

struct Harness {
  MetricsRegistry metrics;  // declared first: outlives the scheduler's threads
  FakeDetector* det = nullptr;
  std::unique_ptr<InferenceScheduler> s;
  explicit Harness(SchedulerConfig c) {
    auto r = InferenceScheduler::Create(
        c,
        [this]() -> Result<std::unique_ptr<Detector>> {
          auto d = std::make_unique<FakeDetector>();
          det = d.get();
          return std::unique_ptr<Detector>(std::move(d));
        },
        &metrics, "local");
    EXPECT_TRUE(r.ok()) << r.error();
    s = std::move(*r);
  }
};

std::future<DetectResult> Submit(InferenceScheduler& s, uint64_t session, int64_t frame, int value,
                                 double deadline_ms = 0) {
  auto p = std::make_shared<std::promise<DetectResult>>();
  auto f = p->get_future();
  DetectRequest r;
  r.session = session;
  r.frame_index = frame;
  r.image = Image(value);
  r.deadline_ms = deadline_ms;
  r.done = [p](DetectResult&& res) { p->set_value(std::move(res)); };
  s.Submit(std::move(r));
  return f;
}

TEST(Scheduler, BatchesConcurrentSubmittersAndRoutesEveryResultToItsSession) {
  SchedulerConfig c;
  c.max_batch = 4;
  c.max_wait_us = 50000;
  Harness h(c);
  h.det->Close();  // hold the first batch so the others queue up
  auto first = Submit(*h.s, 100, 0, 100);
  h.det->WaitCalls(1);
  std::vector<std::future<DetectResult>> futures(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] { futures[i] = Submit(*h.s, uint64_t(i), 7, i * 10); });
  for (auto& t : threads) t.join();
  h.det->Open();
  EXPECT_EQ(first.get().outcome, DetectOutcome::kOk);
  for (int i = 0; i < 8; ++i) {
    DetectResult r = futures[i].get();
    ASSERT_EQ(r.outcome, DetectOutcome::kOk) << OutcomeName(r.outcome);
    EXPECT_EQ(r.session, uint64_t(i));
    EXPECT_EQ(r.frame_index, 7);
    ASSERT_EQ(r.detections.size(), 1u);
    EXPECT_EQ(int(r.detections[0].box.x), i * 10) << "result routed to the wrong session";
    EXPECT_GE(r.batch_size, 1);
  }
  h.s->Shutdown();
  // 1 held batch, then the 8 waiting requests in batches of at most 4.
  ASSERT_EQ(h.det->batches.size(), 3u);
  EXPECT_EQ(h.det->batches[1], 4);
  EXPECT_EQ(h.det->batches[2], 4);
  EXPECT_NE(h.metrics.ExportText().find("veil_ai_batch_size_bucket{target=\"local\",le=\"4\"} 3"), std::string::npos)
      << h.metrics.ExportText();
}

TEST(Scheduler, PartialBatchWaitsAtMostMaxWait) {
  SchedulerConfig c;
  c.max_batch = 8;
  c.max_wait_us = 30000;  // 30 ms
  Harness h(c);
  const double t0 = NowMs();
  auto f = Submit(*h.s, 1, 0, 5);
  DetectResult r = f.get();
  const double waited = NowMs() - t0;
  EXPECT_EQ(r.outcome, DetectOutcome::kOk);
  EXPECT_EQ(r.batch_size, 1);
  EXPECT_GE(waited, 29.0);   // it did wait for company...
  EXPECT_LT(waited, 2000.0);  // ...but not forever
}

TEST(Scheduler, StaleRequestsAreDroppedBeforeInference) {
  Harness h({});
  h.det->Close();
  auto busy = Submit(*h.s, 1, 0, 1);
  h.det->WaitCalls(1);
  auto late = Submit(*h.s, 2, 0, 2, NowMs() + 5);  // must start within 5 ms: it cannot
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  h.det->Open();
  EXPECT_EQ(busy.get().outcome, DetectOutcome::kOk);
  EXPECT_EQ(late.get().outcome, DetectOutcome::kStale);
  EXPECT_EQ(h.det->Calls(), 1);  // never ran
  EXPECT_NE(h.metrics.ExportText().find("veil_ai_stale_drops_total{target=\"local\"} 1"), std::string::npos);
}

TEST(Scheduler, NewerFrameOfASessionSupersedesItsPendingOne) {
  Harness h({});
  h.det->Close();
  auto busy = Submit(*h.s, 1, 0, 1);
  h.det->WaitCalls(1);
  auto old_frame = Submit(*h.s, 2, 10, 2);
  auto new_frame = Submit(*h.s, 2, 11, 3);
  EXPECT_EQ(old_frame.get().outcome, DetectOutcome::kSuperseded);
  h.det->Open();
  DetectResult r = new_frame.get();
  EXPECT_EQ(r.outcome, DetectOutcome::kOk);
  EXPECT_EQ(r.frame_index, 11);
  busy.get();
}

TEST(Scheduler, QueueIsBoundedAcrossSessions) {
  SchedulerConfig c;
  c.max_queue = 2;
  Harness h(c);
  h.det->Close();
  auto busy = Submit(*h.s, 1, 0, 1);
  h.det->WaitCalls(1);
  auto a = Submit(*h.s, 2, 0, 2), b = Submit(*h.s, 3, 0, 3), d = Submit(*h.s, 4, 0, 4);
  EXPECT_EQ(a.get().outcome, DetectOutcome::kStale);  // the oldest pending one went
  h.det->Open();
  EXPECT_EQ(b.get().outcome, DetectOutcome::kOk);
  EXPECT_EQ(d.get().outcome, DetectOutcome::kOk);
  busy.get();
}

TEST(Scheduler, FailuresAndShutdownStillAnswerEveryRequest) {
  Harness h({});
  h.det->fail = true;
  EXPECT_EQ(Submit(*h.s, 1, 0, 1).get().outcome, DetectOutcome::kFailed);
  h.det->fail = false;
  h.det->Close();
  auto busy = Submit(*h.s, 1, 1, 1);
  h.det->WaitCalls(2);
  auto pending = Submit(*h.s, 2, 0, 2);
  std::thread stopper([&] { h.s->Shutdown(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  h.det->Open();
  stopper.join();
  busy.get();
  EXPECT_EQ(pending.get().outcome, DetectOutcome::kShutdown);
  EXPECT_EQ(Submit(*h.s, 3, 0, 3).get().outcome, DetectOutcome::kShutdown);
}

// Issue 13, suspected and settled: an exception from the detector (cv::dnn throws on a bad
// input) escaped the inference thread and ended the process (std::terminate). Now that batch
// fails, every request of it is answered, and the thread goes on.
TEST(Scheduler, AThrowingDetectorFailsItsBatchAndTheThreadGoesOn) {
  Harness h({});
  h.det->throws = true;
  const DetectResult r = Submit(*h.s, 1, 0, 1).get();
  EXPECT_EQ(r.outcome, DetectOutcome::kFailed);
  EXPECT_NE(r.error.find("injected exception"), std::string::npos) << r.error;
  h.det->throws = false;
  EXPECT_EQ(Submit(*h.s, 1, 1, 1).get().outcome, DetectOutcome::kOk);
}

// inference.nice: the detection runs on a thread at that nice value, and only that thread: the
// caller's (a session's frames) keeps its own. 19 is above any nice a test may inherit.
TEST(Scheduler, InferenceThreadsRunAtTheirNiceValue) {
  const int own = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  ASSERT_LT(own, 19);
  SchedulerConfig c;
  c.nice = 19;
  Harness h(c);
  std::atomic<int> seen{-100};
  h.det->on_detect = [&] { seen = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))); };
  EXPECT_EQ(Submit(*h.s, 1, 0, 1).get().outcome, DetectOutcome::kOk);
  EXPECT_EQ(seen.load(), 19);
  EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))), own);
  SchedulerConfig d;  // the default leaves the threads as they start
  Harness k(d);
  k.det->on_detect = [&] { seen = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))); };
  EXPECT_EQ(Submit(*k.s, 1, 0, 1).get().outcome, DetectOutcome::kOk);
  EXPECT_EQ(seen.load(), own);
}

TEST(Scheduler, RejectsAbsurdConfig) {
  SchedulerConfig c;
  c.max_batch = 0;
  EXPECT_FALSE(Validate(c).ok());
  c = {};
  c.threads = 1000;
  EXPECT_FALSE(Validate(c).ok());
  c = {};
  c.nice = 20;
  EXPECT_FALSE(Validate(c).ok());
  c.nice = -1;  // a higher priority than the frames' is not what the key is for (and needs privilege)
  EXPECT_FALSE(Validate(c).ok());
  auto r = InferenceScheduler::Create({}, []() -> Result<std::unique_ptr<Detector>> { return Status::Error("no model"); },
                                      nullptr, "x");
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace veil
