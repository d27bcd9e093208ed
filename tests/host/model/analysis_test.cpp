#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/graph_model.hpp"

namespace {

using gmem::profiler::analyse;
using gmem::profiler::flat_graph;
using gmem::profiler::flatten;
using gmem::profiler::graph_analysis;
using gmem::profiler::graph_model;
using gmem::profiler::max_weight_antichain;
using gmem::profiler::model_node;
using gmem::profiler::node_kind;
using gmem::profiler::round_up;
using gmem::profiler::summarize;

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
using pairs = std::vector<std::pair<std::size_t, std::size_t>>;
using indices = std::vector<std::size_t>;

// Builds a graph_model node by node; each call returns the new node's index.
struct builder {
  graph_model g;
  explicit builder(std::string name = "g") { g.name = std::move(name); }
  std::size_t add(model_node n) {
    g.nodes.push_back(std::move(n));
    return g.nodes.size() - 1;
  }
  std::size_t alloc(std::uint64_t address, std::size_t bytes) {
    model_node n;
    n.kind = node_kind::mem_alloc;
    n.address = address;
    n.bytes = bytes;
    return add(n);
  }
  std::size_t free(std::uint64_t address) {
    model_node n;
    n.kind = node_kind::mem_free;
    n.address = address;
    return add(n);
  }
  std::size_t kernel() {
    model_node n;
    n.kind = node_kind::kernel;
    return add(n);
  }
  std::size_t child(graph_model c) {
    g.children.push_back(std::move(c));
    model_node n;
    n.kind = node_kind::child_graph;
    n.child = g.children.size() - 1;
    return add(n);
  }
  builder& edge(std::size_t from, std::size_t to) {
    g.edges.emplace_back(from, to);
    return *this;
  }
  // alloc -> free of one address; returns the free node.
  std::pair<std::size_t, std::size_t> pair(std::uint64_t address, std::size_t bytes) {
    const std::size_t a = alloc(address, bytes);
    const std::size_t f = free(address);
    edge(a, f);
    return {a, f};
  }
};

bool reaches(const flat_graph& f, std::size_t from, std::size_t to) {
  std::vector<bool> seen(f.nodes.size(), false);
  std::vector<std::size_t> stack{from};
  while (!stack.empty()) {
    const std::size_t v = stack.back();
    stack.pop_back();
    if (v == to) return true;
    for (std::size_t s : f.successors[v]) {
      if (!seen[s]) {
        seen[s] = true;
        stack.push_back(s);
      }
    }
  }
  return false;
}

std::size_t find_label(const flat_graph& f, const std::string& label) {
  const auto it = std::find(f.labels.begin(), f.labels.end(), label);
  EXPECT_NE(it, f.labels.end()) << "no node labelled " << label;
  return static_cast<std::size_t>(it - f.labels.begin());
}

template <typename F>
std::string invalid_argument_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// flatten

TEST(Flatten, InlinesChildGraphAndOrdersItsNodesBetweenTheParentsNeighbours) {
  builder c("ignored");
  const std::size_t ca = c.alloc(0x1000, 4096);
  const std::size_t ck = c.kernel();  // a source and a sink at once
  const std::size_t cf = c.free(0x1000);
  c.edge(ca, cf);
  builder p("g");
  const std::size_t before = p.kernel();
  const std::size_t node = p.child(c.g);
  const std::size_t after = p.kernel();
  p.edge(before, node).edge(node, after);

  const flat_graph f = flatten(p.g);
  // 3 parent nodes, 3 child nodes, one exit node for the child.
  ASSERT_EQ(f.nodes.size(), 7u);
  ASSERT_EQ(f.successors.size(), 7u);
  ASSERT_EQ(f.labels.size(), 7u);
  const std::size_t fb = find_label(f, "kernel node #" + std::to_string(before) + " in graph 'g'");
  const std::size_t fa = find_label(f, "kernel node #" + std::to_string(after) + " in graph 'g'");
  const std::size_t falloc = find_label(f, "alloc node #" + std::to_string(ca) + " in graph 'g / child 0'");
  const std::size_t fk = find_label(f, "kernel node #" + std::to_string(ck) + " in graph 'g / child 0'");
  const std::size_t ffree = find_label(f, "free node #" + std::to_string(cf) + " in graph 'g / child 0'");
  EXPECT_EQ(f.nodes[falloc].kind, node_kind::mem_alloc);
  EXPECT_EQ(f.nodes[falloc].bytes, 4096u);
  EXPECT_EQ(f.nodes[ffree].kind, node_kind::mem_free);
  for (std::size_t inner : {falloc, fk, ffree}) {
    EXPECT_TRUE(reaches(f, fb, inner)) << f.labels[inner];
    EXPECT_TRUE(reaches(f, inner, fa)) << f.labels[inner];
    EXPECT_FALSE(reaches(f, inner, fb)) << f.labels[inner];
  }
  EXPECT_TRUE(reaches(f, falloc, ffree));
  EXPECT_FALSE(reaches(f, fk, ffree));  // the child's own edges only, nothing invented
  EXPECT_FALSE(reaches(f, falloc, fk));
}

TEST(Flatten, EmptyChildGraphStillOrdersItsNeighbours) {
  builder p("g");
  const std::size_t a = p.pair(0x1000, MiB).second;
  const std::size_t node = p.child(graph_model{});
  const std::size_t b = p.alloc(0x2000, 2 * MiB);
  p.edge(a, node).edge(node, b);
  const flat_graph f = flatten(p.g);
  EXPECT_TRUE(reaches(f, find_label(f, "free node #1 in graph 'g'"), find_label(f, "alloc node #3 in graph 'g'")));
  // So the two allocations are ordered: the bound is the larger, not the sum.
  EXPECT_EQ(analyse(p.g, 0).lower_bound_bytes, 2 * MiB);
}

TEST(Flatten, NestedChildAllocationFreedByParentIsPairedAcrossLevels) {
  builder inner("x");
  inner.alloc(0xa000, 3 * MiB);
  builder mid("y");
  const std::size_t k = mid.kernel();
  const std::size_t n = mid.child(inner.g);
  mid.edge(k, n);
  builder p("g");
  const std::size_t c = p.child(mid.g);
  const std::size_t f = p.free(0xa000);
  p.edge(c, f);

  const flat_graph flat = flatten(p.g);
  const std::size_t falloc = find_label(flat, "alloc node #0 in graph 'g / child 0 / child 0'");
  const graph_analysis an = analyse(p.g, 0);
  ASSERT_EQ(an.allocations.size(), 1u);
  EXPECT_EQ(an.allocations[0].alloc_node, falloc);
  ASSERT_TRUE(an.allocations[0].free_node.has_value());
  EXPECT_EQ(flat.labels[*an.allocations[0].free_node], "free node #1 in graph 'g'");
  EXPECT_TRUE(an.unfreed.empty());
  EXPECT_EQ(an.foreign_frees, 0u);
}

TEST(Flatten, AnalysingTheModelNumbersNodesAsFlattenDoes) {
  builder c;
  c.pair(0x5000, 4096);
  builder p("g");
  const std::size_t k = p.kernel();
  const std::size_t n = p.child(c.g);
  p.edge(k, n);
  p.pair(0x9000, 8192);
  const flat_graph flat = flatten(p.g);
  const graph_analysis from_model = analyse(p.g, 0);
  const graph_analysis from_flat = analyse(flat, 0);
  ASSERT_EQ(from_model.allocations.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(from_model.allocations[i].alloc_node, from_flat.allocations[i].alloc_node);
    EXPECT_EQ(from_model.allocations[i].free_node, from_flat.allocations[i].free_node);
    EXPECT_EQ(flat.nodes[from_model.allocations[i].alloc_node].address, from_model.allocations[i].address);
  }
}

TEST(Flatten, EdgeNamingAMissingNodeThrowsNamingTheGraph) {
  builder p("producer");
  p.kernel();
  p.edge(0, 5);
  const std::string msg = invalid_argument_of([&] { (void)flatten(p.g); });
  EXPECT_NE(msg.find("graph 'producer'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0 -> 5"), std::string::npos) << msg;
  EXPECT_NE(invalid_argument_of([&] { (void)analyse(p.g, 0); }).find("producer"), std::string::npos);
}

TEST(Flatten, BadIndexInsideChildThrowsNamingTheChildPath) {
  builder c("c");
  c.kernel();
  c.edge(3, 0);
  builder p("g");
  p.child(c.g);
  const std::string msg = invalid_argument_of([&] { (void)flatten(p.g); });
  EXPECT_NE(msg.find("graph 'g / child 0'"), std::string::npos) << msg;
}

TEST(Flatten, ChildGraphNodeWithoutValidChildThrows) {
  builder p("g");
  model_node n;
  n.kind = node_kind::child_graph;
  n.child = 2;
  p.add(n);
  EXPECT_NE(invalid_argument_of([&] { (void)flatten(p.g); }).find("child_graph node #0"), std::string::npos);
  p.g.nodes[0].child.reset();
  EXPECT_NE(invalid_argument_of([&] { (void)flatten(p.g); }).find("names no child"), std::string::npos);
}

TEST(Flatten, CycleThrowsNamingTheGraph) {
  builder p("loop");
  const std::size_t a = p.alloc(0x1000, 1);
  const std::size_t b = p.kernel();
  const std::size_t c = p.free(0x1000);
  p.edge(a, b).edge(b, c).edge(c, a);
  const std::string msg = invalid_argument_of([&] { (void)flatten(p.g); });
  EXPECT_NE(msg.find("graph 'loop'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;

  builder self("self");
  self.kernel();
  self.edge(0, 0);
  EXPECT_NE(invalid_argument_of([&] { (void)analyse(self.g, 0); }).find("cycle"), std::string::npos);
}

TEST(Flatten, CycleInAHandBuiltFlatGraphIsRefusedByAnalyse) {
  flat_graph f;
  f.nodes.resize(2);
  f.successors = {{1}, {0}};
  f.labels = {"a", "b"};
  EXPECT_NE(invalid_argument_of([&] { (void)analyse(f, 0); }).find("cycle"), std::string::npos);
  f.successors = {{7}, {}};
  EXPECT_NE(invalid_argument_of([&] { (void)analyse(f, 0); }).find("#7"), std::string::npos);
}

TEST(Flatten, NodeKindNamesAreTheReportNames) {
  EXPECT_STREQ(to_string(node_kind::kernel), "kernel");
  EXPECT_STREQ(to_string(node_kind::memcpy), "memcpy");
  EXPECT_STREQ(to_string(node_kind::memset), "memset");
  EXPECT_STREQ(to_string(node_kind::host), "host");
  EXPECT_STREQ(to_string(node_kind::child_graph), "child_graph");
  EXPECT_STREQ(to_string(node_kind::empty), "empty");
  EXPECT_STREQ(to_string(node_kind::event_record), "event_record");
  EXPECT_STREQ(to_string(node_kind::event_wait), "event_wait");
  EXPECT_STREQ(to_string(node_kind::mem_alloc), "mem_alloc");
  EXPECT_STREQ(to_string(node_kind::mem_free), "mem_free");
  EXPECT_STREQ(to_string(node_kind::conditional), "conditional");
  EXPECT_STREQ(to_string(node_kind::other), "other");
}

// ---------------------------------------------------------------------------------------------
// analyse

TEST(Analysis, ChainOfAllocationsNeedsOnlyTheLargest) {
  builder b;
  const auto [a1, f1] = b.pair(0x1000, MiB);
  const auto [a2, f2] = b.pair(0x2000, 2 * MiB);
  b.edge(f1, a2);
  const graph_analysis an = analyse(b.g, 0);
  ASSERT_EQ(an.allocations.size(), 2u);
  EXPECT_EQ(an.allocations[0].alloc_node, a1);
  EXPECT_EQ(an.allocations[0].free_node, f1);
  EXPECT_EQ(an.allocations[1].alloc_node, a2);
  EXPECT_EQ(an.allocations[1].free_node, f2);
  EXPECT_EQ(an.alloc_nodes, 2u);
  EXPECT_EQ(an.free_nodes, 2u);
  EXPECT_EQ(an.requested_bytes, 3 * MiB);
  EXPECT_EQ(an.lower_bound_bytes, 2 * MiB);
  EXPECT_EQ(an.lower_bound_set, indices{1});
  EXPECT_EQ(an.lower_bound_rounded_bytes, 2 * MiB);
  EXPECT_TRUE(an.unfreed.empty());
  EXPECT_TRUE(an.reuse_opportunities.empty());
  EXPECT_EQ(an.distinct_addresses, 2u);
  EXPECT_DOUBLE_EQ(an.va_reuse_ratio, 1.0);
}

TEST(Analysis, IndependentAllocationsNeedTheirSumAndAreAReuseOpportunity) {
  builder b;
  b.pair(0x1000, MiB);
  b.pair(0x2000, 3 * MiB);
  const graph_analysis an = analyse(b.g, 0);
  EXPECT_EQ(an.lower_bound_bytes, 4 * MiB);
  EXPECT_EQ(an.lower_bound_set, (indices{0, 1}));
  EXPECT_EQ(an.reuse_opportunities, (pairs{{0, 1}}));
}

TEST(Analysis, DiamondBranchesAreLiveTogetherWithTheEnclosingAllocation) {
  // X is allocated first and freed after both branches; each branch allocates and frees; C comes
  // after the join.
  builder b;
  const std::size_t ax = b.alloc(0x10000, 4 * MiB);
  const auto [aa, fa] = b.pair(0x20000, MiB);
  const auto [ab, fb] = b.pair(0x30000, 2 * MiB);
  const std::size_t fx = b.free(0x10000);
  const auto [ac, fc] = b.pair(0x40000, 5 * MiB);
  b.edge(ax, aa).edge(ax, ab).edge(fa, fx).edge(fb, fx).edge(fx, ac);
  (void)fc;
  const graph_analysis an = analyse(b.g, 0);
  ASSERT_EQ(an.allocations.size(), 4u);
  EXPECT_EQ(an.allocations[0].bytes, 4 * MiB);
  EXPECT_EQ(an.allocations[1].bytes, MiB);
  EXPECT_EQ(an.allocations[2].bytes, 2 * MiB);
  EXPECT_EQ(an.allocations[3].bytes, 5 * MiB);
  EXPECT_EQ(an.lower_bound_bytes, 7 * MiB);  // X + A + B beats C alone
  EXPECT_EQ(an.lower_bound_set, (indices{0, 1, 2}));
  // Only A -> B can be ordered: ordering X's free before A's or B's alloc would be a cycle
  // (each branch's alloc reaches X's free through the join).
  EXPECT_EQ(an.reuse_opportunities, (pairs{{1, 2}}));
}

TEST(Analysis, DiamondWithHeavyJoinNeedsOnlyTheJoin) {
  // Two 1 MiB branches in parallel, then a 5 MiB allocation after the join: {C} beats {A, B}.
  builder b;
  const std::size_t k = b.kernel();
  const auto [aa, fa] = b.pair(0x1000, MiB);
  const auto [ab, fb] = b.pair(0x2000, MiB);
  const std::size_t join = b.kernel();
  const std::size_t ac = b.alloc(0x3000, 5 * MiB);
  const std::size_t fc = b.free(0x3000);
  b.edge(k, aa).edge(k, ab).edge(fa, join).edge(fb, join).edge(join, ac).edge(ac, fc);
  const graph_analysis an = analyse(b.g, 0);
  EXPECT_EQ(an.lower_bound_bytes, 5 * MiB);
  EXPECT_EQ(an.lower_bound_set, indices{2});
  EXPECT_TRUE(an.reuse_opportunities.empty());
}

TEST(Analysis, UnfreedAllocationConflictsWithEverythingAfterIt) {
  builder b;
  const std::size_t u = b.alloc(0x1000, MiB);  // never freed
  const auto [a1, f1] = b.pair(0x2000, 2 * MiB);
  const auto [a2, f2] = b.pair(0x3000, 3 * MiB);
  b.edge(u, a1).edge(f1, a2);
  (void)f2;
  const graph_analysis an = analyse(b.g, 0);
  EXPECT_EQ(an.unfreed, indices{0});
  EXPECT_FALSE(an.allocations[0].free_node.has_value());
  EXPECT_EQ(an.lower_bound_bytes, 4 * MiB);  // U stays live beside the larger of the chain
  EXPECT_EQ(an.lower_bound_set, (indices{0, 2}));
  EXPECT_TRUE(an.reuse_opportunities.empty());  // U has no free node to order
  EXPECT_EQ(an.requested_bytes, 6 * MiB);
}

TEST(Analysis, AddressReturnedAgainPairsEachFreeWithTheLatestAllocation) {
  builder b;
  const auto [a1, f1] = b.pair(0x7f0000000000, MiB);
  const std::size_t a2 = b.alloc(0x7f0000000000, 2 * MiB);
  const std::size_t f2 = b.free(0x7f0000000000);
  const std::size_t a3 = b.alloc(0x7f0000000000, 3 * MiB);  // unfreed
  b.edge(f1, a2).edge(a2, f2).edge(f2, a3);
  const graph_analysis an = analyse(b.g, 0);
  ASSERT_EQ(an.allocations.size(), 3u);
  EXPECT_EQ(an.allocations[0].alloc_node, a1);
  EXPECT_EQ(an.allocations[0].free_node, f1);
  EXPECT_EQ(an.allocations[1].alloc_node, a2);
  EXPECT_EQ(an.allocations[1].free_node, f2);
  EXPECT_EQ(an.allocations[2].alloc_node, a3);
  EXPECT_FALSE(an.allocations[2].free_node.has_value());
  EXPECT_EQ(an.unfreed, indices{2});
  EXPECT_EQ(an.foreign_frees, 0u);
  EXPECT_EQ(an.distinct_addresses, 1u);
  EXPECT_DOUBLE_EQ(an.va_reuse_ratio, 3.0);
  EXPECT_EQ(an.lower_bound_bytes, 3 * MiB);
}

TEST(Analysis, FreeOfAnAddressNoAllocNodeReturnedIsForeign) {
  builder b;
  const std::size_t outside = b.free(0xdead0000);
  const auto [a, f] = b.pair(0x1000, 4096);
  const std::size_t again = b.free(0x1000);  // a second free of a freed address
  b.edge(outside, a).edge(f, again);
  const graph_analysis an = analyse(b.g, 0);
  EXPECT_EQ(an.free_nodes, 3u);
  EXPECT_EQ(an.alloc_nodes, 1u);
  EXPECT_EQ(an.foreign_frees, 2u);
  ASSERT_EQ(an.allocations.size(), 1u);
  EXPECT_EQ(an.allocations[0].free_node, f);
  EXPECT_TRUE(an.unfreed.empty());
}

TEST(Analysis, GranularityRoundsTheTotalNotEachAllocation) {
  // Three 1-byte allocations live together, all freed before one 3 MiB allocation. Measured on
  // an H100: small allocations share granules, so rounding each one up would overstate the
  // bound (256 live 64 KiB allocations reserved one 32 MiB granule, not 256 of them).
  builder b;
  const std::size_t join = b.kernel();
  for (std::uint64_t addr : {0x1000u, 0x2000u, 0x3000u}) b.edge(b.pair(addr, 1).second, join);
  const std::size_t big = b.alloc(0x10000, 3 * MiB);
  b.edge(join, big);
  const graph_analysis raw = analyse(b.g, 0);
  EXPECT_EQ(raw.lower_bound_bytes, 3 * MiB);
  EXPECT_EQ(raw.lower_bound_rounded_bytes, 3 * MiB);
  EXPECT_EQ(raw.lower_bound_set, indices{3});

  const graph_analysis rounded = analyse(b.g, 2 * MiB);
  EXPECT_EQ(rounded.granularity, 2 * MiB);
  EXPECT_EQ(rounded.lower_bound_bytes, 3 * MiB);
  EXPECT_EQ(rounded.lower_bound_set, indices{3});
  EXPECT_EQ(rounded.lower_bound_rounded_bytes, 4 * MiB);  // 3 MiB in whole 2 MiB granules

  builder small;
  for (std::uint64_t i = 0; i < 256; ++i) small.pair(0x100000 + i * 0x10000, 64 * KiB);
  const graph_analysis packed = analyse(small.g, 32 * MiB);
  EXPECT_EQ(packed.lower_bound_bytes, 16 * MiB);
  EXPECT_EQ(packed.lower_bound_rounded_bytes, 32 * MiB);
}

TEST(Analysis, RoundUpGoesToTheNextMultipleOnlyWhenGranularityIsAboveOne) {
  EXPECT_EQ(round_up(1, 2 * MiB), 2 * MiB);
  EXPECT_EQ(round_up(2 * MiB, 2 * MiB), 2 * MiB);
  EXPECT_EQ(round_up(2 * MiB + 1, 2 * MiB), 4 * MiB);
  EXPECT_EQ(round_up(0, 2 * MiB), 0u);
  EXPECT_EQ(round_up(5, 0), 5u);
  EXPECT_EQ(round_up(5, 1), 5u);
  EXPECT_THROW((void)round_up(std::numeric_limits<std::uint64_t>::max() - 1, 2 * MiB), std::overflow_error);
}

TEST(Analysis, ReuseOpportunitiesAreSortedBySmallerSizeAndCappedAtSixteen) {
  builder b;
  for (std::size_t i = 0; i < 8; ++i) b.pair(0x1000 * (i + 1), (i + 1) * KiB);
  const graph_analysis an = analyse(b.g, 0);
  EXPECT_EQ(an.lower_bound_bytes, 36 * KiB);
  ASSERT_EQ(an.reuse_opportunities.size(), 16u);  // 28 pairs, capped
  EXPECT_EQ(an.reuse_opportunities.front(), (std::pair<std::size_t, std::size_t>{6, 7}));  // 7 KiB
  std::size_t previous = std::numeric_limits<std::size_t>::max();
  for (const auto& [i, j] : an.reuse_opportunities) {
    EXPECT_LT(i, j);
    const std::size_t smaller = std::min(an.allocations[i].bytes, an.allocations[j].bytes);
    EXPECT_LE(smaller, previous);
    previous = smaller;
  }
  // 1 + 2 + 3 + 4 + 5 pairs have a smaller side of 7, 6, 5, 4 and 3 KiB: the 16th is (1, 2).
  EXPECT_EQ(an.reuse_opportunities.back(), (std::pair<std::size_t, std::size_t>{1, 2}));
  EXPECT_EQ(previous, 2 * KiB);
}

TEST(Analysis, NoMemoryNodesGivesAnEmptyAnalysis) {
  builder b;
  b.edge(b.kernel(), b.kernel());
  const graph_analysis an = analyse(b.g, 2 * MiB);
  EXPECT_TRUE(an.allocations.empty());
  EXPECT_EQ(an.lower_bound_bytes, 0u);
  EXPECT_EQ(an.lower_bound_rounded_bytes, 0u);
  EXPECT_DOUBLE_EQ(an.va_reuse_ratio, 0.0);
}

TEST(Analysis, ThousandAllocationChainNeedsItsLargestAndIsFast) {
  builder b;
  std::size_t previous_free = 0;
  for (std::size_t i = 0; i < 1024; ++i) {
    const auto [a, f] = b.pair(0x100000 * (i + 1), (i % 37 + 1) * KiB + i);
    if (i > 0) b.edge(previous_free, a);
    previous_free = f;
  }
  const auto start = std::chrono::steady_clock::now();
  const graph_analysis an = analyse(b.g, 64 * KiB);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  std::uint64_t largest = 0;
  std::size_t largest_at = 0;
  for (std::size_t i = 0; i < an.allocations.size(); ++i) {
    if (an.allocations[i].bytes > largest) {
      largest = an.allocations[i].bytes;
      largest_at = i;
    }
  }
  EXPECT_EQ(an.allocations.size(), 1024u);
  EXPECT_EQ(an.lower_bound_bytes, largest);
  EXPECT_EQ(an.lower_bound_set, indices{largest_at});
  EXPECT_EQ(an.lower_bound_rounded_bytes, 64 * KiB);
  EXPECT_LT(std::chrono::duration<double>(elapsed).count(), 1.0);
}

TEST(Analysis, ThousandIndependentAllocationsNeedTheirSumAndAreFast) {
  builder b;
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < 1024; ++i) {
    b.pair(0x100000 * (i + 1), i + 1);
    sum += i + 1;
  }
  const auto start = std::chrono::steady_clock::now();
  const graph_analysis an = analyse(b.g, 0);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(an.lower_bound_bytes, sum);
  EXPECT_EQ(an.lower_bound_set.size(), 1024u);
  EXPECT_EQ(an.reuse_opportunities.size(), 16u);
  EXPECT_EQ(an.reuse_opportunities.front(), (std::pair<std::size_t, std::size_t>{1022, 1023}));
  EXPECT_LT(std::chrono::duration<double>(elapsed).count(), 1.0);
}

// The definition, checked by brute force on small random graphs: the bound is the heaviest set
// of allocations none of whose frees reaches another's alloc.
TEST(Analysis, BoundMatchesBruteForceOverRandomGraphs) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 60; ++round) {
    builder b;
    const std::size_t allocs = 1 + rng() % 7;
    std::vector<std::size_t> nodes;
    for (std::size_t i = 0; i < allocs; ++i) {
      const auto [a, f] = b.pair(0x1000 * (i + 1), 1 + rng() % 1000);
      nodes.push_back(a);
      nodes.push_back(f);
      if (rng() % 3 == 0) nodes.push_back(b.kernel());
    }
    // Random extra edges that keep node order (a DAG).
    for (std::size_t x = 0; x < b.g.nodes.size(); ++x) {
      for (std::size_t y = x + 1; y < b.g.nodes.size(); ++y) {
        if (rng() % 5 == 0) b.edge(x, y);
      }
    }
    const flat_graph flat = flatten(b.g);
    const graph_analysis an = analyse(flat, 0);
    ASSERT_EQ(an.allocations.size(), allocs);
    const auto conflict_free = [&](std::size_t i, std::size_t j) {
      const auto& x = an.allocations[i];
      const auto& y = an.allocations[j];
      return !(x.free_node && reaches(flat, *x.free_node, y.alloc_node)) &&
             !(y.free_node && reaches(flat, *y.free_node, x.alloc_node));
    };
    std::uint64_t best = 0;
    for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << allocs); ++mask) {
      std::uint64_t weight = 0;
      bool ok = true;
      for (std::size_t i = 0; i < allocs && ok; ++i) {
        if (!(mask >> i & 1)) continue;
        weight += an.allocations[i].bytes;
        for (std::size_t j = i + 1; j < allocs && ok; ++j) {
          if (mask >> j & 1) ok = conflict_free(i, j);
        }
      }
      if (ok) best = std::max(best, weight);
    }
    EXPECT_EQ(an.lower_bound_bytes, best) << "round " << round;
    std::uint64_t set_weight = 0;
    for (std::size_t i : an.lower_bound_set) set_weight += an.allocations[i].bytes;
    EXPECT_EQ(set_weight, best) << "round " << round;
  }
}

