// On the GPU: a set of graphs in one pool, measured. profile_graphs gives each graph its
// own figures and explains the set's high watermark; the pool model predicts it; replay --set
// reproduces it from the report alone; and the what-if it prints (outputs outside the graphs) is
// checked against the real graphs rebuilt as it says.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/environment.hpp"
#include "gmem/profiler/profile_set.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gpu_test_support.cuh"

namespace gmem::test {
namespace {

using namespace gmem::profiler;  // NOLINT(google-build-using-namespace): test file

constexpr std::size_t MiB = std::size_t{1} << 20;

// Working memory freed inside the graph, and an output it leaves allocated (or, with `into`,
// writes into a buffer outside the graph instead).
graph serving_graph(const std::string& name, std::size_t work, std::size_t output, void* into = nullptr) {
  graph g(name);
  auto w = g.add_alloc({work, 0});
  if (into) {
    auto t = g.add_memset({w.node}, w.ptr, 1, MiB);
    auto c = g.add_memset({t}, into, 2, output);
    (void)g.add_free(w.ptr, {c});
    return g;
  }
  auto o = g.add_alloc({output, 0});
  auto t = g.add_memset({w.node, o.node}, w.ptr, 1, MiB);
  (void)g.add_memset({t}, o.ptr, 2, output);
  (void)g.add_free(w.ptr, {t});
  return g;
}

std::uint64_t sum_of(const std::vector<recorded_pool::share>& shares) {
  std::uint64_t s = 0;
  for (const auto& a : shares) s += a.bytes;
  return s;
}

class PoolTest : public GpuTest {};

// The six graphs of the serving warm-up, largest first, profiled for three rounds.
report profile_six() {
  std::vector<graph> graphs;
  std::vector<std::pair<cudaGraph_t, std::string>> set;
  for (int i = 0; i < 6; ++i) {
    graphs.push_back(serving_graph("g" + std::to_string(i), (std::size_t{512} >> i) * MiB, std::size_t(i + 1) * MiB));
  }
  for (const graph& g : graphs) set.emplace_back(g.get(), g.name());
  set_profile_options o;
  o.rounds = 3;
  return profile_graphs(set, o);
}

// Six graphs, 512 + 1 ... 16 + 6 MiB, largest first, three rounds: the pool reaches the largest
// graph's footprint plus one granule for each output the other five hold (measured on an H100:
// 544, then 704 MiB), which the pool model predicts and the attribution explains.
TEST_F(PoolTest, ServingWarmUpHighWatermarkIsTheLargestGraphPlusAGranulePerHeldOutput) {
  const report rep = profile_six();
  ASSERT_TRUE(rep.recorded);
  const recording& rec = *rep.recorded;
  const std::uint64_t granule = measure_granularity(0).bytes;
  ASSERT_EQ(rec.pools.size(), 1u);
  const recorded_pool& pool = rec.pools[0];
  std::cout << "serving warm-up: high " << (pool.high_bytes >> 20) << " MiB, model "
            << (pool.model_high_bytes >> 20) << " MiB, reached by " << pool.high_graph << " ("
            << pool.high_event << "), granule " << (granule >> 20) << " MiB\n";
  EXPECT_EQ(pool.high_bytes, rec.graphs[0].own_footprint_bytes + 5 * granule);
  EXPECT_EQ(pool.model_high_bytes, pool.high_bytes);
  EXPECT_EQ(sum_of(pool.attribution), pool.high_bytes);
  EXPECT_EQ(pool.high_graph, "g0");
  // Growth: g0's first launch maps its footprint, its second what the others' outputs took.
  std::uint64_t total = 0;
  for (const recorded_graph& g : rec.graphs) {
    std::uint64_t own = 0;
    for (const recorded_event& e : g.events) {
      if (e.before && e.after && e.after->reserved_current > e.before->reserved_current) {
        own += e.after->reserved_current - e.before->reserved_current;
      }
    }
    EXPECT_EQ(g.growth_bytes, own) << g.name;
    total += g.growth_bytes;
  }
  EXPECT_EQ(rec.graphs[0].growth_bytes, pool.high_bytes);
  EXPECT_EQ(total, pool.high_bytes);
  // Each graph's own figures: alone, within its bound.
  for (const scenario_result& s : rep.scenarios) {
    EXPECT_LE(s.analysis.reserved_high_bytes, s.analysis.lower_bound_rounded_bytes + granule) << s.name;
  }
  bool held = false;
  for (const diagnostic& d : pool.diagnostics) held = held || (d.code == "held_outputs" && d.bytes == 5 * granule);
  EXPECT_TRUE(held);
  write_report(rep, "pool-test-serving.json");
}

// The recording replayed from the report alone reaches the same high watermark; its what-if
// "outputs outside the graphs" is true of the real graphs rebuilt as the advice says: each
// output a gmem::outside_buffer retained by the graph that writes it, so it lives exactly as
// long as that graph and its executable graph.
TEST_F(PoolTest, ReplaySetReproducesTheSetAndItsOutputsOutsideClaimHolds) {
  const report rep = profile_six();
  const std::uint64_t granule = measure_granularity(0).bytes;
  const set_replay_result r = replay_set(rep, 0);
  const std::uint64_t diff = r.high_bytes > r.recorded_high_bytes ? r.high_bytes - r.recorded_high_bytes
                                                                   : r.recorded_high_bytes - r.high_bytes;
  std::cout << "replay --set: " << (r.high_bytes >> 20) << " MiB, recorded " << (r.recorded_high_bytes >> 20)
            << " MiB\n";
  EXPECT_LT(diff, granule);
  const measured_change* outside = nullptr;
  for (const auto& c : r.changes) {
    std::cout << "what-if " << c.kind << ": " << (c.measured_bytes >> 20) << " MiB measured, saves "
              << (c.saving_bytes >> 20) << " MiB\n";
    if (c.kind == "outputs_outside") outside = &c;
  }
  for (const auto& c : r.tried) std::cout << "tried " << c.kind << ": " << (c.measured_bytes >> 20) << " MiB\n";
  ASSERT_NE(outside, nullptr) << "the held outputs cost a granule each: moving them out must save";
  EXPECT_NE(outside->where.find("gmem::outside_buffer"), std::string::npos) << outside->where;
  // The real graphs, their outputs in outside buffers: pool high plus the buffers. The count is
  // shared with the release callbacks, which run on gmem's release thread.
  const auto freed = std::make_shared<std::atomic<int>>(0);
  std::size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  std::vector<outside_buffer> buffers;
  for (int i = 0; i < 6; ++i) buffers.emplace_back(std::size_t(i + 1) * MiB, 0, [freed] { freed->fetch_add(1); });
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  {
    std::vector<graph> outside_graphs;
    for (int i = 0; i < 6; ++i) {
      outside_graphs.push_back(serving_graph("h" + std::to_string(i), (std::size_t{512} >> i) * MiB,
                                             std::size_t(i + 1) * MiB, buffers[i].get()));
      outside_graphs.back().retain(std::move(buffers[i].owner()));  // the graph's alone from now on
    }
    buffers.clear();  // the handles dropped: only the graphs hold the buffers
    (void)trim(0);
    reset_high_watermarks(0);
    std::vector<std::unique_ptr<graph_exec>> execs;
    for (const graph& g : outside_graphs) execs.push_back(std::make_unique<graph_exec>(g));
    stream s;
    for (int round = 0; round < 3; ++round) {
      for (auto& e : execs) e->launch(s);
      s.synchronize();
    }
    const std::uint64_t real = read_counters(0).reserved_high + (free_before - free_after);
    std::cout << "outputs outside, real graphs: " << (real >> 20) << " MiB, claimed "
              << (outside->measured_bytes >> 20) << " MiB\n";
    const std::uint64_t gap = real > outside->measured_bytes ? real - outside->measured_bytes
                                                             : outside->measured_bytes - real;
    EXPECT_LT(gap, granule);
    // Alive while their graphs and executable graphs are: nothing freed after the launches.
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    wait_for_deferred_releases();
    EXPECT_EQ(freed->load(), 0);
  }
  // The graphs and executable graphs destroyed: every buffer freed, on gmem's release thread.
  EXPECT_TRUE(eventually([&] {
    wait_for_deferred_releases();
    return freed->load() == 6;
  }));
  EXPECT_EQ(freed->load(), 6);
  (void)trim(0);
}

}  // namespace
}  // namespace gmem::test
