#pragma once
// When each allocation of a graph lives, in one execution order: the data of the HTML view's
// lifetime chart (execution order across, addresses down; reuse shows as boxes sharing an
// address). Plain C++ (no CUDA).

#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

/// The lifetimes of a.allocations (in their order), with steps from the topological order of
/// `flat` that takes the lowest-indexed ready node first. `a` must be analyse(flat, ...).
/// Throws std::invalid_argument when `flat` has a cycle or `a` names a node `flat` lacks.
[[nodiscard]] std::vector<allocation_lifetime> lifetimes(const flat_graph& flat,
                                                         const graph_analysis& a);

/// The same for a graph model (flattened as analyse(g, ...) flattens it).
[[nodiscard]] std::vector<allocation_lifetime> lifetimes(const graph_model& g,
                                                         const graph_analysis& a);

}  // namespace gmem::profiler
