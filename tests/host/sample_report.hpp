#pragma once
// A suite report to write, read and show: read by the report's tests (tests/host/report/) and
// the views' (tests/host/views/).

#include <cstdint>
#include <string>
#include <utility>

#include "gmem/profiler/report.hpp"

namespace gmem::profiler::test {

inline constexpr std::int64_t big_bytes =
    (std::int64_t{1} << 41) + 12345;  // > 2^40, not a double-friendly round number

/// A suite report of three scenarios (ok, skipped, error) that sets every field of the ok one,
/// advice included.
inline report sample_report() {
  report r;
  r.env.device_name = "NVIDIA H200";
  r.env.device_index = 1;
  r.env.cc_major = 9;
  r.env.cc_minor = 0;
  r.env.total_memory_bytes = 150'754'820'096ULL;
  r.env.driver_version = 13000;
  r.env.driver_release = "580.159.04";
  r.env.runtime_version = 12080;
  r.env.device_count = 2;
  r.env.granularity_bytes = 2'097'152;
  r.env.granularity_method = "cuMemGetAllocationGranularity(RECOMMENDED)";
  r.env.tool_version = "gmemprof 0.1.0";
  r.env.git_commit = "ff7070d1a2b3-dirty";
  r.env.command_line = "gmemprof run --output \"out dir/r.json\"";
  r.env.date = "2026-11-22T02:05:34Z";

  scenario_result ok;
  ok.name = "alloc_free_chain";
  ok.params = {{"bytes", big_bytes},
               {"fraction", 0.375},
               {"pool", std::string("default")},
               {"upload", true},
               {"depth", std::int64_t{-3}}};
  ok.status = scenario_status::ok;
  ok.counters_after_phase = {{"instantiate", {1, 2, 3, 4}},
                             {"first_launch", {2'097'152, 4'194'304, 33'554'432, 67'108'864}}};
  launch_cost instantiate;
  instantiate.phase = "instantiate";
  instantiate.warmups = 2;
  instantiate.host = {9, 12.5, 11.25, 30.125};
  instantiate.wall = {9, 14.75, 13.5, 31.0625};
  launch_cost steady;
  steady.phase = "steady_launch";
  steady.warmups = 5;
  steady.host = {101, 3.5, 2.25, 7.75};
  steady.wall = {101, 20.5, 19.25, 44.125};
  ok.launch_costs = {instantiate, steady};
  ok.analysis.alloc_nodes = 7;
  ok.analysis.free_nodes = 6;
  ok.analysis.unfreed_allocations = 1;
  ok.analysis.requested_bytes = 14'680'064;
  ok.analysis.distinct_addresses = 3;
  ok.analysis.va_reuse_ratio = 7.0 / 3.0;
  ok.analysis.lower_bound_bytes = 4'194'000;
  ok.analysis.lower_bound_rounded_bytes = 4'194'304;
  ok.analysis.used_high_bytes = 6'291'456;
  ok.analysis.reserved_high_bytes = 33'554'432;
  ok.analysis.physical_reuse_ratio = 14'680'064.0 / 33'554'432.0;
  ok.analysis.bound_ratio = 8.0;
  ok.diagnostics = {
      {"unfreed_allocation", "warning",
       "allocation of 2.0 MiB at node 7 is never freed in the graph", 2'097'152},
      {"reserved_above_bound", "info", "the driver reserved 8x the lower bound", 29'360'128}};

  advice_measurement adv;
  adv.baseline_bytes = 67'108'864;
  const auto change = [](std::string kind, std::string where, std::uint64_t predicted,
                         std::uint64_t measured, std::uint64_t saving) {
    measured_change c;
    c.kind = std::move(kind);
    c.where = std::move(where);
    c.predicted_bytes = predicted;
    c.measured_bytes = measured;
    c.saving_bytes = saving;
    return c;
  };
  adv.changes = {change("creation_order", "create each free node as soon as its last user exists",
                        33'554'432, 33'554'432, 33'554'432)};
  measured_change plan = change("plan", "make alloc node #3 depend on free node #2", 33'554'432,
                                33'554'432, 33'554'432);
  plan.added_dependencies = 1;
  plan.predicted_launch_us = 412.5;
  plan.predicted_price_us = 206.25;
  adv.changes.insert(adv.changes.begin(), plan);
  adv.combined = change("combined", "give every dependency at creation", 33'554'432, 33'554'432,
                        33'554'432);
  adv.combined_reaches_order_free_bound = true;
  adv.tried = {change("auto_free_on_launch", "instantiate with AutoFreeOnLaunch", 67'108'864,
                      67'108'864, 0)};
  adv.critical_path_us = 206.25;
  ok.advice = adv;

  scenario_result skipped;
  skipped.name = "peer_access";
  skipped.params = {{"peer", std::int64_t{1}}};
  skipped.status = scenario_status::skipped;
  skipped.status_message = "needs 2 GPUs with peer access; this machine has 1";

  scenario_result failed;
  failed.name = "child_graph";
  failed.status = scenario_status::error;
  failed.status_message = "cudaGraphInstantiate: cudaErrorInvalidValue";
  failed.counters_after_phase = {{"build", {0, 0, 0, 0}}};
  failed.diagnostics = {{"instantiate_failed", "error", "instantiation failed", 0}};

  r.scenarios = {ok, skipped, failed};
  return r;
}

}  // namespace gmem::profiler::test
