// Analyses given a deadline check it inside their loops and stop with budget_exceeded
// (nothing computed) once it has passed, so that a recording's analysis at exit cannot overrun
// its budget by a whole graph.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/budget.hpp"
#include "gmem/profiler/graph_alone.hpp"
#include "gmem/profiler/graph_model.hpp"
#include "gmem/profiler/pool_model.hpp"
#include "gmem/profiler/reuse_model.hpp"

namespace {

using namespace gmem::profiler;  // NOLINT(google-build-using-namespace): test file

constexpr std::uint64_t MiB = 1 << 20;
constexpr std::uint64_t granule = 2 * MiB;

// The layered graph of the scale benchmark: `per_layer` allocations each freed by its own free
// node, one node joining the frees, then `per_layer` larger allocations, each freed.
graph_model layered(std::size_t per_layer) {
  graph_model g;
  g.name = "layered";
  const auto add = [&g](node_kind k, std::uint64_t address, std::size_t bytes) {
    model_node n;
    n.kind = k;
    n.address = address;
    n.bytes = bytes;
    g.nodes.push_back(n);
    return g.nodes.size() - 1;
  };
  std::vector<std::size_t> frees;
  for (std::size_t i = 0; i < per_layer; ++i) {
    const std::uint64_t address = 0x7f0000000000ull + i * 0x10000000ull;
    const std::size_t a = add(node_kind::mem_alloc, address, (1 + i % 64) * MiB);
    frees.push_back(add(node_kind::mem_free, address, 0));
    g.edges.emplace_back(a, frees.back());
  }
  const std::size_t join = add(node_kind::empty, 0, 0);
  for (std::size_t f : frees) g.edges.emplace_back(f, join);
  for (std::size_t i = 0; i < per_layer; ++i) {
    const std::uint64_t address = 0x7f0000000000ull + (per_layer + i) * 0x10000000ull;
    const std::size_t a = add(node_kind::mem_alloc, address, (65 + i % 64) * MiB);
    g.edges.emplace_back(join, a);
    g.edges.emplace_back(a, add(node_kind::mem_free, address, 0));
  }
  return g;
}

// A deadline is checked inside each analysis, not only between them: one already passed stops
// each of them on a graph of 3,000 + 3,000 allocations with budget_exceeded, whatever it was
// computing; without one they all finish.
TEST(AnalysisBudget, APassedDeadlineStopsEachAnalysisFromInside) {
  const flat_graph flat = flatten(layered(3000));
  const deadline passed(deadline::clock::now() - std::chrono::seconds(1));
  EXPECT_THROW((void)analyse(flat, granule, passed), budget_exceeded);
  const graph_analysis a = analyse(flat, granule);
  EXPECT_EQ(a.lower_bound_set.size(), 3000u);  // the larger layer
  EXPECT_THROW((void)skeleton_of(flat, a, "layered", passed), budget_exceeded);
  const skeleton s = skeleton_of(flat, a, "layered");
  EXPECT_THROW((void)predict_reuse(s, granule, passed), budget_exceeded);
  EXPECT_THROW((void)pool_graph_of(s, granule, true, passed), budget_exceeded);
  EXPECT_THROW((void)study_alone(flat, "layered", granule, true, {}, passed), budget_exceeded);
  try {
    (void)study_alone(flat, "layered", granule, true, {}, passed);
  } catch (const budget_exceeded& e) {
    EXPECT_NE(std::string(e.what()).find("not computed (budget)"), std::string::npos) << e.what();
  }
  const graph_alone alone = study_alone(flat, "layered", granule, true, {}, deadline::after(3600));
  EXPECT_EQ(alone.analysis.lower_bound_bytes, a.lower_bound_bytes);
  EXPECT_EQ(alone.reserved_bytes, predict_reuse(s, granule).rounded_bytes);
}

// Small graphs are not worth a look at the clock: a passed deadline lets them finish.
TEST(AnalysisBudget, SmallGraphsFinishWithoutReadingTheClock) {
  const flat_graph flat = flatten(layered(4));
  const deadline passed(deadline::clock::now() - std::chrono::seconds(1));
  EXPECT_EQ(analyse(flat, granule, passed).lower_bound_bytes, analyse(flat, granule).lower_bound_bytes);
}

}  // namespace
