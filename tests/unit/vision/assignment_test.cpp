#include "vision/assignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace veil {
namespace {

double BruteForce(const std::vector<double>& c, int rows, int cols) {
  // Best total over all injective maps of the smaller side into the larger.
  const bool t = rows > cols;
  const int n = t ? cols : rows, m = t ? rows : cols;
  std::vector<int> perm(m);
  std::iota(perm.begin(), perm.end(), 0);
  double best = 1e18;
  do {
    double s = 0;
    for (int i = 0; i < n; ++i) s += t ? c[perm[i] * cols + i] : c[i * cols + perm[i]];
    best = std::min(best, s);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

TEST(LinearAssignment, OptimalOnRandomRectangularMatrices) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    const int rows = 1 + int(rng() % 5), cols = 1 + int(rng() % 5);
    std::vector<double> c(rows * cols);
    for (auto& v : c) v = u(rng);
    auto pairs = LinearAssignment(c, rows, cols, 1e9);
    ASSERT_EQ(int(pairs.size()), std::min(rows, cols));
    double total = 0;
    std::vector<int> used_r(rows), used_c(cols);
    for (auto [r, col] : pairs) {
      ASSERT_EQ(used_r[r]++, 0);
      ASSERT_EQ(used_c[col]++, 0);
      total += c[r * cols + col];
    }
    EXPECT_NEAR(total, BruteForce(c, rows, cols), 1e-9);
  }
}

TEST(LinearAssignment, DropsPairsAboveTheGate) {
  const std::vector<double> c = {0.1, 0.9, 0.9, 0.95};
  auto pairs = LinearAssignment(c, 2, 2, 0.8);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0], std::make_pair(0, 0));
  EXPECT_TRUE(LinearAssignment({}, 0, 3, 1).empty());
}

}  // namespace
}  // namespace veil
