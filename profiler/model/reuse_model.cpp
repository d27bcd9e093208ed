#include "gmem/profiler/reuse_model.hpp"

#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/size_text.hpp"

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <queue>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gmem::profiler {
namespace {

std::string node_name(const skeleton& s, std::size_t v) {
  if (v < s.nodes.size() && !s.nodes[v].label.empty()) return s.nodes[v].label;
  return std::string(v < s.nodes.size() ? to_string(s.nodes[v].kind) : "missing") + " node #" +
         std::to_string(v) + " of skeleton '" + s.name + "'";
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
    word_most_.assign(words(), 0);
    at_.assign(frees_, 0);
    range_bytes_.assign(frees_, 0);
    pool_of_.assign(frees_, no_node);
    node_of_.assign(frees_, no_node);
    for (std::size_t v = 0; v < n; ++v) {
      if (fid_[v] == no_node) continue;
      node_of_[fid_[v]] = v;
      // A free node's ranges lie in its allocation's pool (a free of a node that is no alloc
      // node has none: validate refuses it before any range is made).
      const std::size_t a = s.nodes[v].frees;
      if (a < n && s.nodes[a].kind == skeleton_kind::alloc) pool_of_[fid_[v]] = p.pool[a];
    }
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
  /// first_word + w of the fids): only those that head a range, and only in words that hold a
  /// range large enough. A range's offset, size and pool are kept per fid, so that each one looked
  /// at costs no search of the pool's map (an allocation after a join of k frees looked at k
  /// ranges in the map: 25 million lookups for 5,000 + 5,000 allocations).
  [[nodiscard]] std::size_t lowest_fit_by_bits(std::size_t v, const std::vector<std::uint64_t>& ancestors,
                                               std::size_t first_word) const {
    std::size_t best = no_node;
    const std::uint64_t bytes = s_.nodes[v].bytes;
    if (bytes == 0) return best;
    const std::size_t pool = p_.pool[v];
    std::uint64_t best_at = 0;
    for (std::size_t w = 0; w < ancestors.size(); ++w) {
      if (word_most_[first_word + w] < bytes) continue;
      for (std::uint64_t bits = ancestors[w] & avail_[first_word + w]; bits != 0; bits &= bits - 1) {
        const std::size_t f = (first_word + w) * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
        if (pool_of_[f] != pool || range_bytes_[f] < bytes || (best != no_node && at_[f] >= best_at)) continue;
        best = node_of_[f];
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
    // A range at an offset another range holds happens only in a skeleton that frees an
    // allocation before placing it (a free its alloc node does not reach, re-created first):
    // the map keeps the range it has, and the free node heads none (a search of the map would
    // never find it).
    if (!sp.free.emplace(at, r).second) return;
    const std::size_t f = fid_[r.free_node];
    at_[f] = at;
    range_bytes_[f] = r.bytes;
    avail_[f / 64] |= std::uint64_t{1} << (f % 64);
    word_most_[f / 64] = std::max(word_most_[f / 64], r.bytes);
  }
  void erase(address_space& sp, std::map<std::uint64_t, free_range>::iterator it) {
    const std::size_t f = fid_[it->second.free_node];
    avail_[f / 64] &= ~(std::uint64_t{1} << (f % 64));
    std::uint64_t most = 0;
    for (std::uint64_t bits = avail_[f / 64]; bits != 0; bits &= bits - 1) {
      most = std::max(most, range_bytes_[f / 64 * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))]);
    }
    word_most_[f / 64] = most;
    sp.free.erase(it);
  }

  const skeleton& s_;
  std::uint64_t granularity_;
  reuse_prediction& p_;
  std::vector<address_space> spaces_;
  std::vector<std::size_t> fid_;
  std::size_t frees_ = 0;
  std::vector<std::uint64_t> avail_;  // per fid: heads a free range
  std::vector<std::uint64_t> word_most_;  // per word of avail_: its largest range's bytes
  std::vector<std::uint64_t> at_;     // per fid: that range's offset
  std::vector<std::uint64_t> range_bytes_;  // per fid: that range's bytes
  std::vector<std::size_t> pool_of_;  // per fid: the pool its ranges lie in
  std::vector<std::size_t> node_of_;  // per fid: the free node
};

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

}  // namespace

const char* to_string(skeleton_kind k) noexcept {
  switch (k) {
    case skeleton_kind::alloc: return "alloc";
    case skeleton_kind::free: return "free";
    case skeleton_kind::empty: return "empty";
  }
  return "empty";
}

void validate(const skeleton& s) {
  const std::size_t n = s.nodes.size();
  std::vector<bool> freed(n, false);
  for (std::size_t v = 0; v < n; ++v) {
    const skeleton_node& node = s.nodes[v];
    for (std::size_t d : node.deps) {
      if (d >= v) {
        throw std::invalid_argument("skeleton '" + s.name + "': " + node_name(s, v) +
                                    " depends at creation on node #" + std::to_string(d) +
                                    ", which is not created before it");
      }
    }
    if (node.kind == skeleton_kind::free) {
      if (node.frees >= v || s.nodes[node.frees].kind != skeleton_kind::alloc) {
        throw std::invalid_argument("skeleton '" + s.name + "': " + node_name(s, v) +
                                    " frees node #" + std::to_string(node.frees) +
                                    ", which is not an alloc node created before it");
      }
      if (freed[node.frees]) {
        throw std::invalid_argument("skeleton '" + s.name + "': " + node_name(s, node.frees) +
                                    " is freed twice (again by " + node_name(s, v) + ")");
      }
      freed[node.frees] = true;
    }
  }
  for (const auto& [from, to] : s.late_edges) {
    if (from >= n || to >= n || from == to) {
      throw std::invalid_argument("skeleton '" + s.name + "': late edge " + std::to_string(from) +
                                  " -> " + std::to_string(to) + " names a node that does not exist (" +
                                  std::to_string(n) + " nodes) or a node itself");
    }
  }
  // Creation dependencies point backwards, so only late edges can close a cycle: a topological
  // sort over both tells.
  if (s.late_edges.empty()) return;
  const edge_lists e = edges_of(s);
  std::vector<std::size_t> indegree(n), ready;
  for (std::size_t v = 0; v < n; ++v) {
    indegree[v] = e.pred_at[v + 1] - e.pred_at[v];
    if (indegree[v] == 0) ready.push_back(v);
  }
  std::size_t seen = 0;
  while (!ready.empty()) {
    const std::size_t v = ready.back();
    ready.pop_back();
    ++seen;
    for (std::size_t k = e.succ_at[v]; k < e.succ_at[v + 1]; ++k) {
      if (--indegree[e.succ[k]] == 0) ready.push_back(e.succ[k]);
    }
  }
  if (seen != n) {
    throw std::invalid_argument("skeleton '" + s.name +
                                "': its dependencies and late edges form a cycle");
  }
}

namespace {

// The rule on a valid skeleton, with one more dependency extra_from -> extra_to given at
// creation when extra_from < extra_to (no_node: none), so that a candidate is predicted
// without copying the skeleton.
reuse_prediction predict_valid(const skeleton& s, std::uint64_t granularity,
                               std::size_t extra_from = no_node, std::size_t extra_to = no_node,
                               const deadline& until = {}) {
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
    until.step("the reuse model", 1 + node.deps.size());
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
        until.step("the reuse model", (1 + node.deps.size()) * mine.size());
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

}  // namespace

reuse_prediction predict_reuse(const skeleton& s, std::uint64_t granularity, const deadline& until) {
  validate(s);
  return predict_valid(s, granularity, no_node, no_node, until);
}

reuse_prediction predict_reuse_brute_force(const skeleton& s, std::uint64_t granularity) {
  validate(s);
  const std::size_t n = s.nodes.size();
  reuse_prediction p;
  layout placed(s, granularity, p);
  for (std::size_t v = 0; v < n; ++v) {
    const skeleton_node& node = s.nodes[v];
    if (node.kind == skeleton_kind::empty) continue;
    // Ancestors through creation dependencies only, and the node itself.
    std::vector<bool> anc(n, false);
    std::vector<std::size_t> stack{v};
    while (!stack.empty()) {
      const std::size_t u = stack.back();
      stack.pop_back();
      if (anc[u]) continue;
      anc[u] = true;
      for (std::size_t d : s.nodes[u].deps) stack.push_back(d);
    }
    const auto is_ancestor = [&](std::size_t f) { return static_cast<bool>(anc[f]); };
    if (node.kind == skeleton_kind::alloc) {
      placed.place_alloc(v, placed.lowest_fit_by_walk(v, is_ancestor));
    } else {
      placed.place_free(v, is_ancestor);
    }
  }
  placed.finish();
  return p;
}

namespace {

// A flattened graph's skeleton without its free nodes: the alloc nodes (in creation order, as
// the graph's nodes are), every other node empty, edges to later nodes as dependencies at
// creation and to earlier ones as late edges. The caller pairs the free nodes.
skeleton skeleton_frame(const flat_graph& flat, const std::string& name) {
  const std::size_t n = flat.nodes.size();
  skeleton s;
  s.name = name;
  s.nodes.resize(n);
  for (std::size_t v = 0; v < n; ++v) {
    const model_node& m = flat.nodes[v];
    skeleton_node& k = s.nodes[v];
    k.label = v < flat.labels.size() ? flat.labels[v] : std::string();
    if (m.kind != node_kind::mem_alloc) continue;
    k.kind = skeleton_kind::alloc;
    k.bytes = m.bytes;
    k.device = m.device;
    k.peers = m.peers;
    std::sort(k.peers.begin(), k.peers.end());
  }
  for (std::size_t u = 0; u < n; ++u) {
    for (std::size_t v : flat.successors[u]) {
      if (u < v) {
        s.nodes[v].deps.push_back(u);
      } else {
        s.late_edges.emplace_back(u, v);
      }
    }
  }
  for (auto& node : s.nodes) {
    std::sort(node.deps.begin(), node.deps.end());
    node.deps.erase(std::unique(node.deps.begin(), node.deps.end()), node.deps.end());
  }
  return s;
}

}  // namespace

skeleton skeleton_without_analysis(const flat_graph& flat, const std::string& name) {
  skeleton s = skeleton_frame(flat, name);
  std::map<std::uint64_t, std::vector<std::size_t>> live;  // address -> alloc nodes not yet freed
  for (std::size_t v = 0; v < flat.nodes.size(); ++v) {
    const model_node& m = flat.nodes[v];
    if (m.kind == node_kind::mem_alloc) {
      live[m.address].push_back(v);
    } else if (m.kind == node_kind::mem_free) {
      auto it = live.find(m.address);
      if (it != live.end() && !it->second.empty()) {
        s.nodes[v].kind = skeleton_kind::free;
        s.nodes[v].frees = it->second.back();
        it->second.pop_back();
      }
    }
  }
  return s;
}

skeleton skeleton_of(const flat_graph& flat, const graph_analysis& a, const std::string& name,
                     const deadline& until) {
  const std::size_t n = flat.nodes.size();
  skeleton s = skeleton_frame(flat, name);
  std::vector<std::size_t> freed_alloc(n, no_node);
  for (const allocation& al : a.allocations) {
    if (al.free_node) freed_alloc[*al.free_node] = al.alloc_node;
  }
  for (std::size_t v = 0; v < n; ++v) {
    if (flat.nodes[v].kind == node_kind::mem_free && freed_alloc[v] != no_node && freed_alloc[v] < v) {
      s.nodes[v].kind = skeleton_kind::free;
      s.nodes[v].frees = freed_alloc[v];
    }
  }
  // Where the driver gave an alloc node fresh memory (an address inside no earlier allocation of
  // its device) although the rule says it could reuse, its dependencies did not exist when it
  // was created. Not for alloc nodes of child graphs: the driver chose their addresses when the
  // child graph was built, yet shares physical memory through the parent's edges (measured,
  // README), so their addresses tell nothing of when the edges came.
  std::vector<bool> fresh(n, false);
  std::map<int, std::map<std::uint64_t, std::uint64_t>> held;  // per device: union of [start, end)
  for (std::size_t v = 0; v < n; ++v) {
    const model_node& m = flat.nodes[v];
    if (m.kind != node_kind::mem_alloc) continue;
    auto& spans = held[m.device];
    auto it = spans.upper_bound(m.address);
    fresh[v] = it == spans.begin() || std::prev(it)->second <= m.address;
    std::uint64_t start = m.address, end = m.address + m.bytes;
    if (it != spans.begin() && std::prev(it)->second >= start) {
      --it;
      start = it->first;
      end = std::max(end, it->second);
      it = spans.erase(it);
    }
    while (it != spans.end() && it->first <= end) {
      end = std::max(end, it->second);
      it = spans.erase(it);
    }
    spans.emplace(start, end);
  }
  for (int pass = 0; pass < 16; ++pass) {
    const reuse_prediction p = predict_reuse(s, 0, until);
    bool changed = false;
    for (std::size_t v = 0; v < n; ++v) {
      if (p.reused_from[v] == no_node || s.nodes[v].deps.empty() || !fresh[v]) continue;
      if (v < flat.in_child.size() && flat.in_child[v]) continue;
      for (std::size_t d : s.nodes[v].deps) s.late_edges.emplace_back(d, v);
      s.nodes[v].deps.clear();
      changed = true;
    }
    if (!changed) break;
  }
  return s;
}

skeleton recreated(const skeleton& s, bool frees_first) {
  validate(s);
  const std::size_t n = s.nodes.size();
  const edge_lists e = edges_of(s);
  std::vector<std::size_t> indegree(n);
  using key = std::pair<int, std::size_t>;
  std::priority_queue<key, std::vector<key>, std::greater<>> ready;
  const auto rank = [&](std::size_t v) {
    return frees_first && s.nodes[v].kind != skeleton_kind::free ? 1 : 0;
  };
  for (std::size_t v = 0; v < n; ++v) {
    indegree[v] = e.pred_at[v + 1] - e.pred_at[v];
    if (indegree[v] == 0) ready.push({rank(v), v});
  }
  std::vector<std::size_t> position(n, no_node);
  skeleton out;
  out.name = s.name;
  out.nodes.reserve(n);
  while (!ready.empty()) {
    const std::size_t v = ready.top().second;
    ready.pop();
    position[v] = out.nodes.size();
    out.nodes.push_back(s.nodes[v]);
    for (std::size_t k = e.succ_at[v]; k < e.succ_at[v + 1]; ++k) {
      const std::size_t t = e.succ[k];
      if (--indegree[t] == 0) ready.push({rank(t), t});
    }
  }
  for (std::size_t v = 0; v < n; ++v) {
    skeleton_node& node = out.nodes[position[v]];
    node.deps.clear();
    for (std::size_t k = e.pred_at[v]; k < e.pred_at[v + 1]; ++k) node.deps.push_back(position[e.pred[k]]);
    std::sort(node.deps.begin(), node.deps.end());
    node.deps.erase(std::unique(node.deps.begin(), node.deps.end()), node.deps.end());
    if (node.kind == skeleton_kind::free) node.frees = position[node.frees];
  }
  return out;
}

flat_graph flat_of(const skeleton& s) {
  validate(s);
  flat_graph f;
  const std::uint64_t base = std::uint64_t{1} << 40;
  for (std::size_t v = 0; v < s.nodes.size(); ++v) {
    const skeleton_node& k = s.nodes[v];
    model_node m;
    m.kind = k.kind == skeleton_kind::alloc  ? node_kind::mem_alloc
             : k.kind == skeleton_kind::free ? node_kind::mem_free
                                             : node_kind::empty;
    m.bytes = k.bytes;
    m.device = k.device;
    m.peers = k.peers;
    if (k.kind == skeleton_kind::alloc) m.address = base + v;
    if (k.kind == skeleton_kind::free) m.address = base + k.frees;
    f.nodes.push_back(std::move(m));
    f.successors.emplace_back();
    f.labels.push_back(k.label.empty() ? node_name(s, v) : k.label);
  }
  for (std::size_t v = 0; v < s.nodes.size(); ++v) {
    for (std::size_t d : s.nodes[v].deps) f.successors[d].push_back(v);
  }
  for (const auto& [from, to] : s.late_edges) f.successors[from].push_back(to);
  return f;
}

reuse_bounds bounds_of(const skeleton& s, const graph_analysis& a, std::uint64_t granularity) {
  reuse_bounds b;
  b.order_free_bytes = a.lower_bound_rounded_bytes;
  b.as_created_bytes = predict_reuse(s, granularity).rounded_bytes;
  skeleton all = s;
  std::vector<std::pair<std::size_t, std::size_t>> later;
  for (const auto& [from, to] : all.late_edges) {
    if (from < to) {
      all.nodes[to].deps.push_back(from);
    } else {
      later.push_back({from, to});
    }
  }
  all.late_edges = later;
  for (auto& node : all.nodes) std::sort(node.deps.begin(), node.deps.end());
  b.creation_order_bytes = predict_reuse(all, granularity).rounded_bytes;
  if (b.as_created_bytes > b.creation_order_bytes) {
    b.binding = "late_dependencies";
  } else if (b.creation_order_bytes > b.order_free_bytes) {
    b.binding = "creation_order";
  } else {
    b.binding = "order_free";
  }
  return b;
}

namespace {

// "alloc node #5 in graph 'g' takes the memory of alloc node #1 in graph 'g' (freed by free node
// #3 in graph 'g')", for the first few allocations that reuse in `after` and not in `before`.
// Each label's last node in a skeleton (labels are unique per flat node; a hand-written skeleton
// may repeat them or leave them empty), made once per search: a map of every label per candidate
// was half the search's time on 150,000 nodes. Keys view the skeleton's labels.
using label_index = std::unordered_map<std::string_view, std::size_t>;

label_index index_of_labels(const skeleton& s) {
  label_index index;
  index.reserve(s.nodes.size());
  for (std::size_t v = 0; v < s.nodes.size(); ++v) index[s.nodes[v].label] = v;
  return index;
}

std::string newly_shared(const skeleton& changed, const reuse_prediction& before_by_label,
                         const label_index& base_index, const reuse_prediction& after) {
  std::vector<std::size_t> free_of(changed.nodes.size(), no_node);
  for (std::size_t v = 0; v < changed.nodes.size(); ++v) {
    if (changed.nodes[v].kind == skeleton_kind::free) free_of[changed.nodes[v].frees] = v;
  }
  std::string out;
  std::size_t listed = 0, more = 0;
  for (std::size_t v = 0; v < changed.nodes.size(); ++v) {
    if (after.reused_from[v] == no_node) continue;
    const auto it = base_index.find(changed.nodes[v].label);
    if (it != base_index.end() && before_by_label.reused_from[it->second] != no_node) continue;
    if (listed == 3) {
      ++more;
      continue;
    }
    const std::size_t from = after.reused_from[v];
    out += std::string(listed ? "; " : "") + "create " + node_name(changed, v) + " after " +
           (free_of[from] == no_node ? std::string("its predecessor's free") : node_name(changed, free_of[from])) +
           " and pass that free (or a node after it) as a dependency when creating it, so that it"
           " takes the memory of " + node_name(changed, from);
    ++listed;
  }
  if (more) out += "; and " + std::to_string(more) + " more allocations alike";
  return out;
}

skeleton with_late_edges_at_creation(const skeleton& s) {
  skeleton out = s;
  out.late_edges.clear();
  for (const auto& [from, to] : s.late_edges) {
    if (from < to) {
      out.nodes[to].deps.push_back(from);
    } else {
      out.late_edges.emplace_back(from, to);
    }
  }
  for (auto& node : out.nodes) std::sort(node.deps.begin(), node.deps.end());
  return out;
}

// Both directions of each reuse opportunity: a smaller allocation fits into a larger one's block
// only when it comes after it, whichever the graph created first.
std::vector<std::pair<std::size_t, std::size_t>> ordered_reuse_pairs(const graph_analysis& a) {
  std::vector<std::pair<std::size_t, std::size_t>> ordered_pairs;
  for (const auto& [i, j] : a.reuse_opportunities) {
    ordered_pairs.emplace_back(i, j);
    ordered_pairs.emplace_back(j, i);
  }
  return ordered_pairs;
}

// The "add_dependency" candidates: for each pair (i, j), j's alloc node made to depend on i's
// free node when it is created, through `consider`. Returns the pairs whose change helped.
template <typename Consider>
std::vector<std::pair<std::size_t, std::size_t>> try_added_dependencies(
    const skeleton& s, const graph_analysis& a, std::uint64_t granularity, std::size_t max_candidates,
    const reuse_prediction& base, std::vector<candidate_change>& out, Consider consider) {
  // At most max_candidates pairs are tried (the largest first: reuse_opportunities is sorted by
  // the smaller allocation's size): each try copies and re-creates the whole skeleton.
  std::vector<std::pair<std::size_t, std::size_t>> helped;
  std::size_t tried = 0, recreations = 0;
  for (const auto& [i, j] : ordered_reuse_pairs(a)) {
    const allocation& ai = a.allocations[i];
    const allocation& aj = a.allocations[j];
    if (!ai.free_node || *ai.free_node >= s.nodes.size() || aj.alloc_node >= s.nodes.size()) continue;
    if (tried++ == max_candidates) break;
    const std::size_t found = out.size();
    skeleton changed;
    reuse_prediction predicted;
    bool known = false;
    if (*ai.free_node < aj.alloc_node) {
      // The free already exists when j's alloc node is created: predict without copying, and
      // copy only a change that helps (the copy predicts the same).
      predicted = predict_valid(s, granularity, *ai.free_node, aj.alloc_node);
      if (predicted.rounded_bytes >= base.rounded_bytes) continue;
      known = true;
      changed = s;
      auto& deps = changed.nodes[aj.alloc_node].deps;
      deps.insert(std::upper_bound(deps.begin(), deps.end(), *ai.free_node), *ai.free_node);
    } else {
      // Needs the nodes re-created in another order: a whole copy, so only the first two.
      if (recreations++ == 2) continue;
      changed = s;
      changed.late_edges.emplace_back(*ai.free_node, aj.alloc_node);
      try {
        changed = recreated(changed, false);
      } catch (const std::invalid_argument&) {
        continue;  // j's alloc node reaches i's free node: the edge would close a cycle
      }
    }
    consider("add_dependency", std::move(changed),
             "make " + node_name(s, aj.alloc_node) + " depend on " + node_name(s, *ai.free_node) +
                 " when it is created (in a capture: record an event after the cudaFreeAsync and "
                 "make the allocating stream wait on it before its cudaMallocAsync)",
             known ? &predicted : nullptr);
    if (out.size() > found) {
      out.back().added_edges = {{*ai.free_node, aj.alloc_node}};
      helped.emplace_back(i, j);
    }
  }
  return helped;
}

// The combined set: all edges at creation, frees first (`frees_first`, predicted to reserve
// `frees_first_bytes`), then dependencies added greedily from the pairs that `helped` while they
// lower the prediction.
candidate_change combined_change(const skeleton& s, const graph_analysis& a, std::uint64_t granularity,
                                 const std::vector<std::pair<std::size_t, std::size_t>>& helped,
                                 skeleton frees_first, std::uint64_t frees_first_bytes) {
  skeleton combined = std::move(frees_first);
  std::uint64_t best = frees_first_bytes;
  std::string added;
  std::size_t added_count = 0;
  // The original nodes' positions in `combined`, by label (labels are unique per flat node);
  // made again only when `combined` changes.
  label_index position_of = index_of_labels(combined);
  for (const auto& [i, j] : helped) {
    if (best <= a.lower_bound_rounded_bytes) break;
    const allocation& ai = a.allocations[i];
    const allocation& aj = a.allocations[j];
    if (!ai.free_node || *ai.free_node >= s.nodes.size() || aj.alloc_node >= s.nodes.size()) continue;
    const auto pf = position_of.find(s.nodes[*ai.free_node].label);
    const auto pt = position_of.find(s.nodes[aj.alloc_node].label);
    if (pf == position_of.end() || pt == position_of.end()) continue;
    const std::size_t f = pf->second, t = pt->second;
    // The edge is added to `combined` only for the re-creation (no copy of a whole skeleton).
    skeleton trial;
    combined.late_edges.emplace_back(f, t);
    try {
      trial = recreated(combined, true);
    } catch (const std::invalid_argument&) {
      combined.late_edges.pop_back();
      continue;  // a cycle with an edge added before
    }
    combined.late_edges.pop_back();
    const std::uint64_t p = predict_valid(trial, granularity).rounded_bytes;
    if (p < best) {
      best = p;
      combined = std::move(trial);
      position_of = index_of_labels(combined);
      added += std::string(added_count++ ? "; " : "") + "make " + node_name(s, aj.alloc_node) +
               " depend on " + node_name(s, *ai.free_node) + " when it is created";
    }
  }
  return {"combined", "give every dependency at creation and create each free node as soon as "
                      "its last user exists" + (added.empty() ? std::string() : "; " + added),
          std::move(combined), best, {}};
}

}  // namespace

std::vector<candidate_change> candidate_changes(const skeleton& s, const graph_analysis& a,
                                                std::uint64_t granularity,
                                                std::size_t max_candidates) {
  const reuse_prediction base = predict_reuse(s, granularity);
  const label_index base_index = index_of_labels(s);
  std::vector<candidate_change> out;
  // Every changed skeleton below is valid by construction (a copy of the validated `s` with a
  // dependency on an earlier node, or the output of recreated()): predicted without validating,
  // and not again where the caller has predicted it already (`known`).
  const auto consider = [&](std::string kind, skeleton changed, const std::string& how,
                            const reuse_prediction* known = nullptr) {
    const reuse_prediction p = known ? *known : predict_valid(changed, granularity);
    if (p.rounded_bytes >= base.rounded_bytes) return;
    std::string where = how;
    const std::string shared = newly_shared(changed, base, base_index, p);
    if (!shared.empty()) where += (where.empty() ? "" : ": ") + shared;
    out.push_back({std::move(kind), std::move(where), std::move(changed), p.rounded_bytes, {}});
  };
  bool late_forward = false, late_backward = false;
  for (const auto& [from, to] : s.late_edges) (from < to ? late_forward : late_backward) = true;
  if (late_forward) {
    consider("dependency_at_creation", with_late_edges_at_creation(s),
             "give these dependencies when the alloc nodes are created (the pDependencies of "
             "cudaGraphAddMemAllocNode / cudaGraphAddNode), not afterwards with "
             "cudaGraphAddDependencies; in a stream capture, make the stream wait on an event "
             "recorded after the free (cudaStreamWaitEvent) before calling cudaMallocAsync");
  }
  // Frees first: a candidate of its own and the start of the combined set below, so re-created
  // and predicted once.
  skeleton frees_first = recreated(s, true);
  const reuse_prediction frees_first_predicted = predict_valid(frees_first, granularity);
  consider("creation_order", frees_first,
           "create each free node as soon as its last user exists, before the allocations that "
           "follow it (in a capture: call cudaFreeAsync right after the last kernel that uses the "
           "buffer, before the next cudaMallocAsync)",
           &frees_first_predicted);
  const std::vector<std::pair<std::size_t, std::size_t>> helped =
      try_added_dependencies(s, a, granularity, max_candidates, base, out, consider);
  std::stable_sort(out.begin(), out.end(), [](const candidate_change& l, const candidate_change& r) {
    return l.predicted_bytes < r.predicted_bytes;
  });
  if (out.size() > max_candidates - 1) out.resize(max_candidates - 1);
  out.push_back(combined_change(s, a, granularity, helped, std::move(frees_first), frees_first_predicted.rounded_bytes));
  return out;
}

}  // namespace gmem::profiler

namespace gmem::profiler {
namespace {

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

// A serial schedule of a skeleton: the (free, alloc) edges that order its allocations one after
// another, and each pool's peak of live bytes along it.
struct serial_schedule {
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  std::vector<std::uint64_t> peak;  // by pool
};

// The serial schedule: among ready nodes, frees first, then other non-alloc nodes, then
// allocations that a started node waits for (so that work in progress finishes before new
// memory is taken), then the other allocations; allocations the largest first (a smaller one
// fits into a larger one's freed range, not the other way round: measured, README), each
// class by index. Each allocation depends on the frees of its pool since the pool's last one.
serial_schedule schedule_serially(const skeleton& s, const reuse_prediction& base) {
  const std::size_t n = s.nodes.size();
  const edge_lists e = edges_of(s);
  std::vector<std::size_t> indegree(n);
  using key = std::tuple<int, std::uint64_t, std::size_t>;
  std::priority_queue<key, std::vector<key>, std::greater<>> ready;
  // Per node: its ready allocations not looked at since one of its predecessors was last
  // scheduled. Every ready allocation a started node waits for is boosted when another of that
  // node's predecessors is scheduled; looking only at those made ready since the last time finds
  // the same ones as looking at every predecessor each time, which cost a join of k frees k^2
  // looks (10,000 + 10,000 allocations: 10^8).
  std::vector<std::vector<std::size_t>> waiting(n);
  const auto make_ready = [&](std::size_t v) {
    const skeleton_node& k = s.nodes[v];
    if (k.kind != skeleton_kind::alloc) {
      ready.push(key{k.kind == skeleton_kind::free ? 0 : 1, 0, v});
      return;
    }
    ready.push(key{3, ~std::uint64_t{k.bytes}, v});
    for (std::size_t i = e.succ_at[v]; i < e.succ_at[v + 1]; ++i) waiting[e.succ[i]].push_back(v);
  };
  for (std::size_t v = 0; v < n; ++v) {
    indegree[v] = e.pred_at[v + 1] - e.pred_at[v];
    if (indegree[v] == 0) make_ready(v);
  }
  const std::size_t pools = base.pool_mapped.size();
  serial_schedule out;
  std::vector<std::uint64_t> live(pools, 0);
  out.peak.assign(pools, 0);
  std::vector<std::vector<std::size_t>> pending(pools);  // frees since the pool's last allocation
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
      out.peak[pool] = std::max(out.peak[pool], live[pool]);
      for (std::size_t f : pending[pool]) {
        if (std::find(node.deps.begin(), node.deps.end(), f) == node.deps.end()) out.edges.emplace_back(f, v);
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
        make_ready(w);
        continue;
      }
      for (std::size_t u : waiting[w]) {  // what w still waits for, ready
        if (!scheduled[u] && !boosted[u]) {
          boosted[u] = true;
          ready.push(key{2, ~std::uint64_t{s.nodes[u].bytes}, u});
        }
      }
      waiting[w].clear();
    }
  }
  return out;
}

// Drops what the prediction does not need from `edges`, last edge first, on plans of at most 256
// edges (each try predicts a copy of the skeleton); `changed`, `recreate` and `predicted` follow.
void drop_unneeded_edges(const skeleton& s, std::uint64_t granularity,
                         std::vector<std::pair<std::size_t, std::size_t>>& edges, skeleton& changed,
                         bool& recreate, std::uint64_t& predicted) {
  if (edges.size() > 256) return;
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

}  // namespace

std::optional<plan_result> plan_changes(const skeleton& s, std::uint64_t granularity) {
  validate(s);
  const reuse_prediction base = predict_valid(s, granularity);
  serial_schedule schedule = schedule_serially(s, base);
  std::vector<std::pair<std::size_t, std::size_t>>& edges = schedule.edges;
  if (edges.empty()) return std::nullopt;
  std::uint64_t serial_peak = 0;
  for (std::uint64_t p : schedule.peak) serial_peak += round_up(p, granularity);
  bool recreate = false;
  skeleton changed = with_plan_edges(s, edges, recreate);
  std::uint64_t predicted = predict_valid(changed, granularity).rounded_bytes;
  if (predicted >= base.rounded_bytes) return std::nullopt;
  drop_unneeded_edges(s, granularity, edges, changed, recreate, predicted);
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

}  // namespace gmem::profiler
