// The model's analysis and reuse rule in their first, slower form, kept as
// they were so that equivalence tests compare every figure of the faster code with the code it
// replaced: analyse() with its per-component reachability bit matrices and max_weight_antichain
// over the transitive reduction, predict_reuse() with its scan of every available ancestor free,
// plan_changes() with its look at every predecessor of a node each time one of them is scheduled.
// Test code only: not part of the library.
#include "model_reference.hpp"

#include "gmem/profiler/size_text.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gmem::profiler::reference {
namespace {


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
// not k rows of k bits (1.2 GB at k = 10,000), and the whole stays exact.
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
  // second of page faults at 100,000 nodes and 5,000 allocations.
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

// The memory of one pool (a device and its peers) as the driver lays it out, measured (README,
// "The driver's reuse rule"): new memory goes at the end of the range, mapped in steps of the
// allocation rounded up to the granularity; an alloc node takes the lowest free range that fits
// and whose free node is its ancestor, the rest of that range staying free; a freed range joins
// a free neighbour only when the neighbour's free node is an ancestor of the new free node (the
// joined range is then freed by the new one).
struct free_range {
  std::uint64_t bytes = 0;
  std::size_t free_node = no_node;  // after which the range is free
  std::size_t from = no_node;       // the alloc node that held its start
};

struct address_space {
  std::uint64_t end = 0;
  std::uint64_t mapped = 0;
  std::map<std::uint64_t, free_range> free;  // by offset
};

// The pools of a skeleton and the placement rule. Free nodes are numbered densely (fid); each
// heads at most one free range at a time (a split leaves one remainder; a join leaves one range),
// so a bitset over them says which free nodes have memory to give, and at_ where it is.
class layout {
 public:
  layout(const skeleton& s, std::uint64_t granularity, reuse_prediction& p)
      : s_(s), granularity_(granularity), p_(p) {
    const std::size_t n = s.nodes.size();
    p.offset.assign(n, 0);
    p.pool.assign(n, no_node);
    p.reused_from.assign(n, no_node);
    fid_.assign(n, no_node);
    std::map<std::pair<int, std::vector<int>>, std::size_t> index;
    for (std::size_t v = 0; v < n; ++v) {
      const skeleton_node& k = s.nodes[v];
      if (k.kind == skeleton_kind::free) fid_[v] = frees_++;
      if (k.kind != skeleton_kind::alloc) continue;
      p.pool[v] = index.emplace(std::make_pair(k.device, k.peers), index.size()).first->second;
    }
    spaces_.resize(index.size());
    p.pool_device.assign(index.size(), 0);
    for (const auto& [key, i] : index) p.pool_device[i] = key.first;
    avail_.assign(words(), 0);
    at_.assign(frees_, 0);
  }

  [[nodiscard]] std::size_t fid(std::size_t v) const { return fid_[v]; }
  [[nodiscard]] std::size_t words() const { return (frees_ + 63) / 64; }

  /// The free node heading the range alloc node v takes (no_node: new memory), found by walking
  /// v's pool in address order; `is_ancestor(f)` says whether free node f is an ancestor of v.
  template <class IsAncestor>
  [[nodiscard]] std::size_t lowest_fit_by_walk(std::size_t v, IsAncestor is_ancestor) const {
    if (s_.nodes[v].bytes == 0) return no_node;
    for (const auto& [at, r] : spaces_[p_.pool[v]].free) {
      if (r.bytes >= s_.nodes[v].bytes && is_ancestor(r.free_node)) return r.free_node;
    }
    return no_node;
  }

  /// The same, from the bitset of v's ancestor free nodes (word w of `ancestors` is word
  /// first_word + w of the fids): only those that head a range.
  [[nodiscard]] std::size_t lowest_fit_by_bits(std::size_t v, const std::vector<std::uint64_t>& ancestors,
                                               std::size_t first_word) const {
    const address_space& sp = spaces_[p_.pool[v]];
    std::size_t best = no_node;
    if (s_.nodes[v].bytes == 0) return best;
    std::uint64_t best_at = 0;
    for (std::size_t w = 0; w < ancestors.size(); ++w) {
      for (std::uint64_t bits = ancestors[w] & avail_[first_word + w]; bits != 0; bits &= bits - 1) {
        const std::size_t f = (first_word + w) * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
        const auto it = sp.free.find(at_[f]);
        if (it == sp.free.end() || fid_[it->second.free_node] != f) continue;  // another pool
        if (it->second.bytes < s_.nodes[v].bytes || (best != no_node && at_[f] >= best_at)) continue;
        best = it->second.free_node;
        best_at = at_[f];
      }
    }
    return best;
  }

