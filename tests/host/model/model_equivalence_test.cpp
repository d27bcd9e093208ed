// The analysis and the reuse rule made fast compute exactly what they computed before
// (model_reference.cpp keeps that code): every field of analyse() and predict_reuse(), and what
// is built on them, over hundreds of small random graphs of several shapes, the layered one
// (allocations, unordered frees, a join, larger allocations) among them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/graph_alone.hpp"
#include "gmem/profiler/graph_model.hpp"
#include "gmem/profiler/pool_model.hpp"
#include "gmem/profiler/reuse_model.hpp"
#include "model_reference.hpp"
#include "pool_model_reference.hpp"

namespace {

using namespace gmem::profiler;  // NOLINT(google-build-using-namespace): test file

constexpr std::uint64_t MiB = 1 << 20;
constexpr std::uint64_t granule = 2 * MiB;

// Sizes with many ties (the antichain's and the pairs' tie-breaking) and, rarely, 0 bytes.
std::size_t random_bytes(std::mt19937& rng, bool zeros = true) {
  if (zeros && rng() % 23 == 0) return 0;
  static const std::size_t sizes[] = {MiB / 2, MiB, MiB, 2 * MiB, 3 * MiB, 3 * MiB, 5 * MiB, 8 * MiB};
  return sizes[rng() % 8] + (rng() % 5 == 0 ? rng() % 4096 : 0);
}

// Builds a graph_model; `add` returns the node's index.
struct builder {
  graph_model g;
  std::size_t add(node_kind k, std::uint64_t address = 0, std::size_t bytes = 0) {
    model_node n;
    n.kind = k;
    n.address = address;
    n.bytes = bytes;
    g.nodes.push_back(n);
    return g.nodes.size() - 1;
  }
  void edge(std::size_t from, std::size_t to) { g.edges.emplace_back(from, to); }
};

// Any DAG: nodes created in a random order of a hidden topological order, edges forward in it
// with a random density; allocations of a few addresses (an address returned again after its
// free), frees that may be foreign, unordered after their alloc or missing, a child graph now and
// then; devices and peers mixed.
graph_model random_graph(std::mt19937& rng, std::size_t n, bool child = true) {
  builder b;
  b.g.name = "random";
  std::vector<std::size_t> rank(n);
  std::iota(rank.begin(), rank.end(), 0);
  std::shuffle(rank.begin(), rank.end(), rng);  // node v is at position rank[v] of the hidden order
  std::vector<std::size_t> at(n);
  for (std::size_t v = 0; v < n; ++v) at[rank[v]] = v;
  const std::uint64_t addresses = 2 + rng() % 8;
  std::vector<std::size_t> kind_of(n);
  for (std::size_t v = 0; v < n; ++v) kind_of[v] = rng() % 10;
  for (std::size_t v = 0; v < n; ++v) {
    const std::uint64_t address = 0x7f0000000000ull + (rng() % addresses) * 0x10000000ull;
    if (kind_of[v] < 4) {
      const std::size_t k = b.add(node_kind::mem_alloc, address, random_bytes(rng));
      b.g.nodes[k].device = rng() % 5 == 0 ? 1 : 0;
      if (rng() % 7 == 0) b.g.nodes[k].peers = {1 - b.g.nodes[k].device};
    } else if (kind_of[v] < 8) {
      b.add(node_kind::mem_free, address);
    } else {
      b.add(rng() % 2 ? node_kind::kernel : node_kind::empty);
    }
  }
  const unsigned density = 1 + rng() % 5;  // edges per node, about
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t q = p + 1; q < n; ++q) {
      if (rng() % (n + 1) < density) b.edge(at[p], at[q]);
    }
  }
  // Most frees come after an alloc of their address in the hidden order: an edge makes it so.
  for (std::size_t q = 0; q < n; ++q) {
    const std::size_t f = at[q];
    if (b.g.nodes[f].kind != node_kind::mem_free || rng() % 6 == 0) continue;
    for (std::size_t p = q; p-- > 0;) {
      const std::size_t a = at[p];
      if (b.g.nodes[a].kind == node_kind::mem_alloc && b.g.nodes[a].address == b.g.nodes[f].address) {
        b.edge(a, f);
        break;
      }
    }
  }
  if (child && n > 2 && rng() % 4 == 0) {
    graph_model c = random_graph(rng, 1 + rng() % 6, false);
    c.name = "child";
    b.g.children.push_back(std::move(c));
    const std::size_t k = b.add(node_kind::child_graph);
    b.g.nodes[k].child = 0;
    const std::size_t before = at[rng() % n], after = at[n - 1];
    if (before != after) {
      b.edge(before, k);
      b.edge(k, after);
    }
  }
  return b.g;
}

