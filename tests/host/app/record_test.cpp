// Record mode's plain parts: launch classification, naming, the recorder's bookkeeping, the
// report it assembles (read back as a report), partial reports, and gmemprof record's exit
// status pass-through.
#include <iterator>
#include <tuple>
#include <gtest/gtest.h>

#include <random>
#include <cstdio>
#include <regex>
#include <set>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmem/profiler/report_io.hpp"
#include "gmemprof/record_command.hpp"
#include "record/recording_summary.hpp"
#include "record/recording_report.hpp"

namespace gmem::record {
namespace {

using profiler::graph_model;
using profiler::model_node;
using profiler::node_kind;

counters with_reserved(std::uint64_t reserved, std::uint64_t used = 0) {
  counters c;
  c.used_current = used;
  c.used_high = used;
  c.reserved_current = reserved;
  c.reserved_high = reserved;
  return c;
}

// alloc(a) -> free(a) -> alloc(b) -> free(b): two 2 MiB allocations that share memory (the
// driver gave b a's address, as it does when b's dependencies existed at its creation).
graph_model two_sequential_allocs() {
  graph_model g;
  model_node a{node_kind::mem_alloc, 0x1000, 2u << 20, 0, {}, std::nullopt};
  model_node fa{node_kind::mem_free, 0x1000, 0, 0, {}, std::nullopt};
  model_node b{node_kind::mem_alloc, 0x1000, 2u << 20, 0, {}, std::nullopt};
  model_node fb{node_kind::mem_free, 0x1000, 0, 0, {}, std::nullopt};
  g.nodes = {a, fa, b, fb};
  g.edges = {{0, 1}, {1, 2}, {2, 3}};
  return g;
}

graph_model kernels_only() {
  graph_model g;
  g.nodes = {model_node{node_kind::kernel, 0, 0, 0, {}, std::nullopt}};
  return g;
}

// gmemprof check matches graphs across runs by their identities: the hash of each node's and edge's
// text must stay the one earlier gmem computed from made texts (this reference), for random
// graphs, with and without sizes and a call stack's hash to start from.
TEST(RecordIdentity, IsTheHashEarlierRecordingsGaveTheSameStructure) {
  const auto reference = [](const graph_record& g, const profiler::flat_graph& flat, bool sizes) {
    std::uint64_t h = g.instantiate_stack ? g.instantiate_stack->hash : 0xcbf29ce484222325ull;
    const auto mix = [&h](const std::string& text) {
      for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
      h = (h ^ 0xff) * 0x100000001b3ull;
    };
    for (const auto& n : flat.nodes) {
      mix(std::string(profiler::to_string(n.kind)) + (sizes ? ":" + std::to_string(n.bytes) : std::string()));
    }
    for (std::size_t u = 0; u < flat.successors.size(); ++u) {
      for (std::size_t v : flat.successors[u]) mix(std::to_string(u) + ">" + std::to_string(v));
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "site:%016llx", static_cast<unsigned long long>(h));
    return std::string(buf);
  };
  std::mt19937_64 random(35);
  const profiler::node_kind kinds[] = {profiler::node_kind::kernel, profiler::node_kind::mem_alloc,
                                       profiler::node_kind::mem_free, profiler::node_kind::memset,
                                       profiler::node_kind::empty};
  std::set<std::string> seen;
  for (int k = 0; k < 200; ++k) {
    profiler::flat_graph flat;
    const std::size_t n = 1 + random() % 400;
    flat.nodes.resize(n);
    flat.successors.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      flat.nodes[i].kind = kinds[random() % 5];
      flat.nodes[i].bytes = random() % 3 == 0 ? random() : random() % 4096;
      for (std::size_t j = i + 1; j < n && j < i + 4; ++j) {
        if (random() % 2) flat.successors[i].push_back(j);
      }
    }
    graph_record g;
    if (k % 2) g.instantiate_stack = make_stack({"libfoo.so+0x" + std::to_string(k), "main+0x10"});
    for (const bool sizes : {true, false}) {
      const std::string id = graph_identity(g, flat, sizes);
      EXPECT_EQ(id, reference(g, flat, sizes)) << "graph " << k << (sizes ? " with sizes" : " without sizes");
      seen.insert(id);
    }
  }
  EXPECT_GT(seen.size(), 390u);  // told apart: 400 identities of 200 random graphs
  graph_record named;
  named.nvtx = "decode";
  EXPECT_EQ(graph_identity(named, profiler::flat_graph{}, true), "nvtx:decode");
}

TEST(RecordClassify, FirstLaunchWithAndWithoutUpload) {
  launch_history h;
  EXPECT_EQ(classify(h, std::nullopt, std::nullopt, false), launch_class::first_launch);
  h.uploaded = true;
  EXPECT_EQ(classify(h, std::nullopt, std::nullopt, false), launch_class::first_launch_after_upload);
}

TEST(RecordClassify, LaunchedBeforeAndNothingMappedIsSteady) {
  launch_history h;
  h.launched_before = true;
  EXPECT_EQ(classify(h, std::nullopt, std::nullopt, false), launch_class::steady);
  EXPECT_EQ(classify(h, with_reserved(4 << 20), with_reserved(4 << 20), false), launch_class::steady);
  // Slow with no trim and no stream switch and the pool unchanged proves nothing by itself: a
  // launch waits for room in a full launch queue (2934 of 4000 back-to-back launches took 15 us
  // or more and none mapped, C10 of reports/gpu-runs/2026-11-25-H100-completion-probe.txt). It
  // is a slow launch until the pool model finds that another graph's allocation had taken the
  // granules it mapped (remaps from granules already in the pool took 19 to 240 us, P1, P2, P18).
  EXPECT_EQ(classify(h, with_reserved(4 << 20), with_reserved(4 << 20), true), launch_class::slow_launch);
  // Growth measured while another thread's call overlapped is that call's as much as this one's.
  EXPECT_EQ(classify(h, with_reserved(0), with_reserved(4 << 20), false, true), launch_class::steady);
  EXPECT_EQ(classify(h, with_reserved(0), with_reserved(4 << 20), true, true), launch_class::slow_launch);
  // A graph without memory nodes has nothing to remap.
  h.graph_memory = false;
  EXPECT_EQ(classify(h, with_reserved(0), with_reserved(4 << 20), true), launch_class::slow_launch);
  EXPECT_EQ(classify(h, with_reserved(0), with_reserved(4 << 20), false), launch_class::steady);
}

TEST(RecordClassify, ReservedGrowingInsideTheCallIsARemapAttributedToItsCause) {
  launch_history h;
  h.launched_before = true;
  const counters before = with_reserved(0), after = with_reserved(2 << 20);
  EXPECT_EQ(classify(h, before, after, false), launch_class::remap_contention);
  h.stream_changed = true;
  EXPECT_EQ(classify(h, before, after, false), launch_class::remap_after_stream_switch);
  h.trimmed_since_last = true;
  EXPECT_EQ(classify(h, before, after, false), launch_class::remap_after_trim);
}

TEST(RecordClassify, SlowLaunchAfterStreamSwitchIsARemapEvenWithoutGrowth) {
  launch_history h;
  h.launched_before = true;
  h.stream_changed = true;
  EXPECT_EQ(classify(h, with_reserved(2 << 20), with_reserved(2 << 20), true),
            launch_class::remap_after_stream_switch);
  EXPECT_EQ(classify(h, with_reserved(2 << 20), with_reserved(2 << 20), false), launch_class::steady);
}

TEST(RecordGranularity, OnlyAWholeNumberOfPagesIsTaken) {
  EXPECT_EQ(granularity_from_text("33554432"), 33554432u);  // 32 MiB, as measured on H100
  EXPECT_EQ(granularity_from_text("4096"), 4096u);
  EXPECT_EQ(granularity_from_text(nullptr), 0u);
  EXPECT_EQ(granularity_from_text(""), 0u);
  EXPECT_EQ(granularity_from_text("0"), 0u);
  EXPECT_EQ(granularity_from_text("4097"), 0u);       // not whole pages
  EXPECT_EQ(granularity_from_text("32MiB"), 0u);      // bytes only
  EXPECT_EQ(granularity_from_text("-4096"), 0u);
  EXPECT_EQ(granularity_from_text("99999999999999999999999"), 0u);  // no wrap-around
}

TEST(RecordNaming, NvtxThenStreamThenSequence) {
  EXPECT_EQ(recorder::make_name(name_source::nvtx, "fwd_bwd", "stream 2", 3, 7), "fwd_bwd");
  EXPECT_EQ(recorder::make_name(name_source::nvtx, "", "stream 2", 3, 7), "stream 2 #3");
  EXPECT_EQ(recorder::make_name(name_source::nvtx, "", "", 0, 7), "graph 7");
  EXPECT_EQ(recorder::make_name(name_source::stream, "fwd_bwd", "stream 2", 3, 7), "stream 2 #3");
  EXPECT_EQ(recorder::make_name(name_source::sequence, "fwd_bwd", "stream 2", 3, 7), "graph 7");
  EXPECT_EQ(parse_name_source("stream"), name_source::stream);
  EXPECT_FALSE(parse_name_source("nvtx2"));
}

TEST(RecordNaming, CapturesAreNamedByTheirStreamInOrderAndRepeatedNamesStayApart) {
  recorder r;
  r.on_capture_begin(0xAAA, "");
  r.on_capture_end(0xAAA, 0x10);
  r.on_capture_begin(0xBBB, "step");
  r.on_capture_end(0xBBB, 0x20);
  r.on_capture_begin(0xAAA, "");
  r.on_capture_end(0xAAA, 0x30);
  r.on_capture_begin(0xBBB, "step");
  r.on_capture_end(0xBBB, 0x40);
  for (std::uint64_t g : {0x10, 0x20, 0x30, 0x40}) {
    r.on_instantiate(g + 1, g, two_sequential_allocs(), "", 0, 1, with_reserved(0), with_reserved(0));
  }
  ASSERT_EQ(r.graphs().size(), 4u);
  EXPECT_EQ(r.graphs()[0].name, "stream 1 #1");
  EXPECT_EQ(r.graphs()[1].name, "step");
  EXPECT_EQ(r.graphs()[2].name, "stream 1 #2");
  EXPECT_EQ(r.graphs()[3].name, "step (2)");
}

TEST(RecordRecorder, GraphsWithoutMemoryNodesAreCountedNotTracked) {
  recorder r;
  r.on_instantiate(0x2, 0x1, kernels_only(), "", 0, 5, std::nullopt, std::nullopt);
  EXPECT_FALSE(r.tracks(0x2));
  EXPECT_EQ(r.graphs_without_memory_nodes(), 1u);
  r.on_launch(0x2, 1, 1, 2, std::nullopt, std::nullopt);  // ignored
  EXPECT_TRUE(r.graphs().empty());
}

// The life of one graph: instantiate, first launch maps 4 MiB, three steady launches, a trim,
// a launch that maps again, then a launch into another stream.
recorder one_graph_life() {
  recorder r;
  r.on_capture_begin(0xAAA, "");
  r.on_capture_end(0xAAA, 0x10);
  r.on_instantiate(0x11, 0x10, two_sequential_allocs(), "", 1, 30, with_reserved(0), with_reserved(0));
  const std::uint64_t s1 = r.stream_label(0xAAA);
  EXPECT_FALSE(r.history(0x11, s1).launched_before);
  r.on_launch(0x11, s1, 2, 1200, with_reserved(0), with_reserved(2 << 20, 2 << 20));
  for (int i = 0; i < 3; ++i) r.on_launch(0x11, s1, 3 + i, 4 + i, std::nullopt, std::nullopt);
  r.on_trim(0, 10, 80, with_reserved(2 << 20), with_reserved(0));
  EXPECT_TRUE(r.history(0x11, s1).trimmed_since_last);
  r.on_launch(0x11, s1, 11, 900, with_reserved(0), with_reserved(2 << 20, 2 << 20));
  const std::uint64_t s2 = r.stream_label(0xCCC);
  EXPECT_TRUE(r.history(0x11, s2).stream_changed);
  r.on_launch(0x11, s2, 12, 600, with_reserved(2 << 20), with_reserved(2 << 20));
  return r;
}

TEST(RecordRecorder, KeepsEveryNonSteadyEventAndTheSteadyHostTimes) {
  const recorder r = one_graph_life();
  ASSERT_EQ(r.graphs().size(), 1u);
  const graph_record& g = r.graphs()[0];
  EXPECT_EQ(g.launches, 6u);
  EXPECT_EQ(g.steady_host_us, (std::vector<double>{4, 5, 6}));
  std::vector<std::string> seen;
  for (const auto& e : g.events) seen.push_back(e.kind + (e.cls.empty() ? "" : ":" + e.cls));
  EXPECT_EQ(seen, (std::vector<std::string>{"instantiate", "launch:first_launch", "trim",
                                            "launch:remap_after_trim",
                                            "launch:remap_after_stream_switch"}));
  // Timeline: instantiate, first launch, trim, remap, stream switch.
  ASSERT_EQ(r.timeline().size(), 5u);
  EXPECT_EQ(r.timeline()[2].event, "trim");
  EXPECT_EQ(r.timeline()[2].values.reserved_current, 0u);
  EXPECT_EQ(r.last_counters(0)->reserved_current, 2u << 20);
}

// The fast path for steady launches (what a recorded launch costs) records exactly what on_launch would,
// and declines everything else: first launch, the first steady one, slow, after a trim.
TEST(RecordRecorder, SteadyFastPathMatchesOnLaunchAndDeclinesTheRest) {
  recorder fast, slow_path;
  for (recorder* r : {&fast, &slow_path}) {
    r->on_instantiate(0x11, 0x10, two_sequential_allocs(), "", 1, 30, with_reserved(0), with_reserved(0));
  }
  auto p = fast.plan_launch(0x11, 0xAAA);
  EXPECT_FALSE(fast.on_steady_launch(p, 5));  // first launch: counters must be read
  for (recorder* r : {&fast, &slow_path}) {
    r->on_launch(0x11, r->stream_label(0xAAA), 2, 900, with_reserved(0), with_reserved(2 << 20));
  }
  p = fast.plan_launch(0x11, 0xAAA);
  EXPECT_FALSE(fast.on_steady_launch(p, 5));  // no steady sample yet: on_launch sets the median
  fast.on_launch(0x11, p.stream, 3, 5, std::nullopt, std::nullopt);
  slow_path.on_launch(0x11, p.stream, 3, 5, std::nullopt, std::nullopt);
  for (double us : {4.0, 6.0, 7.5}) {
    p = fast.plan_launch(0x11, 0xAAA);
    EXPECT_TRUE(fast.on_steady_launch(p, us));
    slow_path.on_launch(0x11, p.stream, 4, us, std::nullopt, std::nullopt);
  }
  p = fast.plan_launch(0x11, 0xAAA);
  EXPECT_FALSE(fast.on_steady_launch(p, map_floor_us));  // maybe mapped: on_launch decides
  EXPECT_EQ(fast.graphs()[0].steady_host_us, slow_path.graphs()[0].steady_host_us);
  EXPECT_EQ(fast.graphs()[0].launches, slow_path.graphs()[0].launches);
  EXPECT_EQ(fast.graphs()[0].steady_median_us, slow_path.graphs()[0].steady_median_us);
  EXPECT_EQ(fast.graphs()[0].events.size(), slow_path.graphs()[0].events.size());
  // A trim between plan and record (another thread): declined.
  p = fast.plan_launch(0x11, 0xAAA);
  fast.on_trim(0, 10, 80, with_reserved(2 << 20), with_reserved(0));
  EXPECT_FALSE(fast.on_steady_launch(p, 5));
}

TEST(RecordRecorder, UploadMakesTheFirstLaunchFirstAfterUpload) {
  recorder r;
  r.on_instantiate(0x11, 0x10, two_sequential_allocs(), "fwd", 1, 30, with_reserved(0), with_reserved(0));
  r.on_upload(0x11, 1, 2, 1100, with_reserved(0), with_reserved(2 << 20));
  r.on_launch(0x11, 1, 3, 5, with_reserved(2 << 20), with_reserved(2 << 20));
  EXPECT_EQ(r.graphs()[0].events.back().cls, "first_launch_after_upload");
  EXPECT_EQ(r.graphs()[0].name, "fwd");
}

TEST(RecordRecorder, InstantiatedWithUploadMakesTheFirstLaunchFirstAfterUpload) {
  recorder r;
  r.on_instantiate(0x11, 0x10, two_sequential_allocs(), "", 1, 900, with_reserved(0), with_reserved(2 << 20));
  r.mark_uploaded(0x11, 1);
  r.on_launch(0x11, 1, 3, 5, with_reserved(2 << 20), with_reserved(2 << 20));
  EXPECT_EQ(r.graphs()[0].events.back().cls, "first_launch_after_upload");
}

TEST(RecordRecorder, PlansCounterReadsOnlyForLaunchesThatMayMap) {
  recorder r;
  r.on_instantiate(0x11, 0x10, two_sequential_allocs(), "", 1, 30, with_reserved(0), with_reserved(0));
  EXPECT_FALSE(r.plan_launch(0x99, 0xAAA).tracked);
  auto p = r.plan_launch(0x11, 0xAAA);
  EXPECT_TRUE(p.tracked);
  EXPECT_TRUE(p.read_counters);  // first launch
  r.on_launch(0x11, p.stream, 2, 900, with_reserved(0), with_reserved(2 << 20));
  EXPECT_FALSE(r.plan_launch(0x11, 0xAAA).read_counters);  // steady
  EXPECT_TRUE(r.plan_launch(0x11, 0xBBB).read_counters);   // another stream
  r.on_trim(0, 3, 50, with_reserved(2 << 20), with_reserved(0));
  EXPECT_TRUE(r.plan_launch(0x11, 0xAAA).read_counters);   // after a trim
  // Slow relative to the steady median: 10 steady launches of 3 us, then 40 us and 60 us.
  for (int i = 0; i < 10; ++i) r.on_launch(0x11, p.stream, 4, 3, std::nullopt, std::nullopt);
  EXPECT_FALSE(r.slow(0x11, 14));  // under map_floor_us: steady
  EXPECT_TRUE(r.slow(0x11, 19));   // a remap of one granule took 19 us (the pool probe)
  EXPECT_TRUE(r.slow(0x11, 60));
  // With a steady median of 8 us (refreshed at the 64th steady launch: 9 above, the first after
  // the trim was recorded as an event), 20 us is noise, 25 us
  // a remap.
  for (int i = 0; i < 55; ++i) r.on_launch(0x11, p.stream, 5, 8, std::nullopt, std::nullopt);
  EXPECT_FALSE(r.slow(0x11, 20));
  EXPECT_TRUE(r.slow(0x11, 25));
}

TEST(RecordReport, AssemblesAScenarioPerGraphThatReadsBackAsAReport) {
  const recorder r = one_graph_life();
  profiler::environment env;
  env.device_name = "Test GPU";
  const profiler::report rep = assemble(r, env, 2u << 20);
  ASSERT_EQ(rep.scenarios.size(), 1u);
  const auto& s = rep.scenarios[0];
  EXPECT_EQ(s.key(), "stream 1 #1[source=recorded]");
  EXPECT_EQ(s.analysis.alloc_nodes, 2u);
  EXPECT_EQ(s.analysis.requested_bytes, 4u << 20);
  EXPECT_EQ(s.analysis.lower_bound_bytes, 2u << 20);  // the two never live together
  // The graph's own reservation, alone (the reuse model): 2 MiB, whatever the device held.
  EXPECT_EQ(s.analysis.reserved_high_bytes, 2u << 20);
  std::vector<std::string> phases;
  for (const auto& c : s.launch_costs) phases.push_back(c.phase);
  EXPECT_EQ(phases, (std::vector<std::string>{"instantiate", "first_launch", "trim",
                                              "remap_after_trim", "remap_after_stream_switch",
                                              "steady"}));
  EXPECT_EQ(s.launch_costs.back().host.count, 3u);
  EXPECT_DOUBLE_EQ(s.launch_costs.back().host.median_us, 5);
  EXPECT_EQ(s.launch_costs.back().wall.count, 0u);  // no wall time: it would synchronize

  recording_info info;
  info.command = "python3 train.py";
  const std::string text = profiler::to_json_string(assemble(r, env, 2u << 20, info));
  const profiler::report back = profiler::from_json_string(text, "recorded");
  ASSERT_EQ(back.scenarios.size(), 1u);
  EXPECT_EQ(back.scenarios[0].key(), s.key());
  EXPECT_NE(text.find("\"recorded\""), std::string::npos);
  EXPECT_TRUE(std::regex_search(text, std::regex(R"("partial": ?false)")));
  EXPECT_NE(text.find("\"remap_after_trim\""), std::string::npos);
  EXPECT_EQ(text.find("instantiate_stack"), std::string::npos);  // none taken: none written
}

TEST(RecordReport, TheInstantiateStackTravelsWithItsGraph) {
  recorder r;
  r.on_instantiate(0x11, 0x10, two_sequential_allocs(), "", 1, 30, with_reserved(0), with_reserved(0), {},
                   make_stack({"libtorch_cuda.so!at::cuda::CUDAGraph::capture_end()+0x1c4",
                               "python3!_PyEval_EvalFrameDefault+0x7b2"}));
  r.on_instantiate(0x99, 0x98, kernels_only(), "", 2, 30, std::nullopt, std::nullopt, {},
                   make_stack({"not a tracked exec"}));  // no memory nodes: counted only
  const std::string text = profiler::to_json_string(assemble(r, profiler::environment{}, 2u << 20));
  // Written once in the recording's table of stacks, named by index in the graph.
  EXPECT_TRUE(std::regex_search(text, std::regex(R"("stacks": ?\[\["libtorch_cuda\.so!at::cuda::CUDAGraph::capture_end\(\)\+0x1c4", ?)")))
      << text.substr(0, 2000);
  EXPECT_TRUE(std::regex_search(text, std::regex(R"("stack": ?0)")));
  EXPECT_EQ(text.find("not a tracked exec"), std::string::npos);
  const profiler::report back = profiler::from_json_string(text, "r.json");
  EXPECT_EQ(back.recorded->graphs.at(0).instantiate_stack,
            (std::vector<std::string>{"libtorch_cuda.so!at::cuda::CUDAGraph::capture_end()+0x1c4",
                                      "python3!_PyEval_EvalFrameDefault+0x7b2"}));
}

// A graph's shape (what makes two instances one record) is its site and its structure: the same
// frames in two stack objects are one site; another frame, size, edge or flag is another shape.
TEST(RecordShape, ASitesFramesAndTheGraphsStructureMakeItsShape) {
  const stack_ref f = make_stack({"app!f()+0x1", "app!main+0x2"});
  const stack_ref f_again = make_stack({"app!f()+0x1", "app!main+0x2"});
  const stack_ref g = make_stack({"app!g()+0x1", "app!main+0x2"});
  EXPECT_EQ(make_stack({}), nullptr);
  ASSERT_NE(f, f_again);
  EXPECT_EQ(f->hash, f_again->hash);
  EXPECT_NE(f->hash, g->hash);
  const graph_model m = two_sequential_allocs();
  const auto shape = [&m](const stack_ref& s, const graph_model& model, profiler::instantiate_flags flags = {}) {
    return recorder::shape_of(s.get(), "fwd", "memory_nodes", flags, model);
  };
  EXPECT_EQ(shape(f, m), shape(f_again, m));
  EXPECT_NE(shape(f, m), shape(g, m));
  EXPECT_NE(shape(f, m), shape(nullptr, m));
  EXPECT_NE(shape(f, m), recorder::shape_of(f.get(), "bwd", "memory_nodes", {}, m));
  graph_model bigger = m;
  bigger.nodes[2].bytes = 4u << 20;
  EXPECT_NE(shape(f, m), shape(f, bigger));
  graph_model rewired = m;
  rewired.edges = {{0, 1}, {0, 2}, {2, 3}};
  EXPECT_NE(shape(f, m), shape(f, rewired));
  profiler::instantiate_flags upload;
  upload.upload = true;
  EXPECT_NE(shape(f, m), shape(f, m, upload));
}

// Graphs of one site share one entry of the table; a report of the earlier form (each graph's
// stack written in full) still reads; an index past the table is refused naming the range.
TEST(RecordReport, StacksAreWrittenOnceAndEarlierReportsStillRead) {
  recorder r;
  const std::vector<std::string> stack = {"app!capture()+0x10", "app!main+0x20"};
  r.on_instantiate(0x11, 0x10, two_sequential_allocs(), "", 1, 30, with_reserved(0), with_reserved(0), {},
                   make_stack(stack));
  r.on_instantiate(0x21, 0x20, two_sequential_allocs(), "", 2, 30, with_reserved(0), with_reserved(0), {},
                   make_stack(stack));
  const std::string text = profiler::to_json_string(assemble(r, profiler::environment{}, 2u << 20));
  std::size_t copies = 0;
  for (std::size_t at = text.find("app!capture()+0x10"); at != std::string::npos;
       at = text.find("app!capture()+0x10", at + 1)) {
    ++copies;
  }
  EXPECT_EQ(copies, 1u) << text;
  const profiler::report back = profiler::from_json_string(text, "r.json");
  ASSERT_EQ(back.recorded->graphs.size(), 2u);
  for (const auto& g : back.recorded->graphs) EXPECT_EQ(g.instantiate_stack, stack);

  std::string earlier = std::regex_replace(text, std::regex("\"stack\": ?0"),
                                           "\"instantiate_stack\": [\"app!old()+0x1\"]");
  earlier = std::regex_replace(earlier, std::regex("\"stacks\": ?\\[\\[[^\\]]*\\]\\],?"), "");
  const profiler::report old = profiler::from_json_string(earlier, "old.json");
  EXPECT_EQ(old.recorded->graphs.at(1).instantiate_stack, std::vector<std::string>{"app!old()+0x1"});

  const std::string past = std::regex_replace(text, std::regex("\"stack\": ?0"), "\"stack\": 3");
  try {
    (void)profiler::from_json_string(past, "past.json");
    ADD_FAILURE() << "accepted";
  } catch (const profiler::report_error& e) {
    EXPECT_NE(std::string(e.what()).find("graphs[0].stack names stack 3; stacks has 1 stack (index 0)"),
              std::string::npos)
        << e.what();
  }
}

// A partial report (a signal's) of one graph without memory nodes.
profiler::report partial_of_one_kernel_graph() {
  recorder r;
  r.on_instantiate(0x2, 0x1, kernels_only(), "", 0, 5, std::nullopt, std::nullopt);
  recording_info info;
  info.partial = true;
  info.partial_reason = "signal 15 (Terminated)";
  return assemble(r, profiler::environment{}, 0, info);
}

TEST(RecordReport, PartialReportsSayWhyAndNoMemoryNodesIsANoteNotAnError) {
  const profiler::report rep = partial_of_one_kernel_graph();
  EXPECT_TRUE(rep.scenarios.empty());
  const std::string path = std::string(GMEM_BINARY_DIR) + "/record-partial-test.json";
  std::uint64_t bytes = 0;
  const profiler::report back = write_recording(rep, path, bytes);
  EXPECT_EQ(bytes, std::filesystem::file_size(path));
  const auto lines = summarize_recording(path);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[0].find("PARTIAL: signal 15"), std::string::npos);
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  EXPECT_NE(text.find("private memory pool"), std::string::npos) << text;
  EXPECT_NE(text.find("not an error"), std::string::npos) << text;
  // What the recording library leaves beside its report: the same lines, from the report it read
  // back, for a report of exactly that size.
  EXPECT_EQ(summary_lines(back, path), lines);
  const std::string summary = path + ".summary";
  write_summary(summary_lines(back, path), bytes, summary);
  EXPECT_EQ(read_summary(summary, bytes), std::optional<std::vector<std::string>>(lines));
  EXPECT_EQ(read_summary(summary, bytes + 1), std::nullopt) << "the summary of another report";
  EXPECT_EQ(read_summary(summary + ".missing", bytes), std::nullopt);
  std::filesystem::remove(summary);
  std::filesystem::remove(path);
}

