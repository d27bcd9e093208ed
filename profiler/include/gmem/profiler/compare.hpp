#pragma once
// The regression check: a current report against a baseline measured on the same GPU. Plain
// C++ (no CUDA, no JSON); `gmemprof compare` prints format_comparison and exits with exit_code.
//
// Metrics, matched per scenario_result::key():
//  - memory: used_high_bytes, reserved_high_bytes (analysis); regress when they grow;
//  - reuse:  va_reuse_ratio, physical_reuse_ratio (analysis); regress when they drop;
//  - time:   "host.<phase>" and "wall.<phase>", the median of each launch cost present in both
//            reports; regress when they grow. Faster or smaller is always a pass.
//
// Two recordings (both reports have `recorded`, gmemprof record) are compared as a program:
//  - each device's pool: rows "pool[device N]" high_bytes and end_bytes (memory); a pool of the
//    baseline missing now is a regression;
//  - graphs matched by recorded_graph::identity (names follow stream numbers, which racing
//    threads change between runs; by name where a recording has no identities); the row is
//    labelled with the current name, "name (baseline: other)" where the baseline's differs;
//  - per graph its own figures: used/reserved_high_bytes (its footprint alone), the reuse
//    ratios, held_granule_bytes (memory), and host.<phase>; not growth_bytes, which the launch
//    order moves from graph to graph. A phase whose calls mapped memory in one run only is
//    "unstable". Recordings have no wall times: no wall rows.
//  - a phase of fewer than five calls (instantiations, first launches, remaps) in the graphs of
//    a site that made two or more of them: one row for the site's graphs together
//    (comparison_row::graphs), judged by the graphs' own changes (a sign test and their median),
//    not a row per graph: one call's time moved 13x between two runs of one program on an H100,
//    and at 2000 graphs hundreds of single calls crossed the single-sample tolerance.
//  - a time that moved no further than its metric moved across the recording's graphs is
//    "unstable", as across a suite (the process ran slower or faster as a whole).

#include <map>
#include <string>
#include <vector>

#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

struct tolerances {
  double memory = 0.02;  ///< memory rows (*_bytes) may grow by at most this fraction
  double reuse = 0.02;   ///< va_reuse_ratio, physical_reuse_ratio may drop by at most this fraction
  double time = 0.50;    ///< launch-cost medians (host and wall) may grow by at most this fraction
  /// ... and a time regression also needs an absolute growth above this many microseconds:
  /// microsecond-scale launches jitter by more than half between runs of one machine.
  double time_floor_us = 10.0;
  /// ... or, with enough trials for the test, every current trial above every baseline trial
  /// by more than this fraction (no floor): a small graph's launch twice as slow is caught
  /// although it grows by a few microseconds (measured in reports/check-quality/).
  double time_separation = 0.15;
  /// A time that regresses (improves) only as far as its metric moved across the whole suite
  /// (the median over at least 8 scenarios of current / baseline, held within
  /// [1 / (1 + host_drift), 1 + host_drift]) is "unstable", not judged: the hosts the GPUs are
  /// lent on run whole suites 0.6 to 0.75 as fast for seconds at a time. 0: off.
  double host_drift = 0.6;
  /// A recording's calls of one class measured fewer than 5 times in either recording (its
  /// instantiations, first launches, remaps) are judged one sample against one: a regression
  /// needs more than this fraction of growth and few_samples_floor_us. One call of a program
  /// measured once took 2.4x as long in the next run (a remap of 32 MiB on an H100: 25 and
  /// 60 us), so a single sample's tolerance is wider than a median's. Graphs of one site (two
  /// or more) are judged together instead, by their own changes (comparison_row::graphs).
  double few_samples = 2.0;
  double few_samples_floor_us = 100.0;
  /// Overrides by exact metric name, e.g. "reserved_high_bytes", "wall.first_launch_no_upload" or
  /// (recordings) "high_bytes", "end_bytes", "held_granule_bytes".
  std::map<std::string, double> per_metric;
  /// --strict: an "unstable" row (one that could not be judged: trials against different
  /// reservations, recordings' concurrent or too rare calls) fails too.
  bool strict = false;
  /// One-sided significance level of the Mann-Whitney U test on the trials' medians.
  double alpha = 0.01;

  /// The tolerance for `metric` of `category` ("memory", "reuse" or "time"): its per-metric
  /// override, else the category's. Throws std::invalid_argument for an unknown category.
  [[nodiscard]] double for_metric(const std::string& metric, const std::string& category) const;
};

/// Parses "NAME=FRACTION" (NAME: memory|reuse|time|time_separation or a metric name), or
/// "time_floor_us=US",
/// into `t`; throws
/// std::invalid_argument naming the assignment and what is accepted.
void set_tolerance(tolerances& t, const std::string& assignment);

