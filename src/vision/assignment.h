// Minimum-cost linear assignment (Hungarian / Kuhn-Munkres) for small matrices.
#pragma once
#include <utility>
#include <vector>

namespace veil {

// cost is rows x cols (row-major). Returns (row, col) pairs of an optimal
// assignment whose cost is < `max_cost` (pairs at or above it are dropped).
std::vector<std::pair<int, int>> LinearAssignment(const std::vector<double>& cost, int rows, int cols,
                                                  double max_cost);

}  // namespace veil
