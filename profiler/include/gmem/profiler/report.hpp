#pragma once
// The profiler's report as plain data. JSON lives only in report_json.cpp; these structs are
// what the runner fills, the regression check compares and `gmemprof show` prints.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "gmem/profiler/recording.hpp"
#include "gmem/profiler/report_values.hpp"
#include "gmem/profiler/skeleton.hpp"

namespace gmem::profiler {

/// The report format version. Bump it when a field changes meaning or is removed.
inline constexpr int schema_version = 1;

/// A scenario parameter value (JSON number, string or bool).
using param_value = std::variant<std::int64_t, double, std::string, bool>;
using parameters = std::vector<std::pair<std::string, param_value>>;

struct environment {
  std::string device_name;
  int device_index = 0;
  int cc_major = 0;
  int cc_minor = 0;
  std::uint64_t total_memory_bytes = 0;
  int driver_version = 0;   ///< CUDA driver API version, e.g. 13000
  std::string driver_release;  ///< kernel driver release, e.g. "580.159.04", when known
  int runtime_version = 0;
  int device_count = 0;
  std::uint64_t granularity_bytes = 0;  ///< measured reservation granularity
  std::string granularity_method;        ///< how it was measured
  std::string tool_version;
  std::string git_commit;
  std::string command_line;
  std::string date;  ///< ISO 8601, UTC
};

/// Counters read right after a phase of a scenario ended.
struct phase_counters {
  std::string phase;
  counters values;
};

/// Order statistics of repeated measurements, in microseconds.
struct stats {
  std::size_t count = 0;
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
};

/// Median / min / max of `samples_us` (empty gives count 0).
[[nodiscard]] stats summarize_samples(std::vector<double> samples_us);

/// One launch cost: host time inside the API call, and wall time from the call to completion
/// (after a stream synchronize).
struct launch_cost {
  std::string phase;  ///< "instantiate", "upload", "first_launch_after_upload", ...
  std::size_t warmups = 0;
  stats host;
  stats wall;
  /// The profiler's reference_launch (timing.hpp), timed after every sample of this phase, in
  /// the same process: how fast the process launched while the phase was measured. Count 0
  /// where it was not measured (recordings; reports before it: an optional member "reference").
  stats reference_host;
  stats reference_wall;
};


/// One trial of a scenario: the scenario measured again from a fresh state (trimmed
/// pool, new streams and graphs). A report's trials are the distribution the regression check
/// tests; a scenario without trials (schema-1 reports of one sample) counts as one trial.
struct trial_sample {
  std::uint64_t used_high_bytes = 0;
  std::uint64_t reserved_high_bytes = 0;
  double va_reuse_ratio = 0;
  double physical_reuse_ratio = 0;
  struct launch {
    std::string phase;
    double host_median_us = 0;
    double wall_median_us = 0;
    /// The reference launch's medians in this trial (launch_cost::reference_host); 0: none.
    double reference_host_median_us = 0;
    double reference_wall_median_us = 0;
  };
  std::vector<launch> launches;  ///< each launch cost's medians over this trial's repetitions
};

/// Advice measured on the driver: the graph's skeleton and each candidate change
/// replayed (memory nodes and empty nodes only), kept only where the change saved at least one
/// reservation granule there.
struct measured_change {
  /// plan, dependency_at_creation, creation_order, add_dependency, auto_free_on_launch,
  /// one_stream, trim, combined
  std::string kind;
  std::string where;  ///< where to make the change in the user's code
  std::uint64_t predicted_bytes = 0;  ///< what the reuse model predicts after the change
  std::uint64_t measured_bytes = 0;   ///< what the driver reserved after the change
  std::uint64_t saving_bytes = 0;     ///< baseline_bytes - measured_bytes (0 when not below)
  /// Predicted, not measured: the launch time with the change, the critical path
  /// of the graph through its nodes' GPU durations (measured with CUPTI on the real graph) with
  /// the dependencies the change adds, and what that adds to the graph's own critical path.
  /// Absent where the durations could not be measured or the change adds no dependency.
  std::optional<double> predicted_launch_us;
  std::optional<double> predicted_price_us;
  std::size_t added_dependencies = 0;  ///< how many dependencies the change adds (plan, add_dependency)
};

struct advice_measurement {
  /// The skeleton as the graph was built, replayed; for a scenario of several graphs, its
  /// footprint as launched (measured with its kernels: a replay cannot tell how launches overlap).
  std::uint64_t baseline_bytes = 0;
  std::vector<measured_change> changes;  ///< saved at least one granule, largest saving first
  measured_change combined;              ///< the combined set, measured as a whole
  bool combined_reaches_order_free_bound = false;
  std::vector<measured_change> tried;    ///< measured, saved less than a granule: not advice
  /// The graph's own critical path through its nodes' GPU durations (CUPTI kernel records of
  /// a few launches), which the changes' predicted prices are relative to; absent with why in
  /// durations_note when CUPTI could not measure them.
  std::optional<double> critical_path_us;
  std::string durations_note;
};

enum class scenario_status { ok, skipped, error };
/// "ok", "skipped" or "error", as in reports.
[[nodiscard]] const char* to_string(scenario_status s) noexcept;

struct scenario_result {
  std::string name;
  parameters params;
  scenario_status status = scenario_status::ok;
  std::string status_message;  ///< the reason when skipped, the error when error
  std::vector<phase_counters> counters_after_phase;
  std::vector<launch_cost> launch_costs;
  analysis_summary analysis;
  std::vector<diagnostic> diagnostics;
  std::vector<allocation_lifetime> allocations;  ///< optional section; empty when not recorded
  /// What the driver saw of each graph (optional in reports; `gmemprof replay` re-measures it).
  std::vector<skeleton> skeletons;
  /// Optional: every trial's values (the fields above come from the first trial, launch-cost
  /// medians are the median of the trials' medians). Empty: one trial, the fields above.
  std::vector<trial_sample> trials;
  /// Optional: the advice measured on the driver when the scenario was profiled.
  std::optional<advice_measurement> advice;

  /// name plus its parameters, "single_alloc[bytes=2097152,upload=true]": the key under which
  /// the regression check matches a scenario across reports.
  [[nodiscard]] std::string key() const;
};

/// A recorded graph's calls as its scenario states them: the counters after each call that read
/// them (counters_after_phase) and, per class of call in the order first seen, the host time's
/// statistics (launch_costs; a failed call's class is "<kind>_failed"; frees, releases and
/// captures are no launch costs). The recorder writes a recorded scenario's figures with it, and
/// a report's reader derives them with it where the writer left them out.
void add_event_phases(scenario_result& s, const recorded_graph& g);

struct report {
  int version = schema_version;
  environment env;
  std::vector<scenario_result> scenarios;
  /// gmemprof record only: what the recording saw (optional section "recorded").
  std::optional<recording> recorded;
};

}  // namespace gmem::profiler
