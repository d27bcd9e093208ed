// The recording session against a fake driver (fake_driver.hpp), call by call as the injected
// library reports a program's driver calls: identical graphs that live together stay apart,
// instances made one after another fold into one record whatever calls lie between them, a
// program that alternates graphs stays bounded, every capture that took memory is recorded,
// slow launches are not remaps unless the pool model says so, the completions the program saw
// reach the pool model, the exit and signal paths never wait on themselves, and every report
// the session writes reads back (a randomized program generator drives the writer against the
// reader).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <future>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "fake_driver.hpp"
#include "gmem/profiler/compare.hpp"
#include "gmem/profiler/parallel_for.hpp"
#include "record/recording_report.hpp"
#include "record/recording_summary.hpp"
#include "views/show.hpp"
#include "views/views.hpp"

namespace gmem::record::test {
namespace {

using profiler::probe::granule;
using profiler::probe::MiB;

std::uint64_t base_of(std::uint64_t k) { return (k + 1) << 36; }

const profiler::recorded_graph* graph_named(const profiler::report& r, const std::string& name) {
  for (const auto& g : r.recorded->graphs) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

std::size_t steps_of(const profiler::report& r, const std::string& op) {
  std::size_t n = 0;
  for (const auto& s : r.recorded->sequence) n += s.op == op;
  return n;
}

std::size_t events_of_class(const profiler::report& r, const std::string& cls) {
  std::size_t n = 0;
  for (const auto& g : r.recorded->graphs) {
    for (const auto& e : g.events) n += e.cls == cls;
  }
  return n;
}

bool has_diagnostic(const profiler::report& r, const std::string& code) {
  for (const auto& p : r.recorded->pools) {
    for (const auto& d : p.diagnostics) {
      if (d.code == code) return true;
    }
  }
  return false;
}

// vLLM's piecewise graphs: eight graphs of one structure captured from one call site, all alive
// until the program ends, then destroyed (in either order). The recording used to fold the last
// into a destroyed twin and write a sequence gmemprof refused.
class IdenticalLiveGraphs : public ::testing::TestWithParam<bool> {};

TEST_P(IdenticalLiveGraphs, AreEightRecordsEachWithItsOwnFiguresAndTheReportReadsBack) {
  program p;
  for (std::uint64_t k = 0; k < 8; ++k) {
    p.capture(0xA, 0x10 + k, graph_of("g=w64,o1", base_of(k)));
    p.instantiate(0x100 + k, 0x10 + k, true);
  }
  for (int round = 0; round < 3; ++round) {
    for (std::uint64_t k = 0; k < 8; ++k) {
      const bool first = round == 0;
      p.launch(0x100 + k, 0xA, first ? 300 : 5, first ? (k == 0 ? 3 * granule : granule) : 0);
    }
    p.s.stream_synchronized(0xA);
  }
  const bool reverse = GetParam();
  for (std::uint64_t i = 0; i < 8; ++i) {
    const std::uint64_t k = reverse ? 7 - i : i;
    p.destroy(0x100 + k, 0x10 + k);
  }
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->graphs.size(), 8u);
  for (std::uint64_t k = 0; k < 8; ++k) {
    const auto* g = graph_named(r, "stream 1 #" + std::to_string(k + 1));
    ASSERT_NE(g, nullptr) << k;
    EXPECT_EQ(g->instances, 1u);
    EXPECT_EQ(g->launches, 3u);
    EXPECT_EQ(g->growth_bytes, k == 0 ? 3 * granule : granule);
  }
  EXPECT_EQ(steps_of(r, "instantiate"), 0u);
  EXPECT_NO_THROW((void)profiler::format_report(r));
}

INSTANTIATE_TEST_SUITE_P(DestroyedInOrderAndInReverse, IdenticalLiveGraphs, ::testing::Bool());

// A graph's identity holds its sizes, its site does not: graphs captured where and as another
// was, with other sizes (a batch size, a grown output), share a site and differ in identity, so
// that a check pairs a graph whose output grew with its baseline.
TEST(RecordSession, GraphsOfOneSiteWithOtherSizesShareTheSiteNotTheIdentity) {
  program p;
  p.capture(0xA, 0x10, graph_of("g=w64,o1", base_of(0)));
  p.instantiate(0x100, 0x10, true);
  p.capture(0xA, 0x11, graph_of("g=w64,o1", base_of(1)));
  p.instantiate(0x101, 0x11, true);
  p.capture(0xA, 0x12, graph_of("g=w128,o6", base_of(2)));
  p.instantiate(0x102, 0x12, true);
  p.capture(0xA, 0x13, graph_of("g=w64", base_of(3)));  // another structure: no held output
  p.instantiate(0x103, 0x13, true);
  const profiler::report r = profiler::from_json_string(profiler::to_json_string(p.finish()), "r.json");
  const auto& g = r.recorded->graphs;
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0].site.rfind("site:", 0), 0u) << g[0].site;
  EXPECT_EQ(g[0].site, g[1].site);
  EXPECT_EQ(g[0].site, g[2].site);
  EXPECT_NE(g[0].site, g[3].site);
  EXPECT_EQ(g[1].identity, g[0].identity + " #2");
  EXPECT_NE(g[2].identity.substr(0, 21), g[0].identity.substr(0, 21));
}