// gmemprof record prints the summary the recording library left beside a lone report of exactly
// that size, without reading the report again; a summary of another report (its size differs)
// is not used, and the report is read again. Each summary is removed.
TEST(RecordReport, GmemprofRecordPrintsTheLibrarysSummaryOfItsReportAndReadsItAgainOtherwise) {
  const profiler::report rep = partial_of_one_kernel_graph();
  const std::filesystem::path dir = std::filesystem::path(GMEM_BINARY_DIR) / "collect-recordings-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "rec.json").string();
  for (const bool same_size : {true, false}) {
    const std::string written = out + ".4242.json";
    std::uint64_t bytes = 0;
    const profiler::report back = write_recording(rep, written, bytes);
    std::vector<std::string> lines = summary_lines(back, out);
    lines.push_back("the library's own line");
    write_summary(lines, same_size ? bytes : bytes + 1, written + ".summary");
    std::ostringstream err;
    collect_recordings(out, {"python3", "serve.py"}, err);
    EXPECT_TRUE(std::filesystem::exists(out));
    EXPECT_FALSE(std::filesystem::exists(written));
    EXPECT_FALSE(std::filesystem::exists(written + ".summary"));
    EXPECT_NE(err.str().find("gmemprof record: wrote " + out + " (PARTIAL: signal 15"), std::string::npos) << err.str();
    EXPECT_EQ(err.str().find("the library's own line") != std::string::npos, same_size) << err.str();
  }
  std::filesystem::remove_all(dir);
}

