// Record mode with several graphs in one pool: the recorder is fed what the
// recording library would have seen of the pool probe's cases on an H100 (the counters the
// driver gave before and after each call, read only where the library reads them), and the
// report must give each graph its own figures, the growth its own calls caused, and the pool's
// high watermark with an attribution that sums to it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "gmem/profiler/report_io.hpp"
#include "probe_cases.hpp"
#include "record/recording_report.hpp"
#include "record_feed.hpp"
#include "views/show.hpp"

namespace gmem::record {
namespace {

using profiler::probe::granule;
using profiler::probe::MiB;

using test::feed;
using test::probe_case_named;

std::uint64_t sum_of(const std::vector<profiler::recorded_pool::share>& shares) {
  std::uint64_t s = 0;
  for (const auto& a : shares) s += a.bytes;
  return s;
}

// P1: six graphs of 512 + 1 ... 16 + 6 MiB, outputs held, AutoFreeOnLaunch, largest first, three
// rounds, a trim, a fourth round. The device reached 704 MiB; the small graphs' own footprints
// are 32 to 96 MiB, not the device's 704.
TEST(RecordPool, LargestFirstServingWarmUpGivesEachGraphItsOwnFiguresAndThePoolItsHigh) {
  const auto& c = probe_case_named("P1 ");
  recorder r;
  const std::vector<std::uint64_t> measured = feed(r, c);
  profiler::environment env;  // what the probe's run says of its machine
  env.device_name = "NVIDIA H100 80GB HBM3 (the pool probe's case P1, fed to the recorder)";
  env.driver_release = "580.159.04";
  env.granularity_bytes = granule;
  env.granularity_method = "measured by the pool probe's run";
  const profiler::report rep = assemble(r, env, granule);
  ASSERT_TRUE(rep.recorded);
  const profiler::recording& rec = *rep.recorded;
  ASSERT_EQ(rec.graphs.size(), 6u);
  // Growth: what each graph's own calls grew the pool by, as the driver's counters say.
  for (std::size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(rec.graphs[k].growth_bytes, measured[k]) << rec.graphs[k].name;
  }
  EXPECT_EQ(rec.graphs[0].growth_bytes, (544 + 160 + 512) * MiB);  // first, remap, after the trim
  EXPECT_EQ(rec.graphs[3].growth_bytes, 0u);
  // Each graph's own reservation, alone: 544, 288, 160, 96, 64, 32 MiB, within its bound.
  const std::uint64_t own[] = {544, 288, 160, 96, 64, 32};
  for (std::size_t k = 0; k < 6; ++k) {
    const auto& a = rep.scenarios[k].analysis;
    EXPECT_EQ(a.reserved_high_bytes, own[k] * MiB) << rep.scenarios[k].name;
    EXPECT_EQ(rec.graphs[k].own_footprint_bytes, own[k] * MiB);
    EXPECT_LE(a.reserved_high_bytes, std::max<std::uint64_t>(a.lower_bound_rounded_bytes * 3 / 2,
                                                             a.lower_bound_rounded_bytes + 2 * granule));
    EXPECT_TRUE(rec.graphs[k].flags.auto_free_on_launch);
  }
  EXPECT_EQ(rec.graphs[5].held_requested_bytes, 6 * MiB);
  EXPECT_EQ(rec.graphs[5].held_granule_bytes, 32 * MiB);
  // The pool: 704 MiB, reached by g0's relaunch in round 2, which had to map 160 MiB again.
  ASSERT_EQ(rec.pools.size(), 1u);
  const profiler::recorded_pool& pool = rec.pools[0];
  EXPECT_EQ(pool.high_bytes, 704 * MiB);
  EXPECT_EQ(pool.high_graph, "g0");
  EXPECT_EQ(pool.high_event, "launch:remap_contention");
  EXPECT_EQ(pool.model_high_bytes, pool.high_bytes);
  EXPECT_EQ(sum_of(pool.attribution), pool.high_bytes);
  std::map<std::string, std::uint64_t> by;
  for (const auto& a : pool.attribution) by[a.graph + "/" + a.why] = a.bytes;
  EXPECT_EQ(by["g0/working_set"], 544 * MiB);
  for (const char* g : {"g1", "g2", "g3", "g4", "g5"}) EXPECT_EQ(by[std::string(g) + "/held_outputs"], 32 * MiB) << g;
  // Set diagnostics: 20 MiB of outputs held in 160 MiB; the relaunches that mapped again.
  std::map<std::string, const profiler::diagnostic*> diag;
  for (const auto& d : pool.diagnostics) diag[d.code] = &d;
  ASSERT_TRUE(diag.count("held_outputs"));
  EXPECT_EQ(diag["held_outputs"]->bytes, 160 * MiB);
  EXPECT_NE(diag["held_outputs"]->message.find("20.0 MiB requested"), std::string::npos)
      << diag["held_outputs"]->message;
  // The advice: buffers outside the graphs that live exactly as long as the graphs writing them.
  EXPECT_NE(diag["held_outputs"]->message.find("allocate them as gmem::outside_buffer (or a CUDA user object) "
                                               "retained by the graphs that write them, so they live exactly as "
                                               "long as those graphs"),
            std::string::npos)
      << diag["held_outputs"]->message;
  ASSERT_TRUE(diag.count("remap_contention"));
  EXPECT_EQ(diag["remap_contention"]->bytes, 160 * MiB);
  // No graph's diagnostics measure it against the device's watermark.
  for (const auto& s : rep.scenarios) {
    for (const auto& d : s.diagnostics) EXPECT_NE(d.code, "reservation_above_bound") << s.name << ": " << d.message;
  }
  // The held outputs are "held between launches", not "cannot be launched again".
  bool held_said = false;
  for (const auto& d : rep.scenarios[5].diagnostics) {
    held_said = held_said || (d.code == "unfreed_allocation" && d.message.find("held between launches") != std::string::npos &&
                              d.message.find("32.0 MiB mapped") != std::string::npos);
  }
  EXPECT_TRUE(held_said);
  // It reads back as written (and the views' tests read this file: tools/check_views.py).
  profiler::write_report(rep, std::string(GMEM_BINARY_DIR) + "/sample-recording.json");
  const profiler::report back = profiler::read_report(std::string(GMEM_BINARY_DIR) + "/sample-recording.json");
  ASSERT_TRUE(back.recorded);
  EXPECT_EQ(back.recorded->pools[0].attribution.size(), pool.attribution.size());
  EXPECT_EQ(back.recorded->graphs[0].growth_bytes, rec.graphs[0].growth_bytes);
  EXPECT_EQ(back.recorded->sequence.size(), rec.sequence.size());
}

// P2: smallest first: the pool grows at every first launch, and each graph's growth is its own.
TEST(RecordPool, SmallestFirstGrowthSumsToThePoolAndEveryFigureIsTheGraphs) {
  const auto& c = probe_case_named("P2 ");
  recorder r;
  const std::vector<std::uint64_t> measured = feed(r, c);
  const profiler::report rep = assemble(r, profiler::environment{}, granule);
  const profiler::recording& rec = *rep.recorded;
  std::uint64_t total = 0;
  for (std::size_t k = 0; k < rec.graphs.size(); ++k) {
    EXPECT_EQ(rec.graphs[k].growth_bytes, measured[k]) << rec.graphs[k].name;
    total += rec.graphs[k].growth_bytes;
  }
  EXPECT_EQ(rec.graphs[5].growth_bytes, 32 * MiB);  // g5 first: its own footprint
  EXPECT_EQ(rec.graphs[0].growth_bytes, 288 * MiB + 256 * MiB);  // 416 -> 704, and after the trim
  EXPECT_EQ(rec.pools[0].high_bytes, 704 * MiB);
  EXPECT_EQ(rec.pools[0].high_graph, "g0");
  EXPECT_EQ(sum_of(rec.pools[0].attribution), 704 * MiB);
  // Growth adds up to every byte the pool gained (before the trim: 704; after it, 512 again).
  EXPECT_EQ(total, 704 * MiB + 512 * MiB);
}

// Four graphs launched from four threads into four streams at once: each call's window holds
// the others' mappings, so the counters cannot say whose growth is whose; the pool model splits
// the group's measured growth, each graph at most its own footprint, summing to the device's.
TEST(RecordPool, OverlappingWindowsOfFourThreadsAreSplitByThePoolModel) {
  recorder r;
  const std::vector<std::string> defs = {"g0!=w256,o1", "g1!=w192,o1", "g2!=w128,o1", "g3!=w64,o1"};
  profiler::instantiate_flags afol;
  afol.auto_free_on_launch = true;
  for (std::size_t k = 0; k < defs.size(); ++k) {
    r.on_instantiate(0x100 + k, 0x10 + k, profiler::probe::model_of_spec(defs[k], (k + 1) << 40), "",
                     0, 10, counters{}, counters{}, afol);
  }
  counters zero{}, all{};
  all.reserved_current = all.reserved_high = 768 * MiB;  // P14: 288 + 224 + 160 + 96
  for (std::size_t k = 0; k < defs.size(); ++k) {
    // Windows [10k, 10k + 300] us overlap; every call read 0 before and 768 MiB after.
    r.on_launch(0x100 + k, r.stream_label(0xA0 + k), 10.0 * static_cast<double>(k), 300, zero, all, "", true);
  }
  const profiler::report rep = assemble(r, profiler::environment{}, granule);
  const profiler::recording& rec = *rep.recorded;
  const std::uint64_t own[] = {288, 224, 160, 96};
  std::uint64_t total = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_TRUE(rec.graphs[k].events.back().concurrent);
    EXPECT_EQ(rec.graphs[k].growth_bytes, own[k] * MiB) << rec.graphs[k].name;
    EXPECT_LE(rec.graphs[k].growth_bytes, rec.graphs[k].own_footprint_bytes);
    total += rec.graphs[k].growth_bytes;
  }
  EXPECT_EQ(total, 768 * MiB);
  EXPECT_EQ(rec.pools[0].model_high_bytes, 768 * MiB);
  EXPECT_EQ(sum_of(rec.pools[0].attribution), 768 * MiB);
  // Every call read the high: whose call reached it is the one the attribution's working set
  // names (the last to return, after which the attribution is taken), flagged concurrent; the
  // first reading of it ('g0') would contradict the attribution.
  const profiler::recorded_pool& pool = rec.pools[0];
  EXPECT_TRUE(pool.high_concurrent);
  std::string working;
  for (const auto& a : pool.attribution) {
    if (a.why == "working_set") working = a.graph;
  }
  EXPECT_FALSE(working.empty());
  EXPECT_EQ(pool.high_graph, working);
  EXPECT_NE(pool.high_graph, rec.graphs[0].name);
  ASSERT_FALSE(pool.timeline.empty());
  for (const auto& t : pool.timeline) EXPECT_TRUE(t.concurrent) << t.graph;
  const profiler::report back = profiler::from_json_string(profiler::to_json_string(rep), "back");
  EXPECT_TRUE(back.recorded->pools[0].high_concurrent);
  EXPECT_TRUE(back.recorded->pools[0].timeline.front().concurrent);
}

TEST(RecordPool, AFailedLaunchIsRecordedWithItsResultAndNotCountedAsALaunch) {
  recorder r;
  r.on_instantiate(0x100, 0x10, profiler::probe::model_of_spec("g0=w64,o8", 1ull << 40), "", 0, 10,
                   counters{}, counters{});
  r.on_launch(0x100, 1, 1, 300, counters{}, counters{});
  r.on_launch(0x100, 1, 2, 4, std::nullopt, std::nullopt, "CUDA_ERROR_INVALID_VALUE");
  const profiler::report rep = assemble(r, profiler::environment{}, granule);
  const auto& g = rep.recorded->graphs[0];
  EXPECT_EQ(g.launches, 1u);
  EXPECT_EQ(g.failed_calls, 1u);
  EXPECT_EQ(g.events.back().result, "CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(g.events.back().cls, "failed");
  bool phase = false;
  for (const auto& c : rep.scenarios[0].launch_costs) phase = phase || c.phase == "launch_failed";
  EXPECT_TRUE(phase);
  // The output is "cannot be launched again" here: no AutoFreeOnLaunch.
  bool warned = false;
  for (const auto& d : rep.scenarios[0].diagnostics) {
    warned = warned || d.message.find("cannot be launched again") != std::string::npos;
  }
  EXPECT_TRUE(warned);
}

TEST(RecordPool, AFreeOfAHeldOutputIsRecordedAndOtherFreesAreNot) {
  recorder r;
  r.on_instantiate(0x100, 0x10, profiler::probe::model_of_spec("g0=w64,o8", 1ull << 40), "", 0, 10,
                   counters{}, counters{});
  EXPECT_TRUE(r.is_held((1ull << 40) + 64 * MiB));
  EXPECT_FALSE(r.is_held(1ull << 40));  // the working allocation: freed inside the graph
  EXPECT_TRUE(r.on_free((1ull << 40) + 64 * MiB, r.stream_label(0xA), 5));
  EXPECT_FALSE(r.on_free(0x1234, r.stream_label(0xA), 6));
  const profiler::report rep = assemble(r, profiler::environment{}, granule);
  const auto& seq = rep.recorded->sequence;
  ASSERT_EQ(seq.size(), 1u);
  EXPECT_EQ(seq[0].op, "free");
  EXPECT_EQ(seq[0].held, 0);
}

// The frees a capture makes into its graph skip the session's lock: might_hold answers for them
// without it, "no" for almost every address no graph held, never "no" for one a graph holds.
TEST(RecordPool, AnAddressNoGraphHeldIsToldApartWithoutTheLock) {
  recorder r;
  const std::uint64_t base = 1ull << 40;
  std::vector<std::uint64_t> held;
  for (std::uint64_t k = 0; k < 200; ++k) {
    const std::uint64_t at = base + k * 1024 * MiB;
    r.on_instantiate(0x100 + k, 0x10 + k, profiler::probe::model_of_spec("g0=w64,o8", at), "", 0, 10, counters{},
                     counters{});
    held.push_back(at + 64 * MiB);
  }
  for (const std::uint64_t a : held) {
    ASSERT_TRUE(r.is_held(a));
    EXPECT_TRUE(r.might_hold(a)) << a;
  }
  // Addresses of the same alignment that no graph held: the working allocations, and others.
  int maybe = 0, never = 0;
  for (std::uint64_t k = 0; k < 200; ++k) {
    for (std::uint64_t j = 0; j < 50; ++j) {
      const std::uint64_t a = base + k * 1024 * MiB + 128 * MiB + j * 2 * MiB;
      ASSERT_FALSE(r.is_held(a));
      ++never;
      if (r.might_hold(a)) ++maybe;
    }
  }
  EXPECT_LT(maybe, never / 100) << maybe << " of " << never << " never-held addresses looked held";
  EXPECT_TRUE(r.on_free(held[0], r.stream_label(0xA), 5));
}

// A loop of launches costs bounded memory: the sequence keeps one run, the steady times a
// sample of max_steady_samples, with the exact count, minimum and maximum.
TEST(RecordPool, ALongSteadyLoopKeepsBoundedState) {
  recorder r;
  r.on_instantiate(0x100, 0x10, profiler::probe::model_of_spec("g0=w64", 1ull << 40), "", 0, 10,
                   counters{}, counters{});
  r.on_launch(0x100, r.stream_label(0xA), 1, 300, counters{}, counters{});
  for (int i = 0; i < 100000; ++i) {
    const auto plan = r.plan_launch(0x100, 0xA);
    const double us = 3.0 + (i % 7);
    if (!r.on_steady_launch(plan, us)) r.on_launch(0x100, plan.stream, 2, us, std::nullopt, std::nullopt);
  }
  const graph_record& g = r.graphs()[0];
  EXPECT_EQ(g.steady_count, 100000u);
  EXPECT_EQ(g.steady_host_us.size(), max_steady_samples);
  EXPECT_DOUBLE_EQ(g.steady_min_us, 3.0);
  EXPECT_DOUBLE_EQ(g.steady_max_us, 9.0);
  ASSERT_EQ(r.sequence().size(), 2u);  // the first launch, then one run of the steady ones
  EXPECT_EQ(r.sequence()[1].count, 100000u);
  const profiler::report rep = assemble(r, profiler::environment{}, granule);
  const auto& steady = rep.scenarios[0].launch_costs.back();
  EXPECT_EQ(steady.phase, "steady");
  EXPECT_EQ(steady.host.count, 100000u);
  EXPECT_DOUBLE_EQ(steady.host.median_us, 6.0);
}

}  // namespace
}  // namespace gmem::record