// What recording costs the program is charged part by part on the session's clock: the driver's
// answers the library asked for (a graph read, cuMemGetInfo around the call, the call stack), and
// never the program's own call (the instantiation's 40 us, the launches' host time).
TEST(RecordSession, WhatRecordingCostsIsChargedByPartAndNeverIncludesTheProgramsCalls) {
  program p;
  p.gpu.read_graph_us = 7;
  p.gpu.call_stack_us = 3;
  p.gpu.memory_used_us = 2;
  for (std::uint64_t k = 0; k < 5; ++k) {
    p.capture(0xA, 0x10 + k, graph_of("g=w64,o1", base_of(k)));
    p.instantiate(0x100 + k, 0x10 + k);
    p.launch(0x100 + k, 0xA, 300, k == 0 ? 2 * granule : 0);
    p.launch(0x100 + k, 0xA, 5);
  }
  const profiler::report r = profiler::from_json_string(profiler::to_json_string(p.finish()), "r.json");
  std::map<std::string, profiler::record_cost> by_part;
  for (const auto& c : r.recorded->cost) by_part[c.part] = c;
  ASSERT_EQ(by_part.count("instantiate: graph read"), 1u);
  EXPECT_EQ(by_part["instantiate: graph read"].calls, 5u);
  EXPECT_DOUBLE_EQ(by_part["instantiate: graph read"].us, 35);
  EXPECT_EQ(by_part["instantiate: cuMemGetInfo"].calls, 5u);
  EXPECT_DOUBLE_EQ(by_part["instantiate: cuMemGetInfo"].us, 20);  // before and after each
  EXPECT_EQ(by_part["instantiate: call stack"].calls, 5u);
  EXPECT_DOUBLE_EQ(by_part["instantiate: call stack"].us, 15);
  EXPECT_EQ(by_part["instantiate: counters"].calls, 5u);
  EXPECT_DOUBLE_EQ(by_part["instantiate: counters"].us, 0);
  EXPECT_EQ(by_part["instantiate: recorder"].calls, 5u);
  EXPECT_DOUBLE_EQ(by_part["instantiate: recorder"].us, 0);
  EXPECT_EQ(by_part["launch"].calls, 10u);
  EXPECT_DOUBLE_EQ(by_part["launch"].us, 0);  // the launches' 305 us each are the program's
  EXPECT_EQ(by_part["capture begin and end"].calls, 10u);
  EXPECT_EQ(by_part.count("companion (Python)"), 0u);
  EXPECT_EQ(profiler::cost_line(*r.recorded),
            "recording took 70 us of the program's time in its CUDA calls: instantiate: graph read 35 us "
            "(5 x 7.0 us), instantiate: cuMemGetInfo 20 us (5 x 4.0 us), instantiate: call stack 15 us "
            "(5 x 3.0 us)");
}

// A Python program's native stack is the interpreter's: walked once per Python site the companion
// named, and given to that site's later graphs; a capture the companion did not name walks its own.
TEST(RecordSession, APythonSitesNativeStackIsWalkedOnceAndSharedByItsLaterGraphs) {
  program p;
  p.gpu.call_stack_us = 3;
  for (std::uint64_t k = 0; k < 4; ++k) {
    p.s.nvtx_mark(R"(gmem:capture {"pool":"","device":0,"site":"model.py:42 in forward","label":""})");
    p.gpu.stack = {"python3!_PyEval_EvalFrameDefault+0x" + std::to_string(k)};
    p.capture(0xA, 0x10 + k, graph_of("g=w64,o1", base_of(k)));
    p.instantiate(0x100 + k, 0x10 + k);
  }
  p.gpu.stack = {"app!capture_by_hand()+0x10"};
  p.capture(0xA, 0x20, graph_of("g=w64", base_of(9)));
  p.instantiate(0x200, 0x20);
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->graphs.size(), 5u);
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(r.recorded->graphs[k].python_site, "model.py:42 in forward");
    EXPECT_EQ(r.recorded->graphs[k].instantiate_stack, std::vector<std::string>{"python3!_PyEval_EvalFrameDefault+0x0"});
  }
  EXPECT_EQ(r.recorded->graphs[4].instantiate_stack, std::vector<std::string>{"app!capture_by_hand()+0x10"});
  for (const auto& c : r.recorded->cost) {
    if (c.part != "instantiate: call stack") continue;
    EXPECT_EQ(c.calls, 5u);
    EXPECT_DOUBLE_EQ(c.us, 6);  // two walks: the site's first graph, and the graph made by hand
  }
}

// cuda-samples' graphMemoryFootprint: the same graph made, launched, synchronized, destroyed
// and trimmed again and again. A sync and a trim between instances used to leave stale graph
// indexes in the sequence (a heap-use-after-free at exit, the sample's SIGSEGV).
TEST(RecordSession, InstancesMadeOneAfterAnotherAreOneRecordWhateverCallsLieBetween) {
  program p;
  for (std::uint64_t k = 0; k < 4; ++k) {
    p.capture(0xA, 0x10 + k, graph_of("g=w64", base_of(k)));
    p.instantiate(0x100 + k, 0x10 + k);
    p.launch(0x100 + k, 0xA, 300, 2 * granule);
    p.launch(0x100 + k, 0xA, 5);
    p.s.stream_synchronized(0xA);
    p.s.device_synchronized();
    p.destroy(0x100 + k, 0x10 + k);
    p.trim(0);
  }
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->graphs.size(), 1u);
  const profiler::recorded_graph& g = r.recorded->graphs[0];
  EXPECT_EQ(g.instances, 4u);
  EXPECT_EQ(g.launches, 8u);
  EXPECT_EQ(steps_of(r, "instantiate"), 3u);
  EXPECT_EQ(steps_of(r, "destroy"), 4u);
  EXPECT_EQ(steps_of(r, "trim"), 4u);
  // Each instance maps its memory afresh (a new executable graph has no mapping): the pool model
  // follows the measured growth of every first launch.
  EXPECT_EQ(g.growth_bytes, 4 * 2 * granule);
  ASSERT_EQ(r.recorded->pools.size(), 1u);
  EXPECT_EQ(r.recorded->pools[0].high_bytes, 2 * granule);
}

