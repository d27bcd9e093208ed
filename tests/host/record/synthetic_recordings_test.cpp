// Writes the synthetic recordings (synthetic_recordings.hpp) the views' tests read:
// synthetic-back-to-back-{9,1000,2000}.json and synthetic-serving-{9,1000,2000}.json in the build
// folder, each read back, with the pool figures their shape implies.
#include <gtest/gtest.h>

#include "synthetic_recordings.hpp"

namespace gmem::record::test {
namespace {

using profiler::probe::granule;

class SyntheticRecording : public ::testing::TestWithParam<int> {};

TEST_P(SyntheticRecording, BackToBackHoldsOneGranulePerGraph) {
  const int graphs = GetParam();
  program p;
  back_to_back(p, graphs);
  const profiler::report r = p.finish();
  ASSERT_TRUE(r.recorded);
  ASSERT_EQ(r.recorded->graphs.size(), static_cast<std::size_t>(graphs));
  ASSERT_EQ(r.recorded->pools.size(), 1u);
  EXPECT_EQ(r.recorded->pools[0].high_bytes, static_cast<std::uint64_t>(graphs) * granule);
  profiler::write_report(r, std::string(GMEM_BINARY_DIR) + "/synthetic-back-to-back-" + std::to_string(graphs) + ".json");
}

TEST_P(SyntheticRecording, ServingNamesEveryBatch) {
  const int graphs = GetParam();
  program p(name_source::nvtx);
  serving(p, graphs);
  const profiler::report r = p.finish();
  ASSERT_TRUE(r.recorded);
  ASSERT_EQ(r.recorded->graphs.size(), static_cast<std::size_t>(graphs));
  EXPECT_EQ(r.recorded->graphs.front().name, "decode bs=" + std::to_string(graphs));
  profiler::write_report(r, std::string(GMEM_BINARY_DIR) + "/synthetic-serving-" + std::to_string(graphs) + ".json");
}

INSTANTIATE_TEST_SUITE_P(Graphs, SyntheticRecording, ::testing::Values(9, 1000, 2000));

}  // namespace
}  // namespace gmem::record::test
