// gmemprof run's progress line: quiet in the first second and when not enabled, then each
// line with the elapsed time.

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "gmemprof/progress.hpp"

namespace gmem::profiler {
namespace {

TEST(Progress, QuietWhenNotEnabled) {
  std::ostringstream err;
  progress_printer p(err, false, std::chrono::milliseconds(0));
  p("[1/2] single_alloc: one allocation");
  EXPECT_EQ(err.str(), "");
}

TEST(Progress, QuietInTheFirstSecondThenPrintsWithElapsed) {
  std::ostringstream err;
  progress_printer p(err, true, std::chrono::milliseconds(50));
  p("[1/2] first");
  EXPECT_EQ(err.str(), "") << "a run shorter than the quiet time prints nothing";
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  p("[2/2] second");
  const std::string out = err.str();
  EXPECT_NE(out.find("gmemprof run: "), std::string::npos) << out;
  EXPECT_NE(out.find(" s  [2/2] second\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("first"), std::string::npos) << out;
}

}  // namespace
}  // namespace gmem::profiler