namespace gmem::record {
namespace {

// A program that makes the same graph again and again (same site, same structure)
// keeps one record with a count: 10,000 graphs captured, launched twice and destroyed leave one
// graph record, a bounded sequence and a bounded timeline.
TEST(RecordBounded, TenThousandGraphsMadeAndDestroyedKeepOneRecord) {
  recorder r;
  counters zero{}, mapped{};
  mapped.reserved_current = mapped.reserved_high = 32 << 20;
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t graph = 0x1000 + i, exec = 0x100000 + i;
    r.on_capture_begin(0xAAA, "");
    r.on_capture_end(0xAAA, graph);
    r.on_instantiate(exec, graph, profiler::probe::model_of_spec("g=w2", 1ull << 40), "", i, 10, zero, zero, {},
                     make_stack({"program+0x1234", "program+0x5678"}));
    r.on_launch(exec, r.stream_label(0xAAA), i, 80, zero, mapped);
    r.on_launch(exec, r.stream_label(0xAAA), i, 3, std::nullopt, std::nullopt);
    r.on_exec_destroy(exec);
    r.on_graph_destroy(graph);
  }
  ASSERT_EQ(r.graphs().size(), 1u);
  const graph_record& g = r.graphs()[0];
  EXPECT_EQ(g.instances, 10000u);
  EXPECT_EQ(g.launches, 20000u);
  EXPECT_EQ(g.steady_count, 10000u);
  EXPECT_EQ(g.events.size(), max_events);
  EXPECT_GT(g.events_dropped, 0u);
  EXPECT_LE(r.sequence().size(), max_sequence);
  EXPECT_LE(r.timeline().size(), max_timeline);
  const profiler::report rep = assemble(r, profiler::environment{}, granule);
  EXPECT_EQ(rep.recorded->graphs[0].instances, 10000u);
}

// A graph of another structure is another record.
TEST(RecordBounded, GraphsOfAnotherShapeStayApart) {
  recorder r;
  for (int i = 0; i < 4; ++i) {
    const std::string def = i % 2 ? "g=w2" : "g=w4";
    r.on_instantiate(0x100 + i, 0x10 + i, profiler::probe::model_of_spec(def, 1ull << 40), "", i, 10,
                     counters{}, counters{});
    r.on_exec_destroy(0x100 + i);
  }
  EXPECT_EQ(r.graphs().size(), 2u);
}

}  // namespace
}  // namespace gmem::record

