#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/graph_model.hpp"

namespace {

using gmem::profiler::analyse;
using gmem::profiler::diagnose;
using gmem::profiler::diagnostic;
using gmem::profiler::flat_graph;
using gmem::profiler::flatten;
using gmem::profiler::graph_analysis;
using gmem::profiler::graph_model;
using gmem::profiler::model_node;
using gmem::profiler::node_kind;
using gmem::profiler::runtime_facts;

constexpr std::uint64_t MiB = 1024 * 1024;

std::size_t add(graph_model& g, node_kind kind, std::uint64_t address = 0, std::size_t bytes = 0) {
  model_node n;
  n.kind = kind;
  n.address = address;
  n.bytes = bytes;
  g.nodes.push_back(n);
  return g.nodes.size() - 1;
}

// Nodes 0..3: alloc 0x7f0000000000 (1 MiB), its free, alloc 0x7f0000200000 (3 MiB), its free;
// `chained` orders the first free before the second alloc.
graph_model two_pairs(bool chained) {
  graph_model g;
  g.name = "g";
  add(g, node_kind::mem_alloc, 0x7f0000000000, MiB);
  add(g, node_kind::mem_free, 0x7f0000000000);
  add(g, node_kind::mem_alloc, 0x7f0000200000, 3 * MiB);
  add(g, node_kind::mem_free, 0x7f0000200000);
  g.edges = {{0, 1}, {2, 3}};
  if (chained) g.edges.emplace_back(1, 2);
  return g;
}

struct analysed {
  flat_graph flat;
  graph_analysis a;
};

analysed analyse_model(const graph_model& g, std::uint64_t granularity = 0) {
  analysed r{flatten(g), {}};
  r.a = analyse(r.flat, granularity);
  return r;
}

runtime_facts quiet_facts() {
  runtime_facts f;
  f.graph_name = "g";
  f.launches = {{"g", "stream 0"}};
  return f;
}

std::vector<diagnostic> with_code(const std::vector<diagnostic>& all, const std::string& code) {
  std::vector<diagnostic> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out),
               [&](const diagnostic& d) { return d.code == code; });
  return out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Diagnostics, CleanChainedGraphInOneStreamHasNothingToSay) {
  const analysed r = analyse_model(two_pairs(true));
  runtime_facts f = quiet_facts();
  f.reserved_high = 4 * MiB;  // 1.33 x the 3 MiB bound: under the threshold
  EXPECT_TRUE(diagnose(r.flat, r.a, f).empty());
}

TEST(Diagnostics, UnfreedAllocationWarnsPerAllocationNamingLabelSizeAndAddress) {
  graph_model g = two_pairs(true);
  g.nodes.pop_back();  // drop the free of the 3 MiB allocation, and its edge
  g.edges = {{0, 1}, {1, 2}};
  add(g, node_kind::mem_alloc, 0x7f0000600000, 2 * MiB);  // a second unfreed one, node 3
  const analysed r = analyse_model(g);
  const auto unfreed = with_code(diagnose(r.flat, r.a, quiet_facts()), "unfreed_allocation");
  ASSERT_EQ(unfreed.size(), 2u);
  EXPECT_EQ(unfreed[0].severity, "warning");
  EXPECT_EQ(unfreed[0].bytes, 3 * MiB);
  EXPECT_TRUE(contains(unfreed[0].message, "alloc node #2 in graph 'g'")) << unfreed[0].message;
  EXPECT_TRUE(contains(unfreed[0].message, "3.00 MiB")) << unfreed[0].message;
  EXPECT_TRUE(contains(unfreed[0].message, "0x7f0000200000")) << unfreed[0].message;
  EXPECT_TRUE(contains(unfreed[0].message, "AutoFreeOnLaunch")) << unfreed[0].message;
  EXPECT_TRUE(contains(unfreed[0].message, "cannot be launched again")) << unfreed[0].message;
  EXPECT_EQ(unfreed[1].bytes, 2 * MiB);
  EXPECT_TRUE(contains(unfreed[1].message, "0x7f0000600000")) << unfreed[1].message;
}

