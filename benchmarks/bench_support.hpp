#pragma once
// Shared pieces of gmem's benchmarks: the run's context, a move-only CUDA event timer, and
// graphs of N allocations built with gmem's allocator layer.

#include <cuda_runtime_api.h>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gmem/gmem.hpp"

namespace gmem::bench {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

/// What every benchmark needs to know about the run.
struct context {
  int device = 0;
  std::uint64_t granularity = 0;
  std::uint64_t free_memory = 0;
  bool quick = false;
};
context& ctx();

/// Times work in a stream with two CUDA events (GPU time) and the host clock around the call
/// (host time). Move-only, built with std::exchange in the NVBench manner.
class gpu_timer {
 public:
  gpu_timer();
  ~gpu_timer();
  gpu_timer(gpu_timer&& o) noexcept
      : start_(std::exchange(o.start_, nullptr)), stop_(std::exchange(o.stop_, nullptr)) {}
  gpu_timer& operator=(gpu_timer&&) = delete;
  gpu_timer(const gpu_timer&) = delete;
  gpu_timer& operator=(const gpu_timer&) = delete;

  struct result {
    double gpu_s = 0;   ///< from the start event to the stop event
    double host_s = 0;  ///< inside the timed call
  };
  /// Records the start event in `s`, runs `call`, records the stop event and waits for it.
  template <typename F>
  result time(cudaStream_t s, F&& call) {
    GMEM_CUDA_TRY(cudaEventRecord(start_, s));
    const auto t0 = std::chrono::steady_clock::now();
    call();
    const auto t1 = std::chrono::steady_clock::now();
    GMEM_CUDA_TRY(cudaEventRecord(stop_, s));
    GMEM_CUDA_TRY(cudaEventSynchronize(stop_));
    float ms = 0;
    GMEM_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_));
    return {ms / 1e3, std::chrono::duration<double>(t1 - t0).count()};
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

/// Host time of `call`, in seconds.
template <typename F>
double host_seconds(F&& call) {
  const auto t0 = std::chrono::steady_clock::now();
  call();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Sets `fn` to the driver's entry point `symbol` (CUDA 12.0 ABI), fetched at run time so that
/// the binaries do not link libcuda (they must start, and skip, on machines without a driver).
/// Throws unsupported_error if the driver lacks it, cuda_error if the lookup fails.
template <typename F>
void fetch_driver_entry(F*& fn, const char* symbol) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status{};
  GMEM_CUDA_TRY_CTX(cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &status),
                    std::string("looking up ") + symbol);
  if (status != cudaDriverEntryPointSuccess || !p) {
    throw unsupported_error(std::string("the driver has no ") + symbol);
  }
  fn = reinterpret_cast<F*>(p);
}

/// `allocs` independent allocations of `bytes` each (alloc -> memset of 4 KiB -> free).
graph make_graph(std::uint64_t bytes, int allocs, int device);

/// Sets the per-iteration counters every benchmark reports.
void report(benchmark::State& state, double host_s_total, std::uint64_t bytes, int allocs,
            std::uint64_t footprint);

}  // namespace gmem::bench
