#include "core/clock.h"
#include "core/sha256.h"

#include <gtest/gtest.h>

namespace veil {
namespace {

TEST(StageStats, MeanAndPercentiles) {
  StageStats s;
  for (int i = 1; i <= 100; ++i) s.Add(i);
  EXPECT_DOUBLE_EQ(s.mean(), 50.5);
  EXPECT_DOUBLE_EQ(s.percentile(0), 1);
  EXPECT_DOUBLE_EQ(s.percentile(100), 100);
  EXPECT_NEAR(s.percentile(99), 99.01, 1e-9);
  EXPECT_DOUBLE_EQ(StageStats{}.mean(), 0);
}

TEST(Sha256, KnownVector) {
  EXPECT_EQ(Sha256Hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_FALSE(Sha256File("/nonexistent/file").ok());
}

}  // namespace
}  // namespace veil