struct comparison_row {
  /// scenario_result::key(); for recordings the graph's name ("name (baseline: other)" where
  /// the baseline named it otherwise) or "pool[device N]"
  std::string scenario;
  /// "reserved_high_bytes", "wall.steady_launch", ...; "scenario" for a missing scenario.
  std::string metric;
  std::string category;  ///< "memory", "reuse", "time"; "scenario" for a missing one
  double baseline = 0;
  double current = 0;
  /// The change judged: (current - baseline) / baseline, 0 when both are 0, +inf from 0 to
  /// more; for a row judged per_reference, the change at the baseline's reference speed.
  double change = 0;
  /// (current - baseline) / baseline of the medians shown (equals change unless per_reference).
  double raw_change = 0;
  /// The slope of time on reference within the trials, in [0, 1] (docs/checks.md):
  /// above 0, each trial's time was judged divided by (its reference launch / the baseline's
  /// median reference) to this power.
  double reference_weight = 0;
  /// A time row judged with its trials at the baseline's reference-launch speed.
  [[nodiscard]] bool per_reference() const noexcept { return reference_weight > 0; }
  double tolerance = 0;
  /// "pass", "regression", "improvement", "unstable" (not judged: trials against different
  /// reservations, or a recording's concurrent or rare calls; fails only with strict),
  /// "missing" (a regression too) or "skipped".
  std::string verdict;
  /// The baseline's trials spread beyond the tolerance. Judged all the same (a time
  /// then regresses only with every current trial beyond the baseline's slowest); for reading.
  bool wide_baseline = false;
  std::size_t baseline_trials = 1;  ///< samples on each side (1 for a report without trials)
  std::size_t current_trials = 1;
  /// Recordings: above 0, the row judges this many graphs of one site together, each one's rare
  /// calls (measured fewer than five times) paired with its baseline's (baseline and current:
  /// the medians of the graphs' times; change: the median of each graph's own change).
  std::size_t graphs = 0;
  double p_value = -1;  ///< the one-sided Mann-Whitney p (current above); -1 when no test was possible
};

struct comparison {
  std::vector<comparison_row> rows;
  std::vector<std::string> notes;  ///< what was not compared and why, in words
  /// The notes (their indices) that say what two recordings' bills show side by side: a kind
  /// that held graph memory in one of them only. A view that prints the bills leaves them out.
  std::vector<std::size_t> said_by_bills;
  bool strict = false;  ///< unstable rows count as regressions (tolerances::strict)

  /// True when a row is a "regression" or "missing".
  [[nodiscard]] bool regressed() const;
};

/// Compares the scenarios of `current` with those of `baseline` by key(), or two recordings by
/// pool and graph identity (see the metrics above); a scenario (graph, pool) ok in the baseline
/// but missing or not ok now is a "missing" row, one skipped or failed in the baseline is only
/// noted. Throws report_error(wrong_schema_version) when the
/// versions differ, report_error(different_gpu) when environment.device_name differs and
/// report_error(different_kinds) when one is a recording and the other a suite report.
[[nodiscard]] comparison compare_reports(const report& baseline, const report& current,
                                         const tolerances& t);

/// The table (scenario, metric, baseline, current, change, tolerance, verdict; *_bytes in MiB),
/// then the notes, then "N compared, N regressed"; throws nothing but std::bad_alloc.
[[nodiscard]] std::string format_comparison(const comparison& c, bool all = true);
/// Summary first: counts per verdict, then only the regression / improvement / unstable /
/// missing rows (every row with `all`).
[[nodiscard]] std::string format_summary(const comparison& c, bool all);
/// "62 rows: 6 pass, 28 regression, ...": the count of each verdict.
[[nodiscard]] std::string verdict_counts(const comparison& c);
/// A row's cells as the table writes them: a value ("36.0 MiB", "75.44 us"), its change
/// ("+350.0%", "up from 0"), its tolerance ("+2.0%"); and whether a summary shows it (not
/// pass or skipped).
[[nodiscard]] std::string format_row_value(const comparison_row& r, double v);
[[nodiscard]] std::string format_row_change(const comparison_row& r);
[[nodiscard]] std::string format_row_tolerance(const comparison_row& r);
[[nodiscard]] bool row_is_notable(const comparison_row& r);
/// The footnote for rows judged per reference among those shown ("" where none).
[[nodiscard]] std::string comparison_footnote(const comparison& c, bool all);
/// The same as a markdown table (CI job summary, pull-request comment).
[[nodiscard]] std::string format_markdown(const comparison& c, bool all);
/// The same as JSON: {"counts": {...}, "rows": [...], "notes": [...]}.
[[nodiscard]] std::string format_comparison_json(const comparison& c, bool all);

/// Statistics of the check, exposed for tests.
/// One-sided exact Mann-Whitney p-value that `current` is stochastically greater than
/// `baseline` (ties count one half); P(U >= u) under the null of exchangeable samples.
/// One-sided exact sign test: the chance of `up` or more of `up + down` paired changes being
/// increases when each is as likely down as up (ties left out); 1 with no pairs.
[[nodiscard]] double sign_test_greater(std::size_t up, std::size_t down);
[[nodiscard]] double mann_whitney_greater(const std::vector<double>& baseline,
                                          const std::vector<double>& current);

/// 0 when nothing regressed, 1 on any regression (or unstable row with tolerances::strict).
[[nodiscard]] int exit_code(const comparison& c) noexcept;

}  // namespace gmem::profiler
