// When a profiled phase stops taking samples (profile_options::min_reps, settled_spread): its
// last samples within the spread of their median, never with fewer than asked for.
#include <gtest/gtest.h>

#include <vector>

#include "gmem/profiler/timing.hpp"

namespace gmem::profiler {
namespace {

TEST(SettledSamples, TheLastNWithinTheSpreadOfTheirMedianHaveSettled) {
  // Cold launches of a 1000-allocation graph: 12.0 to 12.9 ms, within 10% of 12.4.
  EXPECT_TRUE(settled({30.0, 12.4, 12.0, 12.9, 12.5, 12.2}, 5, 0.10));
  // The 30 ms outlier is among the last five: not settled.
  EXPECT_FALSE(settled({12.4, 30.0, 12.0, 12.9, 12.5, 12.2}, 5, 0.10));
  // 1.2 ms of spread on 12.3: beyond 10%, within 10% of a wider tolerance.
  EXPECT_FALSE(settled({12.0, 13.2, 12.3, 12.4, 12.1}, 5, 0.05));
  EXPECT_TRUE(settled({12.0, 13.2, 12.3, 12.4, 12.1}, 5, 0.10));
}

TEST(SettledSamples, FewerSamplesThanAskedForNeverSettle) {
  EXPECT_FALSE(settled({}, 5, 0.10));
  EXPECT_FALSE(settled({1, 1, 1, 1}, 5, 0.10));
  EXPECT_FALSE(settled({1, 1, 1, 1, 1}, 0, 0.10));  // 0: settling is off
  EXPECT_TRUE(settled({1, 1, 1, 1, 1}, 5, 0.0));    // identical samples settle at any spread
}

}  // namespace
}  // namespace gmem::profiler
