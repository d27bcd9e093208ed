// The reports of a recorded command's processes merged into one, graphs named by
// process, pools labelled by process; one process's report is left as it is.
#include <gtest/gtest.h>

#include <regex>

#include "gmem/profiler/report_io.hpp"
#include "record/recording_merge.hpp"
#include "views/processes_view.hpp"
#include "views/show.hpp"

namespace gmem::record {
namespace {

profiler::report one_process(long pid, const std::string& graph, std::uint64_t high) {
  profiler::report r;
  r.env.device_name = "GPU";
  profiler::scenario_result s;
  s.name = graph;
  r.scenarios.push_back(s);
  profiler::recording rec;
  rec.pid = pid;
  rec.command = "python3 worker.py";
  profiler::recorded_graph g;
  g.name = graph;
  g.identity = "nvtx:" + graph;
  rec.graphs.push_back(g);
  profiler::recorded_pool p;
  p.device = 0;
  p.high_bytes = high;
  p.high_graph = graph;
  p.attribution.push_back({graph, "working_set", high});
  rec.pools.push_back(p);
  profiler::sequence_step st;
  st.op = "launch";
  st.graph = 0;
  rec.sequence.push_back(st);
  rec.notes.push_back("a note");
  profiler::graph_bill b;
  b.device = 0;
  b.exec_state_measured = true;
  b.exec_state_bytes = 2 << 20;
  rec.bills.push_back(b);
  profiler::framework_pool fp;
  fp.id = "(0, 1)";
  fp.graphs = {graph};
  rec.framework_pools.push_back(fp);
  r.recorded = rec;
  return r;
}

TEST(RecordMerge, SeveralProcessesAreNamedByProcessInPidOrder) {
  const profiler::report m = merge_recordings(
      {{"r.json.4300.json", one_process(4300, "step", 64 << 20)}, {"r.json.4200.json", one_process(4200, "step", 32 << 20)}},
      "sh -c ...");
  ASSERT_TRUE(m.recorded);
  const auto& rec = *m.recorded;
  ASSERT_EQ(rec.graphs.size(), 2u);
  EXPECT_EQ(rec.graphs[0].name, "[p1 pid 4200] step");
  EXPECT_EQ(rec.graphs[0].identity, "p1/nvtx:step");
  EXPECT_EQ(rec.graphs[1].identity, "p2/nvtx:step");
  EXPECT_EQ(m.scenarios[1].name, "[p2 pid 4300] step");
  ASSERT_EQ(rec.pools.size(), 2u);
  EXPECT_EQ(rec.pools[0].process, "p1");
  EXPECT_EQ(rec.pools[0].high_bytes, 32u << 20);
  EXPECT_EQ(rec.pools[1].attribution[0].graph, "[p2 pid 4300] step");
  EXPECT_TRUE(rec.sequence.empty());  // each process's pool is its own: replay one process
  ASSERT_EQ(rec.processes.size(), 2u);
  EXPECT_EQ(rec.processes[0].pid, 4200);
  EXPECT_EQ(rec.processes[0].report, "r.json.4200.json");
  EXPECT_EQ(rec.notes[0], "p1: a note");
  // Each process's bill, labelled by process (ranks compare them side by side).
  ASSERT_EQ(rec.bills.size(), 2u);
  EXPECT_EQ(rec.bills[0].process, "p1");
  EXPECT_EQ(rec.bills[1].process, "p2");
  ASSERT_EQ(rec.framework_pools.size(), 2u);
  EXPECT_EQ(rec.framework_pools[1].id, "[p2 pid 4300] (0, 1)");
  EXPECT_EQ(rec.framework_pools[1].graphs[0], "[p2 pid 4300] step");
  EXPECT_EQ(rec.command, "sh -c ...");
}

// A launcher's workers (torchrun sets RANK): named and ordered by rank whatever their pids, so
// that two runs pair their processes rank by rank; show puts their bills side by side and says
// where they differ and which graphs make the difference.
TEST(RecordMerge, RanksAreNamedByRankAndTheirBillsSideBySide) {
  const auto rank = [](long pid, const std::string& r, std::uint64_t node_pool, bool extra_graph) {
    profiler::report p = one_process(pid, "step", node_pool);
    p.recorded->rank = r;
    p.recorded->graphs[0].growth_bytes = node_pool;
    if (extra_graph) {
      profiler::recorded_graph g = p.recorded->graphs[0];
      g.name = "sampler";
      g.identity = "nvtx:sampler";
      g.growth_bytes = 96u << 20;
      p.recorded->graphs.push_back(g);
      p.scenarios.push_back(p.scenarios[0]);
      p.scenarios.back().name = "sampler";
    }
    profiler::graph_bill& b = p.recorded->bills[0];
    b.end = "exit";
    b.node_pool_seen = true;
    b.node_pool_retained_bytes = b.node_pool_high_bytes = node_pool;
    return p;
  };
  // Rank 1 started first (the lower pid); rank 0 holds 160 MiB more: its step grew the pool by
  // 64 MiB more, and it alone captured a sampler of 96 MiB.
  // torchrun itself (the lowest pid, no rank) loaded CUDA too: it keeps "p1".
  profiler::report launcher = one_process(4100, "none", 0);
  launcher.recorded->bills.clear();
  const profiler::report m = merge_recordings({{"r.4200.json", rank(4200, "1", 64u << 20, false)},
                                               {"r.4100.json", launcher},
                                               {"r.4300.json", rank(4300, "0", 224u << 20, true)}},
                                              "torchrun --nproc-per-node 2 train.py");
  const auto& rec = *m.recorded;
  ASSERT_EQ(rec.processes.size(), 3u);
  EXPECT_EQ(rec.processes[2].pid, 4100);
  EXPECT_EQ(rec.graphs.back().name, "[p1 pid 4100] none");
  EXPECT_EQ(rec.processes[0].rank, "0");
  EXPECT_EQ(rec.processes[0].pid, 4300);
  EXPECT_EQ(rec.graphs[0].name, "[rank 0 pid 4300] step");
  EXPECT_EQ(rec.graphs[0].identity, "rank 0/nvtx:step");
  EXPECT_EQ(rec.bills[0].process, "rank 0");
  EXPECT_EQ(rec.bills[1].process, "rank 1");
  EXPECT_EQ(rec.pools[1].process, "rank 1");
  const std::vector<std::string> lines = profiler::processes_side_by_side(rec);
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  text = std::regex_replace(text, std::regex("\n    "), " ");  // the wrapped lines as one
  EXPECT_NE(text.find("rank 0"), std::string::npos) << text;
  EXPECT_NE(text.find("224 MiB (224 MiB)"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 0's graphs cost 160 MiB more than rank 1's: memory-node pool +160 MiB"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("graphs that cost more there: '[rank 0 pid 4300] step' +160 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("graphs only it made: '[rank 0 pid 4300] sampler'"), std::string::npos) << text;
  // The report reads back with its ranks; show opens with the ranks side by side.
  const profiler::report back = profiler::from_json_string(profiler::to_json_string(m), "m.json");
  EXPECT_EQ(back.recorded->processes[1].rank, "1");
  const std::string shown = profiler::format_report(back);
  EXPECT_NE(shown.find("what CUDA graphs cost each process's device (at exit):"), std::string::npos) << shown;
  // Processes without ranks (or two of one rank) stay named by pid order.
  const profiler::report same = merge_recordings({{"a.json", rank(10, "0", 1, false)}, {"b.json", rank(11, "0", 2, false)}}, "x");
  EXPECT_EQ(same.recorded->bills[0].process, "p1");
}

// Each process's counts of its graphs without memory nodes and of what it did to them (a JAX
// process updates its command buffers in place) add up across processes, apart as they were.
TEST(RecordMerge, CallsOnGraphsWithoutMemoryNodesAddUpAcrossProcesses) {
  profiler::report a = one_process(4200, "step", 1);
  a.recorded->graphs_without_memory_nodes = 13;
  a.recorded->updates_without_memory_nodes = 40;
  a.recorded->refused_updates_without_memory_nodes = 1;
  a.recorded->node_param_sets_without_memory_nodes = 7;
  profiler::report b = one_process(4300, "step", 1);
  b.recorded->graphs_without_memory_nodes = 2;
  b.recorded->updates_without_memory_nodes = 3;
  b.recorded->node_param_sets_without_memory_nodes = 500;
  const profiler::report m = merge_recordings({{"a.json", a}, {"b.json", b}}, "x");
  EXPECT_EQ(m.recorded->graphs_without_memory_nodes, 15u);
  EXPECT_EQ(m.recorded->updates_without_memory_nodes, 43u);
  EXPECT_EQ(m.recorded->refused_updates_without_memory_nodes, 1u);
  EXPECT_EQ(m.recorded->node_param_sets_without_memory_nodes, 507u);
}

TEST(RecordMerge, OneProcessIsLeftAsItIs) {
  const profiler::report m = merge_recordings({{"r.json.7.json", one_process(7, "step", 1)}}, "x");
  EXPECT_EQ(m.recorded->graphs[0].name, "step");
  EXPECT_EQ(m.recorded->sequence.size(), 1u);
  EXPECT_TRUE(m.recorded->pools[0].process.empty());
}

}  // namespace
}  // namespace gmem::record
