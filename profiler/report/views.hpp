#pragma once
// The report as pictures: a self-contained HTML page (`gmemprof html`) and a Chrome trace /
// Perfetto JSON file (`gmemprof trace`). Plain C++ (no CUDA); JSON stays in the .cpp files.

#include <optional>
#include <string>

#include "gmem/profiler/compare.hpp"
#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

/// The report as Chrome trace event JSON ({"traceEvents": [...]}), for ui.perfetto.dev or
/// chrome://tracing. The report holds medians, not timestamps, so the timeline is laid out from
/// them: scenarios one after another; per scenario (one track, "thread", per scenario under
/// one "process" per device) its phases in order, each as long as its wall median (1 us when
/// the phase was not timed), its launch (host median) inside it; the four counters as counter
/// tracks, sampled at the end of each phase. A recording's pools add a process each (pid
/// 1000 + device), at the program's own times: the reservation as a counter track ("pool
/// reserved"), an instant per mapping event and one at the high watermark. Throws nothing but
/// std::bad_alloc.
[[nodiscard]] std::string trace_json(const report& r);

/// Inputs of the HTML view besides the report.
struct html_inputs {
  std::optional<comparison> check;  ///< the check against a baseline, when one was given
  std::string baseline_name;        ///< what the baseline is called on the page
  std::string bench_json;           ///< gmem_bench's JSON text, empty when none
  std::string bench_name;           ///< the bench file's name
};

/// One self-contained HTML page (inline CSS, JS and SVG; nothing loaded from the network):
/// per scenario requested vs lower bound vs reserved, the counters across phases, launch
/// costs, mapping cost against size from the bench JSON, the check's verdicts coloured; for a
/// recording, per device the pool's reservation over time with its high watermark and the
/// attribution at it, and the growth each graph caused. The page counts what it drew into
/// <pre id="gmem-selfcheck"> (JSON) for the browser test.
/// Throws report_error(not_json, invalid) when bench_json is given and is not gmem_bench JSON.
[[nodiscard]] std::string html_page(const report& r, const html_inputs& in);

}  // namespace gmem::profiler
