#include "gpu_test_support.cuh"

namespace gmem::test {
namespace {

using Handles = GpuTest;

TEST_F(Handles, MovedFromHandlesAreEmptyAndTheTargetOwnsTheHandle) {
  stream a;
  const cudaStream_t raw = a.get();
  stream b(std::move(a));
  EXPECT_EQ(a.get(), nullptr);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(b.get(), raw);
  expect_stream_usable(b);

  event e1;
  const cudaEvent_t raw_event = e1.get();
  event e2 = std::move(e1);
  EXPECT_EQ(e2.get(), raw_event);
  e2.record(b);
  e2.synchronize();
}

TEST_F(Handles, PoolOnDeviceZeroHasReadWriteAccessFromIt) {
  mem_pool pool(0);
  EXPECT_EQ(pool.device(), 0);
  EXPECT_EQ(pool.access(0), cudaMemAccessFlagsProtReadWrite);
  EXPECT_THROW(mem_pool{device_count()}, usage_error);
}

TEST_F(Handles, ProbeReportsSupportOnThisDevice) {
  const device_capability& cap = probe_device(0);
  EXPECT_TRUE(cap.graph_mem_nodes_supported);
  EXPECT_GE(cap.driver_version, min_graph_mem_driver_version);
  EXPECT_GT(cap.total_memory, 0u);
  EXPECT_EQ(&cap, &probe_device(0));  // cached
  EXPECT_THROW((void)probe_device(device_count()), usage_error);
}

}  // namespace
}  // namespace gmem::test