TEST(Diagnostics, UnfreedAllocationsUnderAutoFreeOnLaunchAreOneInfoWithTheirTotal) {
  graph_model g;
  g.name = "g";
  add(g, node_kind::mem_alloc, 0x1000, MiB);
  add(g, node_kind::mem_alloc, 0x200000, 2 * MiB);
  const analysed r = analyse_model(g);
  runtime_facts f = quiet_facts();
  f.auto_free_on_launch = true;
  const auto unfreed = with_code(diagnose(r.flat, r.a, f), "unfreed_allocation");
  ASSERT_EQ(unfreed.size(), 1u);
  EXPECT_EQ(unfreed[0].severity, "info");
  EXPECT_EQ(unfreed[0].bytes, 3 * MiB);
  EXPECT_TRUE(contains(unfreed[0].message, "2 allocation(s)")) << unfreed[0].message;
  EXPECT_TRUE(contains(unfreed[0].message, "3.00 MiB requested")) << unfreed[0].message;
  EXPECT_TRUE(contains(unfreed[0].message, "next launch")) << unfreed[0].message;
}

TEST(Diagnostics, MissedReuseNamesBothAllocationsAndTheEdgeToAdd) {
  const analysed r = analyse_model(two_pairs(false));
  const auto all = diagnose(r.flat, r.a, quiet_facts());
  const auto missed = with_code(all, "missed_reuse");
  ASSERT_EQ(missed.size(), 1u);
  EXPECT_EQ(missed[0].severity, "warning");
  EXPECT_EQ(missed[0].bytes, MiB);  // the smaller of 1 MiB and 3 MiB
  const std::string& m = missed[0].message;
  EXPECT_TRUE(contains(m, "alloc node #0 in graph 'g' (1.00 MiB at 0x7f0000000000)")) << m;
  EXPECT_TRUE(contains(m, "alloc node #2 in graph 'g' (3.00 MiB at 0x7f0000200000)")) << m;
  EXPECT_TRUE(contains(m, "free node #1 in graph 'g' is not ordered before alloc node #2")) << m;
  // An edge added later saves nothing on the driver; the advice says to pass it at
  // creation and promises no saving of its own.
  EXPECT_TRUE(contains(m, "as a dependency when creating alloc node #2")) << m;
  EXPECT_FALSE(contains(m, "saving up to")) << m;
  EXPECT_TRUE(with_code(all, "unfreed_allocation").empty());
}

TEST(Diagnostics, OrderedAllocationsAreNoMissedReuse) {
  const analysed r = analyse_model(two_pairs(true));
  EXPECT_TRUE(with_code(diagnose(r.flat, r.a, quiet_facts()), "missed_reuse").empty());
}

// k unordered alloc/free pairs of `bytes` each, addresses 1 GiB apart (the shapes the launch-time price was measured on).
graph_model independent(int k, std::uint64_t bytes) {
  graph_model g;
  g.name = "wide";
  for (int i = 0; i < k; ++i) {
    const std::uint64_t address = 0x7f0000000000 + std::uint64_t(i) * 1024 * MiB;
    const std::size_t a = add(g, node_kind::mem_alloc, address, bytes);
    const std::size_t f = add(g, node_kind::mem_free, address);
    g.edges.emplace_back(a, f);
  }
  return g;
}

TEST(Diagnostics, MissedReuseIsSilentWhereOrderingCouldNotSaveAGranule) {
  // 64 concurrent 1 MiB allocations fill two 32 MiB granules; ordering any one pair
  // leaves 63 MiB, still two granules: nothing to say, whatever was reserved.
  const analysed r = analyse_model(independent(64, MiB), 32 * MiB);
  ASSERT_FALSE(r.a.reuse_opportunities.empty());  // the analysis still lists the pairs
  runtime_facts f = quiet_facts();
  EXPECT_TRUE(with_code(diagnose(r.flat, r.a, f), "missed_reuse").empty());
  f.reserved_high = 96 * MiB;  // even above the bound
  EXPECT_TRUE(with_code(diagnose(r.flat, r.a, f), "missed_reuse").empty());
  // Without rounding, one pair saves its smaller allocation: said.
  const analysed exact = analyse_model(independent(2, MiB));
  EXPECT_EQ(with_code(diagnose(exact.flat, exact.a, quiet_facts()), "missed_reuse").size(), 1u);
}