// The layered shape: layers of allocations, each allocation freed by its own free node (the
// frees of a layer unordered, or a few of them ordered), one empty node joining a layer's frees
// before the next layer's allocations; the last layer's allocations may stay unfreed. Sizes
// grow layer by layer, or not.
graph_model random_layered(std::mt19937& rng) {
  builder b;
  b.g.name = "layered";
  const std::size_t layers = 2 + rng() % 2;
  const bool growing = rng() % 2;
  std::uint64_t next_address = 0x7f0000000000ull;
  std::size_t join = static_cast<std::size_t>(-1);
  for (std::size_t layer = 0; layer < layers; ++layer) {
    const std::size_t width = 1 + rng() % 9;
    std::vector<std::size_t> frees;
    for (std::size_t i = 0; i < width; ++i) {
      const std::uint64_t address = next_address;
      next_address += 0x10000000ull;
      const std::size_t bytes = growing ? random_bytes(rng, false) + layer * 8 * MiB : random_bytes(rng);
      const std::size_t a = b.add(node_kind::mem_alloc, address, bytes);
      if (join != static_cast<std::size_t>(-1)) b.edge(join, a);
      if (layer + 1 == layers && rng() % 5 == 0) continue;  // left allocated
      const std::size_t f = b.add(node_kind::mem_free, address);
      b.edge(a, f);
      if (!frees.empty() && rng() % 8 == 0) b.edge(frees[rng() % frees.size()], f);
      frees.push_back(f);
    }
    if (layer + 1 == layers) break;
    join = b.add(node_kind::empty);
    for (std::size_t f : frees) b.edge(f, join);
  }
  return b.g;
}

// K allocations all made before one join, then all freed: every pair live together and no
// pair can be ordered (each free needs the join, which needs every allocation).
graph_model random_wide_joined(std::mt19937& rng) {
  builder b;
  b.g.name = "wide joined";
  const std::size_t k = 1 + rng() % 12;
  const std::size_t join = b.add(node_kind::kernel);
  for (std::size_t i = 0; i < k; ++i) {
    const std::uint64_t address = 0x7f0000000000ull + i * 0x10000000ull;
    const std::size_t a = b.add(node_kind::mem_alloc, address, random_bytes(rng));
    b.edge(a, join);
    if (rng() % 3 == 0) {  // some branches independent instead
      b.g.edges.pop_back();
      const std::size_t e = b.add(node_kind::empty);
      b.edge(a, e);
      b.edge(e, b.add(node_kind::mem_free, address));
    } else {
      b.edge(join, b.add(node_kind::mem_free, address));
    }
  }
  return b.g;
}

