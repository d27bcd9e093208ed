#include "bench_support.hpp"

namespace gmem::bench {

context& ctx() {
  static context c;
  return c;
}

gpu_timer::gpu_timer() {
  GMEM_CUDA_TRY(cudaEventCreate(&start_));
  GMEM_CUDA_TRY(cudaEventCreate(&stop_));
}

gpu_timer::~gpu_timer() {
  if (start_) GMEM_CUDA_TRY_NOTHROW(cudaEventDestroy(start_));
  if (stop_) GMEM_CUDA_TRY_NOTHROW(cudaEventDestroy(stop_));
}

graph make_graph(std::uint64_t bytes, int allocs, int device) {
  graph g("bench graph");
  for (int i = 0; i < allocs; ++i) {
    const auto a = g.add_alloc({bytes, device});
    const auto m = g.add_memset({a.node}, a.ptr, 1, std::min<std::uint64_t>(bytes, 4096));
    (void)g.add_free(a.ptr, {m});
  }
  return g;
}

void report(benchmark::State& state, double host_s_total, std::uint64_t bytes, int allocs,
            std::uint64_t footprint) {
  const double iters = static_cast<double>(state.iterations());
  state.counters["host_us"] = benchmark::Counter(1e6 * host_s_total / iters);
  state.counters["bytes"] = benchmark::Counter(static_cast<double>(bytes));
  state.counters["allocs"] = benchmark::Counter(static_cast<double>(allocs));
  state.counters["footprint_bytes"] = benchmark::Counter(static_cast<double>(footprint));
}

}  // namespace gmem::bench
