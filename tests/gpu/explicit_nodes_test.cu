// Graphs built node by node: the guide's alloc -> a, b, c -> free example and friends.
#include "gpu_test_support.cuh"

namespace gmem::test {
namespace {

using ExplicitNodes = GpuTest;

constexpr int n = 1024;
constexpr std::size_t bytes = n * sizeof(int);

TEST_F(ExplicitNodes, GuideGraphAllocKernelsFreeRunsAndReadsBack) {
  device_ints out_b(n, 0xff), out_c(n, 0xff), scratch_d(n), scratch_e(n);
  graph g("guide alloc-a-b-c-free");
  const graph_allocation a_alloc = g.add_alloc({bytes, 0});
  int* buf = static_cast<int*>(a_alloc.ptr);
  const auto a = g.add_kernel({a_alloc.node}, fill_iota, blocks_for(n), threads(), 0, buf, n, 1);
  const auto b = g.add_kernel({a}, scale_into, blocks_for(n), threads(), 0,
                              static_cast<const int*>(buf), out_b.get(), n, 2);
  const auto c = g.add_kernel({a}, add_into, blocks_for(n), threads(), 0,
                              static_cast<const int*>(buf), out_c.get(), n, 7);
  const auto free_node = g.add_free(buf, {b, c});
  // d is not ordered before the free and e not after the alloc: neither touches the allocation.
  (void)g.add_kernel({c}, fill_iota, blocks_for(n), threads(), 0, scratch_d.get(), n, 0);
  (void)g.add_kernel({}, fill_iota, blocks_for(n), threads(), 0, scratch_e.get(), n, 0);

  EXPECT_EQ(g.node_count(), 7u);
  const auto types = node_types(g.get());
  EXPECT_EQ(types.count(cudaGraphNodeTypeMemAlloc), 1u);
  EXPECT_EQ(types.count(cudaGraphNodeTypeMemFree), 1u);
  EXPECT_EQ(types.count(cudaGraphNodeTypeKernel), 5u);

  const cudaMemAllocNodeParams p = alloc_params(a_alloc.node);
  EXPECT_EQ(p.bytesize, bytes);
  EXPECT_EQ(p.dptr, a_alloc.ptr);
  EXPECT_EQ(p.poolProps.location.type, cudaMemLocationTypeDevice);
  EXPECT_EQ(p.poolProps.location.id, 0);
  EXPECT_EQ(p.poolProps.allocType, cudaMemAllocationTypePinned);
  EXPECT_EQ(free_address(free_node), a_alloc.ptr);
  const auto deps = dependencies_of(free_node);
  EXPECT_EQ(std::set<cudaGraphNode_t>(deps.begin(), deps.end()),
            (std::set<cudaGraphNode_t>{b, c}));

  EXPECT_EQ(g.ledger().alloc_count(), 1u);
  EXPECT_EQ(g.ledger().free_count(), 1u);
  EXPECT_TRUE(g.ledger().unfreed().empty());

  stream s;
  graph_exec exec(g);
  EXPECT_TRUE(exec.unfreed().empty());
  for (int launch = 0; launch < 3; ++launch) exec.launch(s);  // freed in-graph: relaunch is fine
  s.synchronize();
  const auto hb = out_b.to_host();
  const auto hc = out_c.to_host();
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(hb[i], 2 * (1 + i)) << i;
    ASSERT_EQ(hc[i], 1 + i + 7) << i;
  }
}

TEST_F(ExplicitNodes, OverlappingLifetimesGetDistinctAddressesAndAFreedAddressIsReused) {
  graph g("reuse");
  const auto first = g.add_alloc({1 << 20, 0});
  const auto first_free = g.add_free(first.ptr, {first.node});
  const auto second = g.add_alloc({1 << 20, 0}, {first_free});  // ordered after the free
  const auto third = g.add_alloc({1 << 20, 0}, {first.node});   // lives alongside second
  (void)g.add_free(second.ptr, {second.node, third.node});
  (void)g.add_free(third.ptr, {second.node, third.node});
  // Allocations that may be live together never share an address.
  EXPECT_NE(second.ptr, third.ptr);
  EXPECT_NE(first.ptr, third.ptr);
  // Measured on the driver (see README): an alloc ordered after a free of the same size gets
  // the freed address back.
  EXPECT_EQ(second.ptr, first.ptr);
  EXPECT_EQ(g.ledger().free_count(), 3u);
  EXPECT_TRUE(g.ledger().unfreed().empty());
}

TEST_F(ExplicitNodes, MemsetAndMemcpyNodesFillAndCopyAGraphAllocation) {
  device_ints out(n, 0);
  graph g("memset-memcpy");
  const auto alloc = g.add_alloc({bytes, 0});
  const auto set = g.add_memset({alloc.node}, alloc.ptr, 0x5a, bytes);
  const auto copy = g.add_memcpy({set}, out.get(), alloc.ptr, bytes, cudaMemcpyDeviceToDevice);
  const auto empty = g.add_empty({copy});
  (void)g.add_free(alloc.ptr, {empty});
  stream s;
  graph_exec exec(g);
  exec.launch(s);
  s.synchronize();
  for (int v : out.to_host()) ASSERT_EQ(v, 0x5a5a5a5a);
}

TEST_F(ExplicitNodes, UploadAtInstantiationAndExplicitUploadThenLaunchInTheSameStream) {
  device_ints out(n, 0);
  stream s;
  for (const bool at_instantiation : {true, false}) {
    graph g(at_instantiation ? "upload at instantiation" : "explicit upload");
    const auto alloc = g.add_alloc({bytes, 0});
    int* buf = static_cast<int*>(alloc.ptr);
    const auto k = g.add_kernel({alloc.node}, fill_iota, blocks_for(n), threads(), 0, buf, n,
                                at_instantiation ? 100 : 200);
    const auto c = g.add_kernel({k}, add_into, blocks_for(n), threads(), 0,
                                static_cast<const int*>(buf), out.get(), n, 0);
    (void)g.add_free(buf, {c});
    instantiate_options opts;
    if (at_instantiation) opts.upload_stream = s.get();
    opts.use_node_priority = true;
    graph_exec exec(g, opts);
    if (!at_instantiation) exec.upload(s);
    exec.launch(s);
    s.synchronize();
    EXPECT_EQ(out.to_host()[10], (at_instantiation ? 100 : 200) + 10);
  }
}

TEST_F(ExplicitNodes, GraphMemoryCountersRiseWhileAnAllocationIsMapped) {
  ASSERT_EQ(cudaDeviceGraphMemTrim(0), cudaSuccess);
  graph g("counter");
  const auto alloc = g.add_alloc({64u << 20, 0});
  stream s;
  {
    graph_exec exec(g);
    exec.launch(s);
    s.synchronize();
    std::size_t used = 0;
    ASSERT_EQ(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used),
              cudaSuccess);
    EXPECT_GE(used, 64u << 20);  // the unfreed allocation is mapped
    free_in_stream(alloc.ptr, s);
    s.synchronize();
  }
  // With the allocation freed and the executable graph gone, a trim returns the memory.
  ASSERT_EQ(cudaDeviceGraphMemTrim(0), cudaSuccess);
  std::size_t reserved = 1;
  ASSERT_EQ(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &reserved),
            cudaSuccess);
  EXPECT_EQ(reserved, 0u);
}

}  // namespace
}  // namespace gmem::test
