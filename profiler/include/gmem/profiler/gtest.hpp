#pragma once
// GoogleTest assertions on a profiled graph, so that footprint regressions fail a user's own CI:
//
//   auto r = gmem::profiler::profile_graph(my_graph);
//   EXPECT_TRUE(gmem::profiler::reserved_at_most(r, 512ull << 20));
//   EXPECT_TRUE(gmem::profiler::reserved_within_bound_ratio(r, 1.25));
//
// Header-only: only code that includes it needs GoogleTest.

#include <gtest/gtest.h>

#include <cstdint>

#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

/// Passes when the graph's measured reserved high watermark is at most `max_bytes`.
inline ::testing::AssertionResult reserved_at_most(const scenario_result& r,
                                                   std::uint64_t max_bytes) {
  const std::uint64_t reserved = r.analysis.reserved_high_bytes;
  if (r.status != scenario_status::ok) {
    return ::testing::AssertionFailure()
           << "graph '" << r.name << "' was not measured: " << r.status_message;
  }
  if (reserved <= max_bytes) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "graph '" << r.name << "' reserved " << reserved << " B of graph memory, more than "
         << max_bytes << " B (lower bound " << r.analysis.lower_bound_rounded_bytes << " B)";
}

/// Passes when reserved high / rounded lower bound is at most `max_ratio` (1 = the driver
/// reserved only what the graph must have).
inline ::testing::AssertionResult reserved_within_bound_ratio(const scenario_result& r,
                                                              double max_ratio) {
  if (r.status != scenario_status::ok) {
    return ::testing::AssertionFailure()
           << "graph '" << r.name << "' was not measured: " << r.status_message;
  }
  if (r.analysis.bound_ratio <= max_ratio) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure();
  failure << "graph '" << r.name << "' reserved " << r.analysis.reserved_high_bytes << " B, "
          << r.analysis.bound_ratio << "x its lower bound of "
          << r.analysis.lower_bound_rounded_bytes << " B (allowed: " << max_ratio << "x)";
  for (const auto& d : r.diagnostics) failure << "\n  [" << d.severity << "] " << d.message;
  return failure;
}

}  // namespace gmem::profiler
