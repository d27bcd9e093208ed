#pragma once
// Lifetime and reuse analysis of a graph's memory nodes. Plain C++ (no CUDA): tested on machines
// without a GPU.
//
// Why the heaviest antichain is a lower bound on the physical memory a graph needs:
// allocation i is ordered before allocation j ("i < j") when i has a free node and that free node
// reaches j's alloc node by a directed path; only then is i certainly dead before j is born.
// Take a set of pairwise incomparable allocations (an antichain). No free node of the set
// precedes an alloc node of the set, so there is a valid execution order (a topological order of
// the graph) that runs every alloc node of the set before any of their free nodes: run the
// ancestors of the set's alloc nodes first; none of the set's free nodes is among them. At that
// moment all of them are live together, and the driver must back each with its own physical
// memory. So the heaviest antichain by bytes is memory any reservation must cover. An unfreed
// allocation lives past the end of the graph: it is ordered before nothing.
//
// Invariants of graph_analysis:
//  - `allocations` is in a topological order of the flattened graph (ties by node index), and
//    i < j in the order above implies i comes before j in `allocations`;
//  - each free node is paired with at most one allocation; a free node of an address with no
//    unfreed allocation at that point of the topological order counts as a foreign free;
//  - lower_bound_set is an antichain, sorted, whose bytes sum to lower_bound_bytes;
//    lower_bound_rounded_bytes is that sum rounded up to the granularity. (If a graph does not order some
//    free node after its alloc node, the order above may not be transitive; the antichains are
//    then those of its transitive closure: still lower bounds, possibly weaker ones.)

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmem/profiler/budget.hpp"
#include "gmem/profiler/graph_model.hpp"
#include "gmem/profiler/model_results.hpp"

namespace gmem::profiler {

/// One allocation of a graph (child graphs inlined): node indices are into flat_graph::nodes.
struct allocation {
  std::size_t alloc_node = 0;
  std::optional<std::size_t> free_node;  ///< the free node in this graph, if any
  std::uint64_t address = 0;
  std::size_t bytes = 0;
  int device = 0;
};

/// The graph with child graphs inlined. A child_graph node stays as a pass-through "entry" node
/// (a copy of the original) with edges to the child's source nodes; the child's sink nodes get
/// edges to an added "exit" node (kind empty), from which the child_graph node's outgoing edges
/// leave. An empty child graph is the entry node followed by the exit node. So every ordering
/// the parent imposes around the child node holds for every node inside it.
struct flat_graph {
  std::vector<model_node> nodes;
  std::vector<std::vector<std::size_t>> successors;
  /// Per node, for messages: "alloc node #3 in graph 'g'", "free node #5 in graph 'g / child 0'".
  std::vector<std::string> labels;
  /// Per node: inlined from a child graph (empty: none was). The driver chose such an alloc
  /// node's address when its child graph was built, before the parent's edges existed.
  std::vector<bool> in_child;
};

/// Inlines g's child graphs (recursively). Throws std::invalid_argument, naming the graph, when
/// an edge names a node that does not exist, a child_graph node names no valid child, or a
/// graph's edges form a cycle.
[[nodiscard]] flat_graph flatten(const graph_model& g);

struct graph_analysis {
  std::vector<allocation> allocations;  ///< in a topological order of their alloc nodes
  std::size_t alloc_nodes = 0;
  std::size_t free_nodes = 0;
  std::size_t foreign_frees = 0;  ///< free nodes of addresses no alloc node of this graph returned
  std::vector<std::size_t> unfreed;    ///< indices into allocations: no free node in this graph
  std::uint64_t requested_bytes = 0;   ///< sum of allocation bytes
  std::size_t distinct_addresses = 0;  ///< distinct allocation addresses
  double va_reuse_ratio = 0;  ///< allocations.size() / distinct_addresses (0 when no allocations)
  std::uint64_t granularity = 0;             ///< as given (0 or 1 = no rounding)
  std::uint64_t lower_bound_bytes = 0;       ///< heaviest antichain by requested bytes
  std::vector<std::size_t> lower_bound_set;  ///< allocation indices in that antichain, sorted
  /// lower_bound_bytes rounded up to a multiple of granularity: the driver reserves whole
  /// granules and packs small allocations into them, so the rounding applies to the total.
  std::uint64_t lower_bound_rounded_bytes = 0;
  /// (i, j), i before j in `allocations`: i and j may be live together only because i's free
  /// node is not ordered before j's alloc node, and adding that edge would not create a cycle
  /// (j's alloc node does not reach i's free node). Restricted to pairs where both are in
  /// lower_bound_set; sorted by min(bytes_i, bytes_j) descending (ties by (i, j));
  /// at most 16.
  std::vector<std::pair<std::size_t, std::size_t>> reuse_opportunities;
};

/// The most reuse_opportunities an analysis lists.
inline constexpr std::size_t max_reuse_opportunities = 16;

/// Analyses g (flattened first). Throws std::invalid_argument, naming the graph, for bad
/// indices or a cycle.
[[nodiscard]] graph_analysis analyse(const graph_model& g, std::uint64_t granularity);

/// Analyses an already flattened graph (indices in the result are into `flat`). Memory linear in
/// the graph's nodes and edges (the bound is a maximum flow through a network of the graph's own
/// size, not one over every pair of allocations), plus a bit per member of the heaviest set for
/// each allocation whose pairs are looked at; time that of the flow, and of one search of the
/// graph per such allocation. Checks `until` inside its loops. Throws std::invalid_argument
/// when a successor index is out of range or the graph has a cycle, budget_exceeded when
/// `until` passes first.
[[nodiscard]] graph_analysis analyse(const flat_graph& flat, std::uint64_t granularity,
                                     const deadline& until = {});

/// `bytes` rounded up to a multiple of `granularity` (unchanged when granularity is 0 or 1).
/// Throws std::overflow_error when the result does not fit in 64 bits.
[[nodiscard]] std::uint64_t round_up(std::uint64_t bytes, std::uint64_t granularity);

/// The maximum total weight of an antichain of the partial order `less` (strict, transitive) over
/// n elements, exactly; `members` (if not null) receives one such antichain, sorted (analyse()
/// finds the same one through the graph instead: this one holds n^2 bits and every covering
/// pair, for orders given only as `less`). Throws
/// std::invalid_argument when weights.size() != n, std::overflow_error when the weights' sum
/// does not fit in 64 bits. `less` is called n * (n - 1) times and must be acyclic; an
/// intransitive `less` is taken as its transitive closure.
[[nodiscard]] std::uint64_t max_weight_antichain(
    std::size_t n, const std::function<bool(std::size_t, std::size_t)>& less,
    const std::vector<std::uint64_t>& weights, std::vector<std::size_t>* members);

/// Fills the analysis half of a report's analysis_summary from `a` and the measured high
/// watermarks (ratios are 0 when a denominator is 0). Throws nothing.
[[nodiscard]] analysis_summary summarize(const graph_analysis& a, std::uint64_t used_high,
                                         std::uint64_t reserved_high) noexcept;

}  // namespace gmem::profiler