// Lanes of alloc -> kernels -> free, the next allocation of a lane waiting for the middle of the
// previous one's work, edges across lanes now and then (the scale benchmark's shape, small).
graph_model random_lanes(std::mt19937& rng) {
  builder b;
  b.g.name = "lanes";
  const std::size_t lanes = 1 + rng() % 4, allocs = 2 + rng() % 14;
  std::vector<std::size_t> last(lanes, static_cast<std::size_t>(-1)), mid = last;
  std::vector<std::uint64_t> pending(lanes, 0);
  std::vector<std::size_t> recent;
  for (std::size_t i = 0; i < allocs; ++i) {
    const std::size_t lane = i % lanes;
    const std::uint64_t address = 0x7f0000000000ull + i * 0x10000000ull;
    const std::size_t a = b.add(node_kind::mem_alloc, address, random_bytes(rng));
    if (last[lane] != static_cast<std::size_t>(-1)) b.edge(rng() % 2 ? last[lane] : mid[lane], a);
    const std::size_t k1 = b.add(node_kind::kernel);
    b.edge(a, k1);
    if (!recent.empty() && rng() % 2) b.edge(recent[rng() % recent.size()], k1);
    mid[lane] = k1;
    std::size_t prev = k1;
    if (pending[lane]) {
      const std::size_t f = b.add(node_kind::mem_free, pending[lane]);
      b.edge(k1, f);
      prev = f;
    }
    const std::size_t k2 = b.add(node_kind::kernel);
    b.edge(prev, k2);
    pending[lane] = address;
    last[lane] = k2;
    recent.push_back(k2);
  }
  for (std::size_t lane = 0; lane < lanes; ++lane) {
    if (pending[lane] && rng() % 4) b.edge(last[lane], b.add(node_kind::mem_free, pending[lane]));
  }
  return b.g;
}

void expect_same(const graph_analysis& fast, const graph_analysis& old, const std::string& where) {
  ASSERT_EQ(fast.allocations.size(), old.allocations.size()) << where;
  for (std::size_t i = 0; i < fast.allocations.size(); ++i) {
    ASSERT_EQ(fast.allocations[i].alloc_node, old.allocations[i].alloc_node) << where;
    ASSERT_EQ(fast.allocations[i].free_node, old.allocations[i].free_node) << where;
    ASSERT_EQ(fast.allocations[i].address, old.allocations[i].address) << where;
    ASSERT_EQ(fast.allocations[i].bytes, old.allocations[i].bytes) << where;
    ASSERT_EQ(fast.allocations[i].device, old.allocations[i].device) << where;
  }
  ASSERT_EQ(fast.alloc_nodes, old.alloc_nodes) << where;
  ASSERT_EQ(fast.free_nodes, old.free_nodes) << where;
  ASSERT_EQ(fast.foreign_frees, old.foreign_frees) << where;
  ASSERT_EQ(fast.unfreed, old.unfreed) << where;
  ASSERT_EQ(fast.requested_bytes, old.requested_bytes) << where;
  ASSERT_EQ(fast.distinct_addresses, old.distinct_addresses) << where;
  ASSERT_EQ(fast.va_reuse_ratio, old.va_reuse_ratio) << where;
  ASSERT_EQ(fast.granularity, old.granularity) << where;
  ASSERT_EQ(fast.lower_bound_bytes, old.lower_bound_bytes) << where;
  ASSERT_EQ(fast.lower_bound_set, old.lower_bound_set) << where;
  ASSERT_EQ(fast.lower_bound_rounded_bytes, old.lower_bound_rounded_bytes) << where;
  ASSERT_EQ(fast.reuse_opportunities, old.reuse_opportunities) << where;
}

void expect_same(const reuse_prediction& fast, const reuse_prediction& old, const std::string& where) {
  ASSERT_EQ(fast.pool, old.pool) << where;
  ASSERT_EQ(fast.offset, old.offset) << where;
  ASSERT_EQ(fast.reused_from, old.reused_from) << where;
  ASSERT_EQ(fast.bytes, old.bytes) << where;
  ASSERT_EQ(fast.rounded_bytes, old.rounded_bytes) << where;
  ASSERT_EQ(fast.pool_device, old.pool_device) << where;
  ASSERT_EQ(fast.pool_mapped, old.pool_mapped) << where;
}

