// gmem_bench: Google Benchmark programs for graph memory nodes. Options of its own:
//   --quick   fewer sizes and repetitions (at most about a minute on one GPU)
// Every other option goes to Google Benchmark (--benchmark_out=FILE --benchmark_out_format=json,
// --benchmark_filter=REGEX ...). Without a GPU it says so in one line and exits 0.

#include <cstring>
#include <iostream>

#include "benchmarks.hpp"
#include "bench_support.hpp"
#include "gmem/profiler/device_info.hpp"
#include "gmem/profiler/environment.hpp"

int main(int argc, char** argv) {
  using namespace gmem::bench;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      ctx().quick = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  if (const auto why = gmem::gpu_unavailable_reason()) {
    std::cout << "gmem_bench: " << *why << "; no benchmark can run on this machine.\n";
    return 0;
  }
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;

  context& c = ctx();
  const gmem::device_capability& cap = gmem::probe_device(c.device);
  GMEM_CUDA_TRY(cudaSetDevice(c.device));
  const auto gran = gmem::profiler::measure_granularity(c.device);
  c.granularity = gran.bytes;
  std::size_t free_bytes = 0, total_bytes = 0;
  GMEM_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  c.free_memory = free_bytes;

  benchmark::AddCustomContext("device_name", cap.name);
  benchmark::AddCustomContext("compute_capability",
                              std::to_string(cap.cc_major) + "." + std::to_string(cap.cc_minor));
  benchmark::AddCustomContext("driver_version", gmem::format_cuda_version(cap.driver_version));
  benchmark::AddCustomContext("driver_release", gmem::profiler::driver_release());
  benchmark::AddCustomContext("runtime_version", gmem::format_cuda_version(cap.runtime_version));
  benchmark::AddCustomContext("granularity_bytes", std::to_string(c.granularity));
  benchmark::AddCustomContext("granularity_method", gran.method);
  benchmark::AddCustomContext("free_memory_bytes", std::to_string(c.free_memory));
  benchmark::AddCustomContext("tool_version", gmem::profiler::tool_version());
  benchmark::AddCustomContext("mode", c.quick ? "quick" : "default");

  // Sizes from 2 MiB to 16 GiB, and 1 to 1024 allocations of 2 MiB, bounded by free memory:
  // the contention phase holds a second copy, so each shape needs twice its bytes.
  std::vector<std::uint64_t> sizes =
      c.quick ? std::vector<std::uint64_t>{2 * MiB, 256 * MiB, 4 * GiB}
              : std::vector<std::uint64_t>{2 * MiB,   8 * MiB, 32 * MiB, 128 * MiB, 512 * MiB,
                                           GiB,       2 * GiB, 4 * GiB,  8 * GiB,   16 * GiB};
  const std::vector<int> counts = c.quick ? std::vector<int>{1, 64, 1024}
                                          : std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256,
                                                             512, 1024};
  std::string skipped;
  std::vector<std::uint64_t> fitting;
  for (std::uint64_t b : sizes) {
    if (2 * b + GiB > c.free_memory) {
      skipped += (skipped.empty() ? "" : ", ") + std::to_string(b) + " B";
    } else {
      fitting.push_back(b);
    }
  }
  benchmark::AddCustomContext("skipped_sizes", skipped.empty() ? "none" : skipped + " (free memory)");
  std::vector<std::pair<std::uint64_t, int>> shapes;
  for (std::uint64_t b : fitting) shapes.emplace_back(b, 1);
  for (int k : counts) {
    if (k > 1) shapes.emplace_back(2 * MiB, k);
  }
  register_fresh_floor_benchmarks(fitting);  // first: memory this process never mapped
  register_graph_benchmarks(shapes);
  register_alternative_benchmarks(fitting);
  register_overhead_benchmarks();
  register_profile_time_benchmarks();
  register_advice_price_benchmarks();
  // Updates: chains of 2 MiB allocations, and one large allocation (the first launch maps it).
  std::vector<std::pair<std::uint64_t, int>> update_shapes =
      c.quick ? std::vector<std::pair<std::uint64_t, int>>{{2 * MiB, 1}, {2 * MiB, 64}}
              : std::vector<std::pair<std::uint64_t, int>>{
                    {2 * MiB, 1}, {2 * MiB, 16}, {2 * MiB, 256}, {256 * MiB, 1}};
  register_update_benchmarks(update_shapes);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
