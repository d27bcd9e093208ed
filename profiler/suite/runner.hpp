#pragma once
// Runs the scenario suite (or named scenarios) on one device and gathers a report.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gmem/profiler/report.hpp"
#include "suite/parameters.hpp"

namespace gmem::profiler {

struct run_options {
  int device = 0;
  int warmups = 2;
  int reps = 10;
  /// Independent trials per scenario, each from a fresh state (trimmed pool, new streams and
  /// graphs) with its own warmups and reps (the default is chosen by measurement,
  /// reports/check-quality/README.md).
  int trials = 5;
  /// gmemprof runs each trial in a fresh process of its own (run_suite ignores this and runs
  /// the trials in this process).
  bool trials_in_processes = true;
  /// With trials in processes: a scenario whose trials disagree on a memory counter (the
  /// driver's choice depends on a race, e.g. graphs in separate streams) gets this many more
  /// trials, so that its distribution is judged, not its first few draws. -1: twice
  /// `trials`; 0: none.
  int settle_trials = -1;
  /// Scenario names to run (all when empty).
  std::vector<std::string> only;
  /// `--set NAME=VALUE` as given, in order: each sets NAME in every selected scenario that
  /// declares it (resolve_parameters).
  std::vector<std::string> settings;
  /// Called with a line of progress before each scenario (stderr in gmemprof).
  std::function<void(const std::string&)> progress;
};

/// The names of the scenarios, in the order they run.
[[nodiscard]] std::vector<std::string> scenario_names();

/// Throws usage_error naming the unknown ones and listing the valid names.
void check_scenario_names(const std::vector<std::string>& names);

struct scenario_definition;

/// The parameters each selected scenario of `defs` (all when `only` is empty) runs with: its
/// declared defaults, each replaced by the value of the `NAME=VALUE` in `settings` that names
/// it. A setting applies to every selected scenario that declares NAME. Throws usage_error,
/// naming the parameter, the value, the scenarios and what is accepted, for: an unknown
/// scenario name; a setting not of the form NAME=VALUE or given twice; a NAME no selected
/// scenario declares (naming the selected scenarios' parameters, and the scenarios that do
/// take NAME); a value that does not parse as the parameter's kind or lies outside a
/// scenario's range.
[[nodiscard]] std::map<std::string, scenario_parameters> resolve_parameters(
    const std::vector<scenario_definition>& defs, const std::vector<std::string>& only,
    const std::vector<std::string>& settings);

/// resolve_parameters over the suite's scenarios.
[[nodiscard]] std::map<std::string, scenario_parameters> resolve_parameters(
    const std::vector<std::string>& only, const std::vector<std::string>& settings);

/// `gmemprof run --list`: per scenario "NAME<TAB>summary", then one indented line per
/// parameter (describe()).
[[nodiscard]] std::string format_scenario_list();

/// Joins the results of K runs of one scenario (trials[t]: the results of trial t): the first
/// trial's results, each with the values of every trial that ran it (matched by key: a later
/// trial may hold only some scenarios) in `trials` and launch-cost medians that are the median
/// of the trials' medians. A trial that failed makes the scenario fail.
[[nodiscard]] std::vector<scenario_result> combine_trials(
    std::vector<std::vector<scenario_result>> trials);

/// Runs the selected scenarios, each with its parameters (resolve_parameters). A scenario that
/// fails is reported with status "error" and its message; the others still run. Throws
/// usage_error for unknown names, bad settings, a device out of range or bad reps / warmups,
/// unsupported_error without a GPU, cuda_error when the device cannot be probed.
[[nodiscard]] report run_suite(const run_options& options, const std::string& command_line);

}  // namespace gmem::profiler

namespace gmem::profiler {

/// The names of the scenarios (scenario_result::name, each once, in order) whose ok results
/// disagree between `trials` on used_high_bytes or reserved_high_bytes by more than `tolerance`
/// (a fraction of the smallest): the ones that need more trials (run_options::settle_trials).
[[nodiscard]] std::vector<std::string> unsettled_scenarios(
    const std::vector<std::vector<scenario_result>>& trials, double tolerance);

}  // namespace gmem::profiler
