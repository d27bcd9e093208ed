#include "gmem/profiler/analysis.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gmem::profiler {
namespace {

// ---------------------------------------------------------------------------------------------
// Flattening

// The word a label uses for a node kind: messages say "alloc node #3", not "mem_alloc node #3".
std::string kind_word(node_kind k) {
  switch (k) {
    case node_kind::mem_alloc: return "alloc";
    case node_kind::mem_free: return "free";
    default: return to_string(k);
  }
}

std::string node_label(const model_node& n, std::size_t index, const std::string& path) {
  return kind_word(n.kind) + " node #" + std::to_string(index) + " in graph '" + path + "'";
}

// Checks one graph's own invariants (not its children's), so that an error names the graph that
// breaks them rather than the flattened whole.
void validate(const graph_model& g, const std::string& path) {
  const std::size_t n = g.nodes.size();
  for (std::size_t e = 0; e < g.edges.size(); ++e) {
    const auto [from, to] = g.edges[e];
    if (from >= n || to >= n) {
      throw std::invalid_argument("graph '" + path + "': edge " + std::to_string(e) + " (" +
                                  std::to_string(from) + " -> " + std::to_string(to) +
                                  ") names a node that does not exist (the graph has " +
                                  std::to_string(n) + " nodes)");
    }
  }
  for (std::size_t k = 0; k < n; ++k) {
    const model_node& node = g.nodes[k];
    if (node.kind == node_kind::child_graph &&
        (!node.child || *node.child >= g.children.size())) {
      throw std::invalid_argument(
          "graph '" + path + "': child_graph node #" + std::to_string(k) +
          (node.child ? " names child " + std::to_string(*node.child) : std::string(" names no child")) +
          " but the graph has " + std::to_string(g.children.size()) + " child graphs");
    }
  }
  // Kahn's algorithm: nodes left with predecessors afterwards lie on or after a cycle.
  std::vector<std::size_t> indegree(n, 0);
  std::vector<std::vector<std::size_t>> succ(n);
  for (const auto& [from, to] : g.edges) {
    succ[from].push_back(to);
    ++indegree[to];
  }
  std::vector<std::size_t> ready;
  for (std::size_t k = 0; k < n; ++k) {
    if (indegree[k] == 0) ready.push_back(k);
  }
  std::size_t seen = 0;
  while (!ready.empty()) {
    const std::size_t k = ready.back();
    ready.pop_back();
    ++seen;
    for (std::size_t s : succ[k]) {
      if (--indegree[s] == 0) ready.push_back(s);
    }
  }
  if (seen != n) {
    std::size_t stuck = 0;
    while (indegree[stuck] == 0) ++stuck;
    throw std::invalid_argument("graph '" + path + "': the edges form a cycle (" +
                                node_label(g.nodes[stuck], stuck, path) +
                                " is on it or after it); a CUDA graph must be acyclic");
  }
}

struct inlined {
  std::vector<std::size_t> sources;  // flat indices of the nodes that start the graph
  std::vector<std::size_t> sinks;    // flat indices of the nodes that end it
};

std::size_t add_node(flat_graph& out, model_node node, std::string label, bool in_child) {
  out.nodes.push_back(std::move(node));
  out.successors.emplace_back();
  out.labels.push_back(std::move(label));
  out.in_child.push_back(in_child);
  return out.nodes.size() - 1;
}

inlined inline_graph(const graph_model& g, const std::string& path, flat_graph& out,
                     bool in_child = false) {
  validate(g, path);
  const std::size_t n = g.nodes.size();
  std::vector<std::size_t> entry(n), exit(n);
  for (std::size_t k = 0; k < n; ++k) {
    const model_node& node = g.nodes[k];
    const std::string label = node_label(node, k, path);
    entry[k] = add_node(out, node, label, in_child);
    exit[k] = entry[k];
    if (node.kind != node_kind::child_graph) continue;
    const inlined child =
        inline_graph(g.children[*node.child], path + " / child " + std::to_string(*node.child), out, true);
    model_node end;
    end.kind = node_kind::empty;
    exit[k] = add_node(out, end, "end of " + label, in_child);
    for (std::size_t s : child.sources) out.successors[entry[k]].push_back(s);
    for (std::size_t s : child.sinks) out.successors[s].push_back(exit[k]);
    if (child.sources.empty()) out.successors[entry[k]].push_back(exit[k]);
  }
  std::vector<bool> has_pred(n, false), has_succ(n, false);
  for (const auto& [from, to] : g.edges) {
    out.successors[exit[from]].push_back(entry[to]);
    has_succ[from] = true;
    has_pred[to] = true;
  }
  inlined result;
  for (std::size_t k = 0; k < n; ++k) {
    if (!has_pred[k]) result.sources.push_back(entry[k]);
    if (!has_succ[k]) result.sinks.push_back(exit[k]);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Topological order and reachability

std::string flat_label(const flat_graph& flat, std::size_t v) {
  return v < flat.labels.size() ? flat.labels[v] : "node #" + std::to_string(v) + " of the flattened graph";
}

// Kahn's algorithm taking the smallest ready index first, so that the order (and with it the
// pairing of frees with allocations) is deterministic.
std::vector<std::size_t> topological_order(const flat_graph& flat) {
  const std::size_t n = flat.nodes.size();
  if (flat.successors.size() != n) {
    throw std::invalid_argument("flattened graph: " + std::to_string(n) + " nodes but " +
                                std::to_string(flat.successors.size()) + " successor lists");
  }
  std::vector<std::size_t> indegree(n, 0);
  for (std::size_t v = 0; v < n; ++v) {
    for (std::size_t s : flat.successors[v]) {
      if (s >= n) {
        throw std::invalid_argument("flattened graph: " + flat_label(flat, v) +
                                    " has a successor #" + std::to_string(s) +
                                    " that does not exist (" + std::to_string(n) + " nodes)");
      }
      ++indegree[s];
    }
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t v = 0; v < n; ++v) {
    if (indegree[v] == 0) ready.push(v);
  }
  std::vector<std::size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const std::size_t v = ready.top();
    ready.pop();
    order.push_back(v);
    for (std::size_t s : flat.successors[v]) {
      if (--indegree[s] == 0) ready.push(s);
    }
  }
  if (order.size() != n) {
    std::size_t stuck = 0;
    while (indegree[stuck] == 0) ++stuck;
    throw std::invalid_argument("flattened graph: the edges form a cycle (" + flat_label(flat, stuck) +
                                " is on it or after it)");
  }
  return order;
}

// A fixed-size set of bits per row, all rows in one vector so that thousands of rows stay cheap.
class bit_matrix {
 public:
  bit_matrix(std::size_t rows, std::size_t bits)
      : words_((bits + 63) / 64), data_(rows * words_, 0) {}
  void set(std::size_t row, std::size_t bit) { data_[row * words_ + bit / 64] |= bit_of(bit); }
  [[nodiscard]] bool test(std::size_t row, std::size_t bit) const {
    return (data_[row * words_ + bit / 64] & bit_of(bit)) != 0;
  }
  void or_into(std::size_t to, std::size_t from) {
    for (std::size_t w = 0; w < words_; ++w) data_[to * words_ + w] |= data_[from * words_ + w];
  }
  /// Clears in row `to` every bit set in row `from` of `other` (same width).
  void and_not_into(std::size_t to, const bit_matrix& other, std::size_t from) {
    for (std::size_t w = 0; w < words_; ++w) data_[to * words_ + w] &= ~other.data_[from * words_ + w];
  }
  /// Calls f(bit) for each set bit of `row`, in increasing order.
  template <typename F>
  void for_each(std::size_t row, F&& f) const {
    for (std::size_t w = 0; w < words_; ++w) {
      for (std::uint64_t word = data_[row * words_ + w]; word != 0; word &= word - 1) {
        f(w * 64 + static_cast<std::size_t>(__builtin_ctzll(word)));
      }
    }
  }

 private:
  static std::uint64_t bit_of(std::size_t bit) { return std::uint64_t{1} << (bit % 64); }
  std::size_t words_;
  std::vector<std::uint64_t> data_;
};

// ---------------------------------------------------------------------------------------------
// Maximum flow (Dinic) with 64-bit capacities

class max_flow {
 public:
  /// `until`: checked inside both phases of each round (a deadline that passes throws
  /// budget_exceeded); it must outlive the object.
  explicit max_flow(std::size_t nodes, const deadline& until = no_deadline())
      : adj_(nodes), level_(nodes), next_(nodes), until_(until) {}

  void add_edge(std::size_t from, std::size_t to, std::uint64_t cap) {
    adj_[from].push_back(edges_.size());
    edges_.push_back({to, cap});
    adj_[to].push_back(edges_.size());
    edges_.push_back({from, 0});
  }

  std::uint64_t run(std::size_t s, std::size_t t) {
    std::uint64_t flow = 0;
    while (levels_from(s, t)) flow += blocking_flow(s, t);
    return flow;
  }

  /// After run(): the nodes reachable from s through edges with capacity left (the min cut's
  /// source side).
  [[nodiscard]] std::vector<bool> residual_reachable(std::size_t s) const {
    std::vector<bool> seen(adj_.size(), false);
    std::vector<std::size_t> stack{s};
    seen[s] = true;
    while (!stack.empty()) {
      const std::size_t u = stack.back();
      stack.pop_back();
      for (std::size_t e : adj_[u]) {
        const std::size_t v = edges_[e].to;
        if (edges_[e].cap > 0 && !seen[v]) {
          seen[v] = true;
          stack.push_back(v);
        }
      }
    }
    return seen;
  }

 private:
  struct edge {
    std::size_t to;
    std::uint64_t cap;
  };
  static constexpr int unreached = -1;
  static const deadline& no_deadline() {
    static const deadline never;
    return never;
  }

  bool levels_from(std::size_t s, std::size_t t) {
    std::fill(level_.begin(), level_.end(), unreached);
    std::queue<std::size_t> q;
    level_[s] = 0;
    q.push(s);
    while (!q.empty()) {
      const std::size_t u = q.front();
      q.pop();
      until_.step("the heaviest antichain (maximum flow)", 1 + adj_[u].size());
      for (std::size_t e : adj_[u]) {
        const std::size_t v = edges_[e].to;
        if (edges_[e].cap > 0 && level_[v] == unreached) {
          level_[v] = level_[u] + 1;
          q.push(v);
        }
      }
    }
    return level_[t] != unreached;
  }

  // Saturates every shortest s-t path of the level graph. Iterative (an explicit path instead of
  // recursion): paths through pass-through nodes can be as long as the longest chain.
  std::uint64_t blocking_flow(std::size_t s, std::size_t t) {
    std::fill(next_.begin(), next_.end(), 0);
    std::uint64_t total = 0;
    std::vector<std::size_t> path;  // edge indices from s to u
    std::size_t u = s;
    for (;;) {
      until_.step("the heaviest antichain (maximum flow)");
      if (u == t) {
        std::uint64_t bottleneck = std::numeric_limits<std::uint64_t>::max();
        for (std::size_t e : path) bottleneck = std::min(bottleneck, edges_[e].cap);
        std::size_t first_saturated = path.size();
        for (std::size_t k = 0; k < path.size(); ++k) {
          edges_[path[k]].cap -= bottleneck;
          edges_[path[k] ^ 1].cap += bottleneck;
          if (edges_[path[k]].cap == 0 && first_saturated == path.size()) first_saturated = k;
        }
        total += bottleneck;
        // Resume from the tail of the first saturated edge: the path up to it still has room.
        path.resize(first_saturated);
        u = path.empty() ? s : edges_[path.back()].to;
        continue;
      }
      bool advanced = false;
      for (; next_[u] < adj_[u].size(); ++next_[u]) {
        const std::size_t e = adj_[u][next_[u]];
        const std::size_t v = edges_[e].to;
        if (edges_[e].cap > 0 && level_[v] == level_[u] + 1) {
          path.push_back(e);
          u = v;
          advanced = true;
          break;
        }
      }
      if (advanced) continue;
      if (u == s) return total;
      level_[u] = unreached;  // a dead end for the rest of this phase
      const std::size_t e = path.back();
      path.pop_back();
      u = edges_[e ^ 1].to;
      ++next_[u];
    }
  }

  std::vector<edge> edges_;
  std::vector<std::vector<std::size_t>> adj_;
  std::vector<int> level_;
  std::vector<std::size_t> next_;
  const deadline& until_;
};

// ---------------------------------------------------------------------------------------------
// The heaviest antichain as a minimum cut of a network made of the graph itself

// Per node: whether it lies between memory nodes (a memory node at or before it and one at or
// after it). Only such nodes lie on a path from a memory node to another.
std::vector<char> between_memory(const flat_graph& flat, const std::vector<std::size_t>& order,
                                 const std::vector<std::size_t>& owner) {
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  const std::size_t n = flat.nodes.size();
  std::vector<char> after_memory(n, 0), before_memory(n, 0);
  for (std::size_t v : order) {
    if (owner[v] != none) after_memory[v] = 1;
    if (!after_memory[v]) continue;
    for (std::size_t s : flat.successors[v]) after_memory[s] = 1;
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t v = *it;
    before_memory[v] = owner[v] != none;
    for (std::size_t k = 0; k < flat.successors[v].size() && !before_memory[v]; ++k) {
      before_memory[v] = before_memory[flat.successors[v][k]];
    }
  }
  std::vector<char> between(n);
  for (std::size_t v = 0; v < n; ++v) between[v] = after_memory[v] && before_memory[v];
  return between;
}

// The heaviest antichain of a's allocations under "x < y when x's free node reaches y's alloc
// node" (transitively closed), and the one max_weight_antichain would pick: the elements of the
// minimum cut's source side nearest the source (the nodes the residual network reaches from it),
// which depends on the network's cuts alone, not on the flow that found them.
//
// max_weight_antichain's network (Fulkerson's: s -> L_x, R_x -> t weighted, R_x -> L_x and
// L_x -> R_y for covering pairs x < y infinite) needs every covering pair: a layer of k
// allocations whose frees all precede another layer of k is k^2 pairs (25 million edges and
// 1.4 GB for 5,000 + 5,000). Here the graph's own nodes carry the order: L_x -> x's free
// node, the graph's edges among nodes between memory nodes, y's alloc node -> R_y, all infinite.
// L_x reaches R_y through them exactly when x's free node reaches y's alloc node, so the finite
// cuts, their capacities and the nearest minimum cut's elements are those of Fulkerson's network
// (a cut's graph nodes are those its L nodes reach; they add no capacity). A node that is no
// memory node and leads to one node only is merged into it (chains of kernels): the same paths.
// `owner`: per node, the allocation it is the alloc or free node of (none: neither);
// `between`: between_memory().
std::vector<std::size_t> heaviest_antichain(const flat_graph& flat, const std::vector<std::size_t>& order,
                                            const graph_analysis& a, const std::vector<std::size_t>& owner,
                                            const std::vector<char>& between, std::uint64_t sum,
                                            std::uint64_t& bytes, const deadline& until) {
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  const std::size_t n = flat.nodes.size();
  const std::size_t count = a.allocations.size();
  // Each node between memory nodes stands for itself, or for the one node it leads to.
  std::vector<std::size_t> rep(n, none), id(n, none);
  std::size_t nodes = 2 * count;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t v = *it;
    if (!between[v]) continue;
    std::size_t only = none;
    bool one = owner[v] == none;
    for (std::size_t k = 0; k < flat.successors[v].size() && one; ++k) {
      const std::size_t s = flat.successors[v][k];
      if (!between[s]) continue;
      if (only == none) only = rep[s];
      one = rep[s] == only;
    }
    if (one && only != none) {
      rep[v] = only;
    } else {
      rep[v] = v;
      id[v] = nodes++;
    }
  }
  until.step("the heaviest antichain (network)", n);
  const std::size_t source = nodes, sink = nodes + 1;
  const std::uint64_t infinite = sum + 1;
  max_flow net(nodes + 2, until);
  for (std::size_t i = 0; i < count; ++i) {
    const allocation& al = a.allocations[i];
    if (al.bytes != 0) {
      net.add_edge(source, i, al.bytes);
      net.add_edge(count + i, sink, al.bytes);
    }
    net.add_edge(count + i, i, infinite);
    if (al.free_node) net.add_edge(i, id[*al.free_node], infinite);
    net.add_edge(id[al.alloc_node], count + i, infinite);
  }
  std::vector<std::size_t> to;
  for (std::size_t v : order) {
    if (id[v] == none) continue;
    to.clear();
    for (std::size_t s : flat.successors[v]) {
      if (between[s]) to.push_back(id[rep[s]]);
    }
    std::sort(to.begin(), to.end());
    to.erase(std::unique(to.begin(), to.end()), to.end());
    for (std::size_t t : to) net.add_edge(id[v], t, infinite);
  }
  bytes = sum - net.run(source, sink);
  const std::vector<bool> side = net.residual_reachable(source);
  std::vector<std::size_t> members;
  for (std::size_t i = 0; i < count; ++i) {
    if (a.allocations[i].bytes != 0 && side[i] && !side[count + i]) members.push_back(i);
  }
  return members;
}

// Whether an edge from allocation i's free node to allocation j's alloc node could be added, for
// i and j of the heaviest set: not when either already reaches the other. Found by a search from
// i's free node both ways through the nodes between memory nodes, once per i (kept as bits over
// the set), so that only the allocations whose pairs are looked at cost a search: a reachability
// matrix over every memory node was 4 k^2 bits for a component of k allocations.
class pair_reach {
 public:
  /// `between`: between_memory(), kept by reference.
  pair_reach(const flat_graph& flat, const std::vector<char>& between, const graph_analysis& a,
             const std::vector<std::size_t>& set, const deadline& until)
      : flat_(flat), a_(a), until_(until), between_(between), seen_(flat.nodes.size(), 0) {
    const std::size_t n = flat.nodes.size();
    position_.assign(n, no_position);  // per node: the set's index of the allocation it is the alloc node of
    for (std::size_t k = 0; k < set.size(); ++k) position_[a.allocations[set[k]].alloc_node] = k;
    words_ = (set.size() + 63) / 64;
    pred_at_.assign(n + 1, 0);
    for (std::size_t v = 0; v < n; ++v) {
      if (!between_[v]) continue;
      for (std::size_t s : flat.successors[v]) pred_at_[s + 1] += between_[s] ? 1 : 0;
    }
    for (std::size_t v = 0; v < n; ++v) pred_at_[v + 1] += pred_at_[v];
    pred_.resize(pred_at_[n]);
    std::vector<std::size_t> next(pred_at_.begin(), pred_at_.end() - 1);
    for (std::size_t v = 0; v < n; ++v) {
      if (!between_[v]) continue;
      for (std::size_t s : flat.successors[v]) {
        if (between_[s]) pred_[next[s]++] = v;
      }
    }
  }