void expect_same(const skeleton& fast, const skeleton& old, const std::string& where) {
  ASSERT_EQ(fast.name, old.name) << where;
  ASSERT_EQ(fast.late_edges, old.late_edges) << where;
  ASSERT_EQ(fast.nodes.size(), old.nodes.size()) << where;
  for (std::size_t v = 0; v < fast.nodes.size(); ++v) {
    ASSERT_EQ(fast.nodes[v].kind, old.nodes[v].kind) << where << " node " << v;
    ASSERT_EQ(fast.nodes[v].bytes, old.nodes[v].bytes) << where << " node " << v;
    ASSERT_EQ(fast.nodes[v].device, old.nodes[v].device) << where << " node " << v;
    ASSERT_EQ(fast.nodes[v].peers, old.nodes[v].peers) << where << " node " << v;
    ASSERT_EQ(fast.nodes[v].frees, old.nodes[v].frees) << where << " node " << v;
    ASSERT_EQ(fast.nodes[v].deps, old.nodes[v].deps) << where << " node " << v;
    ASSERT_EQ(fast.nodes[v].label, old.nodes[v].label) << where << " node " << v;
  }
}

// The plan of `s` as before: its dependencies, its skeleton, its words and figures,
// or the same refusal.
void expect_same_plan(const skeleton& s, const std::string& where) {
  std::optional<plan_result> fast, old;
  std::string fast_error, old_error;
  try {
    old = reference::plan_changes(s, granule);
  } catch (const std::invalid_argument& e) {
    old_error = e.what();
  }
  try {
    fast = plan_changes(s, granule);
  } catch (const std::invalid_argument& e) {
    fast_error = e.what();
  }
  ASSERT_EQ(fast_error, old_error) << where;
  ASSERT_EQ(fast.has_value(), old.has_value()) << where;
  if (!fast) return;
  ASSERT_EQ(fast->change.kind, old->change.kind) << where;
  ASSERT_EQ(fast->change.where, old->change.where) << where;
  ASSERT_EQ(fast->change.predicted_bytes, old->change.predicted_bytes) << where;
  ASSERT_EQ(fast->change.added_edges, old->change.added_edges) << where;
  ASSERT_EQ(fast->serial_peak_bytes, old->serial_peak_bytes) << where;
  ASSERT_EQ(fast->recreated, old->recreated) << where;
  expect_same(fast->change.changed, old->change.changed, where);
}

// Whether each allocation's free node is reached from its alloc node, as the driver requires.
bool frees_follow_their_allocs(const flat_graph& flat, const graph_analysis& a) {
  for (const allocation& al : a.allocations) {
    if (!al.free_node) continue;
    std::vector<bool> seen(flat.nodes.size(), false);
    std::vector<std::size_t> stack{al.alloc_node};
    while (!stack.empty() && !seen[*al.free_node]) {
      const std::size_t v = stack.back();
      stack.pop_back();
      for (std::size_t w : flat.successors[v]) {
        if (!seen[w]) {
          seen[w] = true;
          stack.push_back(w);
        }
      }
    }
    if (!seen[*al.free_node]) return false;
  }
  return true;
}

// Everything a graph goes through: its analysis, its skeleton's predictions (with and without
// the late edges given at creation, re-created frees first), the analysis of the skeleton as a
// graph (what `gmemprof show` does with a deferred one), the plan, the candidates' predictions.
void check_graph(const graph_model& g, const std::string& where, bool candidates) {
  const flat_graph flat = flatten(g);
  const graph_analysis fast = analyse(flat, granule);
  expect_same(fast, reference::analyse(flat, granule), where + " analyse");
  expect_same(analyse(flat, 0), reference::analyse(flat, 0), where + " analyse, no granularity");
  const skeleton s = skeleton_of(flat, fast, g.name);
  expect_same(predict_reuse(s, granule), reference::predict_reuse(s, granule), where + " predict");
  expect_same(predict_reuse(s, 0), reference::predict_reuse(s, 0), where + " predict, no granularity");
  const flat_graph of = flat_of(s);
  expect_same(analyse(of, granule), reference::analyse(of, granule), where + " analyse(flat_of)");
  const skeleton bare = skeleton_without_analysis(flat, g.name);
  expect_same(predict_reuse(bare, granule), reference::predict_reuse(bare, granule), where + " bare");
  // A free node its alloc node does not reach (no driver makes one) may come before it when the
  // nodes are re-created in an order of the edges: no valid skeleton then, for either code.
  if (!frees_follow_their_allocs(flat, fast)) return;
  const skeleton again = recreated(s, true);
  expect_same(predict_reuse(again, granule), reference::predict_reuse(again, granule), where + " recreated");
  expect_same_plan(s, where + " plan");
  if (!candidates) return;
  // Candidates are predicted unvalidated: an added dependency can close a cycle with a late
  // edge, and is predicted all the same (by both).
  for (const candidate_change& c : candidate_changes(s, fast, granule)) {
    ASSERT_EQ(c.predicted_bytes, reference::predict_without_validating(c.changed, granule).rounded_bytes)
        << where << " " << c.kind;
  }
}

