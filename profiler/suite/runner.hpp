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
  /// Scenario names to run (all when empty).
  std::vector<std::string> only;
  /// Called with a line of progress before each scenario (stderr in gmemprof).
  std::function<void(const std::string&)> progress;
};

/// The names of the scenarios, in the order they run.
[[nodiscard]] std::vector<std::string> scenario_names();

/// Throws usage_error naming the unknown ones and listing the valid names.
void check_scenario_names(const std::vector<std::string>& names);

/// Runs the selected scenarios. A scenario that fails is reported with status "error" and its
/// message; the others still run. Throws usage_error for unknown names, a device out of range
/// or bad reps / warmups, unsupported_error without a GPU, cuda_error when the device cannot
/// be probed.
[[nodiscard]] report run_suite(const run_options& options, const std::string& command_line);

}  // namespace gmem::profiler