  /// For i < j in allocation order, both of the set.
  bool legal(std::size_t i, std::size_t j) {
    const auto& free_node = a_.allocations[i].free_node;
    if (!free_node) return false;
    const std::vector<std::uint64_t>& row = row_of(i, *free_node);
    const std::size_t k = position_[a_.allocations[j].alloc_node];
    return ((row[k / 64] >> (k % 64)) & 1U) == 0;
  }

 private:
  // The set's alloc nodes that i's free node reaches or that reach it.
  const std::vector<std::uint64_t>& row_of(std::size_t i, std::size_t free_node) {
    const auto found = rows_.find(i);
    if (found != rows_.end()) return found->second;
    std::vector<std::uint64_t> row(words_, 0);
    for (int direction = 0; direction < 2; ++direction) {
      ++stamp_;
      stack_.assign(1, free_node);
      seen_[free_node] = stamp_;
      while (!stack_.empty()) {
        const std::size_t v = stack_.back();
        stack_.pop_back();
        if (position_[v] != no_position) row[position_[v] / 64] |= std::uint64_t{1} << (position_[v] % 64);
        const auto visit = [&](std::size_t w) {
          if (!between_[w] || seen_[w] == stamp_) return;
          seen_[w] = stamp_;
          stack_.push_back(w);
        };
        if (direction == 0) {
          for (std::size_t w : flat_.successors[v]) visit(w);
          until_.step("the reuse opportunities (reachability)", 1 + flat_.successors[v].size());
        } else {
          for (std::size_t k = pred_at_[v]; k < pred_at_[v + 1]; ++k) visit(pred_[k]);
          until_.step("the reuse opportunities (reachability)", 1 + pred_at_[v + 1] - pred_at_[v]);
        }
      }
    }
    return rows_.emplace(i, std::move(row)).first->second;
  }