  /// Places alloc node v in the range headed by free node `from_free`, or in new memory.
  void place_alloc(std::size_t v, std::size_t from_free) {
    address_space& sp = spaces_[p_.pool[v]];
    const std::uint64_t bytes = s_.nodes[v].bytes;
    if (bytes == 0) {  // takes no memory (the driver refuses it; a hand-written skeleton may not)
      p_.offset[v] = sp.end;
      return;
    }
    if (from_free == no_node) {
      p_.offset[v] = sp.end;
      sp.end += bytes;
      if (sp.end > sp.mapped) sp.mapped += round_up(bytes, granularity_);
      return;
    }
    const auto it = sp.free.find(at_[fid_[from_free]]);
    const std::uint64_t at = it->first;
    free_range rest = it->second;
    erase(sp, it);
    p_.offset[v] = at;
    p_.reused_from[v] = rest.from;
    if (rest.bytes > bytes) {
      rest.bytes -= bytes;
      insert(sp, at + bytes, rest);
    }
  }

  /// Frees the range of free node f's allocation, joining a neighbour whose free node is an
  /// ancestor of f.
  template <class IsAncestor>
  void place_free(std::size_t f, IsAncestor is_ancestor) {
    const std::size_t a = s_.nodes[f].frees;
    if (s_.nodes[a].bytes == 0) return;
    address_space& sp = spaces_[p_.pool[a]];
    std::uint64_t at = p_.offset[a];
    free_range r{s_.nodes[a].bytes, f, a};
    auto next = sp.free.lower_bound(at);
    if (next != sp.free.begin()) {
      const auto prev = std::prev(next);
      if (prev->first + prev->second.bytes == at && is_ancestor(prev->second.free_node)) {
        at = prev->first;
        r.bytes += prev->second.bytes;
        r.from = prev->second.from;
        erase(sp, prev);
      }
    }
    if (next != sp.free.end() && next->first == p_.offset[a] + s_.nodes[a].bytes &&
        is_ancestor(next->second.free_node)) {
      r.bytes += next->second.bytes;
      erase(sp, next);
    }
    insert(sp, at, r);
  }

  void finish() {
    p_.bytes = 0;
    p_.rounded_bytes = 0;
    p_.pool_mapped.clear();
    for (const address_space& sp : spaces_) {
      p_.bytes += sp.end;
      p_.rounded_bytes += sp.mapped;
      p_.pool_mapped.push_back(sp.mapped);
    }
  }

 private:
  void insert(address_space& sp, std::uint64_t at, const free_range& r) {
    sp.free.emplace(at, r);
    const std::size_t f = fid_[r.free_node];
    at_[f] = at;
    avail_[f / 64] |= std::uint64_t{1} << (f % 64);
  }
  void erase(address_space& sp, std::map<std::uint64_t, free_range>::iterator it) {
    const std::size_t f = fid_[it->second.free_node];
    avail_[f / 64] &= ~(std::uint64_t{1} << (f % 64));
    sp.free.erase(it);
  }

