// The check of two recordings of one program (gmemprof record): graphs matched by
// identity whatever the run named them, the pools' figures as rows of their own, each graph's
// own figures (held granules included, growth not), and no rows a recording cannot have.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gmemprof/commands.hpp"
#include "gmem/profiler/compare.hpp"
#include "gmem/profiler/report.hpp"
#include "gmem/profiler/report_io.hpp"

namespace gmem::profiler {
namespace {

constexpr std::uint64_t mib = 1024 * 1024;
constexpr std::uint64_t granule = 32 * mib;

// The program: four graphs, each holding one output (one granule) between launches. Three are
// named by their capturing stream, one by an NVTX range.
struct graph_spec {
  std::string identity;
  std::string nvtx;  // its name in every run when not empty
  std::uint64_t footprint;
  std::uint64_t requested;
};
const graph_spec program[] = {
    {"site:00000000000000a1", "", 512 * mib, 1024 * mib},
    {"site:00000000000000b2", "", 256 * mib, 512 * mib},
    {"site:00000000000000c3", "", 128 * mib, 256 * mib},
    {"nvtx:decode", "decode", 64 * mib, 128 * mib},
};

launch_cost host_cost(const std::string& phase, std::size_t count, double median_us) {
  launch_cost l;
  l.phase = phase;
  l.host = {count, median_us, median_us, median_us};
  return l;  // wall: no samples, as the recorder writes it
}

// One run in which the program's threads captured and first launched the graphs in `order`
// (indices into `program`). The recorder names a graph without an NVTX range by its stream, and
// numbers streams as it first sees them: "stream 1 #1" is whichever graph came first. A first
// launch maps what the pool lacks for the outputs held so far plus the graph's footprint, so
// which graph maps depends on the order; the pool's high is the largest working set plus every
// other graph's held granule (608 MiB) once all have run twice, in any order.
report run(const std::vector<int>& order) {
  report r;
  r.env.device_name = "NVIDIA H100 80GB HBM3";
  r.env.granularity_bytes = granule;
  recording rec;
  std::uint64_t reserved = 0, held = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const graph_spec& g = program[order[k]];
    scenario_result s;
    s.name = g.nvtx.empty() ? "stream " + std::to_string(k + 1) + " #1" : g.nvtx;
    s.params = {{"source", std::string("recorded")}};
    s.analysis.requested_bytes = g.requested;
    s.analysis.used_high_bytes = g.footprint;
    s.analysis.reserved_high_bytes = g.footprint;
    s.analysis.va_reuse_ratio = 1.5;
    s.analysis.physical_reuse_ratio =
        static_cast<double>(g.requested) / static_cast<double>(g.footprint);
    const std::uint64_t need = held + g.footprint;
    const std::uint64_t growth = need > reserved ? need - reserved : 0;
    reserved += growth;
    held += granule;
    s.launch_costs = {host_cost("instantiate", 1, 80), host_cost("first_launch", 1, growth ? 1100 : 12),
                      host_cost("steady", 200, 9)};
    r.scenarios.push_back(s);

    recorded_graph rg;
    rg.name = s.name;
    rg.identity = g.identity;
    rg.nvtx = g.nvtx;
    rg.stream = "stream " + std::to_string(k + 1);
    rg.sequence = k + 1;
    rg.devices = {0};
    rg.launches = 201;
    rg.steady_launches = 200;
    rg.own_footprint_bytes = g.footprint;
    rg.held_requested_bytes = 4 * mib;
    rg.held_granule_bytes = granule;
    rg.growth_bytes = growth;
    recorded_event first;
    first.kind = "launch";
    first.cls = "first_launch";
    first.host_us = s.launch_costs[1].host.median_us;
    first.growth_bytes = static_cast<std::int64_t>(growth);
    rg.events = {first};
    rec.graphs.push_back(rg);
  }
  recorded_pool pool;
  pool.device = 0;
  pool.high_bytes = 608 * mib;
  pool.end_bytes = 608 * mib;
  rec.pools = {pool};
  r.recorded = rec;
  return r;
}

// The scenario's index of program graph `g` in a run.
std::size_t index_of(const report& r, int g) {
  for (std::size_t i = 0; i < r.recorded->graphs.size(); ++i) {
    if (r.recorded->graphs[i].identity == program[g].identity) return i;
  }
  throw std::logic_error("no graph " + program[g].identity);
}

// Graph `g` holds one more output between launches: one more granule held, one more in its own
// footprint, and one more in the pool.
void hold_one_more_output(report& r, int g) {
  const std::size_t i = index_of(r, g);
  r.recorded->graphs[i].held_granule_bytes += granule;
  r.recorded->graphs[i].held_requested_bytes += 4 * mib;
  r.recorded->graphs[i].own_footprint_bytes += granule;
  auto& a = r.scenarios[i].analysis;
  a.used_high_bytes += granule;
  a.reserved_high_bytes += granule;
  a.physical_reuse_ratio =
      static_cast<double>(a.requested_bytes) / static_cast<double>(a.reserved_high_bytes);
  r.recorded->pools[0].high_bytes += granule;
  r.recorded->pools[0].end_bytes += granule;
}

// As gmemprof record wrote recordings before graphs had identities (nor held granules).
report without_identities(report r) {
  for (auto& g : r.recorded->graphs) {
    g.identity.clear();
    g.held_granule_bytes = 0;
  }
  return r;
}

const comparison_row* find_row(const comparison& c, const std::string& scenario,
                               const std::string& metric) {
  const auto it = std::find_if(c.rows.begin(), c.rows.end(), [&](const comparison_row& r) {
    return r.scenario == scenario && r.metric == metric;
  });
  return it == c.rows.end() ? nullptr : &*it;
}

const comparison_row& row(const comparison& c, const std::string& scenario,
                          const std::string& metric) {
  if (const comparison_row* r = find_row(c, scenario, metric)) return *r;
  throw std::logic_error("no row '" + scenario + "' " + metric);
}

std::vector<std::string> regressed(const comparison& c) {
  std::vector<std::string> out;
  for (const auto& r : c.rows) {
    if (r.verdict == "regression" || r.verdict == "missing") out.push_back(r.scenario + " " + r.metric);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool has_note(const comparison& c, const std::string& text) {
  return std::any_of(c.notes.begin(), c.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// A line of the printed table that starts with `scenario` and holds `metric` and `verdict`.
// A row of the check's table: on one line ("scenario metric ... verdict", format_comparison) or,
// in the text of `gmemprof check` of two recordings, under the scenario's heading (indented by
// two, its metrics by four).
bool has_line(const std::string& text, const std::string& scenario, const std::string& metric,
              const std::string& verdict) {
  std::istringstream in(text);
  std::string heading;
  for (std::string line; std::getline(in, line);) {
    if (line.size() > 2 && line.compare(0, 2, "  ") == 0 && line[2] != ' ') heading = line.substr(2);
    const bool named = line.rfind(scenario + " ", 0) == 0 || (heading == scenario && line.rfind("    ", 0) == 0);
    if (named && line.find(" " + metric + " ") != std::string::npos && line.find(verdict) != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string write(const report& r, const std::string& name) {
  const std::string path = ::testing::TempDir() + "check_recorded_" + name + ".json";
  write_report(r, path);
  return path;
}

const std::vector<int> largest_first = {0, 1, 2, 3};
// Another run of the same program: the threads raced otherwise. Every graph named by a stream
// has another name than in largest_first ("stream 1 #1" is graph c3 here, a1 there).
const std::vector<int> raced = {2, 0, 3, 1};

TEST(CheckRecorded, RunsWhoseThreadsRacedMatchGraphsByIdentityAndPass) {
  const report base = run(largest_first), cur = run(raced);
  const comparison c = compare_reports(base, cur, tolerances{});
  EXPECT_EQ(regressed(c), std::vector<std::string>{});
  EXPECT_EQ(exit_code(c), 0);

  // Labelled with the current name and the baseline's: a1 was "stream 1 #1", is "stream 2 #1".
  const comparison_row& a1 = row(c, "stream 2 #1 (baseline: stream 1 #1)", "reserved_high_bytes");
  EXPECT_EQ(a1.baseline, 512.0 * mib);
  EXPECT_EQ(a1.current, 512.0 * mib);
  EXPECT_EQ(a1.verdict, "pass");
  EXPECT_EQ(row(c, "stream 1 #1 (baseline: stream 3 #1)", "used_high_bytes").current, 128.0 * mib);
  // A name both runs gave: no "(baseline: ...)".
  EXPECT_EQ(row(c, "decode", "held_granule_bytes").baseline, static_cast<double>(granule));
  EXPECT_EQ(row(c, "decode", "held_granule_bytes").verdict, "pass");
  EXPECT_EQ(row(c, "pool[device 0]", "high_bytes").current, 608.0 * mib);
  EXPECT_EQ(row(c, "pool[device 0]", "end_bytes").verdict, "pass");
  // Four graphs of 4 analysis rows, 1 held row and 3 host rows each, and the pool's 2.
  EXPECT_EQ(c.rows.size(), 4u * 8u + 2u);
}

TEST(CheckRecorded, GrowthIsNotComparedBecauseTheLaunchOrderMovesIt) {
  const report base = run(largest_first), cur = run(raced);
  // The same graph grew the pool by 0 in one run and by 128 MiB in the other.
  EXPECT_EQ(base.recorded->graphs[index_of(base, 2)].growth_bytes, 0u);
  EXPECT_EQ(cur.recorded->graphs[index_of(cur, 2)].growth_bytes, 128 * mib);
  const comparison c = compare_reports(base, cur, tolerances{});
  for (const auto& r : c.rows) {
    EXPECT_EQ(r.metric.find("growth"), std::string::npos) << r.scenario << " " << r.metric;
  }
  // Its first launch mapped 128 MiB now and nothing before (1100 us against 12 us): not the
  // same thing measured, so "unstable" rather than a regression.
  const comparison_row& first = row(c, "stream 1 #1 (baseline: stream 3 #1)", "host.first_launch");
  EXPECT_EQ(first.baseline, 12.0);
  EXPECT_EQ(first.current, 1100.0);
  EXPECT_EQ(first.verdict, "unstable");
  EXPECT_TRUE(has_note(c, "'first_launch' calls mapped 0.0 MiB in the baseline and 128.0 MiB now"));
  // b2's first launch mapped nothing in either run: one call in each recording, judged one
  // sample against one with the few-samples tolerance (+200%).
  const comparison_row& b2 = row(c, "stream 4 #1 (baseline: stream 2 #1)", "host.first_launch");
  EXPECT_EQ(b2.verdict, "pass");
  EXPECT_DOUBLE_EQ(b2.tolerance, 2.0);
  EXPECT_FALSE(has_note(c, "sample(s) in one recording: not judged"));
}

// One call measured once in each recording: a regression only beyond the few-samples tolerance
// and floor (3x and 100 us by default), whatever the time tolerance of medians says.
TEST(CheckRecorded, ARareCallIsJudgedOneSampleAgainstOneWithItsOwnTolerance) {
  const report base = run(largest_first);
  const auto with_instantiate = [&](double us) {
    report r = run(largest_first);
    for (auto& s : r.scenarios) s.launch_costs[0].host = {1, us, us, us};
    return r;
  };
  // 80 -> 200 us: +150%, beyond the time tolerance (+50%) but within the few-samples one.
  comparison c = compare_reports(base, with_instantiate(200), tolerances{});
  EXPECT_EQ(row(c, "decode", "host.instantiate").verdict, "pass");
  EXPECT_EQ(row(c, "decode", "host.instantiate").current, 200.0);
  // 80 -> 330 us: +312% and +250 us: a regression.
  c = compare_reports(base, with_instantiate(330), tolerances{});
  EXPECT_EQ(row(c, "decode", "host.instantiate").verdict, "regression");
  // 2 -> 70 us: 35x but only +68 us, under the floor.
  const auto tiny = [&](double us) {
    report r = run(largest_first);
    for (auto& s : r.scenarios) s.launch_costs[0].host = {1, us, us, us};
    return r;
  };
  EXPECT_EQ(row(compare_reports(tiny(2), tiny(70), tolerances{}), "decode", "host.instantiate").verdict, "pass");
  // The tolerance is the user's to set.
  tolerances strict;
  set_tolerance(strict, "few_samples=0.5");
  set_tolerance(strict, "few_samples_floor_us=10");
  EXPECT_EQ(row(compare_reports(base, with_instantiate(200), strict), "decode", "host.instantiate").verdict,
            "regression");
  // The steady launches (200 samples) keep the median's tolerance.
  EXPECT_DOUBLE_EQ(row(c, "decode", "host.steady").tolerance, 0.5);
}

TEST(CheckRecorded, NoWallRowsSinceARecordingMeasuresHostTimesOnly) {
  const report base = run(largest_first);
  const comparison c = compare_reports(base, run(raced), tolerances{});
  std::size_t host_rows = 0;
  for (const auto& r : c.rows) {
    EXPECT_NE(r.metric.rfind("wall.", 0), 0u) << r.scenario << " " << r.metric;
    if (r.metric.rfind("host.", 0) == 0) ++host_rows;
  }
  EXPECT_EQ(host_rows, 12u);  // instantiate, first_launch, steady of four graphs
  // One sample per run: the effect alone decides, and a steady launch 30 us slower regresses.
  report slower = run(raced);
  slower.scenarios[index_of(slower, 1)].launch_costs[2].host.median_us = 40;
  const comparison s = compare_reports(base, slower, tolerances{});
  EXPECT_EQ(regressed(s), std::vector<std::string>{"stream 4 #1 (baseline: stream 2 #1) host.steady"});
}

TEST(CheckRecorded, TwoSteadyPhasesPairFromTheLastSoTheAggregatesMeet) {
  // The recorder names a steady-class launch recorded as an event (after a trim that mapped
  // nothing: 37.2 us) "steady" too, before the aggregate of steady launches (1.0 us), as the
  // P1 sample (build/sample-recording.json) has it for g3. Paired first with first, a recording
  // compared with itself regressed: 1.0 us against 37.2 us.
  report base = run(largest_first);
  auto& costs = base.scenarios[0].launch_costs;
  costs.insert(costs.begin() + 2, host_cost("steady", 1, 37.2));
  costs.back().host.median_us = 1.0;
  const comparison self = compare_reports(base, base, tolerances{});
  EXPECT_EQ(regressed(self), std::vector<std::string>{});
  EXPECT_EQ(row(self, "stream 1 #1", "host.steady #1").current, 37.2);
  EXPECT_EQ(row(self, "stream 1 #1", "host.steady").current, 1.0);

  // A run without the trim: its only "steady" is the aggregate, and meets the aggregate.
  report cur = run(largest_first);
  cur.scenarios[0].launch_costs.back().host.median_us = 1.1;
  const comparison c = compare_reports(base, cur, tolerances{});
  EXPECT_EQ(regressed(c), std::vector<std::string>{});
  EXPECT_EQ(row(c, "stream 1 #1", "host.steady").baseline, 1.0);
  EXPECT_EQ(row(c, "stream 1 #1", "host.steady").current, 1.1);
  EXPECT_EQ(find_row(c, "stream 1 #1", "host.steady #1"), nullptr);
  EXPECT_TRUE(has_note(c, "stream 1 #1: launch cost 'steady #1' is in the baseline only"));
}

TEST(CheckRecorded, AGraphHoldingOneMoreOutputFailsThePoolAndTheGraphsRows) {
  report cur = run(raced);
  hold_one_more_output(cur, 1);  // b2
  const std::string base_path = write(run(largest_first), "base");
  const std::string cur_path = write(cur, "held");
  std::ostringstream out, err;
  EXPECT_EQ(run_check(base_path, cur_path, tolerances{}, out, err), 1) << err.str();
  EXPECT_TRUE(has_line(out.str(), "pool[device 0]", "high_bytes", "regression")) << out.str();
  EXPECT_TRUE(has_line(out.str(), "stream 4 #1 (baseline: stream 2 #1)", "held_granule_bytes",
                       "regression"))
      << out.str();

  const comparison c = compare_reports(read_report(base_path), read_report(cur_path), tolerances{});
  const std::string b2 = "stream 4 #1 (baseline: stream 2 #1)";
  EXPECT_EQ(regressed(c), (std::vector<std::string>{
                              "pool[device 0] end_bytes",
                              "pool[device 0] high_bytes",
                              b2 + " held_granule_bytes",
                              b2 + " physical_reuse_ratio",
                              b2 + " reserved_high_bytes",
                              b2 + " used_high_bytes",
                          }));
  EXPECT_EQ(row(c, "pool[device 0]", "high_bytes").current, 640.0 * mib);
  EXPECT_EQ(row(c, b2, "held_granule_bytes").baseline, 32.0 * mib);
  EXPECT_EQ(row(c, b2, "held_granule_bytes").current, 64.0 * mib);
  EXPECT_EQ(row(c, b2, "reserved_high_bytes").current, 288.0 * mib);
}

TEST(CheckRecorded, HeldGranulesFlagOneMoreOutputThatBigFiguresHideInTheirTolerance) {
  // An 8 GiB graph in a 10 GiB pool: one more held granule is 0.4% of its footprint and 0.3% of
  // the pool, under the 2% tolerance; only the held granules' row says it.
  report base = run(largest_first);
  base.scenarios[0].analysis.used_high_bytes = base.scenarios[0].analysis.reserved_high_bytes =
      8192 * mib;
  base.scenarios[0].analysis.physical_reuse_ratio = 1.0;
  base.scenarios[0].analysis.requested_bytes = 8192 * mib;
  base.recorded->pools[0].high_bytes = base.recorded->pools[0].end_bytes = 10240 * mib;
  report cur = base;
  hold_one_more_output(cur, 0);
  const comparison c = compare_reports(base, cur, tolerances{});
  EXPECT_EQ(row(c, "pool[device 0]", "high_bytes").verdict, "pass");
  EXPECT_EQ(row(c, "stream 1 #1", "reserved_high_bytes").verdict, "pass");
  EXPECT_EQ(regressed(c), std::vector<std::string>{"stream 1 #1 held_granule_bytes"});
  EXPECT_EQ(exit_code(c), 1);
}

TEST(CheckRecorded, ARecordingComparedWithItselfPassesThroughTheCommand) {
  const std::string path = write(run(raced), "self");
  std::ostringstream out, err;
  EXPECT_EQ(run_check(path, path, tolerances{}, out, err, /*all=*/true), 0) << err.str();
  // Rows of one or two calls (first launches) are judged one sample against one; every row passes.
  EXPECT_NE(out.str().find("34 rows: 34 pass, 0 regression, 0 improvement, 0 unstable"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("34 compared, 0 regressed"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("wall."), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("(baseline:"), std::string::npos) << out.str();
}

TEST(CheckRecorded, AGraphMissingNowRegressesAndANewOneIsNoted) {
  const report base = run(largest_first);
  report cur = run(largest_first);
  const std::size_t decode = index_of(cur, 3);
  cur.scenarios.erase(cur.scenarios.begin() + static_cast<std::ptrdiff_t>(decode));
  cur.recorded->graphs.erase(cur.recorded->graphs.begin() + static_cast<std::ptrdiff_t>(decode));
  cur.scenarios.push_back(cur.scenarios[0]);
  cur.scenarios.back().name = "stream 5 #1";
  cur.recorded->graphs.push_back(cur.recorded->graphs[0]);
  cur.recorded->graphs.back().name = "stream 5 #1";
  cur.recorded->graphs.back().identity = "site:00000000000000e5";
  const comparison c = compare_reports(base, cur, tolerances{});
  EXPECT_EQ(row(c, "decode", "scenario").verdict, "missing");
  EXPECT_EQ(regressed(c), std::vector<std::string>{"decode scenario"});
  EXPECT_TRUE(has_note(c, "decode: ok in the baseline, missing from the current recording "
                          "(identity nvtx:decode)"));
  EXPECT_TRUE(has_note(c, "stream 5 #1 (identity site:00000000000000e5): new"));
}

// A graph whose held output grew (identity: site and sizes) pairs with its baseline through its
// site: one per-graph change with both values, not "missing" plus "new".
// A first launch that mapped memory is one sample whose time the device's other work sets (two
// ranks on one H100: 0.1 ms in one run, 1.1 ms in the next): it is judged by what it mapped.
TEST(CheckRecorded, ARareCallThatMappedIsJudgedByWhatItMappedNotItsTime) {
  const report base = run(largest_first);
  report slow = run(largest_first);
  const std::size_t largest = index_of(base, 0);  // its first launch mapped 512 MiB in both
  slow.scenarios[largest].launch_costs[1].host = {1, 11000, 11000, 11000};  // 10x
  const std::string name = base.scenarios[largest].name;
  comparison c = compare_reports(base, slow, tolerances{});
  const comparison_row& mapped = row(c, name, "mapped.first_launch");
  EXPECT_EQ(mapped.baseline, 512.0 * mib);
  EXPECT_EQ(mapped.current, 512.0 * mib);
  EXPECT_EQ(mapped.verdict, "pass");
  for (const auto& r : c.rows) EXPECT_FALSE(r.scenario == name && r.metric == "host.first_launch");
  EXPECT_TRUE(regressed(c).empty());
  // A first launch that mapped nothing took 11 ms where it took 12 us: that time is judged.
  report slower = run(largest_first);
  const std::size_t small = index_of(slower, 3);
  slower.scenarios[small].launch_costs[1].host = {1, 11000, 11000, 11000};
  EXPECT_EQ(row(compare_reports(base, slower, tolerances{}), slower.scenarios[small].name, "host.first_launch").verdict,
            "regression");
}

// Ranks sharing one GPU: a process's rare calls wait on the other's driver work (one rank's
// instantiation took 106 us in one run and 377 us in the next on an H100); not judged. The same
// figures in processes on devices of their own are judged.
TEST(CheckRecorded, RareCallsOfProcessesSharingADeviceAreNotJudged) {
  const auto ranks = [](int device_of_rank1, double instantiate_us) {
    report r = run(largest_first);
    for (std::size_t i = 0; i < r.scenarios.size(); ++i) {
      const std::string label = i % 2 ? "rank 1" : "rank 0";
      const std::string prefix = "[" + label + " pid " + std::to_string(100 + i % 2) + "] ";
      r.scenarios[i].name = prefix + r.scenarios[i].name;
      r.recorded->graphs[i].name = r.scenarios[i].name;
      r.recorded->graphs[i].identity = label + "/" + r.recorded->graphs[i].identity;
      r.scenarios[i].launch_costs[0].host = {1, instantiate_us, instantiate_us, instantiate_us};
    }
    graph_bill b0, b1;
    b0.process = "rank 0";
    b1.process = "rank 1";
    b1.device = device_of_rank1;
    r.recorded->bills = {b0, b1};
    return r;
  };
  const comparison shared = compare_reports(ranks(0, 106), ranks(0, 377), tolerances{});
  EXPECT_TRUE(regressed(shared).empty());
  std::size_t unstable = 0;
  for (const auto& r : shared.rows) unstable += r.metric == "host.instantiate" && r.verdict == "unstable";
  EXPECT_EQ(unstable, 4u);
  EXPECT_TRUE(has_note(shared, "shares its device with another recorded process"));
  const comparison apart = compare_reports(ranks(1, 106), ranks(1, 377), tolerances{});
  EXPECT_EQ(regressed(apart).size(), 4u);
}

TEST(CheckRecorded, AGraphWhoseSizesChangedPairsByItsSiteAndShowsBothValues) {
  const auto with_sites = [](report r) {
    for (auto& g : r.recorded->graphs) g.site = "site:5" + g.identity.substr(6);
    return r;
  };
  const report base = with_sites(run(largest_first));
  report cur = with_sites(run(largest_first));
  const std::size_t b1 = index_of(cur, 1);
  hold_one_more_output(cur, 1);
  cur.recorded->graphs[b1].identity = "site:00000000000000f7";  // its sizes are in its identity
  const comparison c = compare_reports(base, cur, tolerances{});
  const std::string name = cur.recorded->graphs[b1].name;
  const comparison_row& held = row(c, name, "held_granule_bytes");
  EXPECT_EQ(held.baseline, static_cast<double>(granule));
  EXPECT_EQ(held.current, 2.0 * granule);
  EXPECT_EQ(held.verdict, "regression");
  EXPECT_TRUE(has_note(c, "identity site:00000000000000b2 in the baseline and site:00000000000000f7 now"));
  for (const auto& r : c.rows) EXPECT_NE(r.verdict, "missing") << r.scenario;
  EXPECT_FALSE(has_note(c, "new (not in the baseline)"));
  // Without sites (older recordings) the same change is a missing graph and a new one.
  report old_cur = cur;
  for (auto& g : old_cur.recorded->graphs) g.site.clear();
  const comparison o = compare_reports(base, old_cur, tolerances{});
  EXPECT_EQ(row(o, base.recorded->graphs[index_of(base, 1)].name, "scenario").verdict, "missing");
}

// Several graphs of one site whose sizes changed pair in order: the n-th with the n-th.
TEST(CheckRecorded, GraphsOfOneSitePairInTheOrderTheyWereMade) {
  report base = run(largest_first), cur = run(largest_first);
  for (report* r : {&base, &cur}) {
    for (auto& g : r->recorded->graphs) {
      if (g.nvtx.empty()) g.site = "site:0000000000000001";
    }
  }
  for (auto& g : cur.recorded->graphs) {
    if (g.nvtx.empty()) g.identity += "-grown";
  }
  const comparison c = compare_reports(base, cur, tolerances{});
  for (std::size_t i = 0; i < base.recorded->graphs.size(); ++i) {
    const recorded_graph& g = base.recorded->graphs[i];
    if (!g.nvtx.empty()) continue;
    // The same index in both runs: the same graph, its figures unchanged.
    EXPECT_EQ(row(c, g.name, "reserved_high_bytes").baseline, row(c, g.name, "reserved_high_bytes").current)
        << g.name;
  }
  EXPECT_FALSE(regressed(c).size()) << regressed(c).front();
}

TEST(CheckRecorded, ARecordingAgainstASuiteReportIsRefusedAsTwoKindsOfReport) {
  report suite = run(largest_first);
  suite.recorded.reset();
  for (const auto& [b, c] : {std::pair<report, report>{suite, run(largest_first)}, {run(largest_first), suite}}) {
    try {
      (void)compare_reports(b, c, tolerances{});
      ADD_FAILURE() << "compared";
    } catch (const report_error& e) {
      EXPECT_EQ(e.error_kind(), report_error::kind::different_kinds);
      EXPECT_NE(std::string(e.what()).find("cannot compare a recording with a suite report"), std::string::npos);
    }
  }
  std::ostringstream out, err;
  EXPECT_EQ(run_check(write(suite, "suite"), write(run(largest_first), "rec"), tolerances{}, out, err, false), 2);
  EXPECT_NE(err.str().find("`gmemprof record`"), std::string::npos) << err.str();
}

TEST(CheckRecorded, APoolOfTheBaselineMissingNowRegresses) {
  report base = run(largest_first);
  recorded_pool peer;
  peer.device = 1;
  peer.high_bytes = peer.end_bytes = 64 * mib;
  base.recorded->pools.push_back(peer);
  const comparison c = compare_reports(base, run(largest_first), tolerances{});
  EXPECT_EQ(regressed(c), std::vector<std::string>{"pool[device 1] scenario"});
  EXPECT_EQ(exit_code(c), 1);
}

TEST(CheckRecorded, OldRecordingsWithoutIdentitiesMatchByName) {
  // Names that hold from run to run (no race): the graphs listed in another order still match.
  const report base = without_identities(run(largest_first));
  report cur = base;
  std::reverse(cur.scenarios.begin(), cur.scenarios.end());
  std::reverse(cur.recorded->graphs.begin(), cur.recorded->graphs.end());
  const comparison same = compare_reports(base, cur, tolerances{});
  EXPECT_EQ(regressed(same), std::vector<std::string>{});
  EXPECT_TRUE(has_note(same, "graphs matched by name"));
  EXPECT_EQ(row(same, "stream 2 #1", "reserved_high_bytes").current, 256.0 * mib);
  EXPECT_EQ(find_row(same, "stream 2 #1", "held_granule_bytes"), nullptr);  // not recorded then

  // Grown by a granule: that name's row says so.
  cur.scenarios[2].analysis.reserved_high_bytes += granule;  // "stream 2 #1" reversed
  const comparison grown = compare_reports(base, cur, tolerances{});
  EXPECT_EQ(regressed(grown), std::vector<std::string>{"stream 2 #1 reserved_high_bytes"});

  // By name, runs whose threads raced compare different graphs: what identities are for.
  const comparison raced_by_name =
      compare_reports(base, without_identities(run(raced)), tolerances{});
  EXPECT_EQ(row(raced_by_name, "stream 1 #1", "reserved_high_bytes").current, 128.0 * mib);
  EXPECT_EQ(row(raced_by_name, "stream 1 #1", "reserved_high_bytes").verdict, "improvement");
  EXPECT_EQ(row(raced_by_name, "stream 2 #1", "reserved_high_bytes").verdict, "regression");
}

}  // namespace
}  // namespace gmem::profiler

namespace gmem::profiler {
namespace {

// A warm-up's graphs made by one capture call (one per batch size): one site, each graph
// instantiated once, launched once slowly and 200 times steadily. `instantiate_us(i)` and
// `steady_us` are the run's times.
template <typename Time>
report warmup(std::size_t graphs, Time instantiate_us, double steady_us = 9) {
  report r;
  r.env.device_name = "NVIDIA H100 80GB HBM3";
  r.env.granularity_bytes = granule;
  recording rec;
  for (std::size_t i = 0; i < graphs; ++i) {
    scenario_result s;
    s.name = "warmup.py:146 in <module> (" + std::to_string(i + 1) + ")";
    s.params = {{"source", std::string("recorded")}};
    s.analysis.requested_bytes = s.analysis.used_high_bytes = s.analysis.reserved_high_bytes = 2 * mib;
    s.analysis.va_reuse_ratio = s.analysis.physical_reuse_ratio = 1.0;
    s.launch_costs = {host_cost("instantiate", 1, instantiate_us(i)), host_cost("steady", 200, steady_us)};
    r.scenarios.push_back(s);
    recorded_graph g;
    g.name = s.name;
    g.identity = "python:warmup.py:146 in <module>|" + std::to_string(2 * (i + 1)) + " MiB";
    g.site = "python:warmup.py:146 in <module>";
    g.devices = {0};
    g.launches = 201;
    g.steady_launches = 200;
    rec.graphs.push_back(g);
  }
  recorded_pool pool;
  pool.high_bytes = pool.end_bytes = 64 * mib;
  rec.pools = {pool};
  r.recorded = rec;
  return r;
}

const std::string site_row = "site python:warmup.py:146 in <module> (40 graphs)";

// H100 recordings of one unchanged warm-up of 2000 graphs: one call's time moved 13x between two,
// and call by call each check of three called hundreds of single calls regressions
// (reports/check-quality/recordings-h100-0cdd365.json). A site's graphs are judged together:
// their own changes' median and a sign test.
TEST(CheckRecorded, RareCallsOfOneSitesGraphsAreJudgedTogetherNotOneByOne) {
  const auto base_us = [](std::size_t i) { return 50.0 + static_cast<double>(i); };
  const report base = warmup(40, base_us);
  // Three calls 5x as slow (+200 us and more), two 5x as fast, the others 1% either way.
  const report noisy = warmup(40, [&](std::size_t i) {
    return i < 3 ? 5 * base_us(i) : i < 5 ? base_us(i) / 5 : base_us(i) * (i % 2 ? 1.01 : 0.99);
  });
  comparison c = compare_reports(base, noisy, tolerances{});
  EXPECT_EQ(regressed(c), std::vector<std::string>{});
  const comparison_row& pooled = row(c, site_row, "host.instantiate");
  EXPECT_EQ(pooled.verdict, "pass");
  EXPECT_EQ(pooled.graphs, 40u);
  EXPECT_NEAR(pooled.change, 0.0, 0.011);  // the median graph moved by 1%
  EXPECT_DOUBLE_EQ(pooled.tolerance, 0.5);  // 40 graphs are enough for the test: a median's tolerance
  // Slower: the three, and the 18 odd i of 5 to 39; faster: the two and the 17 even ones.
  EXPECT_NEAR(pooled.p_value, sign_test_greater(3 + 18, 2 + 17), 1e-12);
  EXPECT_EQ(find_row(c, "warmup.py:146 in <module> (1)", "host.instantiate"), nullptr);
  EXPECT_TRUE(has_note(c, "the largest change, warmup.py:146 in <module> (1): 50.00 us -> 250.00 us (+400%)"))
      << ::testing::PrintToString(c.notes);
  // The many-call rows are the graphs' own, as before.
  EXPECT_EQ(row(c, "warmup.py:146 in <module> (1)", "host.steady").verdict, "pass");

  // Every graph's instantiation twice as slow, its launches as they were: a regression.
  c = compare_reports(base, warmup(40, [&](std::size_t i) { return 2 * base_us(i); }), tolerances{});
  EXPECT_EQ(regressed(c), std::vector<std::string>{site_row + " host.instantiate"});
  EXPECT_DOUBLE_EQ(row(c, site_row, "host.instantiate").change, 1.0);
  EXPECT_NEAR(row(c, site_row, "host.instantiate").p_value, std::pow(0.5, 40), 1e-15);
  // ... and twice as fast: an improvement.
  c = compare_reports(base, warmup(40, [&](std::size_t i) { return base_us(i) / 2; }), tolerances{});
  EXPECT_EQ(row(c, site_row, "host.instantiate").verdict, "improvement");

  // The launches 1.6x as slow too: the process ran slower as a whole, as far as the
  // instantiations did (2 / 1.6 is within the time tolerance): unstable, not judged.
  c = compare_reports(base, warmup(40, [&](std::size_t i) { return 2 * base_us(i); }, 9 * 1.6), tolerances{});
  EXPECT_EQ(row(c, site_row, "host.instantiate").verdict, "unstable");
  EXPECT_TRUE(has_note(c, "moved +100% by the median graph, no further than host.instantiate moved across the "
                          "recording's graphs (1.60x): the process ran slower or faster as a whole"));

  // Three graphs of a site are too few for the test: the median graph's change, with a single
  // call's tolerance and floor (3x and 100 us).
  const report three = warmup(3, base_us);
  c = compare_reports(three, warmup(3, [&](std::size_t i) { return 2.5 * base_us(i); }), tolerances{});
  const comparison_row& few = row(c, "site python:warmup.py:146 in <module> (3 graphs)", "host.instantiate");
  EXPECT_EQ(few.verdict, "pass");
  EXPECT_DOUBLE_EQ(few.tolerance, 2.0);
  EXPECT_DOUBLE_EQ(few.p_value, -1);
  c = compare_reports(three, warmup(3, [&](std::size_t i) { return 5 * base_us(i); }), tolerances{});
  EXPECT_EQ(row(c, "site python:warmup.py:146 in <module> (3 graphs)", "host.instantiate").verdict, "regression");
}

// One C++ warm-up recorded twice on an H100: the second process ran every call slower, its six
// instantiations 1.8 to 4.4x (182 -> 652 us), its launches 1.8 to 2.3x. Graphs of sites of
// their own are judged one by one, against how the process's other calls moved.
TEST(CheckRecorded, ARareCallThatMovedAsTheProcesssOtherCallsDidIsUnstable) {
  const report base = run(largest_first);
  report slow = run(largest_first);
  for (auto& s : slow.scenarios) {
    s.launch_costs[0].host.median_us *= 3.9;  // instantiate: 80 -> 312 us, beyond 3x and 100 us
    s.launch_costs[1].host.median_us *= 1.8;  // first launch
    s.launch_costs[2].host.median_us *= 2.3;  // steady
  }
  const comparison c = compare_reports(base, slow, tolerances{});
  EXPECT_EQ(regressed(c), std::vector<std::string>{});
  EXPECT_EQ(row(c, "decode", "host.instantiate").verdict, "unstable");
  EXPECT_TRUE(has_note(c, "decode: host.instantiate moved +290%, no further than host.instantiate moved across the "
                          "recording's graphs (1.60x): the process ran slower or faster as a whole"));
  // Only the instantiations slower: the process's other calls did not move, so they regress.
  report slower = run(largest_first);
  for (auto& s : slower.scenarios) s.launch_costs[0].host.median_us *= 3.9;
  EXPECT_EQ(row(compare_reports(base, slower, tolerances{}), "decode", "host.instantiate").verdict, "regression");
}

// A warm-up's 2000 graphs launched three times each: which launch is "steady" differs between
// runs. One note for the site's graphs, not one a graph.
TEST(CheckRecorded, APhaseInSomeOfASitesGraphsOnlyIsOneNote) {
  const auto us = [](std::size_t) { return 60.0; };
  const report base = warmup(40, us);
  report cur = warmup(40, us);
  for (std::size_t i = 0; i < 10; ++i) cur.scenarios[i].launch_costs.push_back(host_cost("slow_launch", 1, 300));
  const comparison c = compare_reports(base, cur, tolerances{});
  EXPECT_EQ(c.notes.size(), 1u);
  EXPECT_TRUE(has_note(c, "site python:warmup.py:146 in <module>: in 10 of its graphs (warmup.py:146 in <module> (1), "
                          "warmup.py:146 in <module> (2), warmup.py:146 in <module> (3), ...), launch cost "
                          "'slow_launch' is new (not in the baseline); not compared"))
      << (c.notes.empty() ? "" : c.notes[0]);
}

// The bill's kinds are rows of the check ("bill[device 0]"): a framework pool that retains more
// regresses; a kind only one recording saw is said, not compared.
TEST(CheckRecorded, TheBillsKindsAreRowsAndAKindOneRecordingDidNotSeeIsNoted) {
  report base = run(largest_first), cur = run(largest_first);
  graph_bill b;
  b.device = 0;
  b.framework_seen = b.framework_named = true;
  b.framework_retained_bytes = 796 * mib;
  b.framework_warmup_bytes = 540 * mib;
  b.exec_state_measured = true;
  b.exec_state_bytes = 20 * mib;
  base.recorded->bills = {b};
  b.framework_retained_bytes = 1024 * mib;
  b.exec_state_measured = false;
  cur.recorded->bills = {b};
  const comparison c = compare_reports(base, cur, tolerances{});
  EXPECT_EQ(row(c, "bill[device 0]", "framework_retained_bytes").verdict, "regression");
  EXPECT_EQ(row(c, "bill[device 0]", "framework_warmup_bytes").verdict, "pass");
  const std::string text = format_comparison(c);
  EXPECT_NE(text.find("bill[device 0]: the executable graphs' state seen in the baseline recording only; not compared"),
            std::string::npos) << text;
}

}  // namespace
}  // namespace gmem::profiler
