#pragma once
// The pieces of `gmemprof show`'s text that show.cpp (suite reports, scenario blocks) and
// show_recording.cpp (recordings) share. Internal to the views.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "views/show.hpp"

namespace gmem::profiler {

template <typename... Args>
std::string show_format(const char* fmt, Args... args) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

/// The environment as labelled lines.
[[nodiscard]] std::string format_environment(const environment& e);
/// "[severity] message (size)", wrapped under `indent`.
[[nodiscard]] std::string format_diagnostic(const diagnostic& d, const std::string& indent);
/// One scenario's (or recorded graph's) block.
[[nodiscard]] std::string format_scenario(const scenario_result& s, bool recorded, std::uint64_t granularity);
/// A recording: the first answer, then the detail asked for (show.hpp, format_report).
[[nodiscard]] std::string format_recording(const report& r, const show_options& o);
/// The scenario of recorded graph `gi` (the same index where the report is as written, else
/// the one of its name); null when none.
[[nodiscard]] const scenario_result* scenario_of(const report& r, std::size_t gi);
/// The scenarios of a suite report `--graph` selects (by key, glob, or name), in their order.
[[nodiscard]] std::vector<std::size_t> select_scenarios(const report& r, const std::vector<std::string>& patterns);
/// The host time of a recorded graph's first launch (microseconds), -1 when it was not launched.
[[nodiscard]] double first_launch_us(const scenario_result* s);

}  // namespace gmem::profiler
