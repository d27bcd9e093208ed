// Child graphs that carry memory nodes, moved into their parent.
#include "gpu_test_support.cuh"

namespace gmem::test {
namespace {

using ChildGraph = GpuTest;

constexpr int n = 1024;
constexpr std::size_t bytes = n * sizeof(int);

TEST_F(ChildGraph, MovedChildWithAllocAndFreeRunsInsideItsParent) {
  device_ints out(n, 0xff);
  graph child("child");
  const auto alloc = child.add_alloc({bytes, 0});
  int* buf = static_cast<int*>(alloc.ptr);
  const auto k = child.add_kernel({alloc.node}, fill_iota, blocks_for(n), threads(), 0, buf, n, 40);
  const auto c = child.add_kernel({k}, add_into, blocks_for(n), threads(), 0,
                                  static_cast<const int*>(buf), out.get(), n, 2);
  (void)child.add_free(buf, {c});

  graph parent("parent");
  const auto before = parent.add_empty({});
  const auto child_node = parent.add_child_graph({before}, std::move(child));
  (void)parent.add_empty({child_node});

  EXPECT_EQ(child.get(), nullptr);  // NOLINT(bugprone-use-after-move): moved into the parent
  EXPECT_THROW((void)child.add_alloc({64, 0}), usage_error);
  EXPECT_EQ(parent.ledger().alloc_count(), 1u);
  EXPECT_EQ(parent.ledger().free_count(), 1u);
  EXPECT_EQ(node_types(parent.get()).count(cudaGraphNodeTypeGraph), 1u);
  cudaGraph_t inner = nullptr;
  ASSERT_EQ(cudaGraphChildGraphNodeGetGraph(child_node, &inner), cudaSuccess);
  EXPECT_EQ(node_types(inner).count(cudaGraphNodeTypeMemAlloc), 1u);
  EXPECT_EQ(node_types(inner).count(cudaGraphNodeTypeMemFree), 1u);

  stream s;
  graph_exec exec(parent);
  exec.launch(s);
  exec.launch(s);
  s.synchronize();
  const auto h = out.to_host();
  EXPECT_EQ(h[0], 42);
  EXPECT_EQ(h[n - 1], 40 + n - 1 + 2);
}

TEST_F(ChildGraph, ParentFreesWhatTheMovedChildAllocated) {
  device_ints out(n);
  graph child("allocating child");
  const auto alloc = child.add_alloc({bytes, 0});
  (void)child.add_kernel({alloc.node}, fill_iota, blocks_for(n), threads(), 0,
                         static_cast<int*>(alloc.ptr), n, 9);
  graph parent("freeing parent");
  const auto child_node = parent.add_child_graph({}, std::move(child));
  const auto copy = parent.add_memcpy({child_node}, out.get(), alloc.ptr, bytes);
  (void)parent.add_free(alloc.ptr, {copy});
  EXPECT_TRUE(parent.ledger().unfreed().empty());
  stream s;
  graph_exec exec(parent);
  exec.launch(s);
  exec.launch(s);  // freed in the parent: relaunch is allowed
  s.synchronize();
  EXPECT_EQ(out.to_host()[5], 14);
}

}  // namespace
}  // namespace gmem::test
