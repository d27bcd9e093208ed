// What gmem itself costs: building and instantiating a graph of 1000 memory nodes through the
// allocator layer versus the same raw CUDA calls (goal: at most 1.05x), one read of the four
// counters, and a launch loop with the sampler off and on. All host time.

#include <optional>

#include "benchmarks.hpp"
#include "bench_support.hpp"
#include "gmem/profiler/counters.hpp"

namespace gmem::bench {
namespace {

constexpr int pairs = 500;  // 500 alloc + 500 free nodes
constexpr std::uint64_t node_bytes = 2 * MiB;

void build_with_gmem(benchmark::State& state) {
  double total = 0;
  for (auto _ : state) {
    std::optional<graph> g;
    std::optional<graph_exec> exec;
    const double s = host_seconds([&] {
      g.emplace("1000 memory nodes");
      for (int i = 0; i < pairs; ++i) {
        const auto a = g->add_alloc({node_bytes, ctx().device});
        (void)g->add_free(a.ptr, {a.node});
      }
      exec.emplace(*g);
    });
    state.SetIterationTime(s);
    total += s;
  }
  report(state, total, node_bytes, pairs, 0);
}

void build_raw(benchmark::State& state) {
  double total = 0;
  for (auto _ : state) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    const double s = host_seconds([&] {
      GMEM_CUDA_TRY(cudaGraphCreate(&g, 0));
      for (int i = 0; i < pairs; ++i) {
        cudaMemAllocNodeParams p{};
        p.poolProps.allocType = cudaMemAllocationTypePinned;
        p.poolProps.location.type = cudaMemLocationTypeDevice;
        p.poolProps.location.id = ctx().device;
        p.bytesize = node_bytes;
        cudaGraphNode_t a = nullptr, f = nullptr;
        GMEM_CUDA_TRY(cudaGraphAddMemAllocNode(&a, g, nullptr, 0, &p));
        GMEM_CUDA_TRY(cudaGraphAddMemFreeNode(&f, g, &a, 1, p.dptr));
      }
      GMEM_CUDA_TRY(cudaGraphInstantiate(&exec, g, 0));
    });
    state.SetIterationTime(s);
    total += s;
    GMEM_CUDA_TRY(cudaGraphExecDestroy(exec));
    GMEM_CUDA_TRY(cudaGraphDestroy(g));
  }
  report(state, total, node_bytes, pairs, 0);
}

void read_counters_once(benchmark::State& state) {
  double total = 0;
  for (auto _ : state) {
    const double s = host_seconds([] { benchmark::DoNotOptimize(profiler::read_counters(ctx().device)); });
    state.SetIterationTime(s);
    total += s;
  }
  report(state, total, 0, 0, 0);
}

void launch_loop(benchmark::State& state, int sampling_ms) {
  graph g = make_graph(4 * MiB, 1, ctx().device);
  graph_exec exec(g);
  stream s;
  exec.launch(s);
  s.synchronize();
  std::optional<profiler::sampler> smp;
  if (sampling_ms > 0) {
    smp.emplace(ctx().device);
    smp->start_background(std::chrono::milliseconds(sampling_ms));
  }
  double total = 0;
  for (auto _ : state) {
    const double t = host_seconds([&] {
      for (int i = 0; i < 1000; ++i) exec.launch(s);
      s.synchronize();
    });
    state.SetIterationTime(t);
    total += t;
  }
  if (smp) smp->stop_background();
  report(state, total, 4 * MiB, 1, 0);
  state.counters["launches_per_iteration"] = 1000;
}

}  // namespace

void register_overhead_benchmarks() {
  const int reps = ctx().quick ? 3 : 9;
  benchmark::RegisterBenchmark("overhead/build_instantiate/gmem/nodes:1000", build_with_gmem)
      ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(5)->Repetitions(reps)
      ->ReportAggregatesOnly(true);
  benchmark::RegisterBenchmark("overhead/build_instantiate/raw/nodes:1000", build_raw)
      ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(5)->Repetitions(reps)
      ->ReportAggregatesOnly(true);
  benchmark::RegisterBenchmark("overhead/read_counters", read_counters_once)
      ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(2000)->Repetitions(reps)
      ->ReportAggregatesOnly(true);
  for (int ms : {0, 10, 1}) {
    benchmark::RegisterBenchmark(
        ("overhead/launch_loop/sampler_ms:" + std::to_string(ms)).c_str(),
        [ms](benchmark::State& st) { launch_loop(st, ms); })
        ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(20)->Repetitions(reps)
        ->ReportAggregatesOnly(true);
  }
}

}  // namespace gmem::bench
