// The regression check: which changes regress at which tolerance, what is missing, and what
// the table says.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gmem/profiler/compare.hpp"
#include "gmem/profiler/report.hpp"
#include "gmem/profiler/report_io.hpp"

namespace gmem::profiler {
namespace {

constexpr std::uint64_t mib = 1024 * 1024;

launch_cost cost(const std::string& phase, double host_median, double wall_median) {
  launch_cost l;
  l.phase = phase;
  l.warmups = 3;
  l.host = {50, host_median, host_median * 0.9, host_median * 2};
  l.wall = {50, wall_median, wall_median * 0.9, wall_median * 2};
  return l;
}

scenario_result scenario(const std::string& name, std::int64_t bytes) {
  scenario_result s;
  s.name = name;
  s.params = {{"bytes", bytes}, {"upload", true}};
  s.analysis.used_high_bytes = 100 * mib;
  s.analysis.reserved_high_bytes = 200 * mib;
  s.analysis.va_reuse_ratio = 2.0;
  s.analysis.physical_reuse_ratio = 1.5;
  s.launch_costs = {cost("first_launch", 40, 100), cost("steady_launch", 10, 20)};
  return s;
}

// Two ok scenarios, and one skipped.
report baseline_report() {
  report r;
  r.env.device_name = "NVIDIA H200";
  r.scenarios = {scenario("chain", 64 * mib), scenario("fan_out", 8 * mib)};
  scenario_result skipped = scenario("peer", 2 * mib);
  skipped.status = scenario_status::skipped;
  skipped.status_message = "needs 2 GPUs";
  r.scenarios.push_back(skipped);
  return r;
}

const comparison_row& row(const comparison& c, const std::string& scenario_name,
                          const std::string& metric) {
  const auto it = std::find_if(c.rows.begin(), c.rows.end(), [&](const comparison_row& r) {
    return r.scenario.rfind(scenario_name + "[", 0) == 0 && r.metric == metric;
  });
  if (it == c.rows.end()) throw std::logic_error("no row " + scenario_name + " " + metric);
  return *it;
}

std::vector<std::string> regressions(const comparison& c) {
  std::vector<std::string> out;
  for (const auto& r : c.rows) {
    if (r.verdict == "regression" || r.verdict == "missing")
      out.push_back(r.scenario + " " + r.metric);
  }
  return out;
}

// Per ok scenario: 2 memory + 2 reuse + 2 phases x (host, wall).
constexpr std::size_t rows_per_scenario = 8;

TEST(Compare, IdenticalReportsPassEveryMetric) {
  const comparison c = compare_reports(baseline_report(), baseline_report(), tolerances{});
  ASSERT_EQ(c.rows.size(), 2 * rows_per_scenario);
  for (const auto& r : c.rows) {
    EXPECT_EQ(r.verdict, "pass") << r.scenario << " " << r.metric;
    EXPECT_EQ(r.change, 0.0) << r.scenario << " " << r.metric;
  }
  EXPECT_FALSE(c.regressed());
  EXPECT_EQ(exit_code(c), 0);
  EXPECT_EQ(row(c, "chain", "wall.steady_launch").baseline, 20.0);
  EXPECT_EQ(row(c, "chain", "host.first_launch").current, 40.0);
  EXPECT_EQ(row(c, "chain", "reserved_high_bytes").tolerance, 0.02);
  EXPECT_EQ(row(c, "chain", "va_reuse_ratio").category, "reuse");
}

TEST(Compare, SkippedBaselineScenarioIsNotedNotCompared) {
  const comparison c = compare_reports(baseline_report(), baseline_report(), tolerances{});
  for (const auto& r : c.rows) EXPECT_NE(r.scenario.rfind("peer", 0), 0U) << r.scenario;
  ASSERT_FALSE(c.notes.empty());
  EXPECT_NE(
      c.notes[0].find("peer[bytes=2097152,upload=true]: skipped in the baseline (needs 2 GPUs)"),
      std::string::npos)
      << c.notes[0];
}

TEST(Compare, ReservedHighTenPercentUpRegressesAtTheDefaultTolerance) {
  report current = baseline_report();
  current.scenarios[0].analysis.reserved_high_bytes = 220 * mib;
  const comparison c = compare_reports(baseline_report(), current, tolerances{});
  const comparison_row& r = row(c, "chain", "reserved_high_bytes");
  EXPECT_EQ(r.verdict, "regression");
  EXPECT_DOUBLE_EQ(r.change, 0.10);
  EXPECT_EQ(regressions(c),
            std::vector<std::string>{"chain[bytes=67108864,upload=true] reserved_high_bytes"});
  EXPECT_TRUE(c.regressed());
  EXPECT_EQ(exit_code(c), 1);
}

TEST(Compare, MemoryToleranceOfFifteenPercentLetsTenPercentPass) {
  report current = baseline_report();
  current.scenarios[0].analysis.reserved_high_bytes = 220 * mib;
  tolerances t;
  set_tolerance(t, "memory=0.15");
  EXPECT_EQ(t.memory, 0.15);
  const comparison c = compare_reports(baseline_report(), current, t);
  EXPECT_EQ(row(c, "chain", "reserved_high_bytes").verdict, "pass");
  EXPECT_EQ(row(c, "chain", "reserved_high_bytes").tolerance, 0.15);
  EXPECT_FALSE(c.regressed());
}

TEST(Compare, PerMetricToleranceAppliesToThatMetricOnly) {
  report current = baseline_report();
  current.scenarios[0].analysis.reserved_high_bytes = 220 * mib;
  current.scenarios[0].analysis.used_high_bytes = 110 * mib;
  tolerances t;
  set_tolerance(t, "reserved_high_bytes=0.15");
  EXPECT_EQ(t.memory, 0.02);
  EXPECT_EQ(t.for_metric("reserved_high_bytes", "memory"), 0.15);
  EXPECT_EQ(t.for_metric("used_high_bytes", "memory"), 0.02);
  const comparison c = compare_reports(baseline_report(), current, t);
  EXPECT_EQ(row(c, "chain", "reserved_high_bytes").verdict, "pass");
  EXPECT_EQ(regressions(c),
            std::vector<std::string>{"chain[bytes=67108864,upload=true] used_high_bytes"});
}

TEST(Compare, GrowthExactlyAtTheToleranceIsAPass) {
  report current = baseline_report();
  current.scenarios[0].analysis.used_high_bytes = 102 * mib;  // +2%, the default
  current.scenarios[1].analysis.used_high_bytes = 103 * mib;  // +3%
  const comparison c = compare_reports(baseline_report(), current, tolerances{});
  EXPECT_EQ(row(c, "chain", "used_high_bytes").verdict, "pass");
  EXPECT_EQ(row(c, "fan_out", "used_high_bytes").verdict, "regression");
}

TEST(Compare, ReuseRatioDropBeyondTheToleranceRegresses) {
  report current = baseline_report();
  current.scenarios[1].analysis.physical_reuse_ratio = 1.2;  // -20%
  current.scenarios[0].analysis.va_reuse_ratio = 1.98;       // -1%: within 2%
  const comparison c = compare_reports(baseline_report(), current, tolerances{});
  EXPECT_EQ(row(c, "fan_out", "physical_reuse_ratio").verdict, "regression");
  EXPECT_DOUBLE_EQ(row(c, "fan_out", "physical_reuse_ratio").change, -0.2);
  EXPECT_EQ(row(c, "chain", "va_reuse_ratio").verdict, "pass");
  EXPECT_EQ(regressions(c).size(), 1U);

  tolerances loose;
  set_tolerance(loose, "reuse=0.25");
  EXPECT_FALSE(compare_reports(baseline_report(), current, loose).regressed());
}

TEST(Compare, TimeThirtyPercentSlowerPassesEightyPercentSlowerRegresses) {
  report current = baseline_report();
  current.scenarios[0].launch_costs[1].wall.median_us = 26;  // +30%
  current.scenarios[0].launch_costs[0].host.median_us = 72;  // +80%
  const comparison c = compare_reports(baseline_report(), current, tolerances{});
  EXPECT_EQ(row(c, "chain", "wall.steady_launch").verdict, "pass");
  EXPECT_DOUBLE_EQ(row(c, "chain", "wall.steady_launch").change, 0.30);
  EXPECT_EQ(row(c, "chain", "host.first_launch").verdict, "regression");
  EXPECT_EQ(row(c, "chain", "host.first_launch").tolerance, 0.50);
  EXPECT_EQ(regressions(c),
            std::vector<std::string>{"chain[bytes=67108864,upload=true] host.first_launch"});

  tolerances t;
  set_tolerance(t, "host.first_launch=1.0");
  EXPECT_FALSE(compare_reports(baseline_report(), current, t).regressed());
}

// Trials of `s` that reserved `reserved` MiB each, with the same steady launch median `steady`.
void with_trials(scenario_result& s, const std::vector<std::uint64_t>& reserved, double steady) {
  s.trials.clear();
  for (std::uint64_t r : reserved) {
    trial_sample t;
    t.used_high_bytes = r * mib;
    t.reserved_high_bytes = r * mib;
    t.va_reuse_ratio = 2.0;
    t.physical_reuse_ratio = 1.5;
    t.launches = {{"first_launch", 40, 100}, {"steady_launch", steady, steady}};
    s.trials.push_back(t);
  }
}

TEST(Compare, TimesOfTrialsThatReservedDifferentAmountsAreNotCompared) {
  // Graphs in several streams overlap by chance: one trial reserves 288 MiB, another 512 MiB,
  // and a launch that must map memory costs hundreds of microseconds more. Identical code, a
  // steady launch 6x slower: unstable, not a regression.
  report base = baseline_report(), current = baseline_report();
  with_trials(base.scenarios[0], {512, 320, 384, 416, 448}, 56);
  with_trials(current.scenarios[0], {288, 288, 288, 320, 352}, 373);
  const comparison c = compare_reports(base, current, tolerances{});
  EXPECT_EQ(row(c, "chain", "host.steady_launch").verdict, "unstable");
  EXPECT_EQ(row(c, "chain", "wall.steady_launch").verdict, "unstable");
  EXPECT_FALSE(c.regressed());
  EXPECT_TRUE(std::any_of(c.notes.begin(), c.notes.end(), [](const std::string& n) {
    return n.find("reserved from 288.0 MiB to 512.0 MiB") != std::string::npos;
  }));
  // The same slowdown where every trial reserved the same: a regression.
  with_trials(base.scenarios[0], {512, 512, 512, 512, 512}, 56);
  with_trials(current.scenarios[0], {512, 512, 512, 512, 512}, 373);
  const comparison same = compare_reports(base, current, tolerances{});
  EXPECT_EQ(row(same, "chain", "host.steady_launch").verdict, "regression");
}

TEST(Compare, FasterSmallerAndMoreReuseAllPass) {
  report current = baseline_report();
  auto& a = current.scenarios[0].analysis;
  a.used_high_bytes = 10 * mib;
  a.reserved_high_bytes = 20 * mib;
  a.va_reuse_ratio = 8.0;
  a.physical_reuse_ratio = 6.0;
  for (auto& l : current.scenarios[0].launch_costs) {
    l.host.median_us /= 4;
    l.wall.median_us /= 4;
  }
  const comparison c = compare_reports(baseline_report(), current, tolerances{});
  EXPECT_TRUE(regressions(c).empty());
  EXPECT_DOUBLE_EQ(row(c, "chain", "reserved_high_bytes").change, -0.9);
  EXPECT_EQ(exit_code(c), 0);
}

TEST(Compare, MissingScenarioIsARegression) {
  report current = baseline_report();
  current.scenarios.erase(current.scenarios.begin() + 1);  // fan_out
  const comparison c = compare_reports(baseline_report(), current, tolerances{});
  const comparison_row& r = row(c, "fan_out", "scenario");
  EXPECT_EQ(r.verdict, "missing");
  EXPECT_TRUE(c.regressed());
  EXPECT_EQ(exit_code(c), 1);
  EXPECT_EQ(c.rows.size(), rows_per_scenario + 1);
  const bool noted = std::any_of(c.notes.begin(), c.notes.end(), [](const std::string& n) {
    return n.find(
               "fan_out[bytes=8388608,upload=true]: ok in the baseline, missing from the "
               "current report") != std::string::npos;
  });
  EXPECT_TRUE(noted);
}

TEST(Compare, ScenarioThatFailsOrIsSkippedNowIsMissing) {
  report current = baseline_report();
  current.scenarios[0].status = scenario_status::error;
  current.scenarios[0].status_message = "out of memory";
  current.scenarios[1].status = scenario_status::skipped;
  const comparison c = compare_reports(baseline_report(), current, tolerances{});
  EXPECT_EQ(row(c, "chain", "scenario").verdict, "missing");
  EXPECT_EQ(row(c, "fan_out", "scenario").verdict, "missing");
  EXPECT_EQ(c.rows.size(), 2U);
}

TEST(Compare, ParametersArePartOfTheScenarioKey) {
  report current = baseline_report();
  current.scenarios[0].params[0].second = std::int64_t{128 * mib};
  const comparison c = compare_reports(baseline_report(), current, tolerances{});
  EXPECT_EQ(row(c, "chain", "scenario").verdict, "missing");
  const bool new_noted = std::any_of(c.notes.begin(), c.notes.end(), [](const std::string& n) {
    return n.find("chain[bytes=134217728,upload=true]: new") != std::string::npos;
  });
  EXPECT_TRUE(new_noted);
}

TEST(Compare, MemoryGrowingFromZeroRegresses) {
  report base = baseline_report();
  base.scenarios[0].analysis.used_high_bytes = 0;
  const comparison c = compare_reports(base, baseline_report(), tolerances{});
  EXPECT_EQ(row(c, "chain", "used_high_bytes").verdict, "regression");
  EXPECT_GT(row(c, "chain", "used_high_bytes").change, 1e300);  // +inf
  // Zero to zero is no change.
  const comparison same = compare_reports(base, base, tolerances{});
  EXPECT_EQ(row(same, "chain", "used_high_bytes").verdict, "pass");
  EXPECT_EQ(row(same, "chain", "used_high_bytes").change, 0.0);
}

TEST(Compare, LaunchPhaseOnlyInOneReportIsNotedNotCompared) {
  report current = baseline_report();
  current.scenarios[0].launch_costs.pop_back();  // steady_launch
  const comparison c = compare_reports(baseline_report(), current, tolerances{});
  EXPECT_THROW((void)row(c, "chain", "wall.steady_launch"), std::logic_error);
  EXPECT_EQ(c.rows.size(), 2 * rows_per_scenario - 2);
  EXPECT_FALSE(c.regressed());
}

TEST(Compare, DifferentGpuThrowsDifferentGpu) {
  report current = baseline_report();
  current.env.device_name = "NVIDIA H100 80GB HBM3";
  try {
    (void)compare_reports(baseline_report(), current, tolerances{});
    FAIL() << "no report_error";
  } catch (const report_error& e) {
    EXPECT_EQ(e.error_kind(), report_error::kind::different_gpu);
    EXPECT_NE(std::string(e.what()).find("NVIDIA H100 80GB HBM3"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("NVIDIA H200"), std::string::npos);
  }
}

TEST(Compare, DifferentSchemaVersionThrowsWrongSchemaVersion) {
  report current = baseline_report();
  current.version = schema_version + 1;
  try {
    (void)compare_reports(baseline_report(), current, tolerances{});
    FAIL() << "no report_error";
  } catch (const report_error& e) {
    EXPECT_EQ(e.error_kind(), report_error::kind::wrong_schema_version);
  }
}

TEST(Compare, FormatHasOneRowPerComparedValueNotesAndASummary) {
  report current = baseline_report();
  current.scenarios[0].analysis.reserved_high_bytes = 220 * mib;
  current.scenarios.erase(current.scenarios.begin() + 1);
  const comparison c = compare_reports(baseline_report(), current, tolerances{});
  const std::string text = format_comparison(c);

  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "9 compared, 2 regressed");
  EXPECT_EQ(lines[0].rfind("scenario", 0), 0U) << lines[0];
  const auto table_rows = std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("chain[", 0) == 0 || l.rfind("fan_out[", 0) == 0;
  });
  EXPECT_EQ(table_rows, 9);

