#include "measure/host_reference.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

namespace gmem::profiler {

double host_reference_us() noexcept {
  constexpr int runs = 5;
  constexpr int steps = 250'000;
  double best = std::numeric_limits<double>::infinity();
  volatile std::uint64_t sink = 0;
  for (int run = 0; run < runs; ++run) {
    std::uint64_t x = sink + 0x9e3779b97f4a7c15ULL;
    const auto t0 = std::chrono::steady_clock::now();
    // Each step depends on the last (no vectorising, no overlap): time per step follows the
    // core's clock.
    for (int i = 0; i < steps; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto t1 = std::chrono::steady_clock::now();
    sink = x;
    best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return best;
}

}  // namespace gmem::profiler