  const skeleton& s_;
  std::uint64_t granularity_;
  reuse_prediction& p_;
  std::vector<address_space> spaces_;
  std::vector<std::size_t> fid_;
  std::size_t frees_ = 0;
  std::vector<std::uint64_t> avail_;  // per fid: heads a free range
  std::vector<std::uint64_t> at_;     // per fid: that range's offset
};

// The rule on a valid skeleton, with one more dependency extra_from -> extra_to given at
// creation when extra_from < extra_to (no_node: none), so that a candidate is predicted
// without copying the skeleton.
reuse_prediction predict_valid(const skeleton& s, std::uint64_t granularity,
                               std::size_t extra_from = no_node, std::size_t extra_to = no_node) {
  const std::size_t n = s.nodes.size();
  const bool extra = extra_from < extra_to && extra_to < n;
  reuse_prediction p;
  layout placed(s, granularity, p);
  // Each node's row: the free nodes among its ancestors at creation (and itself), by fid, as
  // the words from first[v] that span them (empty: none). Rows over all free nodes cost a
  // skeleton of k independent branches k rows of k / 64 words, filled and scanned for every alloc
  // node; spans keep its rows one word wide, and in any skeleton a node's span stops
  // at the free nodes created before it. A row is dropped once the last node created with it as
  // a dependency exists.
  std::vector<std::size_t> last_use(n, 0);
  for (std::size_t v = 0; v < n; ++v) {
    for (std::size_t d : s.nodes[v].deps) last_use[d] = std::max(last_use[d], v);
  }
  if (extra) last_use[extra_from] = std::max(last_use[extra_from], extra_to);
  std::vector<std::vector<std::uint64_t>> row(n);
  std::vector<std::size_t> first(n, 0);
  std::vector<std::vector<std::uint64_t>> spare;  // dropped rows' buffers, reused
  for (std::size_t v = 0; v < n; ++v) {
    const skeleton_node& node = s.nodes[v];
    std::vector<std::uint64_t> mine;
    const bool keep = last_use[v] > v;
    const std::size_t f = placed.fid(v);
    if (keep || node.kind != skeleton_kind::empty) {
      // The span: the dependencies' spans and v's own fid.
      std::size_t lo = f == no_node ? no_node : f / 64, hi = f == no_node ? 0 : f / 64 + 1;
      const auto widen = [&](std::size_t d) {
        if (row[d].empty()) return;
        lo = std::min(lo, first[d]);
        hi = std::max(hi, first[d] + row[d].size());
      };
      for (std::size_t d : node.deps) widen(d);
      if (extra && v == extra_to) widen(extra_from);
      if (lo < hi) {
        if (!spare.empty()) {
          mine = std::move(spare.back());
          spare.pop_back();
        }
        mine.assign(hi - lo, 0);
        const auto take = [&](std::size_t d) {
          const auto& r = row[d];
          for (std::size_t w = 0; w < r.size(); ++w) mine[first[d] - lo + w] |= r[w];
        };
        for (std::size_t d : node.deps) take(d);
        if (extra && v == extra_to) take(extra_from);
        if (f != no_node) mine[f / 64 - lo] |= std::uint64_t{1} << (f % 64);
        first[v] = lo;
      }
    }
    const std::size_t at = first[v];
    const auto is_ancestor = [&](std::size_t free_node) {
      const std::size_t w = placed.fid(free_node) / 64;
      return w >= at && w - at < mine.size() && (mine[w - at] >> (placed.fid(free_node) % 64) & 1U) != 0;
    };
    if (node.kind == skeleton_kind::alloc) {
      placed.place_alloc(v, placed.lowest_fit_by_bits(v, mine, at));
    } else if (node.kind == skeleton_kind::free) {
      placed.place_free(v, is_ancestor);
    }
    if (keep) {
      row[v] = std::move(mine);
    } else if (!mine.empty()) {
      spare.push_back(std::move(mine));
    }
    for (std::size_t d : node.deps) {
      if (last_use[d] == v && !row[d].empty()) {
        spare.push_back(std::move(row[d]));
        row[d] = {};
      }
    }
    if (extra && v == extra_to && last_use[extra_from] == v && !row[extra_from].empty()) {
      spare.push_back(std::move(row[extra_from]));
      row[extra_from] = {};
    }
  }
  placed.finish();
  return p;
}

std::string node_name(const skeleton& s, std::size_t v) {
  if (v < s.nodes.size() && !s.nodes[v].label.empty()) return s.nodes[v].label;
  return std::string(v < s.nodes.size() ? to_string(s.nodes[v].kind) : "missing") + " node #" +
         std::to_string(v) + " of skeleton '" + s.name + "'";
}

// A skeleton's edges (creation dependencies, then late edges) as flat successor and
// predecessor lists: two allocations per list instead of one per node (100,000 nodes).
struct edge_lists {
  std::vector<std::size_t> succ_at, succ;  ///< successors of v: succ[succ_at[v] .. succ_at[v+1])
  std::vector<std::size_t> pred_at, pred;  ///< predecessors, likewise
};

// Assumes every dependency and late edge names an existing node (validate checks that first).
edge_lists edges_of(const skeleton& s) {
  const std::size_t n = s.nodes.size();
  edge_lists e;
  e.succ_at.assign(n + 1, 0);
  e.pred_at.assign(n + 1, 0);
  for (std::size_t v = 0; v < n; ++v) {
    for (std::size_t d : s.nodes[v].deps) {
      ++e.succ_at[d + 1];
      ++e.pred_at[v + 1];
    }
  }
  for (const auto& [from, to] : s.late_edges) {
    ++e.succ_at[from + 1];
    ++e.pred_at[to + 1];
  }
  for (std::size_t v = 0; v < n; ++v) {
    e.succ_at[v + 1] += e.succ_at[v];
    e.pred_at[v + 1] += e.pred_at[v];
  }
  e.succ.resize(e.succ_at[n]);
  e.pred.resize(e.pred_at[n]);
  std::vector<std::size_t> next_succ(e.succ_at.begin(), e.succ_at.end() - 1);
  std::vector<std::size_t> next_pred(e.pred_at.begin(), e.pred_at.end() - 1);
  const auto add = [&](std::size_t from, std::size_t to) {
    e.succ[next_succ[from]++] = to;
    e.pred[next_pred[to]++] = from;
  };
  for (std::size_t v = 0; v < n; ++v) {
    for (std::size_t d : s.nodes[v].deps) add(d, v);
  }
  for (const auto& [from, to] : s.late_edges) add(from, to);
  return e;
}

// The plan's skeleton: `s` with each (free, alloc) edge given when the alloc node is created;
// re-created in a topological order of all edges when a free comes after its alloc node.
skeleton with_plan_edges(const skeleton& s, const std::vector<std::pair<std::size_t, std::size_t>>& edges,
                         bool& recreate) {
  skeleton changed = s;
  recreate = false;
  for (const auto& [f, j] : edges) {
    if (f < j) {
      auto& deps = changed.nodes[j].deps;
      deps.insert(std::upper_bound(deps.begin(), deps.end(), f), f);
      // The same edge added after creation becomes this dependency (the driver refuses an edge
      // twice).
      auto& late = changed.late_edges;
      late.erase(std::remove(late.begin(), late.end(), std::make_pair(f, j)), late.end());
    } else {
      changed.late_edges.emplace_back(f, j);
      recreate = true;
    }
  }
  return recreate ? recreated(changed, true) : changed;
}

std::string plan_where(const skeleton& s, const std::vector<std::pair<std::size_t, std::size_t>>& edges,
                       bool recreate, std::uint64_t predicted, std::uint64_t serial_peak) {
  std::string out = "order the allocations one after another with " + std::to_string(edges.size()) +
                    " dependenc" + (edges.size() == 1 ? "y" : "ies") + ", each given when the alloc node is created: ";
  const std::size_t listed = std::min<std::size_t>(edges.size(), 3);
  for (std::size_t i = 0; i < listed; ++i) {
    out += (i ? "; " : "") + std::string("make ") + node_name(s, edges[i].second) + " depend on " +
           node_name(s, edges[i].first);
  }
  if (edges.size() > listed) out += "; and " + std::to_string(edges.size() - listed) + " more alike";
  out += " (in a capture: record an event after each cudaFreeAsync and make the stream of the next "
         "cudaMallocAsync wait on it)";
  if (recreate) out += ", and create each free node before the allocations that follow it";
  out += ". Predicted to reserve " + size_text(predicted) + "; a serial order of the graph peaks at " +
         size_text(serial_peak) + " (rounded per pool)";
  return out;
}

}  // namespace

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
  // two k-by-k bit matrices: 1.2 GB and seconds at k = 10,000.
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