  const auto reserved = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("reserved_high_bytes") != std::string::npos && l.rfind("chain[", 0) == 0;
  });
  ASSERT_NE(reserved, lines.end());
  EXPECT_NE(reserved->find("200.0 MiB"), std::string::npos) << *reserved;
  EXPECT_NE(reserved->find("220.0 MiB"), std::string::npos) << *reserved;
  EXPECT_NE(reserved->find("+10.0%"), std::string::npos) << *reserved;
  EXPECT_NE(reserved->find("+2.0%"), std::string::npos) << *reserved;
  EXPECT_NE(reserved->find("regression"), std::string::npos) << *reserved;

  const auto wall = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("wall.steady_launch") != std::string::npos;
  });
  ASSERT_NE(wall, lines.end());
  EXPECT_NE(wall->find("20.00 us"), std::string::npos) << *wall;
  EXPECT_NE(text.find("note: fan_out[bytes=8388608,upload=true]: ok in the baseline, missing"),
            std::string::npos)
      << text;
}

TEST(SetTolerance, SetsCategoriesAndMetrics) {
  tolerances t;
  set_tolerance(t, "time=1.5");
  set_tolerance(t, "reuse=0");
  set_tolerance(t, "wall.first_launch_no_upload=0.75");
  EXPECT_EQ(t.time, 1.5);
  EXPECT_EQ(t.reuse, 0.0);
  EXPECT_EQ(t.for_metric("wall.first_launch_no_upload", "time"), 0.75);
  EXPECT_EQ(t.for_metric("host.first_launch_no_upload", "time"), 1.5);
  EXPECT_THROW((void)t.for_metric("x", "colour"), std::invalid_argument);
}