// A wide graph's bound and pairs come component by component, and the pairs from a
// bounded selection, not from sorting every pair. Checked against that straightforward
// computation (reachability by search, one antichain network over all allocations, every pair
// of the heaviest set sorted) on 300 branches alloc -> kernel -> free: in the first half, later
// alloc nodes reach earlier free nodes (pairs that no edge may order, to be skipped); in the
// second half, some branches follow others through a kernel (ordered, so not all in the set); a
// root kernel before many alloc nodes and a join after many free nodes (which must not order
// anything); one allocation in ten never freed; sizes in 4 steps (ties) or, in the last round,
// in 300 or 600 steps (few ties; the first half larger, so that its illegal pairs come first).
TEST(Analysis, WideGraphPairsAreThoseOfSortingEveryPair) {
  for (const std::uint64_t seed : {1U, 2U, 3U}) {
    std::mt19937_64 rng(seed);
    const std::size_t branches = 300, half = branches / 2;
    const std::size_t none = std::numeric_limits<std::size_t>::max();
    builder b;
    const std::size_t root = b.kernel();
    std::vector<std::size_t> alloc_of(branches), free_of(branches, none);
    for (std::size_t x = 0; x < branches; ++x) {
      const std::uint64_t address = 0x100000 * (x + 1);
      const std::uint64_t steps = seed == 3 ? 300 + (x < half ? 300 : 0) : 4;
      alloc_of[x] = b.alloc(address, (1 + rng() % steps) * KiB);
      const std::size_t k = b.kernel();
      b.edge(alloc_of[x], k);
      if (rng() % 10 != 0) b.edge(k, free_of[x] = b.free(address));
      if (rng() % 3 == 0) b.edge(root, alloc_of[x]);
    }
    const std::size_t join = b.kernel();
    for (std::size_t x = 0; x < branches; ++x) {
      if (free_of[x] != none && rng() % 3 == 0) b.edge(free_of[x], join);
    }
    for (std::size_t x = 0; x + 1 < half; ++x) {
      for (int t = 0; t < 25 && free_of[x] != none; ++t) {
        b.edge(alloc_of[x + 1 + rng() % (half - x - 1)], free_of[x]);
      }
    }
    for (int t = 0; t < 40; ++t) {
      const std::size_t x = half + rng() % (half - 1);
      const std::size_t y = x + 1 + rng() % (branches - x - 1);
      if (free_of[x] == none) continue;
      const std::size_t k = b.kernel();
      b.edge(free_of[x], k).edge(k, alloc_of[y]);
    }
    const flat_graph flat = flatten(b.g);
    const graph_analysis an = analyse(flat, 0);
    const std::size_t count = an.allocations.size();
    ASSERT_EQ(count, branches);

    std::vector<std::vector<bool>> reach(flat.nodes.size());
    const auto reach_of = [&](std::size_t from) -> const std::vector<bool>& {
      std::vector<bool>& seen = reach[from];
      if (!seen.empty()) return seen;
      seen.assign(flat.nodes.size(), false);
      std::vector<std::size_t> stack{from};
      while (!stack.empty()) {
        const std::size_t v = stack.back();
        stack.pop_back();
        for (std::size_t s : flat.successors[v]) {
          if (!seen[s]) stack.push_back(s), seen[s] = true;
        }
      }
      return seen;
    };
    const auto before = [&](std::size_t i, std::size_t j) {
      const auto& f = an.allocations[i].free_node;
      return f && reach_of(*f)[an.allocations[j].alloc_node];
    };
    std::vector<std::uint64_t> weights;
    for (const auto& al : an.allocations) weights.push_back(al.bytes);
    indices set;
    EXPECT_EQ(an.lower_bound_bytes, max_weight_antichain(count, before, weights, &set)) << "seed " << seed;
    EXPECT_EQ(an.lower_bound_set, set) << "seed " << seed;
    EXPECT_LT(set.size(), count) << "seed " << seed;  // some branches are ordered

    pairs every, legal;
    for (std::size_t x = 0; x < set.size(); ++x) {
      for (std::size_t y = x + 1; y < set.size(); ++y) {
        const std::size_t i = set[x], j = set[y];
        if (!an.allocations[i].free_node) continue;
        every.emplace_back(i, j);
        if (!before(i, j) && !reach_of(an.allocations[j].alloc_node)[*an.allocations[i].free_node]) {
          legal.emplace_back(i, j);
        }
      }
    }
    const auto by_smaller = [&](const auto& l, const auto& r) {
      return std::min(weights[l.first], weights[l.second]) > std::min(weights[r.first], weights[r.second]);
    };
    std::stable_sort(every.begin(), every.end(), by_smaller);
    std::stable_sort(legal.begin(), legal.end(), by_smaller);
    every.resize(16);
    legal.resize(16);
    EXPECT_NE(every, legal) << "seed " << seed;  // illegal pairs were among the largest
    EXPECT_EQ(an.reuse_opportunities, legal) << "seed " << seed;
  }
}