TEST(Diagnostics, MissedReuseIsSilentWhenTheGraphReservesItsBound) {
  const analysed r = analyse_model(independent(2, 128 * MiB), 32 * MiB);
  ASSERT_EQ(r.a.lower_bound_rounded_bytes, 256 * MiB);
  runtime_facts f = quiet_facts();
  f.reserved_high = 256 * MiB;  // exactly the bound: the driver reused all it could
  EXPECT_TRUE(with_code(diagnose(r.flat, r.a, f), "missed_reuse").empty());
  f.reserved_high = 288 * MiB;  // a granule above it: explained, with a granule-rounded saving
  const auto missed = with_code(diagnose(r.flat, r.a, f), "missed_reuse");
  ASSERT_EQ(missed.size(), 1u);
  EXPECT_EQ(missed[0].bytes, 128 * MiB);
}

TEST(Diagnostics, ManyPairsThatSayTheSameAreOneLine) {
  // 6 unordered 64 MiB allocations: 15 pairs, each saving 64 MiB if ordered.
  const analysed r = analyse_model(independent(6, 64 * MiB), 32 * MiB);
  runtime_facts f = quiet_facts();
  f.graph_name = "wide";
  const auto missed = with_code(diagnose(r.flat, r.a, f), "missed_reuse");
  ASSERT_EQ(missed.size(), 1u);
  EXPECT_EQ(missed[0].bytes, 64 * MiB);
  const std::string& m = missed[0].message;
  EXPECT_TRUE(contains(m, "15 pairs of allocations of graph 'wide'")) << m;
  EXPECT_FALSE(contains(m, "At least")) << m;
  EXPECT_TRUE(contains(m, "384 MiB bound")) << m;
  EXPECT_TRUE(contains(m, "plan")) << m;
  // 7 of them: 21 pairs, of which the analysis lists its 16: "at least".
  const analysed more = analyse_model(independent(7, 64 * MiB), 32 * MiB);
  const auto capped = with_code(diagnose(more.flat, more.a, f), "missed_reuse");
  ASSERT_EQ(capped.size(), 1u);
  EXPECT_TRUE(contains(capped[0].message, "At least 16 pairs")) << capped[0].message;
}

TEST(Diagnostics, LaunchesIntoTwoStreamsNameTheGraphsAndStreams) {
  const analysed r = analyse_model(two_pairs(true));
  runtime_facts f = quiet_facts();
  f.launches = {{"producer", "stream A"}, {"consumer", "stream B"}, {"producer", "stream A"}};
  const auto streams = with_code(diagnose(r.flat, r.a, f), "separate_streams");
  ASSERT_EQ(streams.size(), 1u);
  EXPECT_EQ(streams[0].bytes, 0u);
  EXPECT_EQ(streams[0].severity, "warning");
  const std::string& m = streams[0].message;
  EXPECT_TRUE(contains(m, "graph 'producer' into stream 'stream A'")) << m;
  EXPECT_TRUE(contains(m, "graph 'consumer' into stream 'stream B'")) << m;
  EXPECT_TRUE(contains(m, "2 different streams")) << m;
  EXPECT_TRUE(contains(m, "one stream")) << m;
}

TEST(Diagnostics, LaunchesIntoOneStreamAreNotReported) {
  const analysed r = analyse_model(two_pairs(true));
  runtime_facts f = quiet_facts();
  f.launches = {{"producer", "s"}, {"consumer", "s"}};
  EXPECT_TRUE(with_code(diagnose(r.flat, r.a, f), "separate_streams").empty());
  f.launches.clear();
  EXPECT_TRUE(with_code(diagnose(r.flat, r.a, f), "separate_streams").empty());
}

