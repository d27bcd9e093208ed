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
  explicit max_flow(std::size_t nodes) : adj_(nodes), level_(nodes), next_(nodes) {}

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

  bool levels_from(std::size_t s, std::size_t t) {
    std::fill(level_.begin(), level_.end(), unreached);
    std::queue<std::size_t> q;
    level_[s] = 0;
    q.push(s);
    while (!q.empty()) {
      const std::size_t u = q.front();
      q.pop();
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
};

// ---------------------------------------------------------------------------------------------
// Reachability between memory nodes, one component at a time

// Union-find over node indices (union by size, path halving): near-linear, no recursion.
class disjoint_sets {
 public:
  explicit disjoint_sets(std::size_t n) : parent_(n), size_(n, 1) {
    for (std::size_t v = 0; v < n; ++v) parent_[v] = v;
  }
  std::size_t find(std::size_t v) {
    while (parent_[v] != v) {
      parent_[v] = parent_[parent_[v]];
      v = parent_[v];
    }
    return v;
  }
  void unite(std::size_t u, std::size_t v) {
    u = find(u);
    v = find(v);
    if (u == v) return;
    if (size_[u] < size_[v]) std::swap(u, v);
    parent_[v] = u;
    size_[u] += size_[v];
  }

 private:
  std::vector<std::size_t> parent_, size_;
};

// Which memory nodes reach which, in pieces that never reach each other ("components": the
// allocations whose nodes are joined by paths through nodes that lie between memory nodes). A row
// is as wide as its component, so a graph of k independent branches keeps k rows of one word,
// not k rows of k bits (1.2 GB at k = 10,000, issue 20), and the whole stays exact.
struct memory_reach {
  std::vector<std::size_t> component;  ///< per allocation
  std::vector<std::size_t> local;      ///< per allocation: its rank in its component (allocation order)
  /// The allocations of component c, ascending: members[members_at[c] .. members_at[c + 1]).
  std::vector<std::size_t> members_at, members;
  /// Per node, kept for memory nodes only: bit local[j] says "reaches allocation j's alloc
  /// node", bit (component size) + local[j] "reaches j's free node".
  std::vector<std::vector<std::uint64_t>> rows;

  /// Whether memory node `node` reaches allocation j's alloc node; j in node's component.
  [[nodiscard]] bool reaches_alloc(std::size_t node, std::size_t j) const { return test(node, local[j]); }
  /// Whether memory node `node` reaches allocation j's free node; j in node's component.
  [[nodiscard]] bool reaches_free(std::size_t node, std::size_t j) const {
    const std::size_t c = component[j];
    return test(node, members_at[c + 1] - members_at[c] + local[j]);
  }

 private:
  [[nodiscard]] bool test(std::size_t node, std::size_t bit) const {
    return ((rows[node][bit / 64] >> (bit % 64)) & 1U) != 0;
  }
};

// The reachability of a's memory nodes in `flat` (`order` topological). Only nodes with a memory
// node at or before them and one at or after them can lie on a path between memory nodes; edges
// among those (and each allocation's alloc-free pair) make the components, so a node that only
// forks or joins branches (a root kernel, a final join) does not merge them.
memory_reach reach_of(const flat_graph& flat, const std::vector<std::size_t>& order, const graph_analysis& a) {
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  const std::size_t n = flat.nodes.size();
  const std::size_t count = a.allocations.size();
  memory_reach r;
  // Which allocation a memory node belongs to (foreign frees are none).
  std::vector<std::size_t> owner(n, none);
  for (std::size_t i = 0; i < count; ++i) {
    owner[a.allocations[i].alloc_node] = i;
    if (a.allocations[i].free_node) owner[*a.allocations[i].free_node] = i;
  }
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
  after_memory = {};
  before_memory = {};

  disjoint_sets sets(n);
  for (std::size_t v = 0; v < n; ++v) {
    if (!between[v]) continue;
    for (std::size_t s : flat.successors[v]) {
      if (between[s]) sets.unite(v, s);
    }
  }
  for (const allocation& al : a.allocations) {
    if (al.free_node) sets.unite(al.alloc_node, *al.free_node);
  }
  // Components numbered by their first allocation; members listed in allocation order.
  std::vector<std::size_t> component_of_root(n, none);
  std::vector<std::size_t> sizes;
  r.component.resize(count);
  r.local.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t& c = component_of_root[sets.find(a.allocations[i].alloc_node)];
    if (c == none) {
      c = sizes.size();
      sizes.push_back(0);
    }
    r.component[i] = c;
    r.local[i] = sizes[c]++;
  }
  r.members_at.assign(sizes.size() + 1, 0);
  for (std::size_t c = 0; c < sizes.size(); ++c) r.members_at[c + 1] = r.members_at[c] + sizes[c];
  r.members.resize(count);
  for (std::size_t i = 0; i < count; ++i) r.members[r.members_at[r.component[i]] + r.local[i]] = i;

  // Rows are filled in reverse topological order, each the union of its successors' rows. Only
  // memory nodes' rows are kept: any other node's row is dropped (and its buffer reused) once
  // all its predecessors have taken it in. A dense matrix over all nodes cost 125 MB and a
  // second of page faults at 100,000 nodes and 5,000 allocations (issue 9).
  std::vector<std::size_t> preds_left(n, 0);
  for (std::size_t v = 0; v < n; ++v) {
    if (!between[v]) continue;
    for (std::size_t s : flat.successors[v]) preds_left[s] += between[s];
  }
  r.rows.resize(n);
  std::vector<std::vector<std::uint64_t>> spare;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t v = *it;
    if (!between[v]) continue;
    const std::size_t c = component_of_root[sets.find(v)];
    std::vector<std::uint64_t> row;
    if (!spare.empty()) {
      row = std::move(spare.back());
      spare.pop_back();
    }
    row.assign((2 * sizes[c] + 63) / 64, 0);
    if (owner[v] != none) {
      const std::size_t i = owner[v];
      const std::size_t bit = r.local[i] + (v == a.allocations[i].alloc_node ? 0 : sizes[c]);
      row[bit / 64] |= std::uint64_t{1} << (bit % 64);
    }
    for (std::size_t s : flat.successors[v]) {
      if (!between[s]) continue;
      const auto& from = r.rows[s];  // same component, same width
      for (std::size_t w = 0; w < row.size(); ++w) row[w] |= from[w];
      if (--preds_left[s] == 0 && owner[s] == none) {
        spare.push_back(std::move(r.rows[s]));
        r.rows[s] = {};
      }
    }
    if (preds_left[v] == 0 && owner[v] == none) {
      spare.push_back(std::move(row));
    } else {
      r.rows[v] = std::move(row);
    }
  }
  return r;
}

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
                                                               Legal legal, std::size_t limit) {
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
  // allocations in a deep order took a second the other way (issue 9's scale benchmark).
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

graph_analysis analyse(const flat_graph& flat, std::uint64_t granularity) {
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

  const memory_reach reach = reach_of(flat, order, a);

  // The heaviest antichain, component by component: allocations of different components are
  // never ordered, so the heaviest antichain of the whole is the union of each component's (the
  // flow network of max_weight_antichain falls apart into the same pieces, and so does its
  // minimum cut). Built as one network, k independent allocations cost k^2 calls of `less` and
  // two k-by-k bit matrices: 1.2 GB and seconds at k = 10,000 (issue 20).
  std::uint64_t sum = 0;
  for (const allocation& al : a.allocations) {
    if (al.bytes > std::numeric_limits<std::uint64_t>::max() - 1 - sum) {
      throw std::overflow_error("max_weight_antichain: the weights' sum does not fit in 64 bits");
    }
    sum += al.bytes;
  }
  std::vector<std::size_t> local_members;
  std::vector<std::uint64_t> weights;
  for (std::size_t c = 0; c + 1 < reach.members_at.size(); ++c) {
    const std::size_t* members = reach.members.data() + reach.members_at[c];
    const std::size_t m = reach.members_at[c + 1] - reach.members_at[c];
    if (m == 1) {  // the common case in a wide graph: a network of one element is a waste
      if (a.allocations[members[0]].bytes != 0) {
        a.lower_bound_set.push_back(members[0]);
        a.lower_bound_bytes += a.allocations[members[0]].bytes;
      }
      continue;
    }
    // x < y (local indices, in allocation order) when x's free node reaches y's alloc node. A
    // valid graph orders each free after its alloc, and then this relation is transitive; in a
    // hand-built or odd graph it may not be, and max_weight_antichain then works on its
    // transitive closure: still a true lower bound, only a weaker one.
    bit_matrix before(m, m);
    for (std::size_t x = 0; x < m; ++x) {
      const auto& free_node = a.allocations[members[x]].free_node;
      if (!free_node) continue;
      for (std::size_t y = x + 1; y < m; ++y) {
        if (reach.reaches_alloc(*free_node, members[y])) before.set(x, y);
      }
    }
    const auto less = [&before](std::size_t x, std::size_t y) { return x < y && before.test(x, y); };
    weights.resize(m);
    for (std::size_t x = 0; x < m; ++x) weights[x] = a.allocations[members[x]].bytes;
    a.lower_bound_bytes += max_weight_antichain(m, less, weights, &local_members);
    for (std::size_t x : local_members) a.lower_bound_set.push_back(members[x]);
  }
  std::sort(a.lower_bound_set.begin(), a.lower_bound_set.end());
  // The driver packs small allocations into its reservation and grows the reservation in whole
  // granules (measured: 256 live 64 KiB allocations reserved one 32 MiB granule on an H100), so
  // the granularity rounds the total, not each allocation.
  a.lower_bound_rounded_bytes = round_up(a.lower_bound_bytes, granularity);

  // Pairs of the heaviest set that one added edge (i's free -> j's alloc) would order: the edge
  // is legal only when j's alloc node does not already reach i's free node. Allocations of
  // different components never reach each other.
  const auto legal = [&a, &reach](std::size_t i, std::size_t j) {
    const auto& free_node = a.allocations[i].free_node;
    if (!free_node) return false;
    if (reach.component[i] != reach.component[j]) return true;
    return !reach.reaches_alloc(*free_node, j) && !reach.reaches_free(a.allocations[j].alloc_node, i);
  };
  a.reuse_opportunities = largest_pairs(a.lower_bound_set, a.allocations, legal, max_reuse_opportunities);
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
