#pragma once
// The driver's reuse of physical memory between a graph's allocations, as measured (README,
// "The driver's reuse rule"): the driver picks an allocation's memory when its alloc node is
// created, and may give it memory of an earlier allocation only when that allocation's free node
// is an ancestor of the new alloc node through the dependencies that exist at that moment. An
// edge added later (cudaGraphAddDependencies) orders the work but shares nothing. Each pool (a
// device and its peers) is one address range: an alloc node takes the free range at the lowest
// offset that fits and whose free node is its ancestor (the rest of the range stays free), else
// new memory at the end of the range, mapped in steps of the allocation rounded up to the
// granularity. A freed range joins a free neighbour only when the neighbour's free node is an
// ancestor of the new free node. The reservation is what is mapped.
//
// A skeleton is what the driver sees of a graph: memory nodes, empty nodes standing for every
// other node, the dependencies each node was created with, and the edges added after. Its nodes
// are in creation order. Plain C++ (no CUDA): measure/skeleton_replay builds it on the driver.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/budget.hpp"
#include "gmem/profiler/skeleton.hpp"

namespace gmem::profiler {

/// Throws std::invalid_argument naming the skeleton and the node when an invariant does not hold.
void validate(const skeleton& s);

/// What the rule predicts for a skeleton.
struct reuse_prediction {
  std::vector<std::size_t> pool;           ///< per node: its pool (alloc nodes), else no_node
  std::vector<std::uint64_t> offset;       ///< per node: its offset in its pool (alloc nodes)
  std::vector<std::size_t> reused_from;    ///< per node: the alloc node whose freed memory it starts in, or no_node
  std::uint64_t bytes = 0;                 ///< the pools' extents, summed
  std::uint64_t rounded_bytes = 0;         ///< what the pools map, summed: the reservation
  std::vector<int> pool_device;            ///< per pool: its resident device
  std::vector<std::uint64_t> pool_mapped;  ///< per pool: what it maps (a multiple of the granularity)
};

/// Applies the rule in creation order. Validates first. Time O((nodes + edges) * frees / 64 +
/// the ancestor free ranges looked at in words of 64 frees that hold one large enough), memory
/// one bitset over the free nodes per node still needed. Throws std::invalid_argument for an
/// invalid skeleton, budget_exceeded when `until` passes first.
[[nodiscard]] reuse_prediction predict_reuse(const skeleton& s, std::uint64_t granularity,
                                             const deadline& until = {});

/// The same rule computed the obvious way (a graph search per query): for tests.
[[nodiscard]] reuse_prediction predict_reuse_brute_force(const skeleton& s,
                                                         std::uint64_t granularity);

/// The skeleton of a flattened graph read back from the driver, whose node order is the creation
/// order (cudaGraphGetNodes returns nodes in creation order: measured, README). An edge from an
/// earlier to a later node counts as given at creation, unless the addresses the driver returned
/// show that it was not: when the rule predicts that alloc node j reuses freed memory but the
/// driver gave j an address inside no earlier allocation of its device, j's dependencies are
/// taken as added after its creation (late edges). Edges to earlier nodes are late. `a` is analyse(flat).
/// Throws budget_exceeded when `until` passes first.
[[nodiscard]] skeleton skeleton_of(const flat_graph& flat, const graph_analysis& a,
                                   const std::string& name, const deadline& until = {});

/// A skeleton of a flattened graph made without its analysis (for a recording whose analysis
/// at exit ran out of time): each free node frees the latest earlier alloc node of its address
/// not yet freed, edges to later nodes are dependencies at creation, edges to earlier ones late;
/// no late edges are inferred from addresses (skeleton_of does that, with the analysis).
/// Linear in nodes and edges. Throws nothing but bad_alloc.
[[nodiscard]] skeleton skeleton_without_analysis(const flat_graph& flat, const std::string& name);

/// The skeleton as a flattened graph (its dependencies and late edges as edges; each alloc node
/// a distinct made-up address that its free node frees), so that analyse() gives its order-free
/// bound and pairs. Validates first.
[[nodiscard]] flat_graph flat_of(const skeleton& s);

/// The two bounds of a graph and which one binds.
struct reuse_bounds {
  std::uint64_t order_free_bytes = 0;  ///< heaviest antichain, rounded (any schedule must hold it)
  std::uint64_t creation_order_bytes = 0;  ///< the rule with every edge given at creation, in the creation order seen
  std::uint64_t as_created_bytes = 0;  ///< the rule with the dependencies the driver saw
  /// "order_free": the driver can reach the order-free bound with this creation order;
  /// "creation_order": the creation order keeps it above; "late_dependencies": dependencies
  /// added after creation keep it above the creation-order bound.
  std::string binding;
};

[[nodiscard]] reuse_bounds bounds_of(const skeleton& s, const graph_analysis& a,
                                     std::uint64_t granularity);

/// One candidate change, applied to a skeleton, with what the rule predicts for it.
struct candidate_change {
  /// "dependency_at_creation", "creation_order", "add_dependency", "combined"
  std::string kind;
  std::string where;        ///< where to make the change in the user's code, in words
  skeleton changed;         ///< the skeleton with the change applied
  std::uint64_t predicted_bytes = 0;  ///< predict_reuse(changed).rounded_bytes
  /// The dependencies the change adds, (free node, alloc node) as indices of the skeleton it
  /// was made from (skeleton node v is flat node v of the graph): for pricing on the real graph.
  std::vector<std::pair<std::size_t, std::size_t>> added_edges;
};

/// Candidate changes whose predicted reservation is below the skeleton's own (each at most
/// once), ranked by predicted saving, and last the "combined" set (all edges given at creation
/// in a creation order that creates frees as soon as they can be), reported even when it saves
/// nothing predicted, so that it can be measured. `a` is the analysis of the graph (its pairs in
/// reuse_opportunities, in both directions, give the add_dependency candidates; allocations index alloc nodes by
/// a.allocations[k].alloc_node, which must be skeleton node indices). At most max_candidates;
/// at most max_candidates pairs are tried, and of those at most two that need the nodes
/// re-created in another order (each such try copies the skeleton).
[[nodiscard]] std::vector<candidate_change> candidate_changes(const skeleton& s,
                                                              const graph_analysis& a,
                                                              std::uint64_t granularity,
                                                              std::size_t max_candidates = 8);

/// A plan: the set of added dependencies that brings the skeleton down to the least
/// footprint an ordering reaches, found by a serial schedule (list scheduling: among the ready
/// nodes, frees first, then the other non-alloc nodes, then allocations; the least peak over all
/// orders is NP-hard in general, so this is a heuristic, exact for independent chains) and made
/// of one dependency per allocation of each pool: the free scheduled last before it, given when
/// the alloc node is created (re-creating the nodes in the schedule's order where a free was
/// created after the allocation). Dependencies the prediction does not need are dropped (tried
/// one by one up to 256 of them). Kind "plan"; nullopt when the plan predicts no saving against
/// the skeleton as it is. For k independent equal alloc/kernel/free chains: k-1 dependencies,
/// one allocation's memory.
struct plan_result {
  candidate_change change;
  std::uint64_t serial_peak_bytes = 0;  ///< the schedule's peak of live bytes, rounded per pool
  bool recreated = false;               ///< the nodes must be created in another order too
};

[[nodiscard]] std::optional<plan_result> plan_changes(const skeleton& s, std::uint64_t granularity);

/// The skeleton re-created in a topological order of all its edges, every edge given at
/// creation; among ready nodes, free nodes first when frees_first, else the lowest index.
[[nodiscard]] skeleton recreated(const skeleton& s, bool frees_first);

}  // namespace gmem::profiler
