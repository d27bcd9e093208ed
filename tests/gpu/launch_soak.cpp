// Soak of launches: one graph shaped like the suite's reuse scenarios (a chain of two
// 64 MiB allocations that reuse one another, beside two concurrent 32 MiB ones), launched N
// times into one stream with the counter sampler running in the background. The graph memory
// counters must not grow after the first launch, and the process's resident memory must stay
// bounded (the sampler's timeline, which grows by design, is counted apart). Writes JSON with
// the run's metadata, atomically. Exit 0 bounded, 1 grew, 2 usage or CUDA error.
//
// usage: gmem_launch_soak --out FILE [--launches N] [--sample-us U] [--commit SHA]
//                         [--command TEXT] [--driver-version TEXT]
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "gmem/gmem.hpp"
#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/report_io.hpp"
#include "soak_support.hpp"

namespace {

using json = nlohmann::ordered_json;
constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
/// Resident memory may move by allocator noise, not by anything per launch: 10,000 launches
/// that each kept 1 KiB would be 10 MiB.
constexpr long rss_growth_bound_kib = 4096;

json counters_json(const gmem::profiler::counters& c) {
  return {{"used_current", c.used_current},
          {"used_high", c.used_high},
          {"reserved_current", c.reserved_current},
          {"reserved_high", c.reserved_high}};
}

gmem::graph soak_graph() {
  gmem::graph g("launch soak");
  const auto a = g.add_alloc({64 * MiB, 0});
  const auto fa = g.add_free(a.ptr, {g.add_memset({a.node}, a.ptr, 1, MiB)});
  const auto b = g.add_alloc({64 * MiB, 0}, {fa});  // after a's free: may reuse a's memory
  (void)g.add_free(b.ptr, {g.add_memset({b.node}, b.ptr, 2, MiB)});
  for (int i = 0; i < 2; ++i) {
    const auto c = g.add_alloc({32 * MiB, 0});
    (void)g.add_free(c.ptr, {g.add_memset({c.node}, c.ptr, 3, MiB)});
  }
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  gmem::soak::run_info run;
  int launches = 10000, sample_us = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (gmem::soak::take_run_flag(i, argc, argv, run)) continue;
    if (a == "--out" && has_value) out = argv[++i];
    else if (a == "--launches" && has_value) launches = std::atoi(argv[++i]);
    else if (a == "--sample-us" && has_value) sample_us = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "gmem_launch_soak: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (out.empty() || launches <= 1 || sample_us <= 0) {
    std::fprintf(stderr, "usage: gmem_launch_soak --out FILE [--launches N>1] [--sample-us U>0] "
                         "[--commit SHA] [--command TEXT] [--driver-version TEXT]\n");
    return 2;
  }
  try {
    namespace prof = gmem::profiler;
    gmem::soak::describe_device(run);
    (void)prof::trim(0);
    prof::reset_high_watermarks(0);
    gmem::graph g = soak_graph();
    gmem::graph_exec exec(g);
    gmem::stream s;
    prof::sampler sampler(0);
    sampler.mark("soak");
    sampler.start_background(std::chrono::microseconds(sample_us));

    exec.launch(s);
    s.synchronize();
    const prof::counters first = prof::read_counters(0);
    const long rss_first = gmem::soak::rss_kib();
    json checkpoints = json::array();
    bool counters_grew = false;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 1; i < launches; ++i) {
      exec.launch(s);
      if ((i + 1) % 100 == 0) s.synchronize();
      if ((i + 1) % 1000 == 0) {
        s.synchronize();
        const prof::counters c = prof::read_counters(0);
        counters_grew |= c.reserved_high > first.reserved_high ||
                         c.reserved_current > first.reserved_current ||
                         c.used_high > first.used_high;
        checkpoints.push_back({{"launches", i + 1},
                               {"counters", counters_json(c)},
                               {"rss_kib", gmem::soak::rss_kib()},
                               {"timeline_samples", sampler.timeline().size()}});
      }
    }
    s.synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sampler.stop_background();
    const auto timeline = sampler.timeline();
    std::uint64_t timeline_reserved_max = 0, timeline_used_high_max = 0;
    for (const auto& t : timeline) {
      timeline_reserved_max = std::max(timeline_reserved_max, t.values.reserved_current);
      timeline_used_high_max = std::max(timeline_used_high_max, t.values.used_high);
    }
    const prof::counters last = prof::read_counters(0);
    const long rss_last = gmem::soak::rss_kib();
    // The timeline's own growth is by design (one sample per interval): counted apart.
    const long timeline_kib =
        static_cast<long>(timeline.capacity() * sizeof(prof::sample) / 1024);
    const long rss_growth = rss_last - rss_first;
    counters_grew |= last.reserved_high > first.reserved_high ||
                     timeline_reserved_max > first.reserved_high ||
                     timeline_used_high_max > first.used_high;
    const bool rss_bounded = rss_growth - timeline_kib <= rss_growth_bound_kib;
    const bool bounded = !counters_grew && rss_bounded;

    json j = {
        {"kind", "gmem soak: launches of one graph with the counter sampler running"},
        {"commit", run.commit},
        {"date", gmem::soak::utc_now()},
        {"command", run.command},
        {"device", run.device},
        {"driver_version", run.driver_version},
        {"cuda_driver_api", run.cuda_driver_api},
        {"cuda_runtime", run.cuda_runtime},
        {"graph", "alloc 64 MiB -> memset -> free -> alloc 64 MiB -> memset -> free, beside two "
                  "concurrent alloc 32 MiB -> memset -> free; requested 192 MiB"},
        {"launches", launches},
        {"sample_interval_us", sample_us},
        {"seconds_after_first_launch", seconds},
        {"after_first_launch", counters_json(first)},
        {"after_last_launch", counters_json(last)},
        {"timeline_samples", timeline.size()},
        {"timeline_reserved_current_max", timeline_reserved_max},
        {"timeline_used_high_max", timeline_used_high_max},
        {"rss_kib_after_first_launch", rss_first},
        {"rss_kib_after_last_launch", rss_last},
        {"timeline_kib", timeline_kib},
        {"rss_growth_bound_kib", rss_growth_bound_kib},
        {"checkpoints", checkpoints},
        {"counters_grew", counters_grew},
        {"rss_bounded", rss_bounded},
        {"bounded", bounded}};
    const std::string text = j.dump(2) + "\n";
    prof::write_text_atomically(text, out);
    std::fputs(text.c_str(), stdout);
    return bounded ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmem_launch_soak: %s\n", e.what());
    return 2;
  }
}
