// The noise-aware check: statistics on synthetic trial distributions, chosen so that
// a check on medians alone, on a fixed percentage, or with a wrong U statistic gets them wrong.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gmem/profiler/compare.hpp"
#include "suite/runner.hpp"

namespace gmem::profiler {
namespace {

scenario_result with_trials(const std::vector<std::uint64_t>& reserved,
                            const std::vector<double>& steady_us) {
  scenario_result s;
  s.name = "s";
  s.params = {{"bytes", std::int64_t{1}}};
  launch_cost l;
  l.phase = "steady_launch";
  s.launch_costs.push_back(l);
  for (std::size_t i = 0; i < reserved.size(); ++i) {
    trial_sample t;
    t.used_high_bytes = reserved[i];
    t.reserved_high_bytes = reserved[i];
    t.va_reuse_ratio = 1;
    t.physical_reuse_ratio = 1;
    t.launches.push_back({"steady_launch", steady_us[i], steady_us[i]});
    s.trials.push_back(t);
  }
  s.analysis.reserved_high_bytes = reserved.at(0);
  s.analysis.used_high_bytes = reserved.at(0);
  return s;
}

report one(scenario_result s) {
  report r;
  r.env.device_name = "gpu";
  r.scenarios.push_back(std::move(s));
  return r;
}

const comparison_row& row(const comparison& c, const std::string& metric) {
  for (const auto& r : c.rows)
    if (r.metric == metric) return r;
  throw std::runtime_error("no row " + metric);
}

constexpr std::uint64_t MiB = 1 << 20;

TEST(SignTest, ExactTailsOfPairedChanges) {
  // Seven graphs all slower: 1 / 2^7, the fewest for any p to reach 0.01.
  EXPECT_NEAR(sign_test_greater(7, 0), 1.0 / 128, 1e-12);
  EXPECT_GT(sign_test_greater(6, 0), 0.01);
  // Five up of ten: P(X >= 5) = 638 / 1024.
  EXPECT_NEAR(sign_test_greater(5, 5), 638.0 / 1024, 1e-12);
  // None up: certain; no pairs: nothing to say.
  EXPECT_NEAR(sign_test_greater(0, 9), 1.0, 1e-12);
  EXPECT_EQ(sign_test_greater(0, 0), 1.0);
  // Thousands of graphs (summed in logarithms): 1097 of 1991 slower is p = 2.94e-6, significant
  // however small the change, so a site's row also needs its median graph to have moved.
  EXPECT_NEAR(sign_test_greater(1097, 894), 2.9386e-6, 0.0001e-6);
  EXPECT_NEAR(sign_test_greater(1000, 1000), 0.50892, 0.00001);
}

TEST(MannWhitney, ExactTailsOfSmallSamples) {
  // Complete separation of 5 and 5: P = 1 / C(10, 5) = 1/252.
  EXPECT_NEAR(mann_whitney_greater({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 1.0 / 252, 1e-12);
  // The other direction: certain.
  EXPECT_NEAR(mann_whitney_greater({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}), 1.0, 1e-12);
  // One inversion (U = 24 of 25): two arrangements reach it or more: 2/252.
  EXPECT_NEAR(mann_whitney_greater({1, 2, 3, 4, 7}, {6, 8, 9, 10, 11}), 2.0 / 252, 1e-12);
  // Sizes 2 and 3, current all above: 1 / C(5, 2) = 0.1.
  EXPECT_NEAR(mann_whitney_greater({1, 2}, {3, 4, 5}), 0.1, 1e-12);
  // All tied: U = n1 n2 / 2, P(U >= floor(mean)) is at least a half.
  EXPECT_GE(mann_whitney_greater({5, 5, 5}, {5, 5, 5}), 0.5);
}

TEST(CheckTrials, CounterInsideWhatTheBaselineShowedPasses) {
  // The baseline's trials showed 256 and 512 MiB (processes settle differently); a current run
  // of 512 everywhere is inside that range. A median-vs-median check calls it +100%.
  const auto b = with_trials({256 * MiB, 256 * MiB, 512 * MiB, 256 * MiB, 256 * MiB},
                             {50, 50, 50, 50, 50});
  const auto c = with_trials({512 * MiB, 512 * MiB, 512 * MiB, 512 * MiB, 512 * MiB},
                             {50, 50, 50, 50, 50});
  const comparison cmp = compare_reports(one(b), one(c), tolerances{});
  EXPECT_EQ(row(cmp, "reserved_high_bytes").verdict, "pass");  // judged
  EXPECT_TRUE(row(cmp, "reserved_high_bytes").wide_baseline);
  EXPECT_FALSE(cmp.regressed());
  // What --strict still fails: the times, whose trials ran against different reservations.
  tolerances strict;
  strict.strict = true;
  const comparison s = compare_reports(one(b), one(c), strict);
  EXPECT_TRUE(s.regressed());
  for (const auto& r : s.rows) {
    if (r.verdict == "unstable") {
      EXPECT_EQ(r.category, "time") << r.metric;
    }
  }
}

TEST(CheckTrials, CounterOutsideEveryBaselineTrialRegresses) {
  // One granule more than anything the baseline's trials showed, in every trial: a regression
  // (p = 1/252), and the reverse an improvement, which passes.
  const auto b = with_trials({2 * MiB, 2 * MiB, 2 * MiB, 2 * MiB, 2 * MiB}, {50, 50, 50, 50, 50});
  const auto c = with_trials({4 * MiB, 4 * MiB, 4 * MiB, 4 * MiB, 4 * MiB}, {50, 50, 50, 50, 50});
  const comparison cmp = compare_reports(one(b), one(c), tolerances{});
  EXPECT_EQ(row(cmp, "reserved_high_bytes").verdict, "regression");
  EXPECT_NEAR(row(cmp, "reserved_high_bytes").p_value, 1.0 / 252, 1e-12);
  EXPECT_EQ(exit_code(cmp), 1);
  const comparison rev = compare_reports(one(c), one(b), tolerances{});
  EXPECT_EQ(row(rev, "reserved_high_bytes").verdict, "improvement");
  EXPECT_EQ(exit_code(rev), 0);
}

TEST(CheckTrials, CounterSetByARaceIsJudgedByItsDistribution) {
  // graphs_in_separate_streams on an H100 (reports/check-quality/): reservations from 256 to
  // 512 MiB by process. A current run whose median lies above the baseline's five trials but
  // whose trials overlap them is not significant: a median-outside-range rule alone failed 1
  // pair of 45 there.
  const auto b = with_trials({288 * MiB, 288 * MiB, 320 * MiB, 288 * MiB, 256 * MiB}, {50, 50, 50, 50, 50});
  const auto c = with_trials({512 * MiB, 480 * MiB, 352 * MiB, 512 * MiB, 288 * MiB}, {50, 50, 50, 50, 50});
  const comparison cmp = compare_reports(one(b), one(c), tolerances{});
  EXPECT_EQ(row(cmp, "reserved_high_bytes").verdict, "pass");
  EXPECT_GT(row(cmp, "reserved_high_bytes").p_value, 0.01);
}

TEST(CheckTrials, ABaselineThatSawOneValueOfARaceIsNotTheEdge) {
  // An H200 (reports/check-quality/h200-ef15b63.json): a baseline run whose five trials all
  // reserved 256 MiB, the least the race gives, against a run whose 15 trials (the extra ones
  // its disagreeing trials got) reserved 256 to 416 MiB: significant (p < 0.01) and the median
  // above every baseline trial, but the current run itself reserved 256 MiB four times. Not a
  // regression; a run whose every trial reserved more is.
  std::vector<double> steady(15, 50);
  const auto b = with_trials({256 * MiB, 256 * MiB, 256 * MiB, 256 * MiB, 256 * MiB}, {50, 50, 50, 50, 50});
  const auto c = with_trials({384 * MiB, 256 * MiB, 288 * MiB, 320 * MiB, 256 * MiB, 320 * MiB,
                              288 * MiB, 416 * MiB, 256 * MiB, 256 * MiB, 384 * MiB, 352 * MiB,
                              288 * MiB, 416 * MiB, 384 * MiB},
                             steady);
  const comparison cmp = compare_reports(one(b), one(c), tolerances{});
  EXPECT_LT(row(cmp, "reserved_high_bytes").p_value, 0.01);
  EXPECT_EQ(row(cmp, "reserved_high_bytes").verdict, "pass");
  const auto all_above = with_trials({320 * MiB, 288 * MiB, 416 * MiB, 288 * MiB, 384 * MiB}, {50, 50, 50, 50, 50});
  EXPECT_EQ(row(compare_reports(one(b), one(all_above), tolerances{}), "reserved_high_bytes").verdict,
            "regression");
}

TEST(CheckTrials, TimeNeedsSignificanceAndEffect) {
  const std::vector<std::uint64_t> r(5, 2 * MiB);
  // Medians 100 vs 200 us but the current trials overlap the baseline's entirely except
  // one: no significance -> a fixed percentage would call it a regression.
  {
    const auto b = with_trials(r, {100, 101, 102, 103, 104});
    const auto c = with_trials(r, {100, 101, 200, 200, 200});
    const comparison cmp = compare_reports(one(b), one(c), tolerances{});
    EXPECT_EQ(row(cmp, "wall.steady_launch").verdict, "pass");
    EXPECT_GT(row(cmp, "wall.steady_launch").p_value, 0.01);
  }
  // Every current trial 2x slower: significant (p = 1/252) and beyond the 50% tolerance.
  {
    const auto b = with_trials(r, {100, 101, 102, 103, 104});
    const auto c = with_trials(r, {200, 201, 202, 203, 204});
    const comparison cmp = compare_reports(one(b), one(c), tolerances{});
    EXPECT_EQ(row(cmp, "wall.steady_launch").verdict, "regression");
    EXPECT_NEAR(row(cmp, "wall.steady_launch").p_value, 1.0 / 252, 1e-12);
  }
  // Significant but small (every trial at most 14% above the slowest): a pass.
  {
    const auto b = with_trials(r, {100, 101, 102, 103, 104});
    const auto c = with_trials(r, {116, 117, 118, 118, 118});
    EXPECT_EQ(row(compare_reports(one(b), one(c), tolerances{}), "wall.steady_launch").verdict,
              "pass");
  }
  // 2x faster: an improvement, exit 0.
  {
    const auto b = with_trials(r, {200, 201, 202, 203, 204});
    const auto c = with_trials(r, {100, 101, 102, 103, 104});
    const comparison cmp = compare_reports(one(b), one(c), tolerances{});
    EXPECT_EQ(row(cmp, "wall.steady_launch").verdict, "improvement");
    EXPECT_EQ(exit_code(cmp), 0);
  }
}

TEST(CheckTrials, ASmallGraphsLaunchTwiceAsSlowIsCaughtBelowTheFloor) {
  // Measured on an H100 (reports/check-quality/): a 2 MiB graph's steady launch, host us, in
  // processes of two modes (1.7 or 2.8 us); the slow_steady injection launched twice, in a run
  // whose processes all took the fast mode. +0.6 us: under the 10 us floor, yet every trial is
  // 21% above the baseline's slowest.
  const std::vector<std::uint64_t> r(5, 2 * MiB);
  const auto b = with_trials(r, {1.69, 2.69, 1.75, 2.54, 2.8});
  const auto c = with_trials(r, {3.4, 3.66, 3.5, 3.59, 3.86});
  const comparison cmp = compare_reports(one(b), one(c), tolerances{});
  EXPECT_EQ(row(cmp, "host.steady_launch").verdict, "regression");
  // The closest two clean runs came (independent_allocs' instantiate): every trial 12.8% above.
  const auto b2 = with_trials(r, {33.1, 34.0, 35.2, 34.6, 35.1});
  const auto c2 = with_trials(r, {39.6, 40.2, 41.0, 39.9, 40.8});
  EXPECT_EQ(row(compare_reports(one(b2), one(c2), tolerances{}), "host.steady_launch").verdict, "pass");
  // time_separation is a tolerance like the others.
  tolerances loose;
  set_tolerance(loose, "time_separation=0.3");
  EXPECT_EQ(row(compare_reports(one(b), one(c), loose), "host.steady_launch").verdict, "pass");
}

TEST(CheckTrials, ScenariosWhoseTrialsDisagreeOnMemoryGetMoreTrialsJoinedByKey) {
  auto racy = with_trials({256 * MiB}, {50});
  racy.name = "racy";
  racy.trials.clear();
  auto steady = with_trials({64 * MiB}, {50});
  steady.name = "steady";
  steady.trials.clear();
  auto with_reserved = [](scenario_result s, std::uint64_t bytes) {
    s.analysis.reserved_high_bytes = s.analysis.used_high_bytes = bytes;
    return s;
  };
  std::vector<std::vector<scenario_result>> trials{
      {with_reserved(steady, 64 * MiB), with_reserved(racy, 256 * MiB)},
      {with_reserved(steady, 64 * MiB), with_reserved(racy, 512 * MiB)}};
  EXPECT_EQ(unsettled_scenarios(trials, 0.02), std::vector<std::string>{"racy"});
  // Within the tolerance: settled.
  trials[1][1] = with_reserved(racy, 256 * MiB + MiB);
  EXPECT_TRUE(unsettled_scenarios(trials, 0.02).empty());
  // An extra trial of the racy scenario alone joins it by key, not by position.
  trials.push_back({with_reserved(racy, 384 * MiB)});
  const auto joined = combine_trials(trials);
  ASSERT_EQ(joined.size(), 2u);
  EXPECT_EQ(joined[0].trials.size(), 2u);
  ASSERT_EQ(joined[1].trials.size(), 3u);
  EXPECT_EQ(joined[1].trials[2].reserved_high_bytes, 384 * MiB);
}

TEST(CheckTrials, TimeEffectCountsFromTheBaselinesSlowestTrial) {
  // A bimodal launch (70 or 110 us by process): the baseline saw 110 once; a current run all
  // at 115 is +64% on the median but only +5% over the slowest baseline trial.
  const std::vector<std::uint64_t> r(5, 2 * MiB);
  const auto b = with_trials(r, {69, 69, 70, 71, 103});
  const auto c = with_trials(r, {113, 114, 115, 117, 117});
  EXPECT_EQ(row(compare_reports(one(b), one(c), tolerances{}), "wall.steady_launch").verdict,
            "pass");
}

TEST(CheckTrials, OneSampleReportsKeepTheFixedRule) {
  // Schema-1 reports (no trials) are one trial each: no test is possible, the effect decides.
  scenario_result b, c;
  b.name = c.name = "s";
  launch_cost l;
  l.phase = "steady_launch";
  l.wall.median_us = 100;
  b.launch_costs.push_back(l);
  l.wall.median_us = 200;
  c.launch_costs.push_back(l);
  const comparison cmp = compare_reports(one(b), one(c), tolerances{});
  EXPECT_EQ(row(cmp, "wall.steady_launch").verdict, "regression");
  EXPECT_EQ(row(cmp, "wall.steady_launch").p_value, -1);
}

TEST(CombineTrials, MedianOfTrialMediansAndEveryTrialKept) {
  auto make = [](double us, std::uint64_t reserved) {
    scenario_result s;
    s.name = "s";
    launch_cost l;
    l.phase = "steady_launch";
    l.wall.median_us = us;
    l.host.median_us = us / 2;
    s.launch_costs.push_back(l);
    s.analysis.reserved_high_bytes = reserved;
    return std::vector<scenario_result>{s};
  };
  const auto joined = combine_trials({make(10, 1), make(30, 2), make(20, 3)});
  ASSERT_EQ(joined.size(), 1u);
  ASSERT_EQ(joined[0].trials.size(), 3u);
  EXPECT_EQ(joined[0].launch_costs[0].wall.median_us, 20);
  EXPECT_EQ(joined[0].launch_costs[0].host.median_us, 10);
  EXPECT_EQ(joined[0].trials[2].reserved_high_bytes, 3u);
  EXPECT_TRUE(combine_trials({make(10, 1)})[0].trials.empty());  // one trial: schema-1 shape
}

// Found by the report reader's checks: the joined median came from every trial but
// count, min and max from the first alone, so a median could lie outside [min, max].
TEST(CombineTrials, CountMinAndMaxCoverEveryTrial) {
  auto make = [](double lo, double mid, double hi) {
    scenario_result s;
    s.name = "s";
    launch_cost l;
    l.phase = "steady_launch";
    l.wall = {4, mid, lo, hi};
    l.host = {4, mid / 2, lo / 2, hi / 2};
    s.launch_costs.push_back(l);
    return std::vector<scenario_result>{s};
  };
  const auto joined = combine_trials({make(10, 11, 12), make(30, 31, 40), make(20, 21, 25)});
  const launch_cost& l = joined[0].launch_costs[0];
  EXPECT_EQ(l.wall.count, 12u);
  EXPECT_EQ(l.wall.min_us, 10);
  EXPECT_EQ(l.wall.median_us, 21);
  EXPECT_EQ(l.wall.max_us, 40);
  EXPECT_EQ(l.host.min_us, 5);
  EXPECT_EQ(l.host.max_us, 20);
}

// A host period: on the hosts the GPUs are lent on, whole suite runs took 0.6 to
// 0.75 of their usual times for seconds at a time. `n` scenarios with 5 trials of one launch
// cost each; scenario `slow` (if any) launches `slow_factor` times slower than the others.
report suite(int n, double factor, int slow = -1, double slow_factor = 1) {
  report r;
  r.env.device_name = "gpu";
  for (int i = 0; i < n; ++i) {
    const double f = factor * (i == slow ? slow_factor : 1.0);
    const double base = 20.0 + i;  // 20 to 20 + n us
    scenario_result s = with_trials({64 * MiB, 64 * MiB, 64 * MiB, 64 * MiB, 64 * MiB},
                                    {base * f, base * f * 1.01, base * f * 1.02,
                                     base * f * 0.99, base * f * 1.03});
    s.params = {{"bytes", std::int64_t{i + 1}}};
    r.scenarios.push_back(std::move(s));
  }
  return r;
}

std::size_t count(const comparison& c, const std::string& verdict) {
  std::size_t k = 0;
  for (const auto& r : c.rows) k += r.verdict == verdict;
  return k;
}

TEST(CheckDrift, ASuiteThatRanSlowerAsAWholeIsUnstableNotARegression) {
  // Every scenario 1.4x slower (a baseline made in a fast host period): each time alone is
  // +40%, every trial beyond the baseline's slowest by more than time_separation.
  const comparison c = compare_reports(suite(10, 1.0), suite(10, 1.4), tolerances{});
  EXPECT_FALSE(c.regressed());
  EXPECT_EQ(count(c, "regression"), 0U);
  EXPECT_EQ(count(c, "unstable"), 20U);  // host and wall of ten scenarios
  // Without the allowance every one of them regresses.
  tolerances off;
  off.host_drift = 0;
  EXPECT_EQ(count(compare_reports(suite(10, 1.0), suite(10, 1.4), off), "regression"), 20U);
  // Faster as a whole: unstable, not improvements.
  const comparison f = compare_reports(suite(10, 1.4), suite(10, 1.0), tolerances{});
  EXPECT_EQ(count(f, "improvement"), 0U);
  EXPECT_EQ(count(f, "unstable"), 20U);
}

TEST(CheckDrift, OneScenarioSlowerThanTheSuiteStillRegresses) {
  // The suite 1.2x slower, one scenario 2x beyond that: it moved further than the suite did.
  const comparison c = compare_reports(suite(10, 1.0), suite(10, 1.2, 3, 2.0), tolerances{});
  EXPECT_TRUE(c.regressed());
  EXPECT_EQ(count(c, "regression"), 2U);
  EXPECT_EQ(row(c, "host.steady_launch").verdict, "unstable");  // scenario 1: only the suite's 1.2x
  for (const auto& r : c.rows) {
    if (r.verdict == "regression") {
      EXPECT_EQ(r.scenario, "s[bytes=4]");
    }
  }
}

TEST(CheckDrift, AllowanceIsHeldWithinHostDrift) {
  // 2x slower everywhere is beyond the 1.6x the allowance holds to: it regresses.
  const comparison c = compare_reports(suite(10, 1.0), suite(10, 2.0), tolerances{});
  EXPECT_EQ(count(c, "regression"), 20U);
}

TEST(CheckDrift, TooFewScenariosGetNoAllowance) {
  // Seven scenarios (host and wall: fourteen rows, but only seven of each side) are too few to
  // tell a host period from a change: each is judged alone.
  const comparison c = compare_reports(suite(7, 1.0), suite(7, 1.4), tolerances{});
  EXPECT_EQ(count(c, "regression"), 14U);
}

}  // namespace
}  // namespace gmem::profiler
