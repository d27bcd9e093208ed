// Stream-ordered allocation captured into graphs, fork/join, and captures that go wrong.
#include "gpu_test_support.cuh"

namespace gmem::test {
namespace {

using Capture = GpuTest;

constexpr int n = 2048;
constexpr std::size_t bytes = n * sizeof(int);

TEST_F(Capture, GuideForkJoinCaptureBuildsAllocKernelsFreeAndRuns) {
  device_ints out_b(n, 0xff), out_c(n, 0xff);
  stream s1, s2;
  capture cap(s1, "guide capture");
  int* dptr = static_cast<int*>(cap.malloc_async(bytes));
  fill_iota<<<blocks_for(n), threads(), 0, s1>>>(dptr, n, 3);
  cap.fork(s2);
  scale_into<<<blocks_for(n), threads(), 0, s1>>>(dptr, out_b.get(), n, 3);
  add_into<<<blocks_for(n), threads(), 0, s2>>>(dptr, out_c.get(), n, -3);
  cap.join(s2);
  cap.free_async(dptr);
  graph g = cap.end();
  EXPECT_FALSE(is_capturing(s1));
  EXPECT_FALSE(is_capturing(s2));

  const auto types = node_types(g.get());
  EXPECT_EQ(types.count(cudaGraphNodeTypeMemAlloc), 1u);
  EXPECT_EQ(types.count(cudaGraphNodeTypeMemFree), 1u);
  EXPECT_EQ(types.count(cudaGraphNodeTypeKernel), 3u);
  const auto allocs = nodes_of_type(g.get(), cudaGraphNodeTypeMemAlloc);
  const auto frees = nodes_of_type(g.get(), cudaGraphNodeTypeMemFree);
  ASSERT_EQ(allocs.size(), 1u);
  ASSERT_EQ(frees.size(), 1u);
  EXPECT_EQ(alloc_params(allocs[0]).dptr, dptr);
  EXPECT_EQ(alloc_params(allocs[0]).bytesize, bytes);
  EXPECT_EQ(free_address(frees[0]), dptr);
  // The join makes the free wait for both consumers (B in s1 and C in s2).
  const auto deps = dependencies_of(frees[0]);
  ASSERT_EQ(deps.size(), 2u);
  for (auto d : deps) {
    cudaGraphNodeType t{};
    ASSERT_EQ(cudaGraphNodeGetType(d, &t), cudaSuccess);
    EXPECT_EQ(t, cudaGraphNodeTypeKernel);
  }
  EXPECT_EQ(g.ledger().alloc_count(), 1u);
  EXPECT_EQ(g.ledger().free_count(), 1u);

  graph_exec exec(g);
  exec.launch(s1);
  s1.synchronize();
  const auto hb = out_b.to_host(), hc = out_c.to_host();
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(hb[i], 3 * (3 + i));
    ASSERT_EQ(hc[i], i);
  }
}

TEST_F(Capture, MallocFromPoolAsyncRecordsThePoolsDevice) {
  mem_pool pool(0);
  stream s;
  capture cap(s, "pool capture");
  void* p = cap.malloc_async(pool, 1 << 20);
  cap.free_async(p);
  graph g = cap.end();
  const auto allocs = nodes_of_type(g.get(), cudaGraphNodeTypeMemAlloc);
  ASSERT_EQ(allocs.size(), 1u);
  const auto params = alloc_params(allocs[0]);
  EXPECT_EQ(params.dptr, p);
  EXPECT_EQ(params.bytesize, std::size_t{1} << 20);
  EXPECT_EQ(params.poolProps.location.id, 0);
}

TEST_F(Capture, UnjoinedForkIsNamedAndEveryStreamStaysUsable) {
  stream s1, s2;
  device_ints out(n);
  {
    capture cap(s1, "unjoined");
    cap.fork(s2);
    fill_iota<<<blocks_for(n), threads(), 0, s2>>>(out.get(), n, 0);
    try {
      (void)cap.end();
      FAIL() << "ending a capture with an unjoined stream must fail";
    } catch (const usage_error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("not joined back"), std::string::npos) << msg;
      EXPECT_NE(msg.find(describe_stream(s2)), std::string::npos) << msg;
    }
    EXPECT_FALSE(cap.active());
  }
  EXPECT_FALSE(is_capturing(s1));
  EXPECT_FALSE(is_capturing(s2));
  expect_stream_usable(s1);
  expect_stream_usable(s2);
}

TEST_F(Capture, DriverRefusesAnUnjoinedForkMadeOutsideGmem) {
  stream s1, s2;
  event fork_event;
  device_ints out(n);
  {
    capture cap(s1, "raw fork");
    fork_event.record(s1);  // a fork gmem does not know of
    fork_event.wait_in(s2);
    fill_iota<<<blocks_for(n), threads(), 0, s2>>>(out.get(), n, 0);
    try {
      (void)cap.end();
      FAIL() << "the driver must refuse an unjoined capture";
    } catch (const cuda_error& e) {
      EXPECT_EQ(e.code(), cudaErrorStreamCaptureUnjoined) << e.what();
    }
  }
  EXPECT_FALSE(is_capturing(s1));
  EXPECT_FALSE(is_capturing(s2));
  expect_stream_usable(s1);
  expect_stream_usable(s2);
}

TEST_F(Capture, InvalidatedCaptureSaysSoAndTheStreamIsUsable) {
  stream s;
  {
    capture cap(s, "invalidated");
    (void)cap.malloc_async(bytes);
    // Synchronizing a capturing stream is not permitted: it invalidates the capture.
    EXPECT_NE(cudaStreamSynchronize(s), cudaSuccess);
    (void)cudaGetLastError();
    try {
      (void)cap.end();
      FAIL() << "an invalidated capture must not produce a graph";
    } catch (const cuda_error& e) {
      EXPECT_EQ(e.code(), cudaErrorStreamCaptureInvalidated) << e.what();
      EXPECT_NE(std::string(e.what()).find("invalidated"), std::string::npos);
    }
  }
  EXPECT_FALSE(is_capturing(s));
  expect_stream_usable(s);
}

TEST_F(Capture, ZeroBytesAndForeignStreamsAreRefusedAndTheCaptureGoesOn) {
  stream s, outside;
  capture cap(s, "careful");
  EXPECT_THROW((void)cap.malloc_async(0), usage_error);
  EXPECT_THROW((void)cap.malloc_async(64, outside), usage_error);
  void* p = cap.malloc_async(64);
  cap.free_async(p);
  graph g = cap.end();
  EXPECT_EQ(g.ledger().alloc_count(), 1u);
  EXPECT_FALSE(is_capturing(outside));
}

TEST_F(Capture, DestroyingAnActiveCaptureEndsIt) {
  stream s;
  {
    capture cap(s, "abandoned");
    (void)cap.malloc_async(64);
  }
  EXPECT_FALSE(is_capturing(s));
  expect_stream_usable(s);
}

}  // namespace
}  // namespace gmem::test
