// The views' groupings of many graphs (views/views.hpp): the high watermark's composition as
// segments a reader can see (the graph that reached it always its own, the small shares grouped
// by cause, every byte kept), and the costliest graphs with the others counted by cause, on hand-
// made pools and on the synthetic recordings of 2000 graphs the page is drawn from.
#include <gtest/gtest.h>

#include <numeric>

#include "views/show.hpp"
#include "views/views.hpp"
#include "synthetic_recordings.hpp"

namespace gmem::record::test {
namespace {

using profiler::attribution_segment;
using profiler::recorded_pool;
using profiler::probe::granule;
using profiler::probe::MiB;

recorded_pool pool_of(std::vector<recorded_pool::share> shares, const std::string& high_graph) {
  recorded_pool p;
  p.attribution = std::move(shares);
  p.high_graph = high_graph;
  for (const auto& s : p.attribution) p.high_bytes += s.bytes;
  return p;
}

std::uint64_t bytes_of(const std::vector<attribution_segment>& v) {
  return std::accumulate(v.begin(), v.end(), std::uint64_t{0},
                         [](std::uint64_t s, const attribution_segment& a) { return s + a.bytes; });
}

// What a segment reads as: "graph/why/bytes/shares", "*" for the one that reached the high.
std::vector<std::string> read(const std::vector<attribution_segment>& v) {
  std::vector<std::string> out;
  for (const auto& a : v) {
    out.push_back(a.graph + "/" + a.why + "/" + std::to_string(a.bytes) + "/" + std::to_string(a.shares) +
                  (a.reached_high ? "*" : ""));
  }
  return out;
}

TEST(AttributionSegments, TheLargestSharesAreTheirOwnAndTheRestOneSegmentPerCause) {
  const recorded_pool p = pool_of({{"A", "working_set", 600},
                                   {"D", "held_outputs", 5},
                                   {"B", "held_outputs", 200},
                                   {"", "idle", 3},
                                   {"C", "held_outputs", 100},
                                   {"E", "held_outputs", 5},
                                   {"G", "concurrent_launch", 50},
                                   {"H", "held_outputs", 0}},
                                  "A");
  // Three of their own (A reached it); the rest by cause, the largest first; a cause of one share
  // keeps its graph's name; H holds nothing and is left out.
  EXPECT_EQ(read(profiler::attribution_segments(p, 3, 0.01)),
            (std::vector<std::string>{"A/working_set/600/1*", "B/held_outputs/200/1", "C/held_outputs/100/1",
                                      "G/concurrent_launch/50/1", "/held_outputs/10/2", "/idle/3/1"}));
}

TEST(AttributionSegments, AShareUnderTheFractionJoinsItsCauseEvenAmongTheTop) {
  // 5 of 1000 bytes is 0.5%: under 1% it is no segment of its own however few shares there are.
  const recorded_pool p = pool_of({{"big", "working_set", 990}, {"x", "held_outputs", 5}, {"y", "held_outputs", 5}}, "big");
  EXPECT_EQ(read(profiler::attribution_segments(p, 10, 0.01)),
            (std::vector<std::string>{"big/working_set/990/1*", "/held_outputs/10/2"}));
}

TEST(AttributionSegments, TheGraphThatReachedTheHighIsItsOwnSegmentHoweverSmall) {
  // One granule among 1999 others' held outputs (the back-to-back shape): 0.05% of the bar, and
  // still the segment the page names as the graph that reached the watermark.
  std::vector<recorded_pool::share> shares;
  for (int k = 1; k <= 1999; ++k) shares.push_back({"g" + std::to_string(k), "held_outputs", granule});
  shares.push_back({"g2000", "working_set", granule});
  const std::vector<attribution_segment> s = profiler::attribution_segments(pool_of(shares, "g2000"), 10, 0.01);
  EXPECT_EQ(read(s), (std::vector<std::string>{"g2000/working_set/" + std::to_string(granule) + "/1*",
                                               "/held_outputs/" + std::to_string(1999 * granule) + "/1999"}));
}

TEST(AttributionSegments, EqualSharesAreTakenInNaturalNameOrder) {
  const recorded_pool p = pool_of({{"g10", "held_outputs", 100}, {"g9", "held_outputs", 100}, {"g1", "held_outputs", 100},
                                   {"g2", "working_set", 100}},
                                  "g2");
  // g2 reached it; of the equal others g1 and g9 come before g10, which joins its cause.
  EXPECT_EQ(read(profiler::attribution_segments(p, 3, 0.01)),
            (std::vector<std::string>{"g1/held_outputs/100/1", "g2/working_set/100/1*", "g9/held_outputs/100/1",
                                      "g10/held_outputs/100/1"}));
}

TEST(AttributionSegments, AWorkingSetOfAnotherGraphThanTheOneNamedIsNotMarked) {
  // The high named 'late' (the last of overlapping calls): only its working set is marked.
  const recorded_pool p = pool_of({{"early", "working_set", 300}, {"late", "concurrent_launch", 200}}, "late");
  for (const auto& a : profiler::attribution_segments(p, 10, 0.01)) EXPECT_FALSE(a.reached_high) << a.graph;
}

TEST(AttributionSegments, ServingOf2000GraphsKeepsEveryByteInAFewSegments) {
  program prog(name_source::nvtx);
  serving(prog, 2000);
  const profiler::report r = prog.finish();
  const recorded_pool& p = r.recorded->pools.at(0);
  const auto s = profiler::attribution_segments(p, 10, 0.01);
  EXPECT_LE(s.size(), 12u);
  std::uint64_t all = 0;
  for (const auto& a : p.attribution) all += a.bytes;
  EXPECT_EQ(bytes_of(s), all);
  std::size_t shares = 0, reached = 0;
  for (const auto& a : s) {
    shares += a.shares;
    if (a.reached_high) {
      ++reached;
      EXPECT_EQ(a.graph, p.high_graph);
    } else if (a.shares == 1) {
      // A segment of its own is a share of at least 1% of the bar.
      EXPECT_GE(a.bytes * 100, all) << a.graph;
    }
  }
  EXPECT_EQ(reached, 1u);
  EXPECT_EQ(shares, p.attribution.size());
}

profiler::recorded_graph graph(const std::string& name, std::uint64_t growth, std::uint64_t held_granules,
                               const std::string& kind = "memory_nodes") {
  profiler::recorded_graph g;
  g.name = name;
  g.kind = kind;
  g.growth_bytes = growth;
  g.held_granule_bytes = held_granules;
  g.own_footprint_bytes = growth + 7;
  return g;
}

TEST(GrowthCause, NamesWhatAGraphsPoolGrowthWasFor) {
  EXPECT_EQ(profiler::growth_cause(graph("a", 0, granule)), "none");
  EXPECT_EQ(profiler::growth_cause(graph("b", granule, granule)), "held_outputs");
  EXPECT_EQ(profiler::growth_cause(graph("c", granule + 1, granule)), "working_set");
  EXPECT_EQ(profiler::growth_cause(graph("d", 0, 0, "private_pool")), "capture");
}

TEST(SelectGraphs, TheCostliestFirstAndTheOthersCountedByCauseCostliestGroupFirst) {
  profiler::recording rec;
  rec.graphs = {graph("w1", 3 * granule, granule), graph("h1", granule, granule), graph("n1", 0, granule),
                graph("h2", granule, 2 * granule), graph("w2", 5 * granule, 0), graph("n2", 0, 0),
                graph("h10", granule, granule)};
  const profiler::graph_selection s = profiler::select_graphs(rec, 2);
  // By cost: w2 (5), w1 (3), then h1, h2, h10 (1 each, natural order), n1, n2.
  EXPECT_EQ(s.top, (std::vector<std::size_t>{4, 0}));
  ASSERT_EQ(s.others.size(), 2u);
  EXPECT_EQ(s.others[0].cause, "held_outputs");
  EXPECT_EQ(s.others[0].graphs, 3u);
  EXPECT_EQ(s.others[0].growth_bytes, 3 * granule);
  EXPECT_EQ(s.others[0].cost, 3 * granule);
  EXPECT_EQ(s.others[0].largest_alone_bytes, granule + 7);
  EXPECT_EQ(s.others[1].cause, "none");
  EXPECT_EQ(s.others[1].graphs, 2u);
  EXPECT_EQ(s.others[1].growth_bytes, 0u);
}

TEST(SelectGraphs, ServingOf2000GraphsShowsTheLargestThenTheSmallestBatchesAndCountsTheRest) {
  program prog(name_source::nvtx);
  serving(prog, 2000);
  const profiler::report r = prog.finish();
  const profiler::graph_selection s = profiler::select_graphs(*r.recorded, 10);
  ASSERT_EQ(s.top.size(), 10u);
  EXPECT_EQ(r.recorded->graphs[s.top[0]].name, "decode bs=2000");
  // The others grew the pool a granule each (equal costs: natural name order, bs=1 first).
  EXPECT_EQ(r.recorded->graphs[s.top[1]].name, "decode bs=1");
  EXPECT_EQ(r.recorded->graphs[s.top[9]].name, "decode bs=9");
  ASSERT_EQ(s.others.size(), 1u);
  EXPECT_EQ(s.others[0].cause, "held_outputs");
  EXPECT_EQ(s.others[0].graphs, 1990u);
  EXPECT_EQ(s.others[0].growth_bytes, 1990 * granule);
}

}  // namespace
}  // namespace gmem::record::test
