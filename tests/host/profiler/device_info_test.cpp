#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "gmem/profiler/device_info.hpp"

namespace {

gmem::device_capability h100() {
  gmem::device_capability c;
  c.device = 0;
  c.name = "NVIDIA H100 80GB HBM3";
  c.cc_major = 9;
  c.cc_minor = 0;
  c.total_memory = 85520809984;
  c.driver_version = 13000;
  c.runtime_version = 13000;
  c.memory_pools_supported = true;
  c.graph_mem_nodes_supported = true;
  return c;
}

TEST(DeviceInfo, DescribesEveryField) {
  const std::string s = gmem::profiler::describe_device(h100());
  EXPECT_NE(s.find("device 0: NVIDIA H100 80GB HBM3"), std::string::npos) << s;
  EXPECT_NE(s.find("compute capability: 9.0"), std::string::npos) << s;
  EXPECT_NE(s.find("79.6 GiB (85520809984 B)"), std::string::npos) << s;
  EXPECT_NE(s.find("driver version:     13.0 (13000)"), std::string::npos) << s;
  EXPECT_NE(s.find("graph memory nodes: supported"), std::string::npos) << s;
}

TEST(DeviceInfo, UnsupportedDeviceShowsTheReason) {
  auto c = h100();
  c.graph_mem_nodes_supported = false;
  c.unsupported_reason = "CUDA driver 11.2 is older than 11.4";
  const std::string s = gmem::profiler::describe_device(c);
  EXPECT_NE(s.find("not supported: CUDA driver 11.2 is older than 11.4"), std::string::npos) << s;
}

TEST(DeviceInfo, WithoutAGpuInfoSaysSoInOneLineAndExitsNoGpu) {
  if (!gmem::gpu_unavailable_reason()) GTEST_SKIP() << "a GPU is present";
  std::ostringstream out, err;
  EXPECT_EQ(gmem::profiler::run_info(out, err, std::nullopt), 3);
  const std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1) << s;
  EXPECT_NE(s.find("no usable CUDA GPU"), std::string::npos) << s;
  EXPECT_TRUE(err.str().empty());
}

TEST(DeviceInfo, ToolVersionNamesTheCommit) {
  EXPECT_NE(gmem::profiler::tool_version().find("(commit "), std::string::npos);
}

}  // namespace