namespace gmem::record {
namespace {

// Graphs whose memory is the application's allocator's (PyTorch's native caching
// allocator): what the capturing thread allocated while its capture was active is the graph's
// pool growth; a later capture into a shared pool may add nothing, and says so.
TEST(RecordPrivatePool, CaptureTimeAllocationsAreTheGraphsPoolGrowth) {
  recorder r;
  const auto capture = [&](std::uint64_t stream, std::uint64_t graph, const std::string& name,
                           std::vector<std::uint64_t> allocations) {
    r.on_capture_begin(stream, name);
    std::uint64_t handle = graph << 20;
    for (std::uint64_t bytes : allocations) r.on_capture_alloc(stream, handle++, bytes, 0, 1);
    r.on_capture_end(stream, graph);
    profiler::graph_model kernels;
    kernels.nodes = {profiler::model_node{profiler::node_kind::kernel, 0, 0, 0, {}, std::nullopt}};
    r.on_instantiate(graph + 0x1000, graph, kernels, "", 2, 5, std::nullopt, std::nullopt);
  };
  // Before any capture allocated: a plain kernel graph, counted only.
  capture(0xA, 0x1, "warm-up", {});
  capture(0xA, 0x2, "batch 256", {512u << 20, 256u << 20});  // shared pool: grows by 768 MiB
  capture(0xA, 0x3, "batch 128", {});                        // fits: adds nothing
  capture(0xB, 0x4, "batch 1", {4u << 20});
  ASSERT_EQ(r.graphs().size(), 3u);
  EXPECT_EQ(r.graphs_without_memory_nodes(), 1u);
  const profiler::report rep = assemble(r, profiler::environment{}, granule);
  const auto& g = rep.recorded->graphs;
  EXPECT_EQ(g[0].name, "batch 256");
  EXPECT_EQ(g[0].kind, "private_pool");
  EXPECT_EQ(g[0].capture_pool_growth_bytes, 768u << 20);
  EXPECT_EQ(g[1].capture_pool_growth_bytes, 0u);
  EXPECT_EQ(g[2].capture_pool_growth_bytes, 4u << 20);
  ASSERT_EQ(rep.recorded->pools.size(), 1u);
  EXPECT_EQ(rep.recorded->pools[0].private_pool_bytes, 772u << 20);
  EXPECT_EQ(rep.recorded->pools[0].high_bytes, 0u);  // no graph memory at all
  // Its timeline is the private pools', capture by capture (what the views draw).
  const auto& tl = rep.recorded->pools[0].timeline;
  ASSERT_EQ(tl.size(), 3u);
  EXPECT_EQ(tl[0].graph, "batch 256");
  EXPECT_EQ(tl[0].reserved_bytes, 768u << 20);
  EXPECT_EQ(tl[2].reserved_bytes, 772u << 20);
  EXPECT_EQ(tl[2].event, "capture");
  EXPECT_EQ(rep.scenarios[0].diagnostics.at(0).code, "private_pool");
  // The pool released: its segments freed.
  EXPECT_TRUE(r.on_capture_memory_free(0x2ull << 20, 9));
  EXPECT_FALSE(r.on_capture_memory_free(0x12345, 9));
  EXPECT_EQ(r.graphs()[0].released_bytes, 512u << 20);
}

}  // namespace
}  // namespace gmem::record