  static constexpr std::size_t no_position = std::numeric_limits<std::size_t>::max();
  const flat_graph& flat_;
  const graph_analysis& a_;
  const deadline& until_;
  const std::vector<char>& between_;
  std::vector<std::size_t> position_;
  std::size_t words_ = 0;
  std::vector<std::size_t> pred_at_, pred_;
  std::vector<std::uint32_t> seen_;
  std::uint32_t stamp_ = 0;
  std::vector<std::size_t> stack_;
  std::unordered_map<std::size_t, std::vector<std::uint64_t>> rows_;
};

// The first `limit` pairs (i, j), i < j, of `set` (ascending allocation indices) for which
// legal(i, j) holds, in the order of min(bytes_i, bytes_j) descending, ties by (i, j): the order
// that sorting every pair gives, without making every pair (k^2 / 2 of them in a wide graph).
// Goes down the distinct sizes; at size v the pairs whose smaller side is v are those with one
// side of size v and the other of size v or more, taken by i ascending, then j. A pair is looked at
// only if it comes before the last one kept, so the cost is k log k plus the illegal pairs met on
// the way.
template <class Legal>
std::vector<std::pair<std::size_t, std::size_t>> largest_pairs(const std::vector<std::size_t>& set,
                                                               const std::vector<allocation>& allocations,
                                                               Legal legal, std::size_t limit,
                                                               const deadline& until) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::vector<std::size_t> by_size = set;
  std::stable_sort(by_size.begin(), by_size.end(), [&allocations](std::size_t l, std::size_t r) {
    return allocations[l].bytes > allocations[r].bytes;
  });
  std::set<std::size_t> at_least;        // members of the size reached so far or larger
  std::set<std::size_t> freed_at_least;  // those of them with a free node (the only possible i)
  for (std::size_t lo = 0, hi = 0; lo < by_size.size() && out.size() < limit; lo = hi) {
    const std::size_t bytes = allocations[by_size[lo]].bytes;
    while (hi < by_size.size() && allocations[by_size[hi]].bytes == bytes) ++hi;
    const auto level_begin = by_size.begin() + static_cast<std::ptrdiff_t>(lo);
    const auto level_end = by_size.begin() + static_cast<std::ptrdiff_t>(hi);  // ascending (stable)
    for (auto it = level_begin; it != level_end; ++it) {
      at_least.insert(*it);
      if (allocations[*it].free_node) freed_at_least.insert(*it);
    }
    // An i past the last member of this size has no j of this size after it.
    const std::size_t last = *(level_end - 1);
    for (auto it = freed_at_least.begin(); it != freed_at_least.end() && *it <= last; ++it) {
      const std::size_t i = *it;
      const auto take = [&](std::size_t j) {
        until.step("the reuse opportunities");
        if (legal(i, j)) out.emplace_back(i, j);
        return out.size() == limit;
      };
      if (allocations[i].bytes == bytes) {
        for (auto jt = at_least.upper_bound(i); jt != at_least.end(); ++jt) {
          if (take(*jt)) return out;
        }
      } else {
        for (auto jt = std::upper_bound(level_begin, level_end, i); jt != level_end; ++jt) {
          if (take(*jt)) return out;
        }
      }
    }
  }
  return out;
}

}  // namespace

