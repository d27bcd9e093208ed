#pragma once
// Turns an analysis and what the runner observed into diagnostics a user can act on: each names
// the allocations (label, size, address), graphs or streams involved and what to change. Plain
// C++ (no CUDA).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/model_results.hpp"

namespace gmem::profiler {

/// What the runner observed, beyond the graph's structure.
struct runtime_facts {
  std::string graph_name;
  bool auto_free_on_launch = false;
  /// The granules the allocations it leaves allocated occupy (0: not known).
  std::uint64_t held_granule_bytes = 0;
  /// Each (graph name, stream label) the scenario launched graphs with memory nodes into.
  std::vector<std::pair<std::string, std::string>> launches;
  bool graphs_destroyed = false;             ///< the runner destroyed the graphs and execs
  std::uint64_t reserved_after_destroy = 0;  ///< ReservedMemCurrent after that, before any trim
  std::uint64_t reserved_high = 0;           ///< measured high watermark
  /// reserved_high / lower_bound_rounded above this is reported.
  double excess_ratio_threshold = 1.5;
};

/// Explains excess footprint in words a user can act on: codes "unfreed_allocation",
/// "missed_reuse", "separate_streams", "reservation_above_bound", "reserved_until_trim", in
/// that order. `a` must be the analysis of the graph `flat` was made from (analyse(g) and
/// flatten(g) number nodes alike), so that its node indices are into `flat`. missed_reuse is
/// said only for pairs whose ordering would save at least a granule of the bound, not at all when
/// facts.reserved_high (0: not known) is at most the bound, and as one line for more than three.
/// Throws std::invalid_argument when a node index of `a` is not in `flat`.
[[nodiscard]] std::vector<diagnostic> diagnose(const flat_graph& flat, const graph_analysis& a,
                                               const runtime_facts& facts);

}  // namespace gmem::profiler