// A, B, destroy A, destroy B, again and again: two records, not one per round.
TEST(RecordSession, AProgramThatAlternatesGraphsStaysBounded) {
  program p;
  for (std::uint64_t round = 0; round < 5000; ++round) {
    const std::uint64_t a = 0x100000 + 2 * round, b = a + 1;
    p.capture(0xA, a, graph_of("g=w2", base_of(0)));
    p.instantiate(a, a);
    p.capture(0xA, b, graph_of("g=w4", base_of(1)));
    p.instantiate(b, b);
    p.launch(a, 0xA, 40, round == 0 ? granule : 0);
    p.launch(b, 0xA, 40);
    p.destroy(a, a);
    p.destroy(b, b);
  }
  EXPECT_EQ(p.s.rec().graphs().size(), 2u);
  EXPECT_LE(p.s.rec().sequence().size(), max_sequence);
  const auto started = std::chrono::steady_clock::now();
  const profiler::report r = p.finish();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), time_bound(10.0));
  ASSERT_EQ(r.recorded->graphs.size(), 2u);
  EXPECT_EQ(r.recorded->graphs[0].instances, 5000u);
  EXPECT_EQ(r.recorded->graphs[1].instances, 5000u);
}

// More rounds than a graph keeps events for (graphMemoryFootprint's pattern, 16,000 rounds in the
// corpus): made, launched, destroyed, trimmed. What the pool holds at the end is the device's
// last reading (0 after the last trim), not the last event kept.
TEST(RecordSession, ThePoolsEndIsTheLastReadingWhateverTheBoundsDropped) {
  program p;
  for (std::uint64_t round = 0; round < 5000; ++round) {
    const std::uint64_t g = 0x100000 + round;
    p.capture(0xA, g, graph_of("g=w2", base_of(0)));
    p.instantiate(g, g);
    p.launch(g, 0xA, 40, granule);
    p.s.stream_synchronized(0xA);
    p.destroy(g, g);
    p.trim(0);
  }
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->pools.size(), 1u);
  EXPECT_EQ(r.recorded->pools[0].end_bytes, 0u);
  EXPECT_EQ(r.recorded->pools[0].high_bytes, granule);
  ASSERT_EQ(r.recorded->bills.size(), 1u);
  EXPECT_TRUE(r.recorded->bills[0].node_pool_seen);
  EXPECT_EQ(r.recorded->bills[0].node_pool_retained_bytes, 0u);
  // Its one record grew the pool once per instance: it costs the device one instance's growth.
  ASSERT_EQ(r.recorded->graphs.size(), 1u);
  EXPECT_EQ(r.recorded->graphs[0].instances, 5000u);
  EXPECT_GT(r.recorded->graphs[0].growth_bytes, 1000 * granule);
  EXPECT_EQ(profiler::graph_cost(r.recorded->graphs[0]), granule);
}

// A destroyed graph whose output is still allocated is not taken for a new instance: the pool
// model could not tell the two instances' allocations apart. Once the output is freed it is.
TEST(RecordSession, ADestroyedGraphWithALiveOutputIsNotTakenAgainUntilTheOutputIsFreed) {
  program p;
  const auto output_of = [](std::uint64_t k) { return base_of(k); };  // "g=o8": the output first
  p.capture(0xA, 0x10, graph_of("g=o8", base_of(0)));
  p.instantiate(0x100, 0x10, true);
  p.launch(0x100, 0xA, 300, granule);
  p.destroy(0x100, 0x10);
  p.capture(0xA, 0x11, graph_of("g=o8", base_of(1)));
  p.instantiate(0x101, 0x11, true);  // the first one's output lives: a record of its own
  p.launch(0x101, 0xA, 300, granule);
  EXPECT_EQ(p.s.rec().graphs().size(), 2u);
  p.s.device_free(output_of(0), 0xA);  // the first output freed outside
  p.destroy(0x101, 0x11);
  p.capture(0xA, 0x12, graph_of("g=o8", base_of(2)));
  p.instantiate(0x102, 0x12, true);  // the first record is free again, the second's output lives
  p.launch(0x102, 0xA, 300);
  EXPECT_EQ(p.s.rec().graphs().size(), 2u);
  const profiler::report r = p.finish();
  EXPECT_EQ(r.recorded->graphs[0].instances, 2u);
  EXPECT_EQ(r.recorded->graphs[1].instances, 1u);
  EXPECT_EQ(steps_of(r, "free"), 1u);
  // The free names the held allocation by its order, whatever its address in the instance.
  for (const auto& st : r.recorded->sequence) {
    if (st.op == "free") {
      EXPECT_EQ(st.held, 0);
    }
  }
}

