#include "core/command_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/clock.h"

namespace veil {
namespace {
using namespace std::chrono_literals;

// A worker that applies the queue's commands when woken (as a session's executor turn would).
struct Worker {
  CommandQueue& q;
  std::mutex mu;
  std::condition_variable cv;
  bool woken = false, stop = false;
  std::thread::id id;
  std::thread t;
  explicit Worker(CommandQueue& queue) : q(queue) {
    t = std::thread([this] {
      id = std::this_thread::get_id();
      std::unique_lock lk(mu);
      while (!stop) {
        cv.wait(lk, [&] { return woken || stop; });
        woken = false;
        lk.unlock();
        q.ApplyAll();
        lk.lock();
      }
    });
  }
  void Wake() {
    {
      std::lock_guard lk(mu);
      woken = true;
    }
    cv.notify_one();
  }
  ~Worker() {
    {
      std::lock_guard lk(mu);
      stop = true;
    }
    cv.notify_one();
    t.join();
  }
};

TEST(CommandQueue, ACommandHasRunOnTheWorkerWhenThePostReturns) {
  CommandQueue q;
  Worker w(q);
  std::thread::id ran_on;
  int value = 0;
  ASSERT_TRUE(q.PostAndWait(
      [&] {
        ran_on = std::this_thread::get_id();
        value = 42;
      },
      [&] { w.Wake(); }, 2000));
  EXPECT_EQ(value, 42);
  EXPECT_EQ(ran_on, w.id);
  EXPECT_NE(ran_on, std::this_thread::get_id());
  EXPECT_EQ(q.waiting(), 0u);
}

TEST(CommandQueue, ACommandNotTakenInTimeIsTakenBackAndNeverRuns) {
  CommandQueue q;
  bool ran = false;
  const double t0 = NowMs();
  EXPECT_FALSE(q.PostAndWait([&] { ran = true; }, nullptr, 30));  // no worker
  EXPECT_GE(NowMs() - t0, 25);
  EXPECT_EQ(q.waiting(), 0u);
  EXPECT_EQ(q.ApplyAll(), 0u);
  EXPECT_FALSE(ran);
}

TEST(CommandQueue, ACommandTheWorkerTookIsWaitedForPastTheTimeout) {
  CommandQueue q;
  std::atomic<bool> done{false};
  std::thread poster([&] {
    // The worker below takes it at once and runs it for 400 ms; the poster's 100 ms pass meanwhile.
    EXPECT_TRUE(q.PostAndWait(
        [&] {
          std::this_thread::sleep_for(400ms);
          done = true;
        },
        nullptr, 100));
    EXPECT_TRUE(done.load()) << "the post returned before its command had run";
  });
  while (q.waiting() == 0) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(q.ApplyAll(), 1u);
  poster.join();
}

TEST(CommandQueue, CommandsRunInTheOrderPosted) {
  CommandQueue q;
  std::vector<int> ran;
  std::vector<std::thread> posters;
  for (int i = 0; i < 4; ++i) {
    posters.emplace_back([&, i] { EXPECT_TRUE(q.PostAndWait([&ran, i] { ran.push_back(i); }, nullptr, 5000)); });
    while (q.waiting() < size_t(i + 1)) std::this_thread::sleep_for(1ms);  // posted before the next
  }
  EXPECT_EQ(q.ApplyAll(), 4u);
  for (auto& t : posters) t.join();
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(q.ApplyAll(), 0u);
}

}  // namespace
}  // namespace veil