// -----------------------------------------------------------------------------------------------

flat_graph flatten(const graph_model& g) {
  flat_graph out;
  (void)inline_graph(g, g.name, out);
  return out;
}

std::uint64_t round_up(std::uint64_t bytes, std::uint64_t granularity) {
  if (granularity <= 1) return bytes;
  const std::uint64_t rem = bytes % granularity;
  if (rem == 0) return bytes;
  const std::uint64_t add = granularity - rem;
  if (bytes > std::numeric_limits<std::uint64_t>::max() - add) {
    throw std::overflow_error("round_up: " + std::to_string(bytes) + " bytes rounded up to a multiple of " +
                              std::to_string(granularity) + " does not fit in 64 bits");
  }
  return bytes + add;
}

std::uint64_t max_weight_antichain(std::size_t n,
                                   const std::function<bool(std::size_t, std::size_t)>& less,
                                   const std::vector<std::uint64_t>& weights,
                                   std::vector<std::size_t>* members) {
  if (weights.size() != n) {
    throw std::invalid_argument("max_weight_antichain: " + std::to_string(n) + " elements but " +
                                std::to_string(weights.size()) + " weights");
  }
  if (members) members->clear();
  std::uint64_t sum = 0;
  for (std::uint64_t w : weights) {
    if (w > std::numeric_limits<std::uint64_t>::max() - 1 - sum) {
      throw std::overflow_error("max_weight_antichain: the weights' sum does not fit in 64 bits");
    }
    sum += w;
  }
  // Fulkerson's network: a flow path s -> L_u -> R_v -> t puts u and v on one chain, so the
  // maximum flow is the weight chains can share, and sum(w) - maxflow is the minimum weight of a
  // chain cover, which (weighted Dilworth) equals the heaviest antichain. The textbook network
  // has an edge L_u -> R_v for every u < v (up to n^2 / 2 of them); this one has them only for
  // covering pairs (the transitive reduction) plus R_v -> L_v, so a path L_u -> R_w -> L_w ->
  // R_v stands for the pair u < v. Same paths, same flow, same cuts, far fewer edges.
  bit_matrix closure(n, n);
  for (std::size_t u = 0; u < n; ++u) {
    for (std::size_t v = 0; v < n; ++v) {
      if (u != v && less(u, v)) closure.set(u, v);
    }
  }
  bit_matrix cover = closure;
  // Only elements still in u's cover need their closure cleared: one already cleared lies
  // above an element of the cover, whose closure holds its closure too (transitivity). That
  // makes this loop cost (cover edges) x (words) instead of (closure pairs) x (words): 5,000
  // allocations in a deep order took a second the other way (the model's scale benchmark).
  for (std::size_t u = 0; u < n; ++u) {
    closure.for_each(u, [&](std::size_t k) {
      if (cover.test(u, k)) cover.and_not_into(u, closure, k);
    });
  }
  const std::uint64_t infinite = sum + 1;
  const std::size_t source = 2 * n, sink = 2 * n + 1;
  max_flow net(2 * n + 2);
  for (std::size_t u = 0; u < n; ++u) {
    if (weights[u] != 0) {
      net.add_edge(source, u, weights[u]);
      net.add_edge(n + u, sink, weights[u]);
    }
    net.add_edge(n + u, u, infinite);
    cover.for_each(u, [&](std::size_t v) { net.add_edge(u, n + v, infinite); });
  }
  const std::uint64_t flow = net.run(source, sink);
  if (members) {
    // A finite min cut never leaves R_v on the sink side when L_u is on the source side and
    // u < v (the infinite edges lead from one to the other), so the elements with L on the
    // source side and R on the sink side are pairwise incomparable, and every other element pays
    // its weight in the cut: their weight is at least sum(w) - maxflow, the maximum.
    const std::vector<bool> side = net.residual_reachable(source);
    for (std::size_t v = 0; v < n; ++v) {
      if (weights[v] != 0 && side[v] && !side[n + v]) members->push_back(v);
    }
  }
  return sum - flow;
}

