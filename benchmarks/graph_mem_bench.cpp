// Graph memory nodes, phase by phase: instantiate, upload, first launch with and without
// upload, steady launch, launch after a stream switch, after a trim, and a launch that must
// remap because another graph's unfreed allocation holds the memory. Manual time is GPU time
// (CUDA events around the call) except for instantiate, which does no GPU work (host time).
// Every cold sample gets an untimed reset first.

#include "benchmarks.hpp"
#include "bench_support.hpp"
#include "gmem/profiler/counters.hpp"

namespace gmem::bench {
namespace {

enum class phase {
  instantiate,
  upload,
  first_launch_after_upload,
  first_launch_no_upload,
  steady_launch,
  launch_after_stream_switch,
  launch_after_trim,
  launch_with_unfreed_contention
};

const char* name_of(phase p) {
  switch (p) {
    case phase::instantiate: return "instantiate";
    case phase::upload: return "upload";
    case phase::first_launch_after_upload: return "first_launch_after_upload";
    case phase::first_launch_no_upload: return "first_launch_no_upload";
    case phase::steady_launch: return "steady_launch";
    case phase::launch_after_stream_switch: return "launch_after_stream_switch";
    case phase::launch_after_trim: return "launch_after_trim";
    case phase::launch_with_unfreed_contention: return "launch_with_unfreed_contention";
  }
  return "?";
}

bool is_cold(phase p) {
  return p == phase::instantiate || p == phase::upload || p == phase::first_launch_after_upload ||
         p == phase::first_launch_no_upload || p == phase::launch_after_trim ||
         p == phase::launch_with_unfreed_contention;
}

void run_phase(benchmark::State& state, phase p, std::uint64_t bytes, int allocs) {
  const int dev = ctx().device;
  graph g = make_graph(bytes, allocs, dev);
  stream s, other;
  gpu_timer timer;
  std::unique_ptr<graph_exec> exec;
  std::unique_ptr<holder> hog;
  if (p == phase::launch_with_unfreed_contention) hog = std::make_unique<holder>(bytes * allocs, dev);
  const auto fresh = [&] {
    exec.reset();
    (void)profiler::trim(dev);
    exec = std::make_unique<graph_exec>(g);
  };
  if (!is_cold(p)) {  // warm: instantiated and launched once
    exec = std::make_unique<graph_exec>(g);
    exec->launch(s);
    s.synchronize();
  }
  (void)profiler::trim(dev);
  double host_total = 0;
  std::uint64_t footprint = 0;
  for (auto _ : state) {
    gpu_timer::result r;
    switch (p) {
      case phase::instantiate: {
        exec.reset();
        (void)profiler::trim(dev);
        const double h = host_seconds([&] { exec = std::make_unique<graph_exec>(g); });
        r = {h, h};
        break;
      }
      case phase::upload:
        fresh();
        r = timer.time(s, [&] { exec->upload(s); });
        break;
      case phase::first_launch_after_upload:
        fresh();
        exec->upload(s);
        s.synchronize();
        r = timer.time(s, [&] { exec->launch(s); });
        break;
      case phase::first_launch_no_upload:
        fresh();
        r = timer.time(s, [&] { exec->launch(s); });
        break;
      case phase::steady_launch:
        r = timer.time(s, [&] { exec->launch(s); });
        break;
      case phase::launch_after_stream_switch:
        exec->launch(s);
        s.synchronize();
        r = timer.time(other, [&] { exec->launch(other); });
        break;
      case phase::launch_after_trim:
        if (!exec) exec = std::make_unique<graph_exec>(g);
        exec->launch(s);
        s.synchronize();
        (void)profiler::trim(dev);
        r = timer.time(s, [&] { exec->launch(s); });
        break;
      case phase::launch_with_unfreed_contention:
        // The holder owns the memory first, frees it, our graph launches onto it, and the
        // holder allocates it back: our relaunch must remap (see README).
        if (!exec) exec = std::make_unique<graph_exec>(g);
        (void)profiler::trim(dev);
        hog->hold(s);
        hog->release(s);
        exec->launch(s);
        s.synchronize();
        hog->hold(s);
        r = timer.time(s, [&] { exec->launch(s); });
        hog->release(s);
        break;
    }
    state.SetIterationTime(r.gpu_s);
    host_total += r.host_s;
    footprint = std::max(footprint, profiler::read_counters(dev).reserved_current);
  }
  report(state, host_total, bytes, allocs, footprint);
  exec.reset();
  (void)profiler::trim(dev);
}

}  // namespace

void register_graph_benchmarks(const std::vector<std::pair<std::uint64_t, int>>& shapes) {
  const context& c = ctx();
  for (const auto& [bytes, allocs] : shapes) {
    for (phase p : {phase::instantiate, phase::upload, phase::first_launch_after_upload,
                    phase::first_launch_no_upload, phase::steady_launch,
                    phase::launch_after_stream_switch, phase::launch_after_trim,
                    phase::launch_with_unfreed_contention}) {
      const std::string name = std::string("graph/") + name_of(p) +
                               "/bytes:" + std::to_string(bytes) +
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
