#pragma once
// A set of graphs in one device's pool, measured: what each graph adds, what the set
// costs, and why. `profile_graphs` launches a program's own graphs in a given order into one
// stream; `replay_set` replays a recording's graphs (skeletons: memory nodes and empty nodes,
// no user kernel) in the order the program called them, and measures what-if changes of the set.
// Both read the counters around every launch and explain the high watermark with the pool model.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

struct set_profile_options {
  int device = 0;
  /// Instantiate with cudaGraphInstantiateFlagAutoFreeOnLaunch (as PyTorch does): an
  /// allocation a graph leaves allocated is freed by its next launch.
  bool auto_free_on_launch = true;
  /// Launch rounds: each round launches every graph once, in the given order. The first
  /// round maps each graph's memory; the second shows what held allocations cost the others.
  int rounds = 2;
  /// Reservation granularity; measured when 0.
  std::uint64_t granularity = 0;
};

/// Instantiates each graph (the cudaGraph_t is left as it was; it must have no executable graph
/// alive, as for profile_graph), launches them `rounds` times in this order into one stream from
/// a trimmed pool, reading the counters around every launch, then frees what they left
/// allocated, destroys the executable graphs and trims. Returns a report with a scenario per
/// graph (its own figures: alone, predicted) and the "recorded" section: each launch's pool
/// growth, each graph's, the set's high watermark and what was mapped there, by graph (see
/// pool_analysis.hpp). Throws cuda_error naming the graph, std::invalid_argument for an empty set.
[[nodiscard]] report profile_graphs(const std::vector<std::pair<cudaGraph_t, std::string>>& graphs,
                                    const set_profile_options& options = {});

/// What `gmemprof replay REPORT --set` measured.
struct set_replay_result {
  std::uint64_t recorded_high_bytes = 0;  ///< the recording's high watermark (first device)
  std::uint64_t high_bytes = 0;           ///< the replay's, from a trimmed pool
  std::vector<std::uint64_t> growth_bytes;  ///< per graph, in the replay
  std::vector<std::uint64_t> alone_bytes;   ///< per graph: replayed alone
  std::size_t calls = 0;                    ///< calls replayed
  std::vector<measured_change> changes;     ///< what-ifs that saved at least a granule
  std::vector<measured_change> tried;       ///< the others
};

/// Replays a recording's graphs (their skeletons, as instantiated, with their AutoFreeOnLaunch
/// flag) in the order the program made its calls (launches, uploads, frees of held
/// allocations, destroys, trims; one stream per stream of the program, each call complete
/// before the next: a replay has no kernels to overlap), on `device`; then each what-if: the
/// allocations graphs hold between launches allocated outside the graphs (each a
/// gmem::outside_buffer retained by the graph that held it, freed once that graph and its
/// executable graphs are gone; their size added to the pool's), the graphs first launched
/// largest first, every call in one stream, a trim before the call that reached the high
/// watermark. Throws std::invalid_argument when the report has no recording with skeletons,
/// cuda_error naming the graph and call, std::runtime_error naming the outside buffers not freed
/// within a few seconds of their graphs' destroy.
[[nodiscard]] set_replay_result replay_set(const report& recorded, int device);

}  // namespace gmem::profiler