// PyTorch's native allocator: a capture's pool growth is the graph's, instantiated or not
// (keep_graph=True instantiates at the first replay, which may never come).
TEST(RecordSession, EveryCaptureThatTookMemoryIsRecordedTheLastOneToo) {
  program p;
  profiler::graph_model kernels;
  kernels.nodes = {profiler::model_node{profiler::node_kind::kernel, 0, 0, 0, {}, std::nullopt}};
  p.capture(0xA, 0x10, kernels, {512 * MiB, 256 * MiB});
  p.instantiate(0x100, 0x10);
  p.launch(0x100, 0xA);
  p.capture(0xA, 0x11, kernels, {4 * MiB});   // never instantiated, destroyed
  p.s.graph_destroy(0x11);
  p.capture(0xA, 0x12, kernels, {});          // never instantiated, took nothing
  p.s.graph_destroy(0x12);
  p.capture(0xA, 0x13, kernels, {2 * MiB});   // never instantiated, alive at exit
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->graphs.size(), 3u);
  std::vector<std::uint64_t> took;
  for (const auto& g : r.recorded->graphs) {
    EXPECT_EQ(g.kind, "private_pool");
    took.push_back(g.capture_pool_growth_bytes);
  }
  EXPECT_EQ(took, (std::vector<std::uint64_t>{768 * MiB, 4 * MiB, 2 * MiB}));
  EXPECT_EQ(r.recorded->graphs[1].instances, 0u);
  bool noted = false;
  for (const auto& n : r.recorded->notes) noted = noted || n.find("1 captured graph(s) were never instantiated") == 0;
  EXPECT_TRUE(noted);
}

// A graph replayed in a tight loop waits for room in the launch queue: slow launches, nothing
// mapped, no other graph. They are slow launches, never remaps (the review saw 4094 "remaps").
TEST(RecordSession, ATightReplayLoopHasSlowLaunchesAndNoRemap) {
  program p;
  p.capture(0xA, 0x10, graph_of("g=w64", base_of(0)));
  p.instantiate(0x100, 0x10);
  p.launch(0x100, 0xA, 300, 2 * granule);
  for (int i = 0; i < 5000; ++i) p.launch(0x100, 0xA, i % 3 ? 4 : 60);
  const profiler::report r = p.finish();
  EXPECT_EQ(events_of_class(r, "remap_contention"), 0u);
  EXPECT_FALSE(has_diagnostic(r, "remap_contention"));
  const auto& g = r.recorded->graphs[0];
  EXPECT_EQ(g.launches, 5001u);
  EXPECT_GT(g.slow_launches, 0u);
  EXPECT_LE(g.events.size(), 3u) << "slow launches of an untouched graph are counted, not kept as events";
}

// 1000 graphs replayed back to back in one stream, slow launches among them: with nothing held
// between launches nothing takes another graph's granules, so no remap; with outputs held, the
// slow launches are kept for the pool model, which finds no contention either (each output
// occupies its own granule; the working granules are shared by aliasing).
class BackToBack : public ::testing::TestWithParam<bool> {};