namespace gmem::record {
namespace {

// A graph that allocates on two devices maps memory on each; the call is recorded
// once per device, and each device's pool has its own growth, high watermark and attribution.
TEST(RecordDevices, AGraphOnTwoDevicesGrowsEachDevicesPool) {
  recorder r;
  profiler::graph_model m;
  using profiler::model_node;
  using profiler::node_kind;
  m.nodes = {model_node{node_kind::mem_alloc, 1ull << 40, 64u << 20, 0, {}, std::nullopt},
             model_node{node_kind::mem_alloc, 2ull << 40, 96u << 20, 1, {}, std::nullopt},
             model_node{node_kind::kernel, 0, 0, 0, {}, std::nullopt},
             model_node{node_kind::mem_free, 1ull << 40, 0, 0, {}, std::nullopt},
             model_node{node_kind::mem_free, 2ull << 40, 0, 0, {}, std::nullopt}};
  m.edges = {{0, 2}, {1, 2}, {2, 3}, {2, 4}};
  r.on_instantiate(0x100, 0x10, m, "two devices", 0, 10, counters{}, counters{});
  EXPECT_EQ(r.devices_of(0x100), (std::vector<int>{0, 1}));
  counters d0{}, d1{};
  d0.reserved_current = d0.reserved_high = 64u << 20;
  d1.reserved_current = d1.reserved_high = 96u << 20;
  r.on_launch(0x100, r.stream_label(0xA), 5, 300, counters{}, d0);
  r.on_other_device(0x100, 1, 5, counters{}, d1);
  r.on_other_device(0x100, 1, 99, counters{}, d1);  // not the call just recorded: ignored
  const profiler::report rep = assemble(r, profiler::environment{}, granule);
  const auto& rec = *rep.recorded;
  EXPECT_EQ(rec.graphs[0].growth_bytes, 160u << 20);
  ASSERT_EQ(rec.pools.size(), 2u);
  for (const auto& p : rec.pools) {
    const std::uint64_t want = p.device == 0 ? 64u << 20 : 96u << 20;
    EXPECT_EQ(p.high_bytes, want) << "device " << p.device;
    EXPECT_EQ(p.model_high_bytes, want) << "device " << p.device;
    ASSERT_EQ(p.attribution.size(), 1u);
    EXPECT_EQ(p.attribution[0].why, "working_set");
    EXPECT_EQ(p.attribution[0].bytes, want);
  }
}

}  // namespace
}  // namespace gmem::record

