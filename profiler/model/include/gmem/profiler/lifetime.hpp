#pragma once
// When each allocation of a graph lives, in one execution order: the data of the HTML view's
// lifetime chart (execution order across, addresses down; reuse shows as boxes sharing an
// address). Plain C++ (no CUDA).

#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/model_results.hpp"
#include "gmem/profiler/skeleton.hpp"

namespace gmem::profiler {

/// The lifetimes of a.allocations (in their order), with steps from the topological order of
/// `flat` that takes the lowest-indexed ready node first. `a` must be analyse(flat, ...).
/// Throws std::invalid_argument when `flat` has a cycle or `a` names a node `flat` lacks.
[[nodiscard]] std::vector<allocation_lifetime> lifetimes(const flat_graph& flat,
                                                         const graph_analysis& a);

/// The same for a graph model (flattened as analyse(g, ...) flattens it).
[[nodiscard]] std::vector<allocation_lifetime> lifetimes(const graph_model& g,
                                                         const graph_analysis& a);

/// The lifetimes that a skeleton states: its alloc nodes in the topological order of its
/// dependencies and late edges that takes the lowest-indexed ready node first, each with its
/// requested bytes, its step and the step of the free node that frees it (-1: none); addresses
/// are 0 (a skeleton has none). For a recorded graph this is lifetimes(flat, analysis) but for
/// the addresses, which a recording's compact form writes alone (report_json.cpp checks that
/// the two agree before it leaves the rest out). Throws std::invalid_argument on a cycle or an
/// edge out of range.
[[nodiscard]] std::vector<allocation_lifetime> lifetimes(const skeleton& s);

}  // namespace gmem::profiler