reuse_prediction predict_reuse(const skeleton& s, std::uint64_t granularity) {
  validate(s);
  return predict_valid(s, granularity);
}

reuse_prediction predict_without_validating(const skeleton& s, std::uint64_t granularity) {
  return predict_valid(s, granularity);
}

std::optional<plan_result> plan_changes(const skeleton& s, std::uint64_t granularity) {
  validate(s);
  const std::size_t n = s.nodes.size();
  const reuse_prediction base = predict_valid(s, granularity);
  const edge_lists e = edges_of(s);
  // The serial schedule: among ready nodes, frees first, then other non-alloc nodes, then
  // allocations that a started node waits for (so that work in progress finishes before new
  // memory is taken), then the other allocations; allocations the largest first (a smaller one
  // fits into a larger one's freed range, not the other way round: measured, README), each
  // class by index.
  std::vector<std::size_t> indegree(n);
  using key = std::tuple<int, std::uint64_t, std::size_t>;
  std::priority_queue<key, std::vector<key>, std::greater<>> ready;
  const auto entry = [&](std::size_t v) {
    const skeleton_node& k = s.nodes[v];
    if (k.kind == skeleton_kind::alloc) return key{3, ~std::uint64_t{k.bytes}, v};
    return key{k.kind == skeleton_kind::free ? 0 : 1, 0, v};
  };
  for (std::size_t v = 0; v < n; ++v) {
    indegree[v] = e.pred_at[v + 1] - e.pred_at[v];
    if (indegree[v] == 0) ready.push(entry(v));
  }
  const std::size_t pools = base.pool_mapped.size();
  std::vector<std::uint64_t> live(pools, 0), peak(pools, 0);
  std::vector<std::vector<std::size_t>> pending(pools);  // frees since the pool's last allocation
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  std::vector<bool> scheduled(n, false), boosted(n, false);
  while (!ready.empty()) {
    const std::size_t v = std::get<2>(ready.top());
    ready.pop();
    if (scheduled[v]) continue;  // pushed again when boosted
    scheduled[v] = true;
    const skeleton_node& node = s.nodes[v];
    if (node.kind == skeleton_kind::alloc && base.pool[v] < pools) {
      const std::size_t pool = base.pool[v];
      live[pool] += node.bytes;
      peak[pool] = std::max(peak[pool], live[pool]);
      for (std::size_t f : pending[pool]) {
        if (std::find(node.deps.begin(), node.deps.end(), f) == node.deps.end()) edges.emplace_back(f, v);
      }
      pending[pool].clear();
    } else if (node.kind == skeleton_kind::free && node.frees < n && base.pool[node.frees] < pools) {
      const std::size_t pool = base.pool[node.frees];
      live[pool] -= std::min(live[pool], s.nodes[node.frees].bytes);
      pending[pool].push_back(v);
    }
    for (std::size_t i = e.succ_at[v]; i < e.succ_at[v + 1]; ++i) {
      const std::size_t w = e.succ[i];
      if (--indegree[w] == 0) {
        ready.push(entry(w));
        continue;
      }
      for (std::size_t j = e.pred_at[w]; j < e.pred_at[w + 1]; ++j) {  // what w still waits for
        const std::size_t u = e.pred[j];
        if (!scheduled[u] && !boosted[u] && indegree[u] == 0 && s.nodes[u].kind == skeleton_kind::alloc) {
          boosted[u] = true;
          ready.push(key{2, ~std::uint64_t{s.nodes[u].bytes}, u});
        }
      }
    }
  }
  if (edges.empty()) return std::nullopt;
  std::uint64_t serial_peak = 0;
  for (std::uint64_t p : peak) serial_peak += round_up(p, granularity);
  bool recreate = false;
  skeleton changed = with_plan_edges(s, edges, recreate);
  std::uint64_t predicted = predict_valid(changed, granularity).rounded_bytes;
  if (predicted >= base.rounded_bytes) return std::nullopt;
  // Drop what the prediction does not need, last edge first, on plans of at most 256 edges
  // (each try predicts a copy of the skeleton).
  if (edges.size() <= 256) {
    for (std::size_t i = edges.size(); i-- > 0;) {
      std::vector<std::pair<std::size_t, std::size_t>> fewer = edges;
      fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(i));
      if (fewer.empty()) break;
      bool r = false;
      skeleton trial = with_plan_edges(s, fewer, r);
      const std::uint64_t p = predict_valid(trial, granularity).rounded_bytes;
      if (p <= predicted) {
        edges = std::move(fewer);
        changed = std::move(trial);
        recreate = r;
        predicted = p;
      }
    }
  }
  plan_result out;
  out.serial_peak_bytes = serial_peak;
  out.recreated = recreate;
  out.change.kind = "plan";
  out.change.where = plan_where(s, edges, recreate, predicted, serial_peak);
  out.change.changed = std::move(changed);
  out.change.predicted_bytes = predicted;
  out.change.added_edges = std::move(edges);
  return out;
}


}  // namespace gmem::profiler::reference