namespace gmem::record {
namespace {

// Past the analysis budget at exit, a graph keeps its skeleton and is marked
// deferred; gmemprof show analyses it.
TEST(RecordBudget, PastTheBudgetAGraphKeepsItsSkeletonAndShowAnalysesIt) {
  recorder r;
  r.on_instantiate(0x100, 0x10, profiler::probe::model_of_spec("g=w64,o8", 1ull << 40), "deferred", 0, 10,
                   counters{}, counters{});
  setenv("GMEM_RECORD_ANALYSIS_BUDGET_S", "0", 1);
  profiler::environment env;
  env.granularity_bytes = granule;
  const profiler::report rep = assemble(r, env, granule);
  unsetenv("GMEM_RECORD_ANALYSIS_BUDGET_S");
  ASSERT_EQ(rep.scenarios.size(), 1u);
  EXPECT_EQ(rep.scenarios[0].status, profiler::scenario_status::skipped);
  EXPECT_EQ(rep.scenarios[0].status_message.rfind("analysis deferred", 0), 0u);
  ASSERT_EQ(rep.scenarios[0].skeletons.size(), 1u);
  EXPECT_TRUE(rep.recorded->analysis_deferred);
  // Lines wrap at 100 characters: read each break and its indent as one space.
  profiler::show_options all;  // each graph's figures: past the first screen
  all.all = true;
  const std::string shown = std::regex_replace(profiler::format_report(rep, all), std::regex("\n +"), " ");
  EXPECT_NE(shown.find("analysed now: requested 72.0 MiB, lower bound 96.0 MiB"), std::string::npos) << shown;
  EXPECT_NE(shown.find("alone (predicted) 96.0 MiB; 2 allocations, 1 unfreed"), std::string::npos) << shown;
  // Within the budget, the same graph is analysed at exit.
  const profiler::report in_time = assemble(r, env, granule);
  EXPECT_EQ(in_time.scenarios[0].status, profiler::scenario_status::ok);
  EXPECT_EQ(in_time.scenarios[0].analysis.reserved_high_bytes, 96u << 20);
}

// The budget is checked inside a graph's analysis too. A layered graph of 4,000 +
// 4,000 allocations takes tens of milliseconds to analyse; with a budget of 2 ms its analysis
// stops inside, the graph keeps its skeleton and is deferred (never half-analysed), and so is
// the small graph after it.
TEST(RecordBudget, TheBudgetStopsAGraphsAnalysisFromInside) {
  profiler::graph_model big;
  big.name = "layered";
  std::vector<std::size_t> frees;
  const auto add = [&big](profiler::node_kind k, std::uint64_t address, std::size_t bytes) {
    profiler::model_node n;
    n.kind = k;
    n.address = address;
    n.bytes = bytes;
    big.nodes.push_back(n);
    return big.nodes.size() - 1;
  };
  const std::size_t per_layer = 4000;
  for (std::size_t i = 0; i < per_layer; ++i) {
    const std::uint64_t address = (1ull << 40) + i * granule;
    const std::size_t a = add(profiler::node_kind::mem_alloc, address, (1 + i % 16) * MiB);
    frees.push_back(add(profiler::node_kind::mem_free, address, 0));
    big.edges.emplace_back(a, frees.back());
  }
  const std::size_t join = add(profiler::node_kind::empty, 0, 0);
  for (std::size_t f : frees) big.edges.emplace_back(f, join);
  for (std::size_t i = 0; i < per_layer; ++i) {
    const std::uint64_t address = (1ull << 40) + (per_layer + i) * granule;
    const std::size_t a = add(profiler::node_kind::mem_alloc, address, (17 + i % 16) * MiB);
    big.edges.emplace_back(join, a);
    big.edges.emplace_back(a, add(profiler::node_kind::mem_free, address, 0));
  }
  recorder r;
  r.on_instantiate(0x100, 0x10, big, "big", 0, 10, counters{}, counters{});
  r.on_instantiate(0x200, 0x20, profiler::probe::model_of_spec("g=w64,o8", 1ull << 41), "small", 20, 10,
                   counters{}, counters{});
  profiler::environment env;
  env.granularity_bytes = granule;
  assemble_options options;
  options.budget_s = 0.002;
  options.threads = 1;  // in order: the large graph first (with threads, small graphs go first)
  const profiler::report rep = assemble(r, env, granule, {}, options);
  ASSERT_EQ(rep.scenarios.size(), 2u);
  for (const profiler::scenario_result& s : rep.scenarios) {
    EXPECT_EQ(s.status, profiler::scenario_status::skipped) << s.name;
    EXPECT_EQ(s.status_message.rfind("analysis deferred", 0), 0u) << s.name << ": " << s.status_message;
    EXPECT_EQ(s.analysis.lower_bound_bytes, 0u) << s.name;  // not computed, never a partial figure
    ASSERT_EQ(s.skeletons.size(), 1u) << s.name;
  }
  EXPECT_EQ(rep.scenarios[0].skeletons[0].nodes.size(), 4 * per_layer + 1);
  EXPECT_TRUE(rep.recorded->analysis_deferred);
  // With the default budget (30 s) both are analysed.
  const profiler::report in_time = assemble(r, env, granule);
  EXPECT_EQ(in_time.scenarios[0].status, profiler::scenario_status::ok);
  EXPECT_EQ(in_time.scenarios[1].status, profiler::scenario_status::ok);
  EXPECT_FALSE(in_time.recorded->analysis_deferred);
}

}  // namespace
}  // namespace gmem::record
