// The cost of one gmem NVTX range (push + pop) on the host, without a tool attached: what the
// ranges around the profiler's scenarios and phases add. Plain chrono, no GPU needed.
// Usage: gmem_nvtx_cost [RANGES]   (GMEM_NVTX=0 measures the switched-off path)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "measure/nvtx_range.hpp"

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1000000;
  if (n <= 0) {
    std::fprintf(stderr, "usage: gmem_nvtx_cost [RANGES]  (a positive count)\n");
    return 2;
  }
  const std::string name = "steady_launch";
  { const gmem::profiler::nvtx_range warm(name); }  // the first call initializes NVTX
  std::vector<double> ns;
  for (int round = 0; round < 7; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) {
      const gmem::profiler::nvtx_range r(name);
    }
    const auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / double(n));
  }
  std::sort(ns.begin(), ns.end());
  std::printf("nvtx range (push+pop), %s: median %.1f ns per range, min %.1f, max %.1f "
              "(7 rounds of %ld)\n",
              gmem::profiler::nvtx_enabled() ? "enabled, no tool attached" : "switched off",
              ns[3], ns.front(), ns.back(), n);
  return 0;
}
