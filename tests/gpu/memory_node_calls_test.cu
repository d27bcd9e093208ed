// gmem adds memory nodes through the driver's own calls (the runtime's wrappers cost about
// 85 ns a call, issue 20) and makes the runtime's call when the driver refuses: what a user
// sees must stay the runtime's, on a thread without a current context and when the driver
// refuses a node.
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

TEST_F(MemoryNodeCalls, NodesAddedOnAThreadWithoutAContextAreAddedAsTheRuntimeAddsThem) {
  constexpr int n = 4096;
  device_ints out(n, 0);
  graph g("built on another thread");
  const CUcontext main_context = current_context();
  ASSERT_NE(main_context, nullptr);
  CUcontext before = main_context, after = nullptr;
  graph_allocation a;
  std::thread builder([&] {
    before = current_context();
    a = g.add_alloc({n * sizeof(int), 0});
    const auto fill = g.add_kernel({a.node}, fill_iota, blocks_for(n), threads(), 0,
                                   static_cast<int*>(a.ptr), n, 3);
    const auto copy = g.add_memcpy({fill}, out.get(), a.ptr, n * sizeof(int),
                                   cudaMemcpyDeviceToDevice);
    (void)g.add_free(a.ptr, {copy});
    after = current_context();
  });
  builder.join();
  // A new thread starts without a context; the runtime binds the device's primary context,
  // the one the main thread holds, as a raw cudaGraphAddMemAllocNode would.
  EXPECT_EQ(before, nullptr);
  EXPECT_EQ(after, main_context);
  const cudaMemAllocNodeParams p = alloc_params(a.node);
  EXPECT_EQ(p.dptr, a.ptr);
  EXPECT_EQ(p.bytesize, n * sizeof(int));
  EXPECT_EQ(p.poolProps.location.id, 0);
  EXPECT_EQ(g.ledger().alloc_count(), 1u);
  EXPECT_EQ(g.ledger().free_count(), 1u);

  stream s;
  graph_exec exec(g);
  exec.launch(s);
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