// ---------------------------------------------------------------------------------------------
// max_weight_antichain

TEST(MaxWeightAntichain, MatchesBruteForceOnRandomPosets) {
  std::mt19937_64 rng(20240601);
  for (int round = 0; round < 200; ++round) {
    const std::size_t n = rng() % 11;
    // A random DAG over a random permutation (so the order is not index order), closed
    // transitively.
    std::vector<std::size_t> perm(n);
    for (std::size_t i = 0; i < n; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    const unsigned density = 1 + rng() % 4;
    std::vector<std::vector<bool>> less(n, std::vector<bool>(n, false));
    for (std::size_t x = 0; x < n; ++x) {
      for (std::size_t y = x + 1; y < n; ++y) {
        if (rng() % 5 < density) less[perm[x]][perm[y]] = true;
      }
    }
    for (std::size_t k = 0; k < n; ++k) {
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
          if (less[i][k] && less[k][j]) less[i][j] = true;
        }
      }
    }
    std::vector<std::uint64_t> w(n);
    for (auto& x : w) {
      switch (rng() % 3) {
        case 0: x = rng() % 10; break;
        case 1: x = rng() % (std::uint64_t{1} << 33); break;
        default: x = (std::uint64_t{1} << 33) + rng() % 1000; break;
      }
    }
    std::uint64_t best = 0;
    for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << n); ++mask) {
      std::uint64_t weight = 0;
      bool ok = true;
      for (std::size_t i = 0; i < n && ok; ++i) {
        if (!(mask >> i & 1)) continue;
        weight += w[i];
        for (std::size_t j = 0; j < n && ok; ++j) {
          if ((mask >> j & 1) && less[i][j]) ok = false;
        }
      }
      if (ok) best = std::max(best, weight);
    }
    std::vector<std::size_t> members{999};  // must be replaced, not appended to
    const std::uint64_t got = max_weight_antichain(
        n, [&](std::size_t i, std::size_t j) { return static_cast<bool>(less[i][j]); }, w, &members);
    ASSERT_EQ(got, best) << "round " << round << " n " << n;
    EXPECT_TRUE(std::is_sorted(members.begin(), members.end()));
    std::uint64_t member_weight = 0;
    for (std::size_t i : members) {
      ASSERT_LT(i, n);
      member_weight += w[i];
      for (std::size_t j : members) EXPECT_FALSE(less[i][j]) << i << " < " << j << " in round " << round;
    }
    EXPECT_EQ(member_weight, best) << "round " << round;
  }
}

