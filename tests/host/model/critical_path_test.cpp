// The launch-time price of ordering changes: the longest path through measured node
// durations, with and without added edges.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "gmem/profiler/critical_path.hpp"

namespace gmem::profiler {
namespace {

// k chains alloc -> kernel -> free; node 3i is the alloc, 3i+1 the kernel, 3i+2 the free.
flat_graph chains(int k) {
  flat_graph f;
  f.nodes.resize(3 * static_cast<std::size_t>(k));
  f.successors.resize(f.nodes.size());
  for (int i = 0; i < k; ++i) {
    const std::size_t a = 3 * static_cast<std::size_t>(i);
    f.nodes[a].kind = node_kind::mem_alloc;
    f.nodes[a + 1].kind = node_kind::kernel;
    f.nodes[a + 2].kind = node_kind::mem_free;
    f.successors[a] = {a + 1};
    f.successors[a + 1] = {a + 2};
  }
  return f;
}

TEST(CriticalPath, IndependentBranchesCostTheLongestAndChainingThemTheirSum) {
  const flat_graph f = chains(4);
  std::vector<double> d(f.nodes.size(), 0.0);
  const double kernel[4] = {100, 250, 150, 200};
  for (int i = 0; i < 4; ++i) d[3 * i + 1] = kernel[i];
  EXPECT_DOUBLE_EQ(critical_path_us(f, d), 250);
  // The plan that chains the four: free_i -> alloc_{i+1}.
  const std::vector<std::pair<std::size_t, std::size_t>> plan{{2, 3}, {5, 6}, {8, 9}};
  const time_price p = price_of(f, d, plan);
  EXPECT_DOUBLE_EQ(p.before_us, 250);
  EXPECT_DOUBLE_EQ(p.after_us, 700);
  EXPECT_DOUBLE_EQ(p.price_us(), 450);
  // One edge: the two chains it joins run in series, the rest beside them.
  EXPECT_DOUBLE_EQ(critical_path_us(f, d, {{2, 3}}), 350);
  // Durations the vector lacks weigh nothing.
  EXPECT_DOUBLE_EQ(critical_path_us(f, {0, 100}), 100);
}

TEST(CriticalPath, AJoinWaitsForItsSlowestPredecessor) {
  flat_graph f;
  f.nodes.resize(4);
  f.successors = {{1, 2}, {3}, {3}, {}};
  EXPECT_DOUBLE_EQ(critical_path_us(f, {5, 10, 40, 1}), 46);
}

TEST(CriticalPath, BadOrCyclicEdgesAreRefusedByName) {
  const flat_graph f = chains(2);
  const std::vector<double> d(f.nodes.size(), 1.0);
  try {
    (void)critical_path_us(f, d, {{2, 9}});
    FAIL() << "an edge to a node that does not exist was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("2 -> 9"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)critical_path_us(f, d, {{2, 0}}), std::invalid_argument);  // free -> its own alloc
}

TEST(CriticalPath, DurationsOfTheGraphsOwnNodesLandWhereFlattenPutsThem) {
  // k0 -> child (kernel, kernel) -> k2: flatten gives k0, child node, its two kernels, the
  // child's end node, k2.
  graph_model g;
  g.name = "g";
  g.nodes.resize(3);
  g.nodes[0].kind = node_kind::kernel;
  g.nodes[1].kind = node_kind::child_graph;
  g.nodes[1].child = 0;
  g.nodes[2].kind = node_kind::kernel;
  g.edges = {{0, 1}, {1, 2}};
  graph_model child;
  child.name = "c";
  child.nodes.resize(2);
  child.nodes[0].kind = child.nodes[1].kind = node_kind::kernel;
  g.children.push_back(child);
  const flat_graph f = flatten(g);
  const std::vector<double> d = flat_durations(g, {10, 0, 30});
  ASSERT_EQ(d.size(), f.nodes.size());
  EXPECT_EQ(d[0], 10);
  EXPECT_EQ(d[5], 30);
  EXPECT_NE(f.labels[5].find("#2 in graph 'g'"), std::string::npos) << f.labels[5];
  EXPECT_DOUBLE_EQ(critical_path_us(f, d), 40);
}

}  // namespace
}  // namespace gmem::profiler