TEST(SetTolerance, RejectsMalformedAssignmentsWithTheTextInTheMessage) {
  for (const std::string bad : {"memory", "memory=", "=0.1", "memory=abc", "memory=0.1x",
                                "memory=-0.1", "memory=inf", "reserved_high=0.1", "wall.=0.2"}) {
    tolerances t;
    try {
      set_tolerance(t, bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
    EXPECT_EQ(t.memory, 0.02) << bad;
    EXPECT_TRUE(t.per_metric.empty()) << bad;
  }
}

}  // namespace
}  // namespace gmem::profiler

namespace {

TEST(CompareTimeFloor, GrowthUnderTheAbsoluteFloorIsNoiseNotARegression) {
  using namespace gmem::profiler;
  report base;
  base.env.device_name = "NVIDIA H100 80GB HBM3";
  scenario_result s;
  s.name = "steady";
  launch_cost c;
  c.phase = "steady_launch";
  c.host = {10, 4.0, 3.0, 5.0};
  c.wall = {10, 100.0, 90.0, 110.0};
  s.launch_costs.push_back(c);
  base.scenarios.push_back(s);
  report cur = base;
  cur.scenarios[0].launch_costs[0].host.median_us = 9.0;    // +125% but only 5 us
  cur.scenarios[0].launch_costs[0].wall.median_us = 175.0;  // +75% and 75 us
  tolerances t;
  const comparison c1 = compare_reports(base, cur, t);
  int host_regressed = 0, wall_regressed = 0;
  for (const auto& r : c1.rows) {
    if (r.metric == "host.steady_launch" && r.verdict == "regression") ++host_regressed;
    if (r.metric == "wall.steady_launch" && r.verdict == "regression") ++wall_regressed;
  }
  EXPECT_EQ(host_regressed, 0);
  EXPECT_EQ(wall_regressed, 1);
  set_tolerance(t, "time_floor_us=0");
  const comparison c2 = compare_reports(base, cur, t);
  EXPECT_EQ(exit_code(c2), 1);
  bool host_now = false;
  for (const auto& r : c2.rows) host_now |= r.metric == "host.steady_launch" && r.verdict == "regression";
  EXPECT_TRUE(host_now);
}

}  // namespace