TEST(MaxWeightAntichain, PrefersTwoLightIncomparableElementsOverOneHeavierComparableOne) {
  // 0 < 2 and 1 < 2; 0 and 1 incomparable. {0, 1} = 10 beats {2} = 9.
  const auto less = [](std::size_t i, std::size_t j) { return j == 2 && i != 2; };
  std::vector<std::size_t> members;
  EXPECT_EQ(max_weight_antichain(3, less, {5, 5, 9}, &members), 10u);
  EXPECT_EQ(members, (indices{0, 1}));
  EXPECT_EQ(max_weight_antichain(3, less, {5, 5, 11}, &members), 11u);
  EXPECT_EQ(members, indices{2});
  EXPECT_EQ(max_weight_antichain(3, less, {5, 5, 11}, nullptr), 11u);
}

TEST(MaxWeightAntichain, IntransitiveRelationIsTakenAsItsClosure) {
  // 0 < 1 and 1 < 2 given, 0 < 2 not: 0 and 2 still lie on one chain.
  const auto less = [](std::size_t i, std::size_t j) { return j == i + 1; };
  std::vector<std::size_t> members;
  EXPECT_EQ(max_weight_antichain(3, less, {5, 1, 6}, &members), 6u);
  EXPECT_EQ(members, indices{2});
}