TEST(ModelEquivalence, RandomGraphsAnalyseAndPredictAsBefore) {
  std::mt19937 rng(35);
  for (int trial = 0; trial < 600; ++trial) {
    check_graph(random_graph(rng, 1 + rng() % 40), "random graph, trial " + std::to_string(trial), trial % 3 == 0);
    if (HasFatalFailure()) return;
  }
}

TEST(ModelEquivalence, LayeredGraphsAnalyseAndPredictAsBefore) {
  std::mt19937 rng(3535);
  for (int trial = 0; trial < 400; ++trial) {
    check_graph(random_layered(rng), "layered graph, trial " + std::to_string(trial), trial % 2 == 0);
    if (HasFatalFailure()) return;
  }
}

TEST(ModelEquivalence, JoinedAndLaneGraphsAnalyseAndPredictAsBefore) {
  std::mt19937 rng(353535);
  for (int trial = 0; trial < 300; ++trial) {
    check_graph(random_wide_joined(rng), "wide joined graph, trial " + std::to_string(trial), trial % 3 == 0);
    if (HasFatalFailure()) return;
    check_graph(random_lanes(rng), "lanes graph, trial " + std::to_string(trial), trial % 3 == 0);
    if (HasFatalFailure()) return;
  }
}

// The layered graph of the scale benchmark, as a graph model: `per_layer`
// allocations each freed by its own free node, a join, then `per_layer` larger ones, freed.
graph_model layered(std::size_t per_layer) {
  builder b;
  b.g.name = "layered";
  std::vector<std::size_t> frees;
  for (std::size_t i = 0; i < per_layer; ++i) {
    const std::uint64_t address = 0x7f0000000000ull + i * 0x10000000ull;
    const std::size_t a = b.add(node_kind::mem_alloc, address, (1 + i % 64) * MiB);
    frees.push_back(b.add(node_kind::mem_free, address));
    b.edge(a, frees.back());
  }
  const std::size_t join = b.add(node_kind::empty);
  for (std::size_t f : frees) b.edge(f, join);
  for (std::size_t i = 0; i < per_layer; ++i) {
    const std::uint64_t address = 0x7f0000000000ull + (per_layer + i) * 0x10000000ull;
    const std::size_t a = b.add(node_kind::mem_alloc, address, (65 + i % 64) * MiB);
    b.edge(join, a);
    b.edge(a, b.add(node_kind::mem_free, address));
  }
  return b.g;
}

// The layered graph of 500 + 500 allocations as the reference code analyses it.
TEST(ModelEquivalence, LargeLayeredGraphAsBefore) {
  const graph_model g = layered(500);
  const flat_graph flat = flatten(g);
  const graph_analysis fast = analyse(flat, granule);
  expect_same(fast, reference::analyse(flat, granule), "layered 500 + 500");
  const skeleton s = skeleton_of(flat, fast, g.name);
  expect_same(predict_reuse(s, granule), reference::predict_reuse(s, granule), "layered 500 + 500 predict");
  expect_same_plan(s, "layered 500 + 500 plan");
}

