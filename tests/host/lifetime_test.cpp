// Allocation lifetimes (the HTML view's lifetime chart): steps in execution order, reuse of an
// address, unfreed allocations, and the optional report section through JSON.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/graph_model.hpp"
#include "gmem/profiler/lifetime.hpp"
#include "gmem/profiler/report_io.hpp"

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
