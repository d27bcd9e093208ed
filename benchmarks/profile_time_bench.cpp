// Where profile_graph's time goes on a 1000-allocation graph: the whole call with its
// advice, without it, each phase alone, reading and analysing the graph, and the advice's
// skeleton replays. Host time; each part is measured by calling it, not estimated.

#include <string>

#include "benchmarks.hpp"
#include "bench_support.hpp"
#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/graph_reader.hpp"
#include "gmem/profiler/phase_driver.hpp"
#include "gmem/profiler/profile.hpp"
#include "gmem/profiler/reuse_model.hpp"
#include "gmem/profiler/skeleton_replay.hpp"

namespace gmem::bench {
namespace {

constexpr int allocations = 1000;
constexpr std::uint64_t alloc_bytes = 2 * MiB;

/// 1000 allocations of 2 MiB: independent (alloc -> memset -> free each) or chained (each
/// allocation created after the previous free, so all share one address).
graph make_profiled_graph(bool chained) {
  if (!chained) return make_graph(alloc_bytes, allocations, ctx().device);
  graph g("1000 chained allocations");
  cudaGraphNode_t last = nullptr;
  for (int i = 0; i < allocations; ++i) {
    std::vector<cudaGraphNode_t> deps;
    if (last) deps.push_back(last);
    const auto a = g.add_alloc({alloc_bytes, ctx().device}, deps);
    const auto m = g.add_memset({a.node}, a.ptr, 1, 4096);
    last = g.add_free(a.ptr, {m});
  }
  return g;
}

profiler::profile_options options(bool advice, std::vector<std::string> phases = {}) {
  profiler::profile_options o;
  o.device = ctx().device;
  o.granularity = ctx().granularity;
  o.measure_advice = advice;
  o.phases = std::move(phases);
  return o;
}

void profile_time(benchmark::State& state, bool chained) {
  graph g = make_profiled_graph(chained);
  double whole = 0, no_advice = 0;
  profiler::scenario_result last;
  for (auto _ : state) {
    const double t = host_seconds([&] { last = profiler::profile_graph(g, options(true)); });
    state.SetIterationTime(t);
    whole += t;
    no_advice += host_seconds([&] { (void)profiler::profile_graph(g, options(false)); });
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["whole_ms"] = 1e3 * whole / n;
  state.counters["without_advice_ms"] = 1e3 * no_advice / n;
  // How many samples each phase took before they settled (profile_options::min_reps, reps).
  for (const auto& c : last.launch_costs) state.counters["samples_" + c.phase] = static_cast<double>(c.host.count);
  // The parts, once each: the model, each phase alone (profile_graph with that phase only, no
  // advice: the footprint launch and the bookkeeping are in each), the advice's replays.
  profiler::graph_model model;
  state.counters["read_ms"] = 1e3 * host_seconds([&] { model = profiler::read_graph(g.get(), g.name()); });
  profiler::graph_analysis a;
  state.counters["analyse_ms"] =
      1e3 * host_seconds([&] { a = profiler::analyse(model, ctx().granularity); });
  profiler::skeleton s;
  state.counters["skeleton_ms"] = 1e3 * host_seconds([&] {
    s = profiler::skeleton_of(profiler::flatten(model), a, g.name());
  });
  std::size_t candidates = 0;
  state.counters["candidates_ms"] = 1e3 * host_seconds([&] {
    candidates = profiler::candidate_changes(s, a, ctx().granularity).size();
  });
  state.counters["candidates"] = static_cast<double>(candidates);
  state.counters["one_replay_ms"] = 1e3 * host_seconds([&] { (void)profiler::replay(s, ctx().device); });
  state.counters["advice_ms"] = 1e3 * host_seconds([&] {
    (void)profiler::measure_advice(s, a, ctx().granularity, ctx().granularity, ctx().device);
  });
  for (const std::string& p : profiler::all_phases()) {
    state.counters["phase_" + p + "_ms"] =
        1e3 * host_seconds([&] { (void)profiler::profile_graph(g, options(false, {p})); });
  }
  state.counters["allocations"] = allocations;
}

}  // namespace

void register_profile_time_benchmarks() {
  for (const bool chained : {false, true}) {
    benchmark::RegisterBenchmark(chained ? "profile_time/profile_graph/allocs:1000/chained"
                                         : "profile_time/profile_graph/allocs:1000/independent",
                                 [chained](benchmark::State& s) { profile_time(s, chained); })
        ->UseManualTime()
        ->Iterations(3)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace gmem::bench
