#pragma once
// A report as nlohmann's JSON value, for the report code's views. Only the report code's .cpp
// files see nlohmann's types (this header declares them, json_fwd).

#include <nlohmann/json_fwd.hpp>

#include "gmem/profiler/report.hpp"
#include "gmem/profiler/report_io.hpp"

namespace gmem::profiler {

/// What to_json_string writes, as a value. `leave_out_derived`: a recorded scenario's figures its
/// graph's events state are left out (phases_from_events), as in a report file; false for a view
/// that reads every scenario's counters_after_phase and launch_costs as they are. `each`, where
/// given, makes the scenarios' JSON (for_each_index).
[[nodiscard]] nlohmann::ordered_json report_to_json(const report& r, bool leave_out_derived,
                                                    const for_each_index& each = {});

}  // namespace gmem::profiler
