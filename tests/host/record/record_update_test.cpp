// Executable graphs updated in place (cuGraphExecUpdate) and their nodes given other parameters,
// fed to a recording session as the injected library reports them: a successful update makes the
// record its new graph's (skeleton, held addresses, name where the graph names it) and counts;
// a refused one changes nothing and is counted as a failed call; the pool model follows the new
// graph's launches from no mapping; node parameter calls are counted; the new fields read back,
// and a report written without them still reads.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>

#include "fake_driver.hpp"
#include "gmem/profiler/report_io.hpp"
#include "views/show.hpp"

namespace gmem::record::test {
namespace {

using profiler::probe::granule;
using profiler::probe::MiB;

std::uint64_t base_of(std::uint64_t k) { return (k + 1) << 36; }

std::size_t steps_of(const profiler::report& r, const std::string& op) {
  std::size_t n = 0;
  for (const auto& s : r.recorded->sequence) n += s.op == op;
  return n;
}

// `text` with every run of white space (a wrapped line's break and indent) one space.
std::string one_line(const std::string& text) { return std::regex_replace(text, std::regex(R"(\s+)"), " "); }

// The addresses of a recorded graph's allocations, as its scenario's lifetimes state them.
std::vector<std::uint64_t> addresses_of(const profiler::report& r, std::size_t gi) {
  std::vector<std::uint64_t> out;
  for (const auto& a : r.scenarios.at(gi).allocations) out.push_back(a.address);
  return out;
}

// Graph A: one 32 MiB allocation used and freed inside the graph ("w32"); graph B the same
// shape at its own address, captured on the same stream after it.
struct updated_once {
  program p;
  explicit updated_once(const std::string& failure = "") {
    p.capture(0xA, 0x10, graph_of("g=w32", base_of(0)));
    p.instantiate(0x100, 0x10);
    p.capture(0xA, 0x11, graph_of("g=w32", base_of(1)));
    p.update(0x100, 0x11, failure);
    p.launch(0x100, 0xA, 300, granule);
    p.launch(0x100, 0xA, 5);
  }
};

TEST(RecordUpdate, AnUpdatedGraphsRecordIsItsNewGraphsSkeletonAndNameCountedOnce) {
  updated_once u;
  const profiler::report r = u.p.finish();
  ASSERT_EQ(r.recorded->graphs.size(), 1u);  // one executable graph, one record
  const profiler::recorded_graph& g = r.recorded->graphs[0];
  EXPECT_EQ(g.updates, 1u);
  EXPECT_EQ(g.failed_calls, 0u);
  EXPECT_EQ(g.instances, 1u);
  EXPECT_EQ(g.launches, 2u);
  // Graph B's memory nodes: its allocation's address, not A's; the same size.
  EXPECT_EQ(addresses_of(r, 0), std::vector<std::uint64_t>{base_of(1)});
  ASSERT_EQ(r.scenarios[0].skeletons.size(), 1u);
  EXPECT_EQ(r.scenarios[0].analysis.requested_bytes, 32 * MiB);
  // Named after the capture that made B: the second on its stream.
  EXPECT_EQ(g.name, "stream 1 #2");
  EXPECT_EQ(r.scenarios[0].name, g.name);
  // The update is an event and a step; the launch after it is the new graph's first.
  ASSERT_GE(g.events.size(), 3u);
  EXPECT_EQ(g.events[0].kind, "instantiate");
  EXPECT_EQ(g.events[1].kind, "update");
  EXPECT_TRUE(g.events[1].result.empty());
  EXPECT_EQ(g.events[2].kind, "launch");
  EXPECT_EQ(g.events[2].cls, "first_launch");
  EXPECT_EQ(steps_of(r, "update"), 1u);
  EXPECT_EQ(g.growth_bytes, granule);
  ASSERT_EQ(r.recorded->pools.size(), 1u);
  EXPECT_EQ(r.recorded->pools[0].high_bytes, granule);
  // Every point of the timeline names the graph by its name at the end.
  for (const auto& point : r.recorded->timeline) {
    if (point.event != "trim") {
      EXPECT_EQ(point.graph, g.name) << point.event;
    }
  }
}

TEST(RecordUpdate, ARefusedUpdateLeavesTheGraphItWasAndIsCountedAsAFailedCall) {
  updated_once u("CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE");
  const profiler::report r = u.p.finish();
  ASSERT_EQ(r.recorded->graphs.size(), 1u);
  const profiler::recorded_graph& g = r.recorded->graphs[0];
  EXPECT_EQ(g.updates, 0u);
  EXPECT_EQ(g.failed_calls, 1u);
  EXPECT_EQ(addresses_of(r, 0), std::vector<std::uint64_t>{base_of(0)});
  EXPECT_EQ(g.name, "stream 1 #1");
  EXPECT_EQ(steps_of(r, "update"), 0u);
  ASSERT_GE(g.events.size(), 2u);
  EXPECT_EQ(g.events[1].kind, "update");
  EXPECT_EQ(g.events[1].result, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE");
  // B was captured and never became an executable graph: a capture that cost nothing.
  EXPECT_EQ(r.recorded->graphs[0].launches, 2u);
}

TEST(RecordUpdate, TheNameFollowsTheNewGraphsNvtxRangeAndStaysWhereItIsTheSame) {
  program p(name_source::nvtx);
  p.s.nvtx_push("prefill");
  p.capture(0xA, 0x10, graph_of("g=w32", base_of(0)));
  p.instantiate(0x100, 0x10);
  p.s.nvtx_pop();
  p.s.nvtx_push("decode");
  for (std::uint64_t k = 1; k <= 3; ++k) {
    p.capture(0xA, 0x10 + k, graph_of("g=w32", base_of(k)));
    p.update(0x100, 0x10 + k);
    p.launch(0x100, 0xA, 300);
  }
  p.s.nvtx_pop();
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->graphs.size(), 1u);
  EXPECT_EQ(r.recorded->graphs[0].name, "decode");  // not "decode (2)", "decode (3)"
  EXPECT_EQ(r.recorded->graphs[0].identity, "nvtx:decode");
  EXPECT_EQ(r.recorded->graphs[0].updates, 3u);
  EXPECT_EQ(addresses_of(r, 0), std::vector<std::uint64_t>{base_of(3)});
}

// The pool model follows the update: the executable graph maps its new graph's allocations from
// granules the pool already holds (A's, free again), so the launch after the update grows
// nothing, as the counters say, and nothing is a remap the model cannot explain.
TEST(RecordUpdate, ThePoolModelMapsTheNewGraphFromThePoolsFreeGranules) {
  program p;
  p.capture(0xA, 0x10, graph_of("g=w64", base_of(0)));
  p.instantiate(0x100, 0x10);
  p.launch(0x100, 0xA, 300, 2 * granule);
  p.launch(0x100, 0xA, 5);
  p.s.stream_synchronized(0xA);
  p.capture(0xA, 0x11, graph_of("g=w64", base_of(1)));
  p.update(0x100, 0x11);
  p.launch(0x100, 0xA, 40);  // maps B's addresses from the pool: no growth
  p.launch(0x100, 0xA, 5);
  const profiler::report r = p.finish();
  const profiler::recorded_graph& g = r.recorded->graphs.at(0);
  EXPECT_EQ(g.growth_bytes, 2 * granule);
  EXPECT_EQ(r.recorded->pools.at(0).high_bytes, 2 * granule);
  EXPECT_EQ(r.recorded->pools.at(0).model_high_bytes, 2 * granule);
  std::size_t first = 0;
  for (const auto& e : g.events) {
    EXPECT_NE(e.cls, "remap_unexplained");
    first += e.cls == "first_launch";
  }
  EXPECT_EQ(first, 2u);  // A's first launch, and B's
}

// An output the graph before the update left live is the program's to free at its own address:
// the free is recorded as the graph's held allocation, and the new graph's output is found at its
// new address.
TEST(RecordUpdate, AnOutputOfTheGraphBeforeTheUpdateIsFreedAtItsOwnAddress) {
  program p;
  p.capture(0xA, 0x10, graph_of("g=o8", base_of(0)));
  p.instantiate(0x100, 0x10);
  p.launch(0x100, 0xA, 300, granule);
  p.capture(0xA, 0x11, graph_of("g=o8", base_of(1)));
  p.update(0x100, 0x11);
  p.s.device_free(base_of(0), 0xA);  // A's output, freed after the update
  p.launch(0x100, 0xA, 40);
  p.s.device_free(base_of(1), 0xA);  // B's
  p.s.device_free(base_of(0), 0xA);  // again: nothing of the graph's any more
  const profiler::report r = p.finish();
  EXPECT_EQ(steps_of(r, "free"), 2u);
  for (const auto& st : r.recorded->sequence) {
    if (st.op == "free") {
      EXPECT_EQ(st.held, 0);
    }
  }
  EXPECT_EQ(r.recorded->pools.at(0).model_high_bytes, r.recorded->pools.at(0).high_bytes);
}

TEST(RecordUpdate, NodeParameterCallsAreCountedPerExecutableGraph) {
  program p;
  p.capture(0xA, 0x10, graph_of("g=w32", base_of(0)));
  p.instantiate(0x100, 0x10);
  for (int k = 0; k < 3; ++k) p.s.node_params_set(0x100);
  p.s.node_params_set(0x999);  // an executable graph without memory nodes: nothing to count
  p.launch(0x100, 0xA, 300, granule);
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->graphs.size(), 1u);
  EXPECT_EQ(r.recorded->graphs[0].node_param_sets, 3u);
  EXPECT_EQ(r.recorded->graphs[0].updates, 0u);
  EXPECT_EQ(addresses_of(r, 0), std::vector<std::uint64_t>{base_of(0)});
}

// An update of an executable graph the recording does not track (no memory nodes): nothing is
// recorded, and the graph it runs now is not counted as a capture never instantiated.
TEST(RecordUpdate, AnUntrackedExecutableGraphsUpdateUsesItsGraph) {
  program p;
  profiler::graph_model kernels;
  kernels.nodes = {profiler::model_node{profiler::node_kind::kernel, 0, 0, 0, {}, std::nullopt}};
  p.capture(0xA, 0x10, kernels);
  p.instantiate(0x100, 0x10);
  p.capture(0xA, 0x11, kernels);
  p.update(0x100, 0x11);
  p.launch(0x100, 0xA);
  const profiler::report r = p.finish();
  EXPECT_TRUE(r.recorded->graphs.empty());
  for (const std::string& note : r.recorded->notes) {
    EXPECT_EQ(note.find("never instantiated"), std::string::npos) << note;
  }
}

// A graph of kernels only, as XLA's command buffers are: no memory nodes.
profiler::graph_model kernels_only() {
  profiler::graph_model m;
  m.nodes = {profiler::model_node{profiler::node_kind::kernel, 0, 0, 0, {}, std::nullopt}};
  return m;
}

constexpr const char* refused_update = "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE";

// Executable graphs without memory nodes (XLA updates its command buffers in place) are not
// recorded one by one, but what the program did to them is counted: the updates the driver took
// apart from those it refused, and node parameter calls. Calls on a tracked graph count on its
// record alone; calls on an executable graph the recording never saw instantiated, whose graph
// it could not read, or that was destroyed, are not counted.
TEST(RecordUpdate, CallsOnGraphsWithoutMemoryNodesAreCountedApartFromTrackedOnes) {
  program p;
  p.capture(0xA, 0x10, graph_of("g=w32", base_of(0)));
  p.instantiate(0x100, 0x10);  // tracked
  p.capture(0xB, 0x20, kernels_only());
  p.instantiate(0x200, 0x20);  // without memory nodes
  p.define(0x30, kernels_only());
  p.gpu.refused.insert(0x30);
  p.instantiate(0x300, 0x30);  // its graph unreadable: not tracked, not counted
  p.capture(0xB, 0x40, kernels_only());
  p.instantiate(0x400, 0x40);  // without memory nodes, destroyed below

  // The tracked graph: one update taken, one refused, two node parameter calls.
  p.launch(0x100, 0xA, 300, granule);
  p.s.node_params_set(0x100);
  p.s.node_params_set(0x100);
  p.capture(0xA, 0x11, graph_of("g=w32", base_of(1)));
  p.update(0x100, 0x11);
  p.update(0x100, 0x11, refused_update);
  // The graphs without memory nodes: three updates taken, two refused, five node parameter calls.
  for (std::uint64_t k = 0; k < 3; ++k) {
    p.capture(0xB, 0x21 + k, kernels_only());
    p.update(0x200, 0x21 + k);
    p.launch(0x200, 0xB);
  }
  p.update(0x200, 0x21, refused_update);
  p.update(0x200, 0x22, refused_update);
  for (int k = 0; k < 4; ++k) p.s.node_params_set(0x200);
  p.s.node_params_set(0x400);
  // Not counted: a destroyed one, an unknown one, the unreadable one.
  p.destroy(0x400, 0x40);
  p.s.node_params_set(0x400);
  p.update(0x400, 0x21);
  p.s.node_params_set(0x999);
  p.update(0x999, 0x21);
  p.update(0x999, 0x21, refused_update);
  p.s.node_params_set(0x300);
  p.update(0x300, 0x22);
  // The driver gives the destroyed one's handle to a graph with memory nodes: its calls are the
  // new record's.
  p.capture(0xA, 0x50, graph_of("g=w64", base_of(5)));
  p.instantiate(0x400, 0x50);
  p.launch(0x400, 0xA, 300, granule);
  p.s.node_params_set(0x400);
  p.update(0x400, 0x50, refused_update);

  const profiler::report r = p.finish();
  const profiler::recording& rec = *r.recorded;
  EXPECT_EQ(rec.graphs_without_memory_nodes, 2u);
  EXPECT_EQ(rec.updates_without_memory_nodes, 3u);
  EXPECT_EQ(rec.refused_updates_without_memory_nodes, 2u);
  EXPECT_EQ(rec.node_param_sets_without_memory_nodes, 5u);
  ASSERT_EQ(rec.graphs.size(), 2u);
  EXPECT_EQ(rec.graphs[0].updates, 1u);
  EXPECT_EQ(rec.graphs[0].failed_calls, 1u);
  EXPECT_EQ(rec.graphs[0].node_param_sets, 2u);
  EXPECT_EQ(rec.graphs[1].node_param_sets, 1u);
  EXPECT_EQ(rec.graphs[1].failed_calls, 1u);
  // Said in a note (tracked graphs were recorded besides) and on show's first screen.
  std::size_t said = 0;
  for (const std::string& note : rec.notes) {
    said += note.find("2 graph(s) without memory nodes were instantiated besides. Their updates in place: 3 taken, "
                      "2 refused by the driver (cuGraphExecUpdate); calls that set one of their nodes' "
                      "parameters: 5") != std::string::npos;
  }
  EXPECT_EQ(said, 1u);
  const std::string first = one_line(profiler::format_report(r));
  EXPECT_NE(first.find("2 graphs with memory nodes, 2 without graph memory (3 updates in place, 2 refused, 5 node "
                       "parameter calls)"),
            std::string::npos)
      << first;
}

// A program whose graphs all lack memory nodes (a JAX program): its note says what was done to
// them, "none" included, so that a reader knows whether XLA updated its command buffers.
TEST(RecordUpdate, ARecordingOfGraphsWithoutMemoryNodesSaysWhetherAnyWasUpdated) {
  const auto note_of = [](const profiler::report& r) {
    std::string out;
    for (const std::string& note : r.recorded->notes) {
      if (note.find("none with memory nodes") != std::string::npos) out += note;
    }
    return out;
  };
  program none;
  none.capture(0xB, 0x20, kernels_only());
  none.instantiate(0x200, 0x20);
  none.launch(0x200, 0xB);
  const profiler::report quiet = none.finish();
  EXPECT_NE(note_of(quiet).find("Their updates in place: 0 taken, 0 refused by the driver (cuGraphExecUpdate); "
                                "calls that set one of their nodes' parameters: 0"),
            std::string::npos)
      << note_of(quiet);
  EXPECT_NE(profiler::format_report(quiet).find("1 without graph memory\n"), std::string::npos);

  program some;
  some.capture(0xB, 0x20, kernels_only());
  some.instantiate(0x200, 0x20);
  some.capture(0xB, 0x21, kernels_only());
  some.update(0x200, 0x21);
  some.s.node_params_set(0x200);
  const profiler::report updated = some.finish();
  EXPECT_NE(note_of(updated).find("Their updates in place: 1 taken, 0 refused by the driver (cuGraphExecUpdate); "
                                  "calls that set one of their nodes' parameters: 1"),
            std::string::npos)
      << note_of(updated);
  EXPECT_NE(one_line(profiler::format_report(updated))
                .find("1 without graph memory (1 update in place, 1 node parameter call)"),
            std::string::npos);
  // Written even when 0, and read back.
  const std::string text = profiler::to_json_string(quiet);
  EXPECT_NE(text.find("\"updates_without_memory_nodes\": 0"), std::string::npos);
  const profiler::report back = profiler::from_json_string(profiler::to_json_string(updated), "updated.json");
  EXPECT_EQ(back.recorded->updates_without_memory_nodes, 1u);
  EXPECT_EQ(back.recorded->node_param_sets_without_memory_nodes, 1u);
}

// Calls on executable graphs the recording does not track cost it a look-up and a count: no
// clock is read for them (XLA may update its command buffers at every step), and no part of
// what recording cost is charged.
TEST(RecordUpdate, CallsOnUntrackedGraphsReadNoClock) {
  program p;
  p.capture(0xB, 0x20, kernels_only());
  p.instantiate(0x200, 0x20);
  p.capture(0xB, 0x21, kernels_only());
  const std::uint64_t reads = p.gpu.clock_reads;
  for (int k = 0; k < 10; ++k) {
    p.s.exec_update_enter(0x200);
    p.s.exec_update_exit(0x200, 0x21, k % 2 != 0 ? refused_update : "");
    p.s.node_params_set(0x200);
    p.s.node_params_set(0x999);
  }
  EXPECT_EQ(p.gpu.clock_reads.load(), reads);
  for (const profiler::record_cost& c : p.s.cost()) {
    EXPECT_NE(c.part, "update");
    EXPECT_NE(c.part, "node parameters");
  }
  const profiler::report r = p.finish();
  EXPECT_EQ(r.recorded->updates_without_memory_nodes, 5u);
  EXPECT_EQ(r.recorded->refused_updates_without_memory_nodes, 5u);
  EXPECT_EQ(r.recorded->node_param_sets_without_memory_nodes, 10u);
}

TEST(RecordUpdate, TheNewFieldsReadBackAndAReportWithoutThemStillReads) {
  updated_once u;
  for (int k = 0; k < 2; ++k) u.p.s.node_params_set(0x100);
  const profiler::report written = u.p.finish();
  const std::string text = profiler::to_json_string(written);
  const profiler::report back = profiler::from_json_string(text, "updated.json");
  ASSERT_EQ(back.recorded->graphs.size(), 1u);
  EXPECT_EQ(back.recorded->graphs[0].updates, 1u);
  EXPECT_EQ(back.recorded->graphs[0].node_param_sets, 2u);
  EXPECT_EQ(steps_of(back, "update"), 1u);
  // A report written before updates were followed states neither field.
  std::string older = std::regex_replace(text, std::regex(R"re(,\s*"(updates|node_param_sets)":\s*\d+)re"), "");
  ASSERT_EQ(older.find("\"updates\""), std::string::npos);
  ASSERT_EQ(older.find("\"node_param_sets\""), std::string::npos);
  const profiler::report old = profiler::from_json_string(older, "older.json");
  EXPECT_EQ(old.recorded->graphs[0].updates, 0u);
  EXPECT_EQ(old.recorded->graphs[0].node_param_sets, 0u);
}

TEST(RecordUpdate, ShowSaysAGraphWasUpdatedInItsDetailAndMarksItOnTheFirstScreen) {
  updated_once u;
  u.p.s.node_params_set(0x100);
  const profiler::report r = u.p.finish();
  const std::string first = profiler::format_report(r);
  EXPECT_NE(first.find("2, 1 upd."), std::string::npos) << first;  // the launches column
  EXPECT_EQ(first.find("in place"), std::string::npos) << first;
  profiler::show_options all;
  all.all = true;
  const std::string every = one_line(profiler::format_report(r, all));
  EXPECT_NE(every.find("updated once in place (cuGraphExecUpdate): its figures are its last graph's"), std::string::npos)
      << every;
  EXPECT_NE(every.find("1 call set a node's parameters"), std::string::npos) << every;
  profiler::show_options one;
  one.graphs = {"stream 1 #2"};
  EXPECT_NE(profiler::format_report(r, one).find("updated once in place"), std::string::npos);

  updated_once refused("CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE");
  const profiler::report f = refused.p.finish();
  EXPECT_EQ(profiler::format_report(f).find("update"), std::string::npos);
  EXPECT_NE(one_line(profiler::format_report(f, all)).find("1 update refused by the driver, which changed nothing"),
            std::string::npos);
}

// tests/record/update_client's calls as the injected library reports them, with the counters its
// driver would give (a 64 MiB working set freed in the graph and an 8 MiB output: three granules),
// written with the client's own readings for tests/record/check_updates.py (ctest
// record.check_updates_holds_on_a_fake_recording) and the schema's check.
TEST(RecordUpdate, WritesTheUpdateClientsCallsForItsChecker) {
  program p;
  constexpr int updates = 3;
  const std::string step = "g=w64,o8";
  const auto out_of = [](std::uint64_t k) { return base_of(k) + 64 * MiB; };
  std::string points;
  const auto reading = [&](const std::string& label, const std::string& event, int index) {
    const counters c = p.gpu.devices[0];
    points += std::string(points.empty() ? "" : ", ") + "{\"label\": \"" + label + "\", \"event\": \"" + event +
              "\", \"index\": " + std::to_string(index) + ", \"counters\": {\"used_current\": " +
              std::to_string(c.used_current) + ", \"used_high\": " + std::to_string(c.used_high) +
              ", \"reserved_current\": " + std::to_string(c.reserved_current) +
              ", \"reserved_high\": " + std::to_string(c.reserved_high) + "}}";
  };
  int frees = 0;
  const auto free_output = [&](std::uint64_t k) {
    p.s.device_free(out_of(k), 0xA);
    p.s.stream_synchronized(0xA);
    ++frees;
  };
  const auto launch_twice = [&](std::uint64_t k, std::uint64_t grows) {
    p.launch(0x100, 0xA, 300, grows);
    reading("first launch of graph " + std::to_string(k), "launch:first_launch", static_cast<int>(k));
    p.s.stream_synchronized(0xA);
    free_output(k);
    p.launch(0x100, 0xA, 5);
    p.s.stream_synchronized(0xA);
  };
  p.capture(0xA, 0x10, graph_of(step, base_of(0)));
  p.instantiate(0x100, 0x10);
  p.s.node_params_set(0x100);
  p.s.node_params_set(0x100);
  launch_twice(0, 3 * granule);
  p.capture(0xA, 0x40, graph_of("g=w64,o8,o1", base_of(9)));  // another topology
  p.update(0x100, 0x40, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE");
  for (std::uint64_t k = 1; k <= updates; ++k) {
    p.capture(0xA, 0x10 + k, graph_of(step, base_of(k)));
    p.update(0x100, 0x10 + k);
    reading("update " + std::to_string(k), "update", static_cast<int>(k - 1));
    free_output(k - 1);
    launch_twice(k, 0);
  }
  free_output(updates);
  const counters end = p.gpu.devices[0];
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->graphs.size(), 1u);
  profiler::write_report(r, std::string(GMEM_BINARY_DIR) + "/update-client-recording.json");
  std::ofstream(std::string(GMEM_BINARY_DIR) + "/update-client-self.json")
      << "{\"client\": \"update (fake driver)\", \"updates\": " << updates
      << ", \"refused\": 1, \"node_param_sets\": 2, \"frees\": " << frees << ", \"last_addresses\": ["
      << base_of(updates) << ", " << out_of(updates) << "], \"final\": {\"used_current\": " << end.used_current
      << ", \"used_high\": " << end.used_high << ", \"reserved_current\": " << end.reserved_current
      << ", \"reserved_high\": " << end.reserved_high << "}, \"points\": [" << points << "]}\n";
}

// tests/record/engines/jax_command_buffers.py's calls as the injected library reports them, as
// XLA makes them: its first step instantiates three command buffers (kernels only, no memory
// nodes), each later step updates them in place for its new input's address and sets two nodes'
// parameters of each, and the driver refuses one update. Written with the program's own readings
// after every step (graph memory 0 B throughout) for tests/record/engines/check_jax.py (ctest
// record.check_jax_holds_on_a_fake_recording), and with a reading it cannot match (32 MiB of
// graph memory at step 2) that the checker must refuse.
TEST(RecordUpdate, WritesTheJaxProgramsCallsForItsChecker) {
  program p;
  constexpr int steps = 4;
  constexpr std::uint64_t buffers = 3;
  const std::uint64_t used_before = p.gpu.used;
  std::uint64_t used_after_step1 = 0;
  std::vector<counters> readings;
  p.use(static_cast<std::int64_t>(300 * MiB));  // JAX's initialisation and the weights
  for (int step = 1; step <= steps; ++step) {
    for (std::uint64_t k = 0; k < buffers; ++k) {
      const std::uint64_t graph = 0x1000 + 0x10 * step + k;
      p.capture(0xB, graph, kernels_only());
      if (step == 1) {
        p.instantiate(0x200 + k, graph);
      } else {
        p.update(0x200 + k, graph);
        p.s.node_params_set(0x200 + k);
        p.s.node_params_set(0x200 + k);
      }
      if (step == 3 && k == 0) p.update(0x200, graph + 0x100, refused_update);
      p.launch(0x200 + k, 0xB);
    }
    p.use(static_cast<std::int64_t>(MiB));  // the step's output
    readings.push_back(p.gpu.devices[0]);
    if (step == 1) used_after_step1 = p.gpu.used;
  }
  const std::uint64_t used_after = p.gpu.used;
  const profiler::report r = p.finish();
  EXPECT_TRUE(r.recorded->graphs.empty());
  EXPECT_EQ(r.recorded->graphs_without_memory_nodes, buffers);
  EXPECT_EQ(r.recorded->updates_without_memory_nodes, buffers * (steps - 1));
  EXPECT_EQ(r.recorded->refused_updates_without_memory_nodes, 1u);
  EXPECT_EQ(r.recorded->node_param_sets_without_memory_nodes, 2 * buffers * (steps - 1));
  profiler::write_report(r, std::string(GMEM_BINARY_DIR) + "/jax-fake-recording.json");
  const auto self = [&](const std::string& file, std::uint64_t step2_reserved) {
    std::string points;
    for (std::size_t k = 0; k < readings.size(); ++k) {
      counters c = readings[k];
      if (k == 1) c.reserved_high = std::max(c.reserved_high, step2_reserved);
      points += std::string(points.empty() ? "" : ", ") + "{\"step\": " + std::to_string(k + 1) +
                ", \"used_current\": " + std::to_string(c.used_current) + ", \"used_high\": " +
                std::to_string(c.used_high) + ", \"reserved_current\": " + std::to_string(c.reserved_current) +
                ", \"reserved_high\": " + std::to_string(c.reserved_high) + "}";
    }
    std::ofstream(std::string(GMEM_BINARY_DIR) + "/" + file)
        << "{\"jax\": \"fake driver\", \"xla_flags\": \"\", \"steps\": " << steps
        << ", \"device\": 0, \"used_before\": " << used_before << ", \"used_after_step1\": " << used_after_step1
        << ", \"used_after\": " << used_after << ", \"result\": 0, \"graph_memory\": [" << points << "]}\n";
  };
  self("jax-fake-self.json", 0);
  self("jax-fake-self-wrong.json", 32 * MiB);
}

}  // namespace
}  // namespace gmem::record::test
