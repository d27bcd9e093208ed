#pragma once
// `gmemprof check` of two recordings, as text: the bills first (each process's and device's
// graph memory by kind, baseline against current, and what differs between the two runs:
// commands, devices, where the graphs' memory lives), then the judged rows by graph, then the
// notes, every line within text_width. Plain C++.

#include <string>

#include "gmem/profiler/compare.hpp"
#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

/// The text of a check of `current` against `baseline` (both recordings) whose rows are `c`;
/// `all`: every row, not only those that changed. `baseline_path`, `current_path`: as named.
[[nodiscard]] std::string format_recorded_check(const report& baseline, const std::string& baseline_path,
                                                const report& current, const std::string& current_path,
                                                const comparison& c, bool all);

}  // namespace gmem::profiler
