#pragma once
// The human view of a report, for `gmemprof show`. Plain C++ (no CUDA, no JSON).

#include <string>

#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

/// The report as text: an environment header, then one block per scenario (key, status,
/// memory in MiB, ratios, launch costs in microseconds, diagnostics); for a recording, each
/// graph's figures labelled as its own, then per device the pool (high watermark and whose call
/// reached it, the attribution, the graphs' growth, diagnostics, mapping events). Throws
/// nothing but std::bad_alloc.
[[nodiscard]] std::string format_report(const report& r);

}  // namespace gmem::profiler
