#pragma once
// Profiling one graph: its model and analysis, its footprint (counters), its launch costs and
// diagnostics, as a scenario_result. The C++ API for users' own graphs.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gmem/graph.hpp"
#include "gmem/profiler/phase_driver.hpp"
#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

struct profile_options {
  int device = 0;
  /// Unrecorded samples before each phase's recorded ones. The cold phases are sampled from
  /// shared resets (phase_driver::cold_chains): each chain of them runs `warmups` unrecorded
  /// rounds, so instantiate, sampled in each chain, has a multiple of them.
  int warmups = 2;
  /// The most samples a phase takes; it stops after `min_reps` once their host and wall times
  /// each lie within `settled_spread` of their median (0: always `reps`).
  int reps = 10;
  int min_reps = 5;
  double settled_spread = 0.10;
  /// Instantiate with AutoFreeOnLaunch (else unfreed allocations are freed in the stream after
  /// each launch, untimed, so that the graph can be relaunched).
  bool auto_free_on_launch = false;
  /// The phases to time (all_phases() when empty).
  std::vector<std::string> phases;
  /// Reservation granularity to round the lower bound with; measured when 0.
  std::uint64_t granularity = 0;
  /// A reservation above this multiple of the rounded lower bound is diagnosed.
  double excess_ratio_threshold = 1.5;
  /// Replay the graph's skeleton and each candidate change on the driver, keeping the advice
  /// whose saving was measured (scenario_result::advice). Allocates and maps memory of the
  /// graph's size for a moment; no user kernel runs.
  bool measure_advice = true;
  /// With the advice: measure the graph's node durations (three launches with CUPTI's kernel
  /// activity) to predict each change's launch-time price. CUPTI's activity buffers are
  /// process-wide: in a process that traces with CUPTI itself (torch.profiler, Nsight Systems),
  /// set false, or profiling takes that tool's buffer callbacks for the rest of the process.
  bool price_advice = true;
  /// Launches one steady_launch sample times. Test-only (the suite's slow_steady injection,
  /// which measures that `gmemprof check` catches a steady launch twice as slow): leave at 1.
  int steady_launches_per_sample = 1;
};

/// Profiles `g` (which the call does not change or destroy): reads it into the model,
/// analyses it, measures its footprint from a trimmed pool (one launch, then the four
/// counters), times the requested phases, and explains the excess. Leaves the pool trimmed.
/// Throws usage_error for an unknown phase, cuda_error when the driver fails.
[[nodiscard]] scenario_result profile_graph(cudaGraph_t g, const std::string& name,
                                            const profile_options& options = {});

/// Same, for a gmem::graph (it must have no live executable graph if it holds memory nodes).
[[nodiscard]] scenario_result profile_graph(const graph& g, const profile_options& options = {});

/// A report of `scenarios` measured on `device`, with the environment filled in (which
/// measures the granularity). Throws usage_error for a bad device, cuda_error.
[[nodiscard]] report make_report(std::vector<scenario_result> scenarios, int device,
                                 const std::string& command_line);

}  // namespace gmem::profiler
