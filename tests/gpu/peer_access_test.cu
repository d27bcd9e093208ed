// Peer access: alloc nodes with access descriptors, and a pool whose access changes between
// two captures. Needs two GPUs; skips (with the reason) on one.
#include "gpu_test_support.cuh"

namespace gmem::test {
namespace {

using PeerAccess = PeerTest;

constexpr int n = 1024;
constexpr std::size_t bytes = n * sizeof(int);

bool has_access_for(const cudaMemAllocNodeParams& p, int device) {
  for (std::size_t i = 0; i < p.accessDescCount; ++i) {
    if (p.accessDescs[i].location.type == cudaMemLocationTypeDevice &&
        p.accessDescs[i].location.id == device &&
        p.accessDescs[i].flags == cudaMemAccessFlagsProtReadWrite) {
      return true;
    }
  }
  return false;
}

TEST_F(PeerAccess, AllocOnDeviceOneReadableAndWritableFromDeviceZero) {
  if (!can_access_peer(0, 1)) GTEST_SKIP() << "device 0 cannot access device 1 on this machine";
  device_ints out(n);
  graph g("peer alloc");
  const auto alloc = g.add_alloc({bytes, 1, {0}});
  const auto p = alloc_params(alloc.node);
  EXPECT_EQ(p.poolProps.location.id, 1);
  EXPECT_TRUE(has_access_for(p, 0));
  ASSERT_EQ(g.ledger().allocations().size(), 1u);
  EXPECT_EQ(g.ledger().allocations()[0].device, 1);
  // A kernel on device 0 (the current device) writes the memory resident on device 1.
  const auto k = g.add_kernel({alloc.node}, fill_iota, blocks_for(n), threads(), 0,
                              static_cast<int*>(alloc.ptr), n, 77);
  const auto c = g.add_memcpy({k}, out.get(), alloc.ptr, bytes);
  (void)g.add_free(alloc.ptr, {c});
  stream s;
  graph_exec exec(g);
  exec.launch(s);
  s.synchronize();
  EXPECT_EQ(out.to_host()[n - 1], 77 + n - 1);
}

TEST_F(PeerAccess, PoolAccessAtCaptureTimeIsWhatTheNodeRecords) {
  if (!can_access_peer(1, 0)) GTEST_SKIP() << "device 1 cannot access device 0 on this machine";
  mem_pool pool(0);  // resident and accessible on device 0 only
  stream s;
  capture first(s, "before set_access");
  void* p1 = first.malloc_async(pool, bytes);
  graph g1 = first.end();

  pool.set_access(1);
  EXPECT_EQ(pool.access(1), cudaMemAccessFlagsProtReadWrite);
  capture second(s, "after set_access");
  void* p2 = second.malloc_async(pool, bytes);
  graph g2 = second.end();

  const auto n1 = nodes_of_type(g1.get(), cudaGraphNodeTypeMemAlloc);
  const auto n2 = nodes_of_type(g2.get(), cudaGraphNodeTypeMemAlloc);
  ASSERT_EQ(n1.size(), 1u);
  ASSERT_EQ(n2.size(), 1u);
  EXPECT_FALSE(has_access_for(alloc_params(n1[0]), 1));
  EXPECT_TRUE(has_access_for(alloc_params(n2[0]), 1));
  EXPECT_EQ(alloc_params(n1[0]).dptr, p1);
  EXPECT_EQ(alloc_params(n2[0]).dptr, p2);
  EXPECT_EQ(g2.ledger().allocations()[0].address, reinterpret_cast<std::uintptr_t>(p2));
  // Changing the pool afterwards does not change what the second graph recorded.
  pool.set_access(1, cudaMemAccessFlagsProtNone);
  EXPECT_TRUE(has_access_for(alloc_params(n2[0]), 1));
}

TEST_F(PeerAccess, PeerThatCannotAccessTheResidentDeviceIsRefused) {
  for (int peer = 0; peer < device_count(); ++peer) {
    for (int resident = 0; resident < device_count(); ++resident) {
      if (peer == resident || can_access_peer(peer, resident)) continue;
      graph g("unreachable peer");
      EXPECT_THROW((void)g.add_alloc({4096, resident, {peer}}), usage_error);
      EXPECT_EQ(g.node_count(), 0u);
      return;
    }
  }
  GTEST_SKIP() << "every pair of the " << device_count()
               << " GPUs here can access each other; the refusal is covered by the host test "
                  "AllocRequest.PeerThatCannotAccessResidentIsRefusedWithBothDevices";
}

}  // namespace
}  // namespace gmem::test
