#pragma once
// The human view of a report, for `gmemprof show`. Plain C++ (no CUDA, no JSON).

#include <string>

#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

/// The report as text: an environment header, then one block per scenario (key, status,
/// memory in MiB, ratios, launch costs in microseconds, diagnostics); throws nothing but
/// std::bad_alloc.
[[nodiscard]] std::string format_report(const report& r);

}  // namespace gmem::profiler
