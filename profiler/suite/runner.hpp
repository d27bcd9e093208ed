#pragma once
// Runs the scenario suite (or named scenarios) on one device and gathers a report.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

struct run_options {
  int device = 0;
  int warmups = 2;
  int reps = 10;
  /// Independent trials per scenario, each from a fresh state (trimmed pool, new streams and
  /// graphs) with its own warmups and reps (issue 10; the default is chosen by measurement,
  /// reports/check-quality/README.md).
  int trials = 5;
  /// gmemprof runs each trial in a fresh process of its own (run_suite ignores this and runs
  /// the trials in this process).
  bool trials_in_processes = true;
  /// Scenario names to run (all when empty).
  std::vector<std::string> only;
  /// Called with a line of progress before each scenario (stderr in gmemprof).
  std::function<void(const std::string&)> progress;
};

/// The names of the scenarios, in the order they run.
[[nodiscard]] std::vector<std::string> scenario_names();

/// Throws usage_error naming the unknown ones and listing the valid names.
void check_scenario_names(const std::vector<std::string>& names);

/// Joins the results of K runs of one scenario (trials[t][i]: result i of trial t): the first
/// trial's results, each with every trial's values in `trials` and launch-cost medians that are
/// the median of the trials' medians. A trial that failed makes the scenario fail.
[[nodiscard]] std::vector<scenario_result> combine_trials(
    std::vector<std::vector<scenario_result>> trials);

/// Runs the selected scenarios. A scenario that fails is reported with status "error" and its
/// message; the others still run. Throws usage_error for unknown names, a device out of range
/// or bad reps / warmups, unsupported_error without a GPU, cuda_error when the device cannot
/// be probed.
[[nodiscard]] report run_suite(const run_options& options, const std::string& command_line);

}  // namespace gmem::profiler
