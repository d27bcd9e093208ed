// Issue 19: the reports of a recorded command's processes merged into one, graphs named by
// process, pools labelled by process; one process's report is left as it is.
#include <gtest/gtest.h>

#include "record/recording_merge.hpp"

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

TEST(RecordMerge, OneProcessIsLeftAsItIs) {
  const profiler::report m = merge_recordings({{"r.json.7.json", one_process(7, "step", 1)}}, "x");
  EXPECT_EQ(m.recorded->graphs[0].name, "step");
  EXPECT_EQ(m.recorded->sequence.size(), 1u);
  EXPECT_TRUE(m.recorded->pools[0].process.empty());
}

}  // namespace
}  // namespace gmem::record
