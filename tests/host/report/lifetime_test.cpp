// Allocation lifetimes (the HTML view's lifetime chart): steps in execution order, reuse of an
// address, unfreed allocations, and the optional report section through JSON.

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/graph_model.hpp"
#include "gmem/profiler/lifetime.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gmem/profiler/reuse_model.hpp"

namespace gmem::profiler {
namespace {

model_node alloc(std::uint64_t address, std::size_t bytes) {
  model_node n;
  n.kind = node_kind::mem_alloc;
  n.address = address;
  n.bytes = bytes;
  return n;
}

model_node free_of(std::uint64_t address) {
  model_node n;
  n.kind = node_kind::mem_free;
  n.address = address;
  return n;
}

TEST(Lifetime, StepsFollowExecutionOrderAndShowReuse) {
  // Nodes listed out of execution order: 3 (alloc A, 32 B) -> 1 (free A) -> 0 (alloc A
  // again, 64 B) -> 2 (kernel); 4 (alloc B) independent, never freed.
  graph_model g;
  g.name = "g";
  g.nodes = {alloc(0x1000, 64), free_of(0x1000), model_node{}, alloc(0x1000, 32),
             alloc(0x9000, 16)};
  g.nodes[2].kind = node_kind::kernel;
  g.edges = {{3, 1}, {1, 0}, {0, 2}};
  const graph_analysis a = analyse(g, 0);
  const auto l = lifetimes(g, a);
  ASSERT_EQ(l.size(), 3u);
  // Lowest ready index first: 3 (step 0), 1 (step 1), 0 (step 2), 2 (step 3), 4 (step 4).
  std::uint64_t seen_reuse = 0;
  for (const auto& x : l) {
    if (x.bytes == 32) {
      EXPECT_EQ(x.alloc_step, 0u);
      EXPECT_EQ(x.free_step, 1);
      ++seen_reuse;
    } else if (x.bytes == 64) {
      EXPECT_EQ(x.address, 0x1000u);
      EXPECT_EQ(x.alloc_step, 2u);
      EXPECT_EQ(x.free_step, -1);
      ++seen_reuse;
    } else {
      EXPECT_EQ(x.bytes, 16u);
      EXPECT_EQ(x.alloc_step, 4u);
      EXPECT_EQ(x.free_step, -1);
    }
  }
  EXPECT_EQ(seen_reuse, 2u);
}

TEST(Lifetime, TheOptionalSectionSurvivesJsonAndOldReportsStillRead) {
  report r;
  r.env.device_name = "test";
  scenario_result s;
  s.name = "lifetimes";
  s.allocations = {{0x2000, 4096, 0, 3}, {0x2000, 1024, 4, -1}};
  r.scenarios.push_back(s);
  scenario_result old = s;
  old.name = "without";
  old.allocations.clear();
  r.scenarios.push_back(old);
  const std::string text = to_json_string(r);
  EXPECT_EQ(text.find("\"allocations\""), text.rfind("\"allocations\""))
      << "written only where recorded";
  const report back = from_json_string(text, "test");
  ASSERT_EQ(back.scenarios[0].allocations.size(), 2u);
  EXPECT_EQ(back.scenarios[0].allocations[0].free_step, 3);
  EXPECT_EQ(back.scenarios[0].allocations[1].free_step, -1);
  EXPECT_EQ(back.scenarios[0].allocations[1].address, 0x2000u);
  EXPECT_TRUE(back.scenarios[1].allocations.empty());
}

// A recording writes only the addresses of allocations whose sizes and steps its skeleton states
// (report_json.cpp): lifetimes(skeleton) must give what lifetimes(flat, analysis) gives for the
// recorded graphs, in their order, late edges (dependencies the addresses show were added after
// creation) and ties by index included.
TEST(Lifetime, ASkeletonStatesTheLifetimesOfTheGraphItWasMadeFromButTheAddresses) {
  std::mt19937 random(35);
  std::size_t with_late_edges = 0, unfreed = 0, reordered = 0;
  for (int round = 0; round < 300; ++round) {
    // Nodes in creation order, edges to later nodes; each free depends on its alloc (and maybe
    // more), some allocations are never freed; an address may be reused after its free.
    graph_model g;
    g.name = "g" + std::to_string(round);
    const std::size_t n = 4 + random() % 40;
    std::vector<std::size_t> live;  // alloc nodes not yet freed
    std::uint64_t next_address = 0x100000;
    std::vector<std::uint64_t> freed_addresses;
    for (std::size_t v = 0; v < n; ++v) {
      const unsigned pick = random() % 3;
      if (pick == 0 && !live.empty()) {
        const std::size_t k = random() % live.size();
        const std::size_t a = live[k];
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        g.nodes.push_back(free_of(g.nodes[a].address));
        g.edges.emplace_back(a, v);
        freed_addresses.push_back(g.nodes[a].address);
      } else if (pick == 1) {
        std::uint64_t address = next_address;
        if (!freed_addresses.empty() && random() % 2) {
          address = freed_addresses.back();  // the driver may give a freed address again
          freed_addresses.pop_back();
        } else {
          next_address += 0x10000;
        }
        g.nodes.push_back(alloc(address, 512 * (1 + random() % 64)));
        live.push_back(v);
      } else {
        g.nodes.push_back(model_node{});
        g.nodes.back().kind = node_kind::kernel;
      }
      for (int e = 0; v > 0 && e < 2; ++e) {
        if (random() % 2) g.edges.emplace_back(random() % v, v);
      }
    }
    const flat_graph flat = flatten(g);
    const graph_analysis a = analyse(flat, 0);
    const std::vector<allocation_lifetime> recorded = lifetimes(flat, a);
    const skeleton shape = skeleton_of(flat, a, g.name);
    const std::vector<allocation_lifetime> stated = lifetimes(shape);
    ASSERT_EQ(stated.size(), recorded.size()) << g.name;
    for (std::size_t i = 0; i < stated.size(); ++i) {
      EXPECT_EQ(stated[i].address, 0u);
      EXPECT_EQ(stated[i].bytes, recorded[i].bytes) << g.name << " allocation " << i;
      EXPECT_EQ(stated[i].alloc_step, recorded[i].alloc_step) << g.name << " allocation " << i;
      EXPECT_EQ(stated[i].free_step, recorded[i].free_step) << g.name << " allocation " << i;
      unfreed += recorded[i].free_step < 0;
      reordered += i > 0 && recorded[i].alloc_step < recorded[i - 1].alloc_step;
    }
    with_late_edges += !shape.late_edges.empty();
  }
  EXPECT_GT(with_late_edges, 0u) << "no graph had late edges: the test did not cover them";
  EXPECT_GT(unfreed, 0u);
  EXPECT_EQ(reordered, 0u) << "the analysis lists allocations in execution order";
}

// Where a free node comes before its alloc in creation order (a graph edited after capture), the
// skeleton does not mark it a free, and its lifetimes say "not freed": the writer compares before
// it leaves the sizes and steps out, and writes such a graph's allocations whole.
TEST(Lifetime, ASkeletonWhoseFreeComesBeforeItsAllocDisagreesWithTheGraph) {
  graph_model g;
  g.name = "g";
  g.nodes = {free_of(0x1000), alloc(0x1000, 64)};
  g.edges = {{1, 0}};
  const flat_graph flat = flatten(g);
  const graph_analysis a = analyse(flat, 0);
  ASSERT_EQ(lifetimes(flat, a).at(0).free_step, 1);
  EXPECT_EQ(lifetimes(skeleton_of(flat, a, "g")).at(0).free_step, -1);
}

TEST(Lifetime, AFreeBeforeItsAllocIsRejected) {
  report r;
  scenario_result s;
  s.name = "bad";
  s.allocations = {{0x2000, 4096, 5, 3}};
  r.scenarios.push_back(s);
  EXPECT_THROW((void)from_json_string(to_json_string(r), "test"), report_error);
}

}  // namespace
}  // namespace gmem::profiler
