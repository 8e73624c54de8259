// The frame executor (server/frame_executor.h): earliest deadline first across clients, one
// thread at a time per client, clients in parallel across threads, nothing lost when a frame
// comes while its client runs, and Remove waits for the frame in flight.
#include "server/frame_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "gate.h"

namespace veil {
namespace {

using namespace std::chrono_literals;

using test::Gate;

// Runs once per Ready, records its name in a shared order.
struct Recorder : FrameExecutor::Client {
  int name;
  std::mutex* mu;
  std::vector<int>* order;
  Recorder(int n, std::mutex* m, std::vector<int>* o) : name(n), mu(m), order(o) {}
  std::optional<double> RunOne() override {
    std::lock_guard lk(*mu);
    order->push_back(name);
    return std::nullopt;
  }
};

// Blocks its first run until released.
struct Blocker : FrameExecutor::Client {
  Gate entered, release;
  std::optional<double> RunOne() override {
    entered.Open();
    release.Wait();
    return std::nullopt;
  }
};

TEST(FrameExecutor, RunsTheEarliestDeadlineFirst) {
  auto ex = FrameExecutor::Start(1);
  ASSERT_TRUE(ex.ok()) << ex.error();
  Blocker b;
  (*ex)->Ready(&b, 0);
  ASSERT_TRUE(b.entered.Wait());  // the only thread is busy: the rest queue up
  std::mutex mu;
  std::vector<int> order;
  Recorder late(30, &mu, &order), early(10, &mu, &order), middle(20, &mu, &order), later(40, &mu, &order);
  (*ex)->Ready(&late, 30);
  (*ex)->Ready(&early, 10);
  (*ex)->Ready(&later, 45);
  (*ex)->Ready(&later, 40);  // a nearer deadline for one already queued moves it up, not twice
  (*ex)->Ready(&middle, 20);
  b.release.Open();
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard lk(mu);
      if (order.size() >= 4) break;
    }
    std::this_thread::sleep_for(2ms);
  }
  std::this_thread::sleep_for(20ms);
  {
    std::lock_guard lk(mu);
    EXPECT_EQ(order, (std::vector<int>{10, 20, 30, 40}));
  }
  for (FrameExecutor::Client* c : std::vector<FrameExecutor::Client*>{&b, &late, &early, &middle, &later})
    (*ex)->Remove(c);
  EXPECT_EQ((*ex)->stats().clients, 0u);
}

// A client with frames of its own: each run takes one and says when the next is due.
struct Session : FrameExecutor::Client {
  std::atomic<int> waiting{0}, done{0}, inside{0}, max_inside{0};
  std::optional<double> RunOne() override {
    const int now = ++inside;
    int m = max_inside.load();
    while (now > m && !max_inside.compare_exchange_weak(m, now)) {
    }
    if (waiting.load() > 0) {
      --waiting;
      std::this_thread::sleep_for(50us);
      ++done;
    }
    --inside;
    if (waiting.load() > 0) return 1.0;
    return std::nullopt;
  }
};

TEST(FrameExecutor, RunsAClientOnOneThreadAtATimeAndLosesNoFrame) {
  auto ex = FrameExecutor::Start(4);
  ASSERT_TRUE(ex.ok());
  Session s;
  constexpr int kFrames = 2000;
  std::vector<std::thread> producers;
  for (int p = 0; p < 2; ++p)
    producers.emplace_back([&] {
      for (int i = 0; i < kFrames / 2; ++i) {
        ++s.waiting;
        (*ex)->Ready(&s, double(i));
        if (i % 64 == 0) std::this_thread::sleep_for(100us);
      }
    });
  for (auto& t : producers) t.join();
  for (int i = 0; i < 1000 && s.done.load() < kFrames; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(s.done.load(), kFrames) << "a frame that came while its client ran was lost";
  EXPECT_EQ(s.max_inside.load(), 1) << "two threads ran one client at once";
  (*ex)->Remove(&s);
}

// Two clients that each wait until the other is running too: only threads in parallel get both in.
struct Meeter : FrameExecutor::Client {
  std::atomic<int>* in;
  std::atomic<bool> met{false};
  explicit Meeter(std::atomic<int>* i) : in(i) {}
  std::optional<double> RunOne() override {
    ++*in;
    for (int i = 0; i < 2000 && in->load() < 2; ++i) std::this_thread::sleep_for(1ms);
    met = in->load() >= 2;
    return std::nullopt;
  }
};

TEST(FrameExecutor, RunsDifferentClientsInParallel) {
  auto ex = FrameExecutor::Start(2);
  ASSERT_TRUE(ex.ok());
  std::atomic<int> in{0};
  Meeter a(&in), b(&in);
  (*ex)->Ready(&a, 1);
  (*ex)->Ready(&b, 2);
  for (int i = 0; i < 1000 && !(a.met.load() && b.met.load()); ++i) std::this_thread::sleep_for(5ms);
  (*ex)->Remove(&a);
  (*ex)->Remove(&b);
  EXPECT_TRUE(a.met.load() && b.met.load()) << "the two clients did not run at the same time on 2 threads";
  EXPECT_EQ((*ex)->stats().threads, 2);
}

struct Slow : FrameExecutor::Client {
  Gate entered;
  std::atomic<bool> finished{false};
  std::optional<double> RunOne() override {
    entered.Open();
    std::this_thread::sleep_for(80ms);
    finished = true;
    return 5.0;  // more waiting: it would run again, but it is being removed
  }
};

TEST(FrameExecutor, RemoveWaitsForTheFrameInFlightAndTheClientNeverRunsAgain) {
  auto ex = FrameExecutor::Start(2);
  ASSERT_TRUE(ex.ok());
  Slow s;
  (*ex)->Ready(&s, 1);
  ASSERT_TRUE(s.entered.Wait());
  (*ex)->Remove(&s);
  EXPECT_TRUE(s.finished.load()) << "Remove returned while the client's frame was still running";
  const uint64_t runs = (*ex)->stats().runs;
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ((*ex)->stats().runs, runs);
  EXPECT_EQ((*ex)->stats().clients, 0u);
}

TEST(FrameExecutor, RefusesAbsurdThreadCounts) {
  EXPECT_FALSE(FrameExecutor::Start(0).ok());
  EXPECT_FALSE(FrameExecutor::Start(-3).ok());
  EXPECT_FALSE(FrameExecutor::Start(100000).ok());
}

}  // namespace
}  // namespace veil
