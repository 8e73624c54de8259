// The node's event log: numbered, bounded, read after a sequence number.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "server/event_log.h"

namespace veil {
namespace {

TEST(EventLog, KeepsTheNewestAndNeverReusesANumber) {
  EventLog log(3);
  for (int i = 1; i <= 5; ++i) EXPECT_EQ(log.Add("t", std::to_string(i), ""), uint64_t(i));
  const auto all = log.After(0);
  ASSERT_EQ(all.size(), 3u);  // 1 and 2 fell out of the ring
  EXPECT_EQ(all.front().seq, 3u);
  EXPECT_EQ(all.front().session, "3");
  EXPECT_EQ(all.back().seq, 5u);
  EXPECT_FALSE(all.back().time.empty());
  EXPECT_EQ(log.After(4).size(), 1u);
  EXPECT_TRUE(log.After(5).empty());
}

TEST(EventLog, ConcurrentWritersGetDistinctNumbers) {
  EventLog log(10000);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 500; ++i) log.Add("t", "", "");
    });
  for (auto& t : ts) t.join();
  const auto all = log.After(0);
  ASSERT_EQ(all.size(), 2000u);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].seq, i + 1);  // in order, no gaps
}

}  // namespace
}  // namespace veil