TEST(Diagnostics, MemoryReservedAfterDestroyIsInfoUntilTrim) {
  const analysed r = analyse_model(two_pairs(true));
  runtime_facts f = quiet_facts();
  f.graphs_destroyed = true;
  f.reserved_after_destroy = 4 * MiB;
  const auto trim = with_code(diagnose(r.flat, r.a, f), "reserved_until_trim");
  ASSERT_EQ(trim.size(), 1u);
  EXPECT_EQ(trim[0].severity, "info");
  EXPECT_EQ(trim[0].bytes, 4 * MiB);
  EXPECT_TRUE(contains(trim[0].message, "4.00 MiB")) << trim[0].message;
  EXPECT_TRUE(contains(trim[0].message, "cudaDeviceGraphMemTrim")) << trim[0].message;

  f.reserved_after_destroy = 0;
  EXPECT_TRUE(with_code(diagnose(r.flat, r.a, f), "reserved_until_trim").empty());
  f.reserved_after_destroy = 4 * MiB;
  f.graphs_destroyed = false;
  EXPECT_TRUE(with_code(diagnose(r.flat, r.a, f), "reserved_until_trim").empty());
}

TEST(Diagnostics, ReservationAboveThresholdTimesBoundStatesRatioBoundAndReservation) {
  const analysed r = analyse_model(two_pairs(true), 2 * MiB);  // bound: 3 MiB rounded to 4 MiB
  ASSERT_EQ(r.a.lower_bound_rounded_bytes, 4 * MiB);
  runtime_facts f = quiet_facts();
  f.reserved_high = 10 * MiB;
  const auto above = with_code(diagnose(r.flat, r.a, f), "reservation_above_bound");
  ASSERT_EQ(above.size(), 1u);
  EXPECT_EQ(above[0].severity, "warning");
  EXPECT_EQ(above[0].bytes, 6 * MiB);
  const std::string& m = above[0].message;
  EXPECT_TRUE(contains(m, "2.50 times")) << m;
  EXPECT_TRUE(contains(m, "10.0 MiB")) << m;
  EXPECT_TRUE(contains(m, "4.00 MiB")) << m;
  EXPECT_TRUE(contains(m, "graph 'g'")) << m;
}

TEST(Diagnostics, ReservationAtOrUnderThresholdOrWithoutBoundIsNotReported) {
  const analysed r = analyse_model(two_pairs(true), 2 * MiB);
  runtime_facts f = quiet_facts();
  f.reserved_high = 6 * MiB;  // exactly 1.5 x 4 MiB: not above
  EXPECT_TRUE(with_code(diagnose(r.flat, r.a, f), "reservation_above_bound").empty());
  f.reserved_high = 6 * MiB + 1;
  EXPECT_EQ(with_code(diagnose(r.flat, r.a, f), "reservation_above_bound").size(), 1u);
  f.excess_ratio_threshold = 2.0;
  EXPECT_TRUE(with_code(diagnose(r.flat, r.a, f), "reservation_above_bound").empty());

  graph_model empty;
  empty.name = "g";
  add(empty, node_kind::kernel);
  const analysed none = analyse_model(empty);
  f.reserved_high = 64 * MiB;
  EXPECT_TRUE(with_code(diagnose(none.flat, none.a, f), "reservation_above_bound").empty());
}

TEST(Diagnostics, CodesComeInDocumentedOrder) {
  graph_model g = two_pairs(false);
  add(g, node_kind::mem_alloc, 0x7f0000800000, MiB);  // unfreed
  const analysed r = analyse_model(g);
  runtime_facts f = quiet_facts();
  f.launches = {{"g", "a"}, {"g", "b"}};
  f.graphs_destroyed = true;
  f.reserved_after_destroy = MiB;
  f.reserved_high = 100 * MiB;
  std::vector<std::string> codes;
  for (const auto& d : diagnose(r.flat, r.a, f)) codes.push_back(d.code);
  const std::vector<std::string> expected{"unfreed_allocation", "missed_reuse", "missed_reuse",
                                          "missed_reuse", "separate_streams",
                                          "reservation_above_bound", "reserved_until_trim"};
  EXPECT_EQ(codes, expected);
}

TEST(Diagnostics, AnalysisOfAnotherGraphIsRefused) {
  const analysed big = analyse_model(two_pairs(false));
  flat_graph small;
  EXPECT_THROW((void)diagnose(small, big.a, quiet_facts()), std::invalid_argument);
}

}  // namespace
