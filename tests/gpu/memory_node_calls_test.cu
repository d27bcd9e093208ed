// gmem adds memory nodes through the driver's own calls (the runtime's wrappers are slower)
// and makes the runtime's call when the driver refuses: a graph built on threads
// without a current context works, and a refusal is the runtime's and adds nothing.
#include <cuda.h>

#include <thread>

#include "gpu_test_support.cuh"

namespace gmem::test {
namespace {

using MemoryNodeCalls = GpuTest;

/// The context current on the calling thread (through the driver: a runtime call would bind one).
CUcontext current_context() {
  static const auto get = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult status{};
    EXPECT_EQ(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &p, 12000, cudaEnableDefault,
                                               &status),
              cudaSuccess);
    return reinterpret_cast<decltype(&cuCtxGetCurrent)>(p);
  }();
  CUcontext c = nullptr;
  EXPECT_EQ(get(&c), CUDA_SUCCESS);
  return c;
}

TEST_F(MemoryNodeCalls, MemoryNodesAddedOnThreadsWithoutAContextWork) {
  constexpr int n = 4096;
  device_ints out(n, 0);
  graph g("memory nodes added on other threads");
  ASSERT_NE(current_context(), nullptr);
  // A new thread starts without a current context (this test is about such a thread).
  const auto on_fresh_thread = [](auto&& work) {
    CUcontext before = reinterpret_cast<CUcontext>(1);
    std::thread t([&] {
      before = current_context();
      work();
    });
    t.join();
    EXPECT_EQ(before, nullptr);
  };
  graph_allocation a;
  on_fresh_thread([&] { a = g.add_alloc({n * sizeof(int), 0}); });
  const auto fill = g.add_kernel({a.node}, fill_iota, blocks_for(n), threads(), 0,
                                 static_cast<int*>(a.ptr), n, 3);
  const auto copy =
      g.add_memcpy({fill}, out.get(), a.ptr, n * sizeof(int), cudaMemcpyDeviceToDevice);
  cudaGraphNode_t free_node = nullptr;
  on_fresh_thread([&] { free_node = g.add_free(a.ptr, {copy}); });

  const cudaMemAllocNodeParams p = alloc_params(a.node);
  EXPECT_EQ(p.dptr, a.ptr);
  EXPECT_EQ(p.bytesize, n * sizeof(int));
  EXPECT_EQ(p.poolProps.location.type, cudaMemLocationTypeDevice);
  EXPECT_EQ(p.poolProps.location.id, 0);
  EXPECT_EQ(p.poolProps.allocType, cudaMemAllocationTypePinned);
  EXPECT_EQ(p.accessDescCount, 0u);
  EXPECT_EQ(free_address(free_node), a.ptr);
  EXPECT_EQ(g.ledger().alloc_count(), 1u);
  EXPECT_EQ(g.ledger().free_count(), 1u);

  stream s;
  graph_exec exec(g);
  for (int launch = 0; launch < 2; ++launch) exec.launch(s);  // freed in the graph: relaunches
  s.synchronize();
  const std::vector<int> host = out.to_host();
  for (int i = 0; i < n; i += 1021) EXPECT_EQ(host[i], 3 + i) << "element " << i;
}

TEST_F(MemoryNodeCalls, ADriverRefusalIsTheRuntimesErrorAndAddsNothing) {
  graph g("refused nodes");
  graph other("holds a foreign dependency");
  const cudaGraphNode_t foreign = other.add_empty({});
  const graph_allocation a = g.add_alloc({4096, 0});

  // What the runtime says of an alloc node and a free node depending on another graph's node.
  cudaGraphNode_t raw_node = nullptr;
  cudaMemAllocNodeParams raw = {};
  raw.poolProps.allocType = cudaMemAllocationTypePinned;
  raw.poolProps.location.type = cudaMemLocationTypeDevice;
  raw.bytesize = 4096;
  const cudaError_t raw_alloc = cudaGraphAddMemAllocNode(&raw_node, g.get(), &foreign, 1, &raw);
  ASSERT_NE(raw_alloc, cudaSuccess);
  (void)cudaGetLastError();
  const cudaError_t raw_free = cudaGraphAddMemFreeNode(&raw_node, g.get(), &foreign, 1, a.ptr);
  ASSERT_NE(raw_free, cudaSuccess);
  (void)cudaGetLastError();
  ASSERT_EQ(g.node_count(), 1u);

  try {
    (void)g.add_alloc({4096, 0}, {foreign});
    ADD_FAILURE() << "an alloc node depending on another graph's node was added";
  } catch (const cuda_error& e) {
    EXPECT_EQ(e.code(), raw_alloc) << e.what();
  }
  // Reported once, by the exception (gmem's rule for every cuda_error): nothing is left behind.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  try {
    (void)g.add_free(a.ptr, {foreign});
    ADD_FAILURE() << "a free node depending on another graph's node was added";
  } catch (const cuda_error& e) {
    EXPECT_EQ(e.code(), raw_free) << e.what();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  // Nothing was added or recorded: the allocation is still freed once, by the right node.
  EXPECT_EQ(g.node_count(), 1u);
  EXPECT_EQ(g.ledger().alloc_count(), 1u);
  EXPECT_EQ(g.ledger().free_count(), 0u);
  (void)g.add_free(a.ptr, {a.node});
  EXPECT_EQ(g.ledger().free_count(), 1u);
  graph_exec exec(g);
  stream s;
  exec.launch(s);
  s.synchronize();
}

}  // namespace
}  // namespace gmem::test
