#pragma once
// The shape of a graph as an update of an executable graph sees it (nodes in creation order,
// their kinds and dependencies, the memory nodes' parameters, child graphs), and the checks
// gmem makes on an update before the driver does. Plain C++ (no CUDA): tested without a GPU.
//
// What the rules rest on (CUDA 13.0 runtime API and programming guide):
//  - cudaGraphExecUpdate takes a topologically identical graph: the same node count at each
//    level, nodes paired in the order of the API calls that made them, paired nodes of the same
//    type with matching dependencies; child graphs recursively;
//  - a graph with memory nodes may be instantiated once at a time, and an executable graph
//    cannot be updated with a graph that is instantiated as another executable graph;
//  - the parameters of alloc and free nodes cannot be changed on a graph nor on an executable
//    graph (cudaGraphNodeSetParams, cudaGraphExecNodeSetParams: "API unsupported"). gmem holds
//    whole-graph updates to the same rule: a paired memory node must ask for the same thing.
// gmem pairs nodes by creation order, the order the guide's rules for a deterministic pairing
// produce; the driver checks again, with the final say.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gmem/detail/graph_ledger.hpp"
#include "gmem/usage_error.hpp"

namespace gmem {

/// The kind of a graph node (cudaGraphNodeType, as plain C++).
enum class graph_node_kind : std::uint8_t {
  kernel,
  memcpy,
  memset,
  host,
  child_graph,
  empty,
  event_wait,
  event_record,
  semaphore_signal,
  semaphore_wait,
  mem_alloc,
  mem_free,
  conditional,
  other
};

/// "kernel", "alloc", "free", "child graph"... for messages ("a kernel node").
[[nodiscard]] const char* graph_node_kind_name(graph_node_kind kind) noexcept;

/// One node of a graph_shape.
struct shape_node {
  static constexpr std::size_t no_child = ~std::size_t{0};
  node_handle handle = 0;
  graph_node_kind kind = graph_node_kind::other;
  std::vector<std::size_t> deps;  ///< its dependencies: indices in the same level, ascending
  std::uintptr_t address = 0;     ///< alloc: the address it returns; free: the address it frees
  std::size_t bytes = 0;          ///< alloc: the size asked for
  int device = 0;                 ///< alloc: the resident device
  std::vector<int> peers;         ///< alloc: other devices with read-write access, ascending
  std::size_t child = no_child;   ///< child_graph: its graph, an index in graph_shape::children
};

/// A graph's nodes at one level in creation order (the order cudaGraphGetNodes lists them),
/// with the graphs of its child-graph nodes.
struct graph_shape {
  std::vector<shape_node> nodes;
  std::vector<graph_shape> children;
  /// Whether a node of this graph or of a child graph is an alloc or free node.
  [[nodiscard]] bool has_memory_nodes() const noexcept;
};

/// A graph's memory nodes in the order gmem's ledger reads a graph: topological, the earliest
/// created node first, a child graph's nodes where its node stands (for a graph built node by
/// node, creation order). What an update may not change.
struct memory_signature {
  struct allocation {
    node_handle node = 0;
    std::size_t bytes = 0;
    int device = 0;
    std::optional<std::vector<int>> peers;  ///< nullopt where not known (a ledger keeps none)
    bool freed_here = false;                ///< a free node of the same graph frees it
    node_handle free_node = 0;              ///< that free node, where known
    /// That free node's place among the graph's free nodes in the same order, where known.
    std::optional<std::size_t> free_position;
  };
  /// A free node of an allocation another graph made.
  struct foreign_free {
    node_handle node = 0;
    std::uintptr_t address = 0;
  };
  std::vector<allocation> allocations;
  std::vector<foreign_free> foreign_frees;
};

/// The memory nodes of `shape` in the ledger's order; a free node pairs with the latest
/// earlier alloc node of its address that no free node has taken yet, else it is foreign.
[[nodiscard]] memory_signature signature_of(const graph_shape& shape);

/// What `ledger` knows of its graph's memory nodes (no peers, no free positions).
[[nodiscard]] memory_signature signature_of(const graph_ledger& ledger);

/// Why gmem refuses an update, before the driver.
struct update_mismatch {
  update_refusal reason = update_refusal::topology_changed;
  node_handle node = 0;       ///< the node of the update's graph to blame, 0 if none
  node_handle from_node = 0;  ///< a dependency of `node` that does not match, 0 if none
  std::string message;
};

/// Throws update_error for `m`.
[[noreturn]] void throw_update_error(const update_mismatch& m);

/// The rule on instantiations: `next` holds memory nodes and is already instantiated as an
/// executable graph other than the one being updated (whose graph's ledger is `current`).
[[nodiscard]] std::optional<update_mismatch> check_update_source(const graph_ledger& current,
                                                                 const graph_ledger& next,
                                                                 const std::string& exec_name);

/// Compares the shape of the executable graph `exec_name` (`current`) with graph
/// `graph_name`'s (`next`): node counts, kinds and dependencies at each level, child graphs
/// recursively. The first difference in creation order, naming the node of `next`.
[[nodiscard]] std::optional<update_mismatch> compare_topology(const graph_shape& current,
                                                              const graph_shape& next,
                                                              const std::string& exec_name,
                                                              const std::string& graph_name);

/// Compares the memory nodes: the same count of alloc nodes asking for the same size, device
/// and peers (where both sides know them), freed in the graph by the same free node (where
/// both know it) or not at all, and the same frees of other graphs' allocations.
[[nodiscard]] std::optional<update_mismatch> compare_memory(const memory_signature& current,
                                                            const memory_signature& next,
                                                            const std::string& exec_name,
                                                            const std::string& graph_name);

/// A node parameter update in `where` ("executable graph 'A'", "graph 'A'"): `node` is of
/// kind `actual`, the parameters given are for kind `given`. Memory nodes' parameters cannot
/// be set, and the kinds must agree.
[[nodiscard]] std::optional<update_mismatch> check_node_update(graph_node_kind actual,
                                                               graph_node_kind given,
                                                               node_handle node,
                                                               const std::string& where);

/// "1st", "2nd", "3rd", "4th", "11th", "21st"... for messages.
[[nodiscard]] std::string ordinal(std::size_t n);

}  // namespace gmem