// A skeleton the driver could not have given: late edges anywhere, frees created long after
// their allocations or never, several devices and peer sets.
skeleton random_skeleton(std::mt19937& rng, std::size_t n) {
  skeleton s;
  s.name = "random skeleton";
  std::vector<std::size_t> unfreed;
  for (std::size_t v = 0; v < n; ++v) {
    skeleton_node k;
    const unsigned r = rng() % 10;
    if (r < 4) {
      k.kind = skeleton_kind::alloc;
      k.bytes = random_bytes(rng);
      k.device = rng() % 4 == 0 ? 1 : 0;
      if (rng() % 6 == 0) k.peers = {1 - k.device};
      unfreed.push_back(v);
    } else if (r < 8 && !unfreed.empty()) {
      const std::size_t pick = rng() % unfreed.size();
      k.kind = skeleton_kind::free;
      k.frees = unfreed[pick];
      unfreed.erase(unfreed.begin() + static_cast<std::ptrdiff_t>(pick));
      if (rng() % 5) k.deps.push_back(k.frees);
    }
    for (std::size_t d = 0; d < v; ++d) {
      if (rng() % (v + 2) < 2 && std::find(k.deps.begin(), k.deps.end(), d) == k.deps.end()) k.deps.push_back(d);
    }
    std::sort(k.deps.begin(), k.deps.end());
    s.nodes.push_back(std::move(k));
  }
  for (std::size_t e = 0; e < n / 4; ++e) {
    std::size_t u = rng() % n, v = rng() % n;
    if (u > v) std::swap(u, v);
    if (u != v) s.late_edges.emplace_back(u, v);
  }
  return s;
}

TEST(ModelEquivalence, RandomSkeletonsPredictAsBefore) {
  std::mt19937 rng(5353);
  for (int trial = 0; trial < 500; ++trial) {
    const skeleton s = random_skeleton(rng, 2 + rng() % 60);
    const std::string where = "skeleton trial " + std::to_string(trial);
    expect_same(predict_reuse(s, granule), reference::predict_reuse(s, granule), where);
    if (HasFatalFailure()) return;
    expect_same(predict_reuse(s, 3 * MiB), reference::predict_reuse(s, 3 * MiB), where + ", granularity 3 MiB");
    if (HasFatalFailure()) return;
    const flat_graph f = flat_of(s);
    expect_same(analyse(f, granule), reference::analyse(f, granule), where + " analyse(flat_of)");
    if (HasFatalFailure()) return;
    expect_same_plan(s, where + " plan");
    if (HasFatalFailure()) return;
  }
}