TEST_P(BackToBack, ThousandGraphsReplayedBackToBackHaveNoRemapContention) {
  const bool outputs = GetParam();
  program p;
  const std::string spec = outputs ? "g=w2,o1" : "g=w2";
  for (std::uint64_t k = 0; k < 1000; ++k) {
    p.capture(0xA, 0x10 + k, graph_of(spec, base_of(k)));
    p.instantiate(0x100000 + k, 0x10 + k, outputs);
  }
  for (int round = 0; round < 3; ++round) {
    for (std::uint64_t k = 0; k < 1000; ++k) {
      const std::uint64_t grows = round == 0 && (k == 0 || outputs) ? granule : 0;
      p.launch(0x100000 + k, 0xA, round == 0 ? 200 : (k % 3 == 0 ? 40 : 5), grows);
    }
  }
  const profiler::report r = p.finish();
  EXPECT_EQ(events_of_class(r, "remap_contention"), 0u);
  EXPECT_FALSE(has_diagnostic(r, "remap_contention"));
  if (outputs) {
    EXPECT_GT(events_of_class(r, "slow_launch"), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutHeldOutputs, BackToBack, ::testing::Bool());

// Two graphs with outputs held, in one stream, where the second's output takes the granule the
// first had mapped for its working memory: the first's slow relaunch is a remap the model
// explains (P1 of the pool probe: 512 + outputs).
TEST(RecordSession, ASlowRelaunchIsARemapWhereAnotherGraphsOutputTookItsGranules) {
  program p;
  p.capture(0xA, 0x10, graph_of("g=w64,o1", base_of(0)));
  p.instantiate(0x100, 0x10, true);
  p.capture(0xA, 0x11, graph_of("g=o40", base_of(1)));
  p.instantiate(0x101, 0x11, true);
  p.launch(0x100, 0xA, 300, 3 * granule);  // 64 MiB working + the output's granule
  p.launch(0x101, 0xA, 300, 0);            // its 40 MiB output takes the first's free working granules
  p.launch(0x100, 0xA, 120, 0);            // slow: remaps its working memory from granules in the pool
  const profiler::report r = p.finish();
  EXPECT_EQ(events_of_class(r, "remap_contention"), 1u);
  EXPECT_TRUE(has_diagnostic(r, "remap_contention"));
  // The counter timeline says what the event says, so the report states each point once (in
  // the graphs' events) instead of the whole timeline beside them.
  std::size_t slow = 0, remap = 0;
  for (const auto& point : r.recorded->timeline) {
    slow += point.event == "launch:slow_launch";
    remap += point.event == "launch:remap_contention";
  }
  EXPECT_EQ(slow, 0u);
  EXPECT_EQ(remap, 1u);
  std::ifstream in(p.out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"timeline_from_events\": true"), std::string::npos);
}

// The graphs are analysed on several threads at exit (2000 graphs of a model's size spent most
// of the recording's end there): the report is the same, byte for byte, whatever the number of
// threads, with a graph too large to share (analysed on the exit's thread) among them.
TEST(RecordSession, TheReportIsTheSameAnalysedOnOneThreadOrSeveral) {
  program p;
  const std::vector<std::string> specs = {"g=w64", "g=w64,o1", "g=o40", "g=w2,w2,o8", "g=w512,o1"};
  for (std::uint64_t k = 0; k < 60; ++k) {
    p.capture(0xA + k % 3, 0x10 + k, graph_of(specs[k % specs.size()], base_of(k)));
    p.instantiate(0x1000 + k, 0x10 + k, k % 2 == 0);
    p.launch(0x1000 + k, 0xA + k % 3, 300, k % 4 == 0 ? granule : 0);
  }
  profiler::graph_model large = graph_of("g=w64", base_of(70));
  for (int n = 0; n < 5000; ++n) large.nodes.push_back(profiler::model_node{profiler::node_kind::kernel, 0, 0, 0, {}, std::nullopt});
  p.capture(0xA, 0x99, large);
  p.instantiate(0x1099, 0x99, true);
  p.launch(0x1099, 0xA, 300, 2 * granule);
  const auto report_on = [&p](unsigned threads) {
    assemble_options options;
    options.threads = threads;
    return profiler::to_json_string(assemble(p.s.rec(), profiler::environment{}, granule, recording_info{}, options));
  };
  const std::string one = report_on(1);
  ASSERT_NE(one.find("\"alloc_nodes\":"), std::string::npos);
  EXPECT_EQ(report_on(4), one);
  EXPECT_EQ(report_on(61), one);
}

TEST(RecordSession, SharedWorkRunsEveryItemOnceOnSeveralThreadsWithSignalsBlocked) {
  std::vector<std::size_t> items(200);
  for (std::size_t i = 0; i < items.size(); ++i) items[i] = 3 * i;
  std::vector<std::atomic<int>> calls(600);
  std::mutex m;
  std::set<std::thread::id> threads;
  std::atomic<bool> other_thread{false}, blocked_on_helpers{true};
  const std::thread::id caller = std::this_thread::get_id();
  profiler::for_each_on_threads(items, 4, [&](std::size_t i) {
    ++calls[i];
    {
      std::lock_guard<std::mutex> l(m);
      threads.insert(std::this_thread::get_id());
    }
    if (std::this_thread::get_id() != caller) {
      other_thread = true;
      sigset_t now;
      pthread_sigmask(SIG_BLOCK, nullptr, &now);
      if (!sigismember(&now, SIGINT) || !sigismember(&now, SIGTERM)) blocked_on_helpers = false;
    }
    // The first item waits (at most 5 s) for another thread to take one, so that the work is
    // shared: whichever thread took it (a helper may take every item before the caller starts).
    if (i == 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      const auto shared = [&] {
        std::lock_guard<std::mutex> l(m);
        return threads.size() >= 2;
      };
      while (!shared() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    }
  });
  for (std::size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i].load(), i % 3 == 0 ? 1 : 0) << i;
  EXPECT_TRUE(other_thread);
  EXPECT_GE(threads.size(), 2u);
  EXPECT_LE(threads.size(), 4u);
  EXPECT_TRUE(blocked_on_helpers);
  // The caller's own mask is as it was: SIGINT not blocked here.
  sigset_t mine;
  pthread_sigmask(SIG_BLOCK, nullptr, &mine);
  EXPECT_FALSE(sigismember(&mine, SIGINT));
  // One thread, or nothing to do: the caller alone.
  std::set<std::thread::id> alone;
  profiler::for_each_on_threads(items, 1, [&](std::size_t) { alone.insert(std::this_thread::get_id()); });
  EXPECT_EQ(alone, std::set<std::thread::id>{caller});
  profiler::for_each_on_threads({}, 8, [&](std::size_t) { ADD_FAILURE() << "called for no item"; });
}

// Completions: an event recorded after a launch and then synchronized (or queried done) tells
// the pool model that launch is complete, once; a loop of queries adds nothing; a synchronous
// copy completes blocking streams only.
TEST(RecordSession, CompletionsTheProgramSawReachTheSequenceOnce) {
  program p;
  p.gpu.blocking[0xB] = true;
  p.capture(0xA, 0x10, graph_of("g=w256", base_of(0)));
  p.instantiate(0x100, 0x10);
  p.capture(0xC, 0x11, graph_of("g=w256", base_of(1)));
  p.instantiate(0x101, 0x11);
  p.launch(0x100, 0xA, 300, 8 * granule);
  p.s.event_recorded(0xE1, 0xA);
  p.launch(0x100, 0xA, 5);  // after the event: not covered by it
  for (int i = 0; i < 100; ++i) p.s.event_completed(0xE1);
  p.launch(0x101, 0xC, 300, 8 * granule);
  p.s.copied(1ull << 48, std::nullopt, false);  // to the host: blocking streams only (none ran)
  p.launch(0x100, 0xB, 5);
  p.s.copied(0x1000, std::nullopt, false);       // device to device: completes nothing
  p.s.copied(1ull << 48, true, false);
  std::vector<std::string> syncs;
  for (const auto& e : p.s.rec().sequence()) {
    if (e.op == 'S') syncs.push_back(std::to_string(e.stream) + ":" + std::to_string(e.upto));
  }
  // Streams are labelled in order of appearance: 0xA is 1, 0xC is 2, the legacy stream (the first
  // copy's) 3, 0xB 4 (blocking).
  EXPECT_EQ(syncs, (std::vector<std::string>{"1:1", "4:-1"}));
  const profiler::report r = p.finish();
  bool upto = false;
  for (const auto& st : r.recorded->sequence) upto = upto || (st.op == "sync" && st.upto == 1);
  EXPECT_TRUE(upto);
}

// A stream's blocking flag is not asked while the stream is captured (the driver's answer there
// invalidates the capture): an event recorded into a capture leaves the flag unknown, and a
// synchronous copy then completes nothing of that stream; once the capture has ended, the
// stream's next call asks, and the next copy completes its work.
TEST(RecordSession, AStreamUnderCaptureIsNotAskedForItsFlagsUntilItsCaptureEnds) {
  program p;
  p.gpu.blocking[0xB] = true;
  p.capture(0xA, 0x10, graph_of("g=w256", base_of(0)));
  p.instantiate(0x100, 0x10);
  p.launch(0x100, 0xB, 300, 8 * granule);  // 0xB (label 2) not yet known: asked, blocking
  EXPECT_EQ(p.gpu.flag_queries[0xB], 1);
  p.capture(0xC, 0x11, graph_of("g=w256", base_of(1)));
  p.instantiate(0x101, 0x11);
  p.launch(0x101, 0xA, 300, 8 * granule);  // work awaiting completion on 0xA (label 1)
  p.gpu.under_capture.insert(0xD);          // 0xD joins a capture (the program's fork into it)
  p.s.event_recorded(0xE1, 0xD);
  p.s.event_recorded(0xE2, 0xD);
  EXPECT_EQ(p.gpu.flag_queries[0xD], 2) << "asked at each call while the driver cannot say";
  p.gpu.under_capture.erase(0xD);
  p.s.event_recorded(0xE3, 0xD);            // its first call after the capture: asked, non-blocking
  p.s.event_recorded(0xE4, 0xD);
  EXPECT_EQ(p.gpu.flag_queries[0xD], 3) << "known: never asked again";
  EXPECT_EQ(p.gpu.flag_queries[0xB], 1);
  p.s.copied(1ull << 48, true, false);      // completes the blocking stream 0xB only
  std::vector<std::string> syncs;
  for (const auto& e : p.s.rec().sequence()) {
    if (e.op == 'S') syncs.push_back(std::to_string(e.stream) + ":" + std::to_string(e.upto));
  }
  // Labels in order of appearance: 0xA 1 (the first capture), 0xB 2, 0xC 3, 0xD 4, legacy 5.
  EXPECT_EQ(syncs, (std::vector<std::string>{"2:-1"}));
}

// Told the name gmemprof record gives its report, the session leaves the report's summary beside
// it (the lines gmemprof would print after reading it again); told nothing, no summary.
TEST(RecordSession, TheReportsSummaryIsWrittenBesideItForGmemprofRecord) {
  for (const bool told : {true, false}) {
    program p;
    if (told) p.s.summarize_as("serve-record.json");
    p.capture(0xA, 0x10, graph_of("g=w2", base_of(0)));
    p.instantiate(0x100, 0x10);
    p.launch(0x100, 0xA, 4, 32ull << 20);
    const profiler::report r = p.finish();
    const auto summary = read_summary(p.out + ".summary", std::filesystem::file_size(p.out));
    if (!told) {
      EXPECT_FALSE(std::filesystem::exists(p.out + ".summary"));
      continue;
    }
    ASSERT_TRUE(summary.has_value());
    // The library's lines are gmemprof's own about the report, and what the report's end took.
    const end_times& end = p.s.end();
    EXPECT_EQ(*summary, summary_lines(r, "serve-record.json", &end));
    EXPECT_EQ(summary->front(), "wrote serve-record.json");
    EXPECT_GT(end.analysis_s, 0);
    EXPECT_GT(end.text_s, 0);
    EXPECT_GT(end.read_back_s, 0);
    EXPECT_GT(end.write_s, 0);
    EXPECT_GT(end.summary_s, 0);  // the lines' own time is in the line
    EXPECT_GE(end.threads, 1u);
    const std::vector<std::string> without = summary_lines(r, "serve-record.json");
    ASSERT_EQ(summary->size(), without.size() + 1);
    EXPECT_EQ(std::count(summary->begin(), summary->end(), end_line(end)), 1);
    EXPECT_EQ(std::count(without.begin(), without.end(), end_line(end)), 0);
    std::filesystem::remove(p.out + ".summary");
  }
}

// What the report's end took, as gmemprof record prints it: seconds from one second, each part
// named, the threads counted.
TEST(RecordSession, TheEndsLineNamesEachPartAndItsThreads) {
  end_times end;
  end.finish_s = 0.002;
  end.analysis_s = 0.7304;
  end.threads = 2;
  end.text_s = 0.29;
  end.read_back_s = 0.36;
  end.write_s = 0.0042;
  end.summary_s = 0.095;
  EXPECT_EQ(end_line(end),
            "the report took 1.48 s at the program's exit: the last readings 2.0 ms, analysis 730.4 ms on 2 threads, "
            "its text 290.0 ms, read back 360.0 ms, written 4.2 ms, this summary 95.0 ms");
  end.threads = 1;
  end.analysis_s = 0.0005;
  EXPECT_NE(end_line(end).find("analysis 500 us on 1 thread,"), std::string::npos) << end_line(end);
}

// The program's exit() from a signal handler that interrupted a callback of the same thread,
// which holds the session's lock: the exit path gives up at once, it does not deadlock.
TEST(RecordSession, ExitOnTheThreadThatHoldsTheLockWritesNothingAndDoesNotWait) {
  program p;
  p.capture(0xA, 0x10, graph_of("g=w2", base_of(0)));
  p.instantiate(0x100, 0x10);
  bool wrote = true;
  std::string why;
  double waited_s = -1;
  p.gpu.inside_lock = [&] {
    const auto t = std::chrono::steady_clock::now();
    wrote = p.s.write_at_exit(&why, 5.0);
    waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  p.launch(0x100, 0xF00D);  // a stream seen for the first time: its flags asked under the lock
  EXPECT_FALSE(wrote);
  EXPECT_NE(why.find("inside a CUDA call"), std::string::npos) << why;
  EXPECT_LT(waited_s, 1.0);
  EXPECT_NO_THROW((void)p.finish());  // and later, from a clean exit, it writes
}

TEST(RecordSession, ExitWaitsForAnotherThreadsHoldAtMostItsWait) {
  program p;
  p.capture(0xA, 0x10, graph_of("g=w2", base_of(0)));
  p.instantiate(0x100, 0x10);
  std::promise<void> inside, release;
  std::shared_future<void> released = release.get_future().share();
  p.gpu.inside_lock = [&] {
    inside.set_value();
    released.wait();
  };
  std::thread other([&] { p.launch(0x100, 0xBEEF); });
  inside.get_future().wait();
  std::string why;
  const auto t = std::chrono::steady_clock::now();
  EXPECT_FALSE(p.s.write_at_exit(&why, 0.2));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  EXPECT_GE(waited, 0.2);
  EXPECT_LT(waited, 2.0);
  EXPECT_NE(why.find("another thread"), std::string::npos) << why;
  release.set_value();
  other.join();
  EXPECT_NO_THROW((void)p.finish());
}

// A fatal signal's report: partial, skeletons only (no analysis, no pool model), written in a
// time bounded by the graphs' size, and readable.
TEST(RecordSession, TheSignalReportIsPartialWithSkeletonsOnlyAndReadsBack) {
  program p;
  std::string wide = "g=";
  for (int i = 0; i < 40; ++i) wide += std::string(i ? "," : "") + "w2";
  for (std::uint64_t k = 0; k < 400; ++k) {
    p.capture(0xA, 0x10 + k, graph_of(wide, base_of(k)));
    p.instantiate(0x1000 + k, 0x10 + k);
    p.launch(0x1000 + k, 0xA, 300, k == 0 ? 3 * granule : 0);
  }
  const auto t = std::chrono::steady_clock::now();
  ASSERT_TRUE(p.s.write_on_signal(15, "SIGTERM"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(), time_bound(5.0));
  const profiler::report r = profiler::read_report(p.out);
  EXPECT_TRUE(r.recorded->partial);
  EXPECT_EQ(r.recorded->partial_reason, "signal 15 (SIGTERM)");
  ASSERT_EQ(r.scenarios.size(), 400u);
  for (const auto& s : r.scenarios) {
    EXPECT_EQ(s.status, profiler::scenario_status::skipped);
    EXPECT_EQ(s.skeletons.size(), 1u);
  }
  EXPECT_TRUE(r.recorded->pools.empty());
}

// A report written early (a signal, Python's end) makes the statics of the report code; the
// process's exit handler was registered before them, so their destructors run first. The report
// written at exit must not use what they destroyed (it crashed there on an H200, reading back a
// report through a destroyed empty JSON array). Run in a fresh process, where the report code's
// statics are first made by the early report.
program* early_program = nullptr;

void write_again_at_exit() {
  std::string why;
  const bool wrote = early_program->s.write_at_exit(&why);
  bool whole = false;
  try {
    const profiler::report r = profiler::read_report(early_program->out);
    whole = r.recorded && !r.recorded->partial && r.scenarios.size() == 2 && !profiler::format_report(r).empty();
  } catch (const std::exception&) {
  }
  std::_Exit(wrote && whole ? 0 : 1);
}

TEST(RecordSessionDeathTest, AReportWrittenEarlyLeavesTheReportAtExitWhole) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        early_program = new program;  // never destroyed, as the injected session
        program& p = *early_program;
        p.capture(0xA, 0x10, graph_of("g=w2", base_of(0)));
        p.instantiate(0x100, 0x10);
        p.launch(0x100, 0xA, 300, granule);
        std::atexit(write_again_at_exit);
        if (!p.s.write_on_signal(2, "SIGINT")) std::_Exit(2);
        p.capture(0xA, 0x11, graph_of("g=w4", base_of(1)));
        p.instantiate(0x101, 0x11);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// A child of fork() records nothing and writes nothing: the parent's report is the parent's.
TEST(RecordSession, AForkedChildWritesNothing) {
  program p;
  p.capture(0xA, 0x10, graph_of("g=w2", base_of(0)));
  p.s.forked();
  p.instantiate(0x100, 0x10);
  std::string why;
  EXPECT_FALSE(p.s.write_at_exit(&why));
  EXPECT_FALSE(std::filesystem::exists(p.out));
}

// Launches of several threads at once, each its own graph and stream: every launch counted, the
// report reads back (run under ThreadSanitizer by tools/sanitize.sh).
TEST(RecordSession, ThreadsLaunchingAtOnceAreAllRecorded) {
  program p;
  constexpr int threads = 4, launches = 2000;
  for (int k = 0; k < threads; ++k) {
    p.capture(0xA0 + k, 0x10 + k, graph_of("g=w2", base_of(k)));
    p.instantiate(0x100 + k, 0x10 + k);
  }
  std::vector<std::thread> pool;
  for (int k = 0; k < threads; ++k) {
    pool.emplace_back([&p, k] {
      for (int i = 0; i < launches; ++i) {
        p.s.launch_enter(0x100 + k, 0xA0 + k);
        p.s.launch_exit(0x100 + k, "");
        if (i % 100 == 0) p.s.stream_synchronized(0xA0 + k);
      }
    });
  }
  for (auto& t : pool) t.join();
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->graphs.size(), static_cast<std::size_t>(threads));
  for (const auto& g : r.recorded->graphs) EXPECT_EQ(g.launches, static_cast<std::uint64_t>(launches));
}

// The writer against the reader: random programs over graphs of several shapes (outputs held or
// not, captures that take memory, re-instantiations, frees, trims, syncs, events, refused
// calls, several streams), each report written at exit and read back by gmemprof's reader, then
// shown, checked against itself and drawn. A report gmemprof cannot read is never written.
TEST(RecordSession, EveryReportOfRandomProgramsReadsBackAndShows) {
  const std::vector<std::string> specs = {"g=w64", "g=w64,o1", "g=o40", "g=w2,w2,o8", ""};
  for (unsigned seed = 1; seed <= 120; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const auto pick = [&rng](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    program p(static_cast<name_source>(seed % 3));
    struct live_exec {
      std::uint64_t exec, graph;
      std::size_t spec;
    };
    std::vector<live_exec> live;
    std::uint64_t next = 1;
    std::uint64_t reserved = 0;
    for (int step = 0; step < 150; ++step) {
      const std::uint64_t stream = 0xA0 + pick(3);
      switch (pick(11)) {
        case 0:
        case 1: {  // capture and instantiate
          const std::size_t spec = pick(specs.size());
          const std::uint64_t graph = 0x1000 + next, exec = 0x100000 + next;
          ++next;
          profiler::graph_model m;
          std::vector<std::uint64_t> taken;
          if (specs[spec].empty()) {
            m.nodes = {profiler::model_node{profiler::node_kind::kernel, 0, 0, 0, {}, std::nullopt}};
            if (pick(2)) taken = {2 * MiB * (1 + pick(4))};
          } else {
            m = graph_of(specs[spec], base_of(next));
          }
          if (pick(8) == 0) p.gpu.stack = {"program!site" + std::to_string(pick(3))};
          p.capture(stream, graph, m, taken);
          if (pick(6) == 0) break;  // never instantiated
          p.instantiate(exec, graph, pick(2));
          live.push_back({exec, graph, spec});
          break;
        }
        case 2:
        case 3:
        case 4: {  // launch, sometimes growing the pool, sometimes slow, sometimes refused
          if (live.empty()) break;
          const live_exec& e = live[pick(live.size())];
          if (pick(10) == 0) {
            p.s.launch_enter(e.exec, stream);
            p.s.launch_exit(e.exec, "CUDA_ERROR_INVALID_VALUE");
            break;
          }
          const std::uint64_t grows = pick(3) == 0 ? granule * (1 + pick(2)) : 0;
          reserved += grows;
          p.launch(e.exec, stream, pick(4) == 0 ? 80 : 5, grows);
          break;
        }
        case 5:
          if (!live.empty()) {
            const live_exec& e = live[pick(live.size())];
            p.s.upload_enter(e.exec, stream);
            p.tick(30);
            p.s.upload_exit(e.exec, "");
          }
          break;
        case 6:  // free an output outside its graph
          if (!live.empty()) p.s.device_free(base_of(pick(next + 1)), stream);
          break;
        case 7: {  // destroy
          if (live.empty()) break;
          const std::size_t k = pick(live.size());
          p.destroy(live[k].exec, pick(2) ? live[k].graph : 0);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
          break;
        }
        case 8:
          if (pick(3) == 0) {
            reserved = reserved / 2 / granule * granule;
            p.trim(reserved);
          } else {
            p.s.device_synchronized();
          }
          break;
        case 9:
          p.s.event_recorded(0xE0 + pick(3), stream);
          break;
        default:
          if (pick(2)) {
            p.s.event_completed(0xE0 + pick(3));
          } else {
            p.s.stream_synchronized(stream);
          }
      }
    }
    const profiler::report r = p.finish();
    ASSERT_TRUE(r.recorded.has_value());
    EXPECT_NO_THROW((void)profiler::format_report(r));
    EXPECT_NO_THROW((void)profiler::trace_json(r));
    EXPECT_NO_THROW((void)profiler::html_page(r, {}));
    EXPECT_NO_THROW((void)profiler::compare_reports(r, r, profiler::tolerances{}));
  }
}

}  // namespace
}  // namespace gmem::record::test
