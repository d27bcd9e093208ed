#pragma once
// A CUDA graph read back into plain data: nodes, edges, memory-node parameters, child graphs.
// No CUDA here: the model is built by graph_reader (the only part that calls the driver) or by
// hand in tests.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gmem::profiler {

enum class node_kind {
  kernel,
  memcpy,
  memset,
  host,
  child_graph,
  empty,
  event_record,
  event_wait,
  mem_alloc,
  mem_free,
  conditional,
  other
};

/// "kernel", "mem_alloc", ... (the names used in reports).
[[nodiscard]] const char* to_string(node_kind k) noexcept;

struct model_node {
  node_kind kind = node_kind::other;
  /// mem_alloc: the address returned; mem_free: the address freed.
  std::uint64_t address = 0;
  /// mem_alloc: the bytes requested.
  std::size_t bytes = 0;
  /// mem_alloc: the resident device.
  int device = 0;
  /// mem_alloc: devices given access besides the resident one.
  std::vector<int> peers;
  /// child_graph: index into graph_model::children.
  std::optional<std::size_t> child;
};

/// Invariants: edges name valid node indices and form a DAG; a child_graph node's `child`
/// indexes `children`.
struct graph_model {
  std::string name;
  std::vector<model_node> nodes;
  /// (from, to): `to` runs after `from`.
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  std::vector<graph_model> children;
};

/// Calls `f(node)` for each node of `g` and of its child graphs, in the order flatten() lays them
/// out (a child-graph node, then its child's nodes): for a caller that reads the nodes only, without
/// building the flat graph (its labels and successors cost a recorded instantiation more than the
/// rest of the recorder's work).
template <typename F>
void for_each_node(const graph_model& g, F&& f) {
  for (const model_node& n : g.nodes) {
    f(n);
    if (n.kind == node_kind::child_graph && n.child && *n.child < g.children.size()) {
      for_each_node(g.children[*n.child], f);
    }
  }
}

}  // namespace gmem::profiler
