// Graph allocations used and freed outside the graph that made them: the guide's three
// orderings (one stream, events between streams, event record / wait nodes) and cudaFree.
#include "gpu_test_support.cuh"

namespace gmem::test {
namespace {

using OutsideFree = GpuTest;

constexpr int n = 4096;
constexpr std::size_t bytes = n * sizeof(int);

TEST_F(OutsideFree, SingleStreamOrdersKernelAndFreeAfterTheAllocatingGraph) {
  graph alloc_graph("alloc only");
  const auto alloc = alloc_graph.add_alloc({bytes, 0});
  graph_exec exec(alloc_graph);
  ASSERT_EQ(exec.unfreed().size(), 1u);
  EXPECT_EQ(exec.unfreed()[0].address, reinterpret_cast<std::uintptr_t>(alloc.ptr));
  stream s;
  device_ints out(n);
  for (int round = 0; round < 2; ++round) {  // the second launch works only if the free did
    exec.launch(s);
    fill_iota<<<blocks_for(n), threads(), 0, s>>>(static_cast<int*>(alloc.ptr), n, round);
    add_into<<<blocks_for(n), threads(), 0, s>>>(static_cast<int*>(alloc.ptr), out.get(), n, 0);
    free_in_stream(alloc.ptr, s);
    s.synchronize();
    EXPECT_EQ(out.to_host()[n - 1], round + n - 1);
  }
}

TEST_F(OutsideFree, EventsBetweenStreamsOrderTheUseBeforeAFreeingGraph) {
  graph alloc_graph("alloc");
  const auto alloc = alloc_graph.add_alloc({bytes, 0});
  int* dptr = static_cast<int*>(alloc.ptr);
  device_ints out(n);
  graph free_graph("consume and free");
  const auto a = free_graph.add_kernel({}, add_into, blocks_for(n), threads(), 0,
                                       static_cast<const int*>(dptr), out.get(), n, 1);
  (void)free_graph.add_free(dptr, {a});
  EXPECT_EQ(free_graph.ledger().foreign_frees().size(), 1u);

  graph_exec alloc_exec(alloc_graph), free_exec(free_graph);
  stream alloc_stream, stream2, stream3;
  event alloc_event, use_done;
  for (int round = 0; round < 2; ++round) {
    alloc_exec.launch(alloc_stream);
    alloc_event.record(alloc_stream);
    alloc_event.wait_in(stream2);
    fill_iota<<<blocks_for(n), threads(), 0, stream2>>>(dptr, n, 10 * round);
    use_done.record(stream2);
    use_done.wait_in(stream3);
    free_exec.launch(stream3);
    stream3.synchronize();
    EXPECT_EQ(out.to_host()[7], 10 * round + 7 + 1);
  }
}

TEST_F(OutsideFree, EventRecordAndWaitNodesOrderEveryUserBeforeTheFree) {
  event alloc_ready, use_done;
  graph alloc_graph("alloc with event record");
  const auto alloc = alloc_graph.add_alloc({bytes, 0});
  int* dptr = static_cast<int*>(alloc.ptr);
  (void)alloc_graph.add_event_record({alloc.node}, alloc_ready);

  device_ints out(n);
  graph wait_and_free("wait and free");
  const auto use_done_node = wait_and_free.add_event_wait({}, use_done);
  const auto ready_node = wait_and_free.add_event_wait({}, alloc_ready);
  // The guide's kernel waits only for the alloc event; ours reads what stream2 wrote, so it
  // waits for both events and its result is exact.
  const auto k = wait_and_free.add_kernel({ready_node, use_done_node}, scale_into, blocks_for(n), threads(), 0,
                                          static_cast<const int*>(dptr), out.get(), n, 5);
  const auto free_node = wait_and_free.add_free(dptr, {k, use_done_node});
  const auto deps = dependencies_of(free_node);
  EXPECT_EQ(std::set<cudaGraphNode_t>(deps.begin(), deps.end()),
            (std::set<cudaGraphNode_t>{k, use_done_node}));

  graph_exec alloc_exec(alloc_graph), free_exec(wait_and_free);
  stream alloc_stream, stream2, stream3;
  for (int round = 0; round < 2; ++round) {
    alloc_exec.launch(alloc_stream);
    alloc_ready.wait_in(stream2);
    fill_iota<<<blocks_for(n), threads(), 0, stream2>>>(dptr, n, round);
    use_done.record(stream2);
    free_exec.launch(stream3);
    stream3.synchronize();
    const auto h = out.to_host();
    EXPECT_EQ(h[3], 5 * (round + 3));
    EXPECT_EQ(h[n - 1], 5 * (round + n - 1));
  }
}

TEST_F(OutsideFree, CudaFreeReleasesTheAllocationAtOnce) {
  graph alloc_graph("alloc for cudaFree");
  const auto alloc = alloc_graph.add_alloc({bytes, 0});
  graph_exec exec(alloc_graph);
  stream s;
  exec.launch(s);
  s.synchronize();
  free_now(alloc.ptr);
  exec.launch(s);  // allowed again: the allocation was freed
  s.synchronize();
  free_now(alloc.ptr);
}

}  // namespace
}  // namespace gmem::test
