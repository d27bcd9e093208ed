// What gmem itself costs: building and instantiating a graph of 1000 memory nodes through the
// allocator layer versus the same raw CUDA calls, the runtime's (goal: at most 1.02x)
// and the driver's, one read of the four counters, and a launch loop with the sampler off and
// on. All host time.

#include <cuda.h>

#include <optional>
#include <stdexcept>

#include "benchmarks.hpp"
#include "bench_support.hpp"
#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/timing.hpp"

namespace gmem::bench {
namespace {

constexpr int pairs = 500;  // 500 alloc + 500 free nodes
constexpr std::uint64_t node_bytes = 2 * MiB;

/// What raw code passes to cudaGraphAddMemAllocNode for one of the benchmark's nodes.
cudaMemAllocNodeParams raw_alloc_params() {
  cudaMemAllocNodeParams p{};
  p.poolProps.allocType = cudaMemAllocationTypePinned;
  p.poolProps.location.type = cudaMemLocationTypeDevice;
  p.poolProps.location.id = ctx().device;
  p.bytesize = node_bytes;
  return p;
}

struct build_times {
  double build = 0;        ///< creating the graph and adding its nodes
  double instantiate = 0;  ///< instantiating it
  [[nodiscard]] double total() const { return build + instantiate; }
};

build_times build_with_gmem() {
  std::optional<graph> g;
  std::optional<graph_exec> exec;
  build_times t;
  t.build = host_seconds([&] {
    g.emplace("1000 memory nodes");
    for (int i = 0; i < pairs; ++i) {
      const auto a = g->add_alloc({node_bytes, ctx().device});
      (void)g->add_free(a.ptr, {a.node});
    }
  });
  t.instantiate = host_seconds([&] { exec.emplace(*g); });
  return t;  // destroyed untimed on return
}

// The raw calls plus only the ledger's bookkeeping (the ledger and the registry, on the real
// addresses, interleaved with the driver's work as in gmem): splits gmem's cost between its
// bookkeeping and the rest of its wrapper.
build_times build_raw_with_ledger() {
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::optional<graph_ledger> ledger;
  build_times t;
  t.build = host_seconds([&] {
    GMEM_CUDA_TRY(cudaGraphCreate(&g, 0));
    ledger.emplace("1000 memory nodes");
    for (int i = 0; i < pairs; ++i) {
      cudaMemAllocNodeParams p = raw_alloc_params();
      cudaGraphNode_t a = nullptr, f = nullptr;
      GMEM_CUDA_TRY(cudaGraphAddMemAllocNode(&a, g, nullptr, 0, &p));
      const auto address = reinterpret_cast<std::uintptr_t>(p.dptr);
      ledger->record_alloc(
          {address, node_bytes, reinterpret_cast<node_handle>(a), std::nullopt, ctx().device});
      cudaError_t err = cudaSuccess;
      const auto added = ledger->free_in_one_step(address, [&]() noexcept -> std::optional<node_handle> {
        err = cudaGraphAddMemFreeNode(&f, g, &a, 1, p.dptr);
        return err == cudaSuccess ? std::optional<node_handle>(reinterpret_cast<node_handle>(f)) : std::nullopt;
      });
      if (!added) GMEM_CUDA_TRY(err);
    }
  });
  t.instantiate = host_seconds([&] { GMEM_CUDA_TRY(cudaGraphInstantiate(&exec, g, 0)); });
  GMEM_CUDA_TRY(cudaGraphExecDestroy(exec));
  GMEM_CUDA_TRY(cudaGraphDestroy(g));
  return t;
}

/// The driver's own memory-node calls, which gmem makes (the runtime's wrappers of them cost
/// more, see alloc/src/memory_node_calls.hpp).
struct node_calls {
  decltype(&cuGraphAddMemAllocNode) alloc = nullptr;
  decltype(&cuGraphAddMemFreeNode) free = nullptr;
};

const node_calls& driver_calls() {
  static const node_calls calls = [] {
    node_calls c;
    fetch_driver_entry(c.alloc, "cuGraphAddMemAllocNode");
    fetch_driver_entry(c.free, "cuGraphAddMemFreeNode");
    return c;
  }();
  return calls;
}

/// Times creating a graph and adding `pairs` alloc and free nodes with `add_pair(graph)`, then
/// its instantiation; destroys both untimed.
template <typename AddPair>
build_times time_raw_build(AddPair&& add_pair) {
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  build_times t;
  t.build = host_seconds([&] {
    GMEM_CUDA_TRY(cudaGraphCreate(&g, 0));
    for (int i = 0; i < pairs; ++i) add_pair(g);
  });
  t.instantiate = host_seconds([&] { GMEM_CUDA_TRY(cudaGraphInstantiate(&exec, g, 0)); });
  GMEM_CUDA_TRY(cudaGraphExecDestroy(exec));
  GMEM_CUDA_TRY(cudaGraphDestroy(g));
  return t;
}

// The same nodes through the driver's calls: what gmem's own bookkeeping costs, apart from
// the runtime's wrappers that gmem does not pay.
build_times build_raw_driver() {
  const node_calls& d = driver_calls();
  return time_raw_build([&d](cudaGraph_t g) {
    CUDA_MEM_ALLOC_NODE_PARAMS p{};
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = ctx().device;
    p.bytesize = node_bytes;
    CUgraphNode a = nullptr, f = nullptr;
    if (d.alloc(&a, g, nullptr, 0, &p) != CUDA_SUCCESS ||
        d.free(&f, g, &a, 1, p.dptr) != CUDA_SUCCESS) {
      throw std::runtime_error("the driver refused a memory node of the raw driver build");
    }
  });
}

build_times build_raw() {
  return time_raw_build([](cudaGraph_t g) {
    cudaMemAllocNodeParams p = raw_alloc_params();
    cudaGraphNode_t a = nullptr, f = nullptr;
    GMEM_CUDA_TRY(cudaGraphAddMemAllocNode(&a, g, nullptr, 0, &p));
    GMEM_CUDA_TRY(cudaGraphAddMemFreeNode(&f, g, &a, 1, p.dptr));
  });
}

/// The median of `v` (the profiler's order statistics).
double median(std::vector<double> v) { return profiler::summarize_samples(std::move(v)).median_us; }

// Paired: each iteration builds through gmem, the raw runtime calls, the raw driver calls and
// the runtime calls with the ledger, in alternating order, so that drift cancels; each ratio is
// the median of the per-iteration ratios. Manual time: gmem's. `ratio` is the goal's
// (gmem against the raw calls a user writes, the runtime's); `driver_ratio` is gmem against the
// driver's calls, which gmem makes: the cost of gmem's own work.
void build_instantiate(benchmark::State& state) {
  std::vector<double> with_gmem, raw, ratio, build_ratio, inst_ratio, ledger_ratio, driver_ratio,
      driver_build_ratio;
  bool gmem_first = true;
  for (auto _ : state) {
    build_times g, r, l, d;
    if (gmem_first) {
      g = build_with_gmem();
      l = build_raw_with_ledger();
      r = build_raw();
      d = build_raw_driver();
    } else {
      d = build_raw_driver();
      r = build_raw();
      l = build_raw_with_ledger();
      g = build_with_gmem();
    }
    gmem_first = !gmem_first;
    ledger_ratio.push_back(l.build / r.build);
    state.SetIterationTime(g.total());
    with_gmem.push_back(g.total());
    raw.push_back(r.total());
    ratio.push_back(g.total() / r.total());
    build_ratio.push_back(g.build / r.build);
    inst_ratio.push_back(g.instantiate / r.instantiate);
    driver_ratio.push_back(g.total() / d.total());
    driver_build_ratio.push_back(g.build / d.build);
  }
  state.counters["gmem_us"] = 1e6 * median(with_gmem);
  state.counters["raw_us"] = 1e6 * median(raw);
  state.counters["ratio"] = median(ratio);
  state.counters["build_ratio"] = median(build_ratio);
  state.counters["instantiate_ratio"] = median(inst_ratio);
  state.counters["ledger_only_build_ratio"] = median(ledger_ratio);
  state.counters["driver_ratio"] = median(driver_ratio);
  state.counters["driver_build_ratio"] = median(driver_build_ratio);
  state.counters["memory_nodes"] = 2 * pairs;
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

// Paired like build_instantiate: each iteration runs 1000 launches with the sampler off,
// every 10 ms and every 1 ms, in rotating order. Manual time: the loop without the sampler.
void launch_loop_with_sampler(benchmark::State& state) {
  graph g = make_graph(4 * MiB, 1, ctx().device);
  graph_exec exec(g);
  stream s;
  exec.launch(s);
  s.synchronize();
  const auto loop = [&](int sampling_ms) {
    std::optional<profiler::sampler> smp;
    if (sampling_ms > 0) {
      smp.emplace(ctx().device);
      smp->start_background(std::chrono::milliseconds(sampling_ms));
    }
    const double t = host_seconds([&] {
      for (int i = 0; i < 1000; ++i) exec.launch(s);
      s.synchronize();
    });
    if (smp) smp->stop_background();
    return t;
  };
  std::vector<double> off, on10, on1, r10, r1;
  int rotation = 0;
  for (auto _ : state) {
    double t[3] = {0, 0, 0};
    const int ms[3] = {0, 10, 1};
    for (int k = 0; k < 3; ++k) {
      const int which = (rotation + k) % 3;
      t[which] = loop(ms[which]);
    }
    ++rotation;
    state.SetIterationTime(t[0]);
    off.push_back(t[0]);
    on10.push_back(t[1]);
    on1.push_back(t[2]);
    r10.push_back(t[1] / t[0]);
    r1.push_back(t[2] / t[0]);
  }
  state.counters["off_us"] = 1e6 * median(off);
  state.counters["sampler_10ms_us"] = 1e6 * median(on10);
  state.counters["sampler_1ms_us"] = 1e6 * median(on1);
  state.counters["overhead_10ms_pct"] = 100 * (median(r10) - 1);
  state.counters["overhead_1ms_pct"] = 100 * (median(r1) - 1);
  state.counters["launches_per_loop"] = 1000;
}

}  // namespace

void register_overhead_benchmarks() {
  const int reps = ctx().quick ? 2 : 5;
  benchmark::RegisterBenchmark("overhead/build_instantiate/nodes:1000", build_instantiate)
      ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(ctx().quick ? 6 : 51)
      ->Repetitions(reps)->ReportAggregatesOnly(true);
  benchmark::RegisterBenchmark("overhead/read_counters", read_counters_once)
      ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(2000)->Repetitions(reps)
      ->ReportAggregatesOnly(true);
  benchmark::RegisterBenchmark("overhead/launch_loop_with_sampler", launch_loop_with_sampler)
      ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(ctx().quick ? 9 : 31)
      ->Repetitions(reps)->ReportAggregatesOnly(true);
}

}  // namespace gmem::bench
