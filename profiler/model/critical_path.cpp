#include "gmem/profiler/critical_path.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace gmem::profiler {

double critical_path_us(const flat_graph& flat, const std::vector<double>& duration_us,
                        const std::vector<std::pair<std::size_t, std::size_t>>& added) {
  const std::size_t n = flat.nodes.size();
  std::vector<std::vector<std::size_t>> extra(n);
  for (const auto& [from, to] : added) {
    if (from >= n || to >= n) {
      throw std::invalid_argument("critical path: the added edge " + std::to_string(from) + " -> " +
                                  std::to_string(to) + " names a node the graph (" +
                                  std::to_string(n) + " nodes) does not have");
    }
    extra[from].push_back(to);
  }
  std::vector<std::size_t> indegree(n, 0);
  for (std::size_t u = 0; u < n; ++u) {
    for (std::size_t v : flat.successors[u]) ++indegree[v];
    for (std::size_t v : extra[u]) ++indegree[v];
  }
  std::vector<std::size_t> ready;
  for (std::size_t v = 0; v < n; ++v) {
    if (indegree[v] == 0) ready.push_back(v);
  }
  std::vector<double> finish(n, 0);  // start of v = the latest finish of its predecessors
  std::size_t done = 0;
  double longest = 0;
  while (!ready.empty()) {
    const std::size_t u = ready.back();
    ready.pop_back();
    ++done;
    finish[u] += u < duration_us.size() ? std::max(0.0, duration_us[u]) : 0.0;
    longest = std::max(longest, finish[u]);
    const std::vector<std::size_t>& own = flat.successors[u];
    for (const std::vector<std::size_t>* next : {&own, &std::as_const(extra[u])}) {
      for (std::size_t v : *next) {
        finish[v] = std::max(finish[v], finish[u]);
        if (--indegree[v] == 0) ready.push_back(v);
      }
    }
  }
  if (done != n) {
    throw std::invalid_argument("critical path: the graph with the " + std::to_string(added.size()) +
                                " added edge(s) has a cycle; an added edge must not lead from a "
                                "node back to one of its ancestors");
  }
  return longest;
}

namespace {

// Nodes flatten() makes of g: each node, and for a child graph node its child's nodes and an
// end node.
std::size_t flat_size(const graph_model& g) {
  std::size_t n = g.nodes.size();
  for (const model_node& node : g.nodes) {
    if (node.kind == node_kind::child_graph && node.child && *node.child < g.children.size()) {
      n += flat_size(g.children[*node.child]) + 1;
    }
  }
  return n;
}

}  // namespace

std::vector<double> flat_durations(const graph_model& g, const std::vector<double>& top_level_us) {
  std::vector<double> out(flat_size(g), 0.0);
  std::size_t position = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    if (k < top_level_us.size()) out[position] = top_level_us[k];
    ++position;
    const model_node& node = g.nodes[k];
    if (node.kind == node_kind::child_graph && node.child && *node.child < g.children.size()) {
      position += flat_size(g.children[*node.child]) + 1;
    }
  }
  return out;
}

time_price price_of(const flat_graph& flat, const std::vector<double>& duration_us,
                    const std::vector<std::pair<std::size_t, std::size_t>>& added) {
  return {critical_path_us(flat, duration_us), critical_path_us(flat, duration_us, added)};
}

}  // namespace gmem::profiler
