#include "vision/assignment.h"

#include <cstddef>
#include <limits>

namespace veil {

std::vector<std::pair<int, int>> LinearAssignment(const std::vector<double>& cost, int rows, int cols,
                                                  double max_cost) {
  std::vector<std::pair<int, int>> out;
  if (rows == 0 || cols == 0) return out;
  // Potentials method on an n x m matrix with n <= m (transpose when needed).
  const bool transpose = rows > cols;
  const int n = transpose ? cols : rows, m = transpose ? rows : cols;
  auto a = [&](int i, int j) {  // 1-based
    return transpose ? cost[static_cast<std::size_t>(j - 1) * cols + (i - 1)]
                     : cost[static_cast<std::size_t>(i - 1) * cols + (j - 1)];
  };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> u(n + 1), v(m + 1);
  std::vector<int> p(m + 1), way(m + 1);
  for (int i = 1; i <= n; ++i) {
    p[0] = i;
    int j0 = 0;
    std::vector<double> minv(m + 1, inf);
    std::vector<char> used(m + 1, 0);
    do {
      used[j0] = 1;
      const int i0 = p[j0];
      double delta = inf;
      int j1 = 0;
      for (int j = 1; j <= m; ++j) {
        if (used[j]) continue;
        const double cur = a(i0, j) - u[i0] - v[j];
        if (cur < minv[j]) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j] < delta) {
          delta = minv[j];
          j1 = j;
        }
      }
      for (int j = 0; j <= m; ++j) {
        if (used[j]) {
          u[p[j]] += delta;
          v[j] -= delta;
        } else {
          minv[j] -= delta;
        }
      }
      j0 = j1;
    } while (p[j0] != 0);
    do {
      const int j1 = way[j0];
      p[j0] = p[j1];
      j0 = j1;
    } while (j0);
  }
  for (int j = 1; j <= m; ++j) {
    if (p[j] == 0) continue;
    const int r = transpose ? j - 1 : p[j] - 1, c = transpose ? p[j] - 1 : j - 1;
    if (cost[static_cast<std::size_t>(r) * cols + c] < max_cost) out.emplace_back(r, c);
  }
  return out;
}

}  // namespace veil