TEST(MaxWeightAntichain, EmptyAndMismatchedInputs) {
  std::vector<std::size_t> members{1, 2};
  const auto none = [](std::size_t, std::size_t) { return false; };
  EXPECT_EQ(max_weight_antichain(0, none, {}, &members), 0u);
  EXPECT_TRUE(members.empty());
  EXPECT_THROW((void)max_weight_antichain(2, none, {1}, nullptr), std::invalid_argument);
  const std::uint64_t huge = std::numeric_limits<std::uint64_t>::max() / 2 + 1;
  EXPECT_THROW((void)max_weight_antichain(2, none, {huge, huge}, nullptr), std::overflow_error);
}

// ---------------------------------------------------------------------------------------------
// summarize

TEST(Summarize, CopiesCountsAndComputesRatiosAgainstTheReservation) {
  graph_analysis a;
  a.alloc_nodes = 3;
  a.free_nodes = 2;
  a.unfreed = {1};
  a.requested_bytes = 6 * MiB;
  a.distinct_addresses = 2;
  a.va_reuse_ratio = 1.5;
  a.lower_bound_bytes = 3 * MiB;
  a.lower_bound_rounded_bytes = 4 * MiB;
  const auto s = summarize(a, 5 * MiB, 8 * MiB);
  EXPECT_EQ(s.alloc_nodes, 3u);
  EXPECT_EQ(s.free_nodes, 2u);
  EXPECT_EQ(s.unfreed_allocations, 1u);
  EXPECT_EQ(s.requested_bytes, 6 * MiB);
  EXPECT_EQ(s.distinct_addresses, 2u);
  EXPECT_DOUBLE_EQ(s.va_reuse_ratio, 1.5);
  EXPECT_EQ(s.lower_bound_bytes, 3 * MiB);
  EXPECT_EQ(s.lower_bound_rounded_bytes, 4 * MiB);
  EXPECT_EQ(s.used_high_bytes, 5 * MiB);
  EXPECT_EQ(s.reserved_high_bytes, 8 * MiB);
  EXPECT_DOUBLE_EQ(s.physical_reuse_ratio, 0.75);
  EXPECT_DOUBLE_EQ(s.bound_ratio, 2.0);
}

TEST(Summarize, RatiosAreZeroWhenADenominatorIsZero) {
  graph_analysis a;
  a.requested_bytes = MiB;
  const auto none_reserved = summarize(a, 0, 0);
  EXPECT_DOUBLE_EQ(none_reserved.physical_reuse_ratio, 0.0);
  EXPECT_DOUBLE_EQ(none_reserved.bound_ratio, 0.0);
  const auto no_bound = summarize(a, MiB, 2 * MiB);
  EXPECT_DOUBLE_EQ(no_bound.physical_reuse_ratio, 0.5);
  EXPECT_DOUBLE_EQ(no_bound.bound_ratio, 0.0);
}

}  // namespace