// A recording whose "recorded" section has the wrong types is refused naming the field (it was
// an uncaught JSON type error before the readers were fuzzed).
TEST(RecordReport, ARecordedSectionOfTheWrongTypesIsRefusedNamingTheField) {
  recorder r;
  const profiler::report rep = assemble(r, profiler::environment{}, 0);
  const std::string path = std::string(GMEM_BINARY_DIR) + "/record-bad-types-test.json";
  std::uint64_t bytes = 0;
  (void)write_recording(rep, path, bytes);
  std::string text;
  {
    std::ifstream f(path);
    text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  for (const auto& [from, to, field] :
       {std::tuple<std::string, std::string, std::string>{"\"partial\": false", "\"partial\": 0", "recorded.partial"},
        {"\"notes\": [", "\"notes\": [7], \"x\": [", "recorded.notes"}}) {
    std::string bad = text;
    const auto at = bad.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    bad.replace(at, from.size(), to);
    std::ofstream(path, std::ios::trunc) << bad;
    try {
      (void)summarize_recording(path);
      ADD_FAILURE() << "accepted " << to;
    } catch (const profiler::report_error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove(path);
}

TEST(RecordCommand, PassesTheExitStatusThrough) {
  std::ostringstream out, err;
  record_options o;
  o.out_path = std::string(GMEM_BINARY_DIR) + "/record-exit-test.json";
  EXPECT_EQ(run_record(o, {"sh", "-c", "exit 3"}, out, err), 3);
  EXPECT_EQ(run_record(o, {"sh", "-c", "kill -TERM $$"}, out, err), 128 + 15);
  EXPECT_EQ(run_record(o, {"gmem-no-such-command-anywhere"}, out, err), 127);
  EXPECT_EQ(run_record(o, {}, out, err), 2);
}

TEST(RecordCommand, WithoutAGpuSaysInOneLineThatNothingWasRecorded) {
  int devices = 0;
  if (gpu_unavailable_reason(devices).empty()) GTEST_SKIP() << "a GPU is present";
  std::ostringstream out, err;
  record_options o;
  EXPECT_EQ(run_record(o, {"true"}, out, err), 0);
  const std::string e = err.str();
  EXPECT_EQ(e.rfind("gmemprof record: nothing recorded: ", 0), 0u) << e;
  EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 1);
}

TEST(RecordCommand, BadNameSourceIsRefusedBeforeRunning) {
  std::ostringstream out, err;
  record_options o;
  o.name_from = "colour";
  EXPECT_EQ(run_record(o, {"sh", "-c", "exit 0"}, out, err), 2);
  EXPECT_NE(err.str().find("'colour'"), std::string::npos);
}

TEST(RecordCommand, BadHookIsRefusedBeforeRunningWhetherGivenOrInTheEnvironment) {
  const std::string marker = std::string(GMEM_BINARY_DIR) + "/record-hook-ran";
  std::filesystem::remove(marker);
  std::ostringstream out, err;
  record_options o;
  o.hook = "ptrace";
  EXPECT_EQ(run_record(o, {"sh", "-c", "touch '" + marker + "'"}, out, err), 2);
  EXPECT_NE(err.str().find("--hook takes cupti or interpose, not 'ptrace'"), std::string::npos) << err.str();
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran";
  // From GMEM_RECORD_HOOK where --hook is not given: the message says where it came from.
  const char* had = std::getenv("GMEM_RECORD_HOOK");
  const std::string before = had ? had : "";
  setenv("GMEM_RECORD_HOOK", "Interpose", 1);
  std::ostringstream err2;
  o.hook.clear();
  EXPECT_EQ(run_record(o, {"sh", "-c", "touch '" + marker + "'"}, out, err2), 2);
  EXPECT_NE(err2.str().find("not 'Interpose' (from GMEM_RECORD_HOOK)"), std::string::npos) << err2.str();
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran";
  if (had) {
    setenv("GMEM_RECORD_HOOK", before.c_str(), 1);
  } else {
    unsetenv("GMEM_RECORD_HOOK");
  }
  // Both hooks are accepted (without a GPU the command runs unrecorded either way).
  for (const char* hook : {"cupti", "interpose"}) {
    std::ostringstream err3;
    o.hook = hook;
    EXPECT_EQ(run_record(o, {"sh", "-c", "exit 5"}, out, err3), 5) << hook << ": " << err3.str();
  }
}

TEST(RecordCommand, TheOwnInterceptionIsTheDefaultWhereItsPreloadedHalfIsBuiltAndAHookAskedForIsKept) {
  const std::string preload = std::string(GMEM_BINARY_DIR) + "/chosen-hook-preload.so";
  std::filesystem::remove(preload);
  EXPECT_EQ(chosen_hook("", preload), "cupti") << "without the preloaded half";
  EXPECT_EQ(chosen_hook("", ""), "cupti") << "without the library";
  std::ofstream(preload) << "";
  EXPECT_EQ(chosen_hook("", preload), "interpose");
  EXPECT_EQ(chosen_hook("cupti", preload), "cupti");
  EXPECT_EQ(chosen_hook("interpose", preload), "interpose");
  std::filesystem::remove(preload);
  EXPECT_EQ(chosen_hook("interpose", preload), "interpose") << "asked for: run_record refuses it when it is missing";
}

}  // namespace
}  // namespace gmem::record
