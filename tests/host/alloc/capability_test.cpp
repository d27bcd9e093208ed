#include <gtest/gtest.h>

#include "gmem/capability.hpp"
#include "gmem/usage_error.hpp"

namespace {

TEST(Capability, OldDriverIsUnsupportedWithoutQueryingMemoryPools) {
  int queries = 0;
  const auto reason = gmem::graph_mem_nodes_unsupported_reason(11030, [&] {
    ++queries;
    return true;
  });
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("11.3"), std::string::npos) << *reason;
  EXPECT_EQ(queries, 0);  // the attribute is never asked of a driver older than 11.4
}

TEST(Capability, DriverFromElevenFourAsksForMemoryPools) {
  int queries = 0;
  EXPECT_FALSE(gmem::graph_mem_nodes_unsupported_reason(11040, [&] {
                 ++queries;
                 return true;
               }).has_value());
  EXPECT_EQ(queries, 1);
  const auto reason = gmem::graph_mem_nodes_unsupported_reason(13000, [] { return false; });
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("memory pools"), std::string::npos);
}

TEST(Capability, CudaVersionsFormatAsMajorDotMinor) {
  EXPECT_EQ(gmem::format_cuda_version(13000), "13.0");
  EXPECT_EQ(gmem::format_cuda_version(12040), "12.4");
  EXPECT_EQ(gmem::format_cuda_version(11040), "11.4");
}

TEST(Capability, WithoutAGpuTheReasonIsGivenAndTheCountIsZero) {
  const auto reason = gmem::gpu_unavailable_reason();
  if (!reason) GTEST_SKIP() << "a GPU is present: this test checks the no-GPU answer";
  EXPECT_EQ(gmem::device_count(), 0);
  EXPECT_NE(reason->find("no usable CUDA GPU"), std::string::npos) << *reason;
  EXPECT_THROW((void)gmem::probe_device(0), gmem::unsupported_error);
}

}  // namespace