// The pool model and its reference driven side by side through random programs (graphs
// added, launched and uploaded into three streams with and without measured growth, outputs
// freed, graphs destroyed and made again, synchronizes, trims): every step's result and, after
// each, every device's reservation, used memory, shares and each graph's held allocations.
TEST(ModelEquivalence, PoolModelFollowsRandomProgramsAsBefore) {
  std::mt19937 rng(3553);
  for (int trial = 0; trial < 150; ++trial) {
    pool_model fast(granule);
    reference::pool_model old(granule);
    std::size_t graphs = 0;
    const std::string where = "pool trial " + std::to_string(trial);
    std::vector<std::uint64_t> ordinal(4, 0);
    for (int op = 0; op < 120; ++op) {
      const unsigned kind = graphs == 0 ? 0 : rng() % 16;
      const std::size_t g = graphs == 0 ? 0 : rng() % graphs;
      const std::uint64_t stream = 1 + rng() % 3;
      const std::string at = where + ", op " + std::to_string(op) + " kind " + std::to_string(kind);
      if (kind == 0 || (kind == 1 && graphs < 12)) {
        skeleton s = random_skeleton(rng, 2 + rng() % 20);
        s.name = "g" + std::to_string(graphs % 5);  // names repeat, as graphs of one site do
        const pool_graph layout = pool_graph_of(s, granule, rng() % 3 != 0);
        ASSERT_EQ(fast.add(layout), old.add(layout)) << at;
        ++graphs;
      } else if (kind <= 6) {
        const bool run = kind <= 5;
        std::optional<std::uint64_t> measured;
        if (rng() % 3 == 0) measured = (rng() % 4) * granule;
        ordinal[stream] += 1;
        pool_step a, b;
        bool threw_a = false, threw_b = false;
        try {
          a = run ? fast.launch(g, stream, ordinal[stream], measured) : fast.upload(g, stream, ordinal[stream], measured);
        } catch (const std::invalid_argument&) {
          threw_a = true;
        }
        try {
          b = run ? old.launch(g, stream, ordinal[stream], measured) : old.upload(g, stream, ordinal[stream], measured);
        } catch (const std::invalid_argument&) {
          threw_b = true;
        }
        ASSERT_EQ(threw_a, threw_b) << at;
        ASSERT_EQ(a.refused, b.refused) << at;
        ASSERT_EQ(a.mapped_slots, b.mapped_slots) << at;
        ASSERT_EQ(a.grown_bytes, b.grown_bytes) << at;
        ASSERT_EQ(a.others_completed, b.others_completed) << at;
      } else if (kind == 7) {
        const bool run = rng() % 2;
        std::uint64_t x = 0, y = 0;
        bool threw_a = false, threw_b = false;
        try {
          x = fast.growth_if_mapped(g, stream, run);
        } catch (const std::invalid_argument&) {
          threw_a = true;
        }
        try {
          y = old.growth_if_mapped(g, stream, run);
        } catch (const std::invalid_argument&) {
          threw_b = true;
        }
        ASSERT_EQ(threw_a, threw_b) << at;
        ASSERT_EQ(x, y) << at;
      } else if (kind == 8) {
        fast.free_held(g);
        old.free_held(g);
      } else if (kind == 9) {
        const std::size_t a = rng() % 4;
        const int device = static_cast<int>(rng() % 3) - 1;
        fast.free_held(g, a, device);
        old.free_held(g, a, device);
      } else if (kind == 10) {
        fast.destroy(g);
        old.destroy(g);
      } else if (kind == 11) {
        fast.instantiate(g);
        old.instantiate(g);
      } else if (kind == 12) {
        fast.synchronize();
        old.synchronize();
      } else if (kind == 13) {
        fast.synchronize(stream);
        old.synchronize(stream);
      } else if (kind == 14) {
        const std::uint64_t upto = rng() % (ordinal[stream] + 1);
        fast.synchronize(stream, upto);
        old.synchronize(stream, upto);
      } else {
        const int device = static_cast<int>(rng() % 2);
        fast.trim(device);
        old.trim(device);
      }
      for (int device = 0; device < 2; ++device) {
        ASSERT_EQ(fast.reserved(device), old.reserved(device)) << at;
        ASSERT_EQ(fast.used(device), old.used(device)) << at;
        ASSERT_EQ(fast.others_running(stream), old.others_running(stream)) << at;
        std::optional<std::size_t> launching;
        if (graphs > 0 && rng() % 2) launching = rng() % graphs;
        const auto x = fast.shares(device, launching), y = old.shares(device, launching);
        ASSERT_EQ(x.size(), y.size()) << at;
        for (std::size_t k = 0; k < x.size(); ++k) {
          ASSERT_EQ(x[k].graph, y[k].graph) << at;
          ASSERT_EQ(x[k].why, y[k].why) << at;
          ASSERT_EQ(x[k].bytes, y[k].bytes) << at;
        }
        for (std::size_t k = 0; k < graphs; ++k) {
          const auto hx = fast.held(k, device);
          const auto hy = old.held(k, device);
          ASSERT_EQ(hx.allocations, hy.allocations) << at;
          ASSERT_EQ(hx.requested_bytes, hy.requested_bytes) << at;
          ASSERT_EQ(hx.granule_bytes, hy.granule_bytes) << at;
        }
      }
    }
  }
}

}  // namespace
