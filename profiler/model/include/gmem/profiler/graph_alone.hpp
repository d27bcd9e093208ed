#pragma once
// One graph of a set, by itself: its own figures whatever else the program had mapped. What
// the graph alone reserves from a trimmed pool (the reuse model's placement, the pool model's
// granules), the allocations it holds between launches, and its diagnostics measured against
// its own bound, never against memory other graphs hold. Plain C++ (no CUDA).

#include <cstdint>
#include <string>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/graph_model.hpp"
#include "gmem/profiler/pool_model.hpp"
#include "gmem/profiler/reuse_model.hpp"

namespace gmem::profiler {

struct graph_alone {
  flat_graph flat;
  graph_analysis analysis;
  skeleton shape;    ///< what the driver sees of it (reuse_model.hpp)
  pool_graph layout; ///< its granules (pool_model.hpp); empty without a granularity
  std::uint64_t reserved_bytes = 0;  ///< alone, from a trimmed pool: predicted
  std::uint64_t used_bytes = 0;
  std::uint64_t held_requested_bytes = 0;  ///< what it leaves allocated after a launch
  std::uint64_t held_granule_bytes = 0;    ///< the granules those allocations occupy
  std::vector<std::uint64_t> held_addresses;  ///< those allocations, in the order of their alloc nodes
  analysis_summary summary;                ///< reserved and used: the figures alone
  std::vector<diagnostic> diagnostics;
};

/// Studies the graph `flat` (flatten(model): whoever has it flattened passes it once) alone
/// (granularity 0: no rounding, no pool model). `streams` are the streams it was launched into
/// (a diagnostic when several). Every step checks `until` inside its loops (a recording's budget
/// at exit). Throws std::invalid_argument when `flat` has a cycle or a bad successor index,
/// budget_exceeded when `until` passes first (then nothing of the graph is computed).
[[nodiscard]] graph_alone study_alone(flat_graph flat, const std::string& name, std::uint64_t granularity,
                                      bool auto_free_on_launch, const std::vector<std::string>& streams = {},
                                      const deadline& until = {});

}  // namespace gmem::profiler
