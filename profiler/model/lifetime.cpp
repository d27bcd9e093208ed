#include "gmem/profiler/lifetime.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>

namespace gmem::profiler {

namespace {

// Each node's step in Kahn's order taking the lowest-indexed ready node first (the order
// analyse() uses for ties), from the nodes' successor lists. Throws on an edge out of range or a
// cycle, naming `what` ("graph", "skeleton").
std::vector<std::uint64_t> steps_of(const std::vector<std::vector<std::size_t>>& successors, const char* what) {
  const std::size_t n = successors.size();
  std::vector<std::size_t> indegree(n, 0);
  for (const auto& next : successors) {
    for (std::size_t to : next) {
      if (to >= n) throw std::invalid_argument("lifetimes: an edge names a node out of range");
      ++indegree[to];
    }
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (indegree[i] == 0) ready.push(i);
  }
  std::vector<std::uint64_t> step(n, 0);
  std::size_t done = 0;
  while (!ready.empty()) {
    const std::size_t v = ready.top();
    ready.pop();
    step[v] = done++;
    for (std::size_t to : successors[v]) {
      if (--indegree[to] == 0) ready.push(to);
    }
  }
  if (done != n) throw std::invalid_argument(std::string("lifetimes: the ") + what + " has a cycle");
  return step;
}

}  // namespace

std::vector<allocation_lifetime> lifetimes(const flat_graph& flat, const graph_analysis& a) {
  if (flat.successors.size() != flat.nodes.size()) {
    throw std::invalid_argument("lifetimes: the graph's successor lists do not match its nodes");
  }
  const std::size_t n = flat.nodes.size();
  const std::vector<std::uint64_t> step = steps_of(flat.successors, "graph");
  std::vector<allocation_lifetime> out;
  out.reserve(a.allocations.size());
  for (const auto& al : a.allocations) {
    if (al.alloc_node >= n || (al.free_node && *al.free_node >= n)) {
      throw std::invalid_argument("lifetimes: the analysis names a node the graph lacks");
    }
    allocation_lifetime l;
    l.address = al.address;
    l.bytes = al.bytes;
    l.alloc_step = step[al.alloc_node];
    l.free_step = al.free_node ? static_cast<std::int64_t>(step[*al.free_node]) : -1;
    out.push_back(l);
  }
  return out;
}

std::vector<allocation_lifetime> lifetimes(const skeleton& s) {
  const std::size_t n = s.nodes.size();
  std::vector<std::vector<std::size_t>> next(n);
  const auto edge = [&](std::size_t from, std::size_t to) {
    if (from >= n || to >= n) throw std::invalid_argument("lifetimes: an edge names a node out of range");
    next[from].push_back(to);
  };
  for (std::size_t v = 0; v < n; ++v) {
    for (std::size_t d : s.nodes[v].deps) edge(d, v);
  }
  for (const auto& [from, to] : s.late_edges) edge(from, to);
  const std::vector<std::uint64_t> step = steps_of(next, "skeleton");
  std::vector<std::int64_t> freed_at(n, -1);  // per alloc node: the step of its free node
  std::vector<std::pair<std::uint64_t, std::size_t>> allocs;  // (step, alloc node)
  for (std::size_t v = 0; v < n; ++v) {
    const skeleton_node& node = s.nodes[v];
    if (node.kind == skeleton_kind::free && node.frees < n) freed_at[node.frees] = static_cast<std::int64_t>(step[v]);
    if (node.kind == skeleton_kind::alloc) allocs.emplace_back(step[v], v);
  }
  std::sort(allocs.begin(), allocs.end());
  std::vector<allocation_lifetime> out;
  out.reserve(allocs.size());
  for (const auto& [at, v] : allocs) {
    allocation_lifetime l;
    l.bytes = s.nodes[v].bytes;
    l.alloc_step = at;
    l.free_step = freed_at[v];
    out.push_back(l);
  }
  return out;
}

std::vector<allocation_lifetime> lifetimes(const graph_model& g, const graph_analysis& a) {
  return lifetimes(flatten(g), a);
}

}  // namespace gmem::profiler
