// The one median every figure of gmem is made of (gmem/profiler/statistics.hpp, the model's).
#include <gtest/gtest.h>

#include "gmem/profiler/statistics.hpp"

namespace gmem::profiler {
namespace {

TEST(Statistics, TheMedianIsTheMiddleValueOrTheMeanOfTheTwoMiddleOnes) {
  EXPECT_EQ(median({}), 0.0);
  EXPECT_EQ(median({7}), 7.0);
  EXPECT_EQ(median({9, 1, 5}), 5.0);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({1, 1, 100}), 1.0) << "not the mean";
  EXPECT_EQ(median_of_sorted({1, 2, 10, 20}), 6.0);
}

}  // namespace
}  // namespace gmem::profiler