graph_analysis analyse(const graph_model& g, std::uint64_t granularity) {
  return analyse(flatten(g), granularity);
}

graph_analysis analyse(const flat_graph& flat, std::uint64_t granularity, const deadline& until) {
  const std::vector<std::size_t> order = topological_order(flat);
  graph_analysis a;
  a.granularity = granularity;

  // Pair frees with allocations in topological order: one address may be returned again after
  // its free, so each address keeps a stack of its unfreed allocations.
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> unfreed_by_address;
  for (std::size_t v : order) {
    const model_node& node = flat.nodes[v];
    if (node.kind == node_kind::mem_alloc) {
      ++a.alloc_nodes;
      unfreed_by_address[node.address].push_back(a.allocations.size());
      a.allocations.push_back({v, std::nullopt, node.address, node.bytes, node.device});
    } else if (node.kind == node_kind::mem_free) {
      ++a.free_nodes;
      auto it = unfreed_by_address.find(node.address);
      if (it == unfreed_by_address.end() || it->second.empty()) {
        ++a.foreign_frees;
        continue;
      }
      a.allocations[it->second.back()].free_node = v;
      it->second.pop_back();
    }
  }

  const std::size_t count = a.allocations.size();
  for (std::size_t i = 0; i < count; ++i) {
    const allocation& al = a.allocations[i];
    if (!al.free_node) a.unfreed.push_back(i);
    a.requested_bytes += al.bytes;
  }
  a.distinct_addresses = unfreed_by_address.size();
  a.va_reuse_ratio =
      a.distinct_addresses == 0 ? 0.0 : static_cast<double>(count) / static_cast<double>(a.distinct_addresses);
  if (count == 0) return a;

  // The heaviest antichain, by a minimum cut of a network made of the graph (see
  // heaviest_antichain: linear in the graph's size, where max_weight_antichain's network holds
  // every covering pair). A valid graph orders each free after its alloc, and then "x's free
  // node reaches y's alloc node" is transitive; in a hand-built or odd graph it may not be, and
  // the network then stands for its transitive closure, as max_weight_antichain's does: still a
  // true lower bound, only a weaker one.
  std::uint64_t sum = 0;
  for (const allocation& al : a.allocations) {
    if (al.bytes > std::numeric_limits<std::uint64_t>::max() - 1 - sum) {
      throw std::overflow_error("max_weight_antichain: the weights' sum does not fit in 64 bits");
    }
    sum += al.bytes;
  }
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> owner(flat.nodes.size(), none);
  for (std::size_t i = 0; i < count; ++i) {
    owner[a.allocations[i].alloc_node] = i;
    if (a.allocations[i].free_node) owner[*a.allocations[i].free_node] = i;
  }
  const std::vector<char> between = between_memory(flat, order, owner);
  a.lower_bound_set = heaviest_antichain(flat, order, a, owner, between, sum, a.lower_bound_bytes, until);
  // The driver packs small allocations into its reservation and grows the reservation in whole
  // granules (measured: 256 live 64 KiB allocations reserved one 32 MiB granule on an H100), so
  // the granularity rounds the total, not each allocation.
  a.lower_bound_rounded_bytes = round_up(a.lower_bound_bytes, granularity);

  // Pairs of the heaviest set that one added edge (i's free -> j's alloc) would order: the edge
  // is legal only when j's alloc node does not already reach i's free node (nor i's free node
  // j's alloc node, which an antichain rules out). Allocations whose nodes are joined by no path
  // never reach each other.
  pair_reach reach(flat, between, a, a.lower_bound_set, until);
  const auto legal = [&reach](std::size_t i, std::size_t j) { return reach.legal(i, j); };
  a.reuse_opportunities =
      largest_pairs(a.lower_bound_set, a.allocations, legal, max_reuse_opportunities, until);
  return a;
}

analysis_summary summarize(const graph_analysis& a, std::uint64_t used_high,
                           std::uint64_t reserved_high) noexcept {
  analysis_summary s;
  s.alloc_nodes = a.alloc_nodes;
  s.free_nodes = a.free_nodes;
  s.unfreed_allocations = a.unfreed.size();
  s.requested_bytes = a.requested_bytes;
  s.distinct_addresses = a.distinct_addresses;
  s.va_reuse_ratio = a.va_reuse_ratio;
  s.lower_bound_bytes = a.lower_bound_bytes;
  s.lower_bound_rounded_bytes = a.lower_bound_rounded_bytes;
  s.used_high_bytes = used_high;
  s.reserved_high_bytes = reserved_high;
  s.physical_reuse_ratio = reserved_high == 0 ? 0.0
                                              : static_cast<double>(a.requested_bytes) /
                                                    static_cast<double>(reserved_high);
  s.bound_ratio = a.lower_bound_rounded_bytes == 0
                      ? 0.0
                      : static_cast<double>(reserved_high) /
                            static_cast<double>(a.lower_bound_rounded_bytes);
  return s;
}

}  // namespace gmem::profiler
