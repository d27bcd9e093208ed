// Graph memory nodes, phase by phase: instantiate, upload, first launch with and without
// upload, steady launch, launch after a stream switch, an upload in one stream then a launch
// in another, a launch after a trim, and a launch that must remap because another graph's
// unfreed allocation holds the memory. Manual time is GPU time (CUDA events around the call)
// except for instantiate, which does no GPU work (host time). Every cold sample gets an
// untimed reset first.

#include "benchmarks.hpp"
#include "bench_support.hpp"
#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/phase_driver.hpp"

namespace gmem::bench {
namespace {

namespace phase = profiler::phase;

/// Cold phases get a fresh executable graph (or a trim) before every sample: few iterations.
bool is_cold(const std::string& p) {
  return p != phase::steady_launch && p != phase::launch_after_stream_switch;
}

// The steps of each phase (what "cold", "after a trim", "contended" mean) are the profiler's
// phase_driver's, the same that gmemprof times into reports; here they are timed with CUDA
// events inside Google Benchmark's loop.
void run_phase(benchmark::State& state, const std::string& p, std::uint64_t bytes, int allocs) {
  const int dev = ctx().device;
  const graph g = make_graph(bytes, allocs, dev);
  // Every allocation is live at once, so the contending graph holds all of their bytes.
  profiler::phase_driver drive(g.get(), g.name(), dev, {false, {}, bytes * allocs});
  const profiler::phase_step step = drive.step(p);
  gpu_timer timer;
  const auto sample = [&] {
    if (step.reset) step.reset();
    gpu_timer::result r;
    if (p == phase::instantiate) {  // no GPU work: host time
      const double h = host_seconds(step.call);
      r = {h, h};
    } else {
      r = timer.time(step.stream, step.call);
    }
    if (step.cleanup) step.cleanup();
    return r;
  };
  (void)sample();  // warm-up, untimed: a steady phase starts from a launched graph
  double host_total = 0;
  std::uint64_t footprint = 0;
  for (auto _ : state) {
    const gpu_timer::result r = sample();
    state.SetIterationTime(r.gpu_s);
    host_total += r.host_s;
    footprint = std::max(footprint, profiler::read_counters(dev).reserved_current);
  }
  report(state, host_total, bytes, allocs, footprint);
  drive.finish();
  (void)profiler::trim(dev);
}

}  // namespace

void register_graph_benchmarks(const std::vector<std::pair<std::uint64_t, int>>& shapes) {
  const context& c = ctx();
  for (const auto& [bytes, allocs] : shapes) {
    for (const std::string& p : profiler::all_phases()) {
      const std::string name = "graph/" + p + "/bytes:" + std::to_string(bytes) +
                               "/allocs:" + std::to_string(allocs);
      auto* b = benchmark::RegisterBenchmark(
          name.c_str(), [p, bytes = bytes, allocs = allocs](benchmark::State& st) {
            run_phase(st, p, bytes, allocs);
          });
      b->UseManualTime()->Unit(benchmark::kMicrosecond);
      if (is_cold(p)) {
        b->Iterations(c.quick ? 2 : 3)->Repetitions(c.quick ? 2 : 7);
      } else {
        b->Iterations(c.quick ? 50 : 200)->Repetitions(c.quick ? 2 : 7);
      }
      b->ReportAggregatesOnly(true);
    }
  }
}

}  // namespace gmem::bench
