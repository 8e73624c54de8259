#include "core/latest_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace veil {
namespace {
using std::chrono::microseconds;

TEST(LatestQueue, FullQueueEvictsTheOldestAndCountsIt) {
  LatestQueue<int> q(2);
  EXPECT_FALSE(q.Push(1).has_value());
  EXPECT_FALSE(q.Push(2).has_value());
  auto evicted = q.Push(3);
  ASSERT_TRUE(evicted.has_value());
  EXPECT_EQ(*evicted, 1);
  EXPECT_EQ(q.dropped(), 1u);
  EXPECT_EQ(*q.Pop(microseconds(0)), 2);
  EXPECT_EQ(*q.Pop(microseconds(0)), 3);
  EXPECT_FALSE(q.Pop(microseconds(1000)).has_value());  // times out, empty
}

TEST(LatestQueue, CloseWakesConsumersAndRefusesPushes) {
  LatestQueue<int> q(4);
  std::thread consumer([&] { EXPECT_FALSE(q.Pop(microseconds(10'000'000)).has_value()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q.Close();
  consumer.join();
  auto back = q.Push(7);
  ASSERT_TRUE(back.has_value());  // refused, handed back
  EXPECT_EQ(*back, 7);
}

TEST(LatestQueue, SlowConsumerNeverBlocksTheProducerAndEveryItemIsAccounted) {
  LatestQueue<int> q(3);
  std::atomic<bool> done{false};
  std::atomic<int> consumed{0};
  std::thread consumer([&] {
    while (!done || q.size() > 0) {
      if (q.Pop(microseconds(1000))) {
        ++consumed;
        std::this_thread::sleep_for(microseconds(200));  // slower than the producer
      }
    }
  });
  for (int i = 0; i < 2000; ++i) q.Push(i);
  done = true;
  consumer.join();
  EXPECT_EQ(q.pushed(), 2000u);
  EXPECT_EQ(consumed + q.dropped(), 2000u);  // consumed or counted, never lost silently
  EXPECT_GT(q.dropped(), 0u);
}

TEST(LatestQueue, WakeEndsAWaitWithoutAnItem) {
  LatestQueue<int> q(4);
  std::atomic<bool> woke{false};
  std::thread consumer([&] {
    EXPECT_FALSE(q.Pop(microseconds(10'000'000)).has_value());
    woke = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(woke.load());
  q.Wake();
  consumer.join();
  EXPECT_TRUE(woke.load());
  // A Wake is used once: the next wait times out, and items still come through.
  EXPECT_FALSE(q.Pop(microseconds(1000)).has_value());
  q.Push(7);
  q.Wake();
  EXPECT_EQ(*q.Pop(microseconds(0)), 7);
}

}  // namespace
}  // namespace veil
