#pragma once
// Runs a set of executable graphs through a sequence of calls (launches, uploads, frees of the
// allocations they hold, destroys, trims, synchronizes) on one device, reading the counters
// around every launch and upload: the measured half of profile_graphs and replay_set. Private
// to profiler/measure.

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

#include "gmem/profiler/recording.hpp"

namespace gmem::profiler::detail {

struct set_member {
  std::string name;
  cudaGraphExec_t exec = nullptr;  ///< not owned: `destroy` ends it
  std::vector<void*> held;         ///< the allocations it leaves allocated, in node order
  bool auto_free = false;
  std::function<void()> destroy;   ///< destroys the executable graph (a "destroy" step)
  /// makes the executable graph again after a destroy (an "instantiate" step: a recording's
  /// graph of which one instance followed another; an "update" step, which destroys it first);
  /// none: such steps are skipped
  std::function<void()> instantiate;
};

/// Runs `steps` on `device` from a trimmed pool with reset high watermarks, one stream per
/// stream label, each call synchronized before the next (no two calls overlap). A launch step
/// of count n runs min(n, 2) launches. Frees at the end what the members still hold. Returns a
/// recording: a graph per member (its events: every launch and upload with the counters around
/// it), the sequence as run, the counter timeline. Throws cuda_error naming the member and step.
[[nodiscard]] recording run_set(std::vector<set_member>& members, const std::vector<sequence_step>& steps,
                                int device);

}  // namespace gmem::profiler::detail
