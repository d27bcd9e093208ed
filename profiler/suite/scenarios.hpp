#pragma once
// The scenario suite: each scenario builds graphs with gmem's allocator layer and measures
// them. Scenario names and parameters are part of the report format.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gmem/profiler/report.hpp"
#include "suite/parameters.hpp"

namespace gmem::profiler {

struct scenario_context {
  int device = 0;
  int device_count = 1;
  int warmups = 2;
  int reps = 10;
  std::uint64_t granularity = 0;
  std::uint64_t free_memory = 0;  ///< free device memory when the suite started
  /// The scenario's parameters: its declared defaults, or what `--set` gave.
  scenario_parameters params;
};

struct scenario_definition {
  std::string name;
  std::string summary;  ///< one line: what it shows
  /// What `--set` may change; the scenario reads them from scenario_context::params. Every
  /// value it uses goes into its results' params (and so into their keys).
  std::vector<param_spec> params;
  std::function<std::vector<scenario_result>(const scenario_context&)> run;
};

/// Every scenario, in the order they run.
[[nodiscard]] const std::vector<scenario_definition>& scenario_definitions();

}  // namespace gmem::profiler
