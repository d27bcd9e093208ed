#pragma once
// The statistics gmem's figures are made of, one definition each: plain C++, no CUDA.

#include <algorithm>
#include <cstddef>
#include <vector>

namespace gmem::profiler {

/// The median of `sorted` (ascending): the middle value, or the mean of the two middle values of
/// an even count; 0 for none. Throws nothing.
[[nodiscard]] inline double median_of_sorted(const std::vector<double>& sorted) noexcept {
  const std::size_t n = sorted.size();
  if (n == 0) return 0;
  return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

/// The median of `values`, as median_of_sorted; 0 for none. Throws std::bad_alloc only.
[[nodiscard]] inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return median_of_sorted(values);
}

}  // namespace gmem::profiler
