// A second free of one graph allocation, by any two of gmem's ways to free (a free node in the
// allocating graph or in another, capture::free_async, free_in_stream, free_now), is refused
// before the driver, naming the allocation and the first free. Where the driver would have
// failed, a raw call with the same second free shows its own error.
#include <cstdio>
#include <string>

#include "gpu_test_support.cuh"

namespace gmem::test {
namespace {

using SecondFree = GpuTest;

constexpr int n = 1024;
constexpr std::size_t bytes = n * sizeof(int);

template <typename F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}

std::string allocation_text(void* p) {
  return std::to_string(bytes) + " B at " + format_address(reinterpret_cast<std::uintptr_t>(p));
}

std::string stream_free_text(cudaStream_t s) {
  return "was already freed by cudaFreeAsync in " + describe_stream(s) +
         " (gmem::free_in_stream)";
}

// The driver's answer to a raw cudaFreeAsync of `p` in `s`; clears the error it leaves.
cudaError_t raw_free_async(void* p, cudaStream_t s) {
  const cudaError_t err = cudaFreeAsync(p, s);
  (void)cudaGetLastError();
  return err;
}

TEST_F(SecondFree, FreeInStreamAfterTheGraphsOwnFreeNodeIsRefused) {
  graph g("frees its own");
  const auto a = g.add_alloc({bytes, 0});
  (void)g.add_free(a.ptr, {a.node});
  graph_exec exec(g);
  stream s;
  exec.launch(s);
  s.synchronize();
  const std::string msg = usage_error_of([&] { free_in_stream(a.ptr, s); });
  EXPECT_NE(msg.find(allocation_text(a.ptr)), std::string::npos) << msg;
  EXPECT_NE(msg.find("already has a free node in graph 'frees its own'"), std::string::npos)
      << msg;
  // The driver would have failed: the launch freed the allocation already.
  EXPECT_NE(raw_free_async(a.ptr, s), cudaSuccess);
  exec.launch(s);  // everything still usable
  s.synchronize();
}

TEST_F(SecondFree, FreeNowAfterAFreeNodeInAnotherGraphIsRefused) {
  graph producer("producer"), consumer("consumer frees");
  const auto a = producer.add_alloc({bytes, 0});
  (void)consumer.add_free(a.ptr, {});
  graph_exec p(producer), c(consumer);
  stream s;
  p.launch(s);
  c.launch(s);
  s.synchronize();
  const std::string msg = usage_error_of([&] { free_now(a.ptr); });
  EXPECT_NE(msg.find("cudaFree (gmem::free_now)"), std::string::npos) << msg;
  EXPECT_NE(msg.find(allocation_text(a.ptr)), std::string::npos) << msg;
  EXPECT_NE(msg.find("already has a free node in graph 'consumer frees'"), std::string::npos)
      << msg;
  EXPECT_NE(cudaFree(a.ptr), cudaSuccess);  // the driver: freed already by the consumer
  (void)cudaGetLastError();
  p.launch(s);  // and the pair still runs
  c.launch(s);
  s.synchronize();
}

TEST_F(SecondFree, SecondFreeInStreamIsRefusedUntilTheGraphLaunchesAgain) {
  graph g("freed in a stream");
  const auto a = g.add_alloc({bytes, 0});
  graph_exec exec(g);
  stream s, other;
  exec.launch(s);
  free_in_stream(a.ptr, s);
  s.synchronize();
  const std::string msg = usage_error_of([&] { free_in_stream(a.ptr, other); });
  EXPECT_NE(msg.find(allocation_text(a.ptr)), std::string::npos) << msg;
  EXPECT_NE(msg.find(stream_free_text(s)), std::string::npos) << msg;
  EXPECT_NE(raw_free_async(a.ptr, other), cudaSuccess);
  other.synchronize();
  // Nor may a graph free it now.
  graph late("late freer");
  const std::string late_msg = usage_error_of([&] { (void)late.add_free(a.ptr, {}); });
  EXPECT_NE(late_msg.find(stream_free_text(s)), std::string::npos) << late_msg;
  EXPECT_EQ(late.node_count(), 0u);
  exec.launch(s);  // the allocation is made anew: one free in a stream is right again
  free_in_stream(a.ptr, s);
  s.synchronize();
}

TEST_F(SecondFree, AFreeTheDriverRefusesIsGivenBack) {
  graph g("never launched");
  const auto a = g.add_alloc({bytes, 0});
  graph_exec exec(g);
  stream s;
  // Not launched yet, so nothing is allocated: the driver refuses, and gmem keeps no claim.
  EXPECT_THROW(free_in_stream(a.ptr, s), cuda_error);
  (void)cudaGetLastError();
  exec.launch(s);
  free_in_stream(a.ptr, s);
  s.synchronize();
}

TEST_F(SecondFree, FreeInStreamAfterFreeNowOfAnOrphanIsRefused) {
  void* ptr = nullptr;
  stream s;
  {
    graph g("gone after launch");
    ptr = g.add_alloc({bytes, 0}).ptr;
    graph_exec exec(g);
    exec.launch(s);
    s.synchronize();
  }  // the graph is destroyed; its allocation lives on, an orphan
  free_now(ptr);
  const std::string msg = usage_error_of([&] { free_in_stream(ptr, s); });
  EXPECT_NE(msg.find(allocation_text(ptr)), std::string::npos) << msg;
  EXPECT_NE(msg.find("made by graph 'gone after launch'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("was already freed by cudaFree (gmem::free_now)"), std::string::npos) << msg;
  EXPECT_NE(raw_free_async(ptr, s), cudaSuccess);
  s.synchronize();
}

TEST_F(SecondFree, FreeNodeInAnotherGraphAfterAnOrphanWasFreedInAStreamIsRefused) {
  void* ptr = nullptr;
  stream s;
  {
    graph g("orphan maker");
    ptr = g.add_alloc({bytes, 0}).ptr;
    graph_exec exec(g);
    exec.launch(s);
  }
  free_in_stream(ptr, s);
  s.synchronize();
  graph late("late freer");
  const std::string msg = usage_error_of([&] { (void)late.add_free(ptr, {}); });
  EXPECT_NE(msg.find("free node in graph 'late freer'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(allocation_text(ptr)), std::string::npos) << msg;
  EXPECT_NE(msg.find(stream_free_text(s)), std::string::npos) << msg;
  EXPECT_EQ(late.node_count(), 0u);
  // The driver: the allocation and its graph are gone, so the address is no graph allocation.
  cudaGraphNode_t node = nullptr;
  EXPECT_NE(cudaGraphAddMemFreeNode(&node, late.get(), nullptr, 0, ptr), cudaSuccess);
  (void)cudaGetLastError();
}

TEST_F(SecondFree, FreeInStreamAfterACapturedFreeIsRefusedNamingTheCapture) {
  graph producer("producer");
  const auto a = producer.add_alloc({bytes, 0});
  stream s;
  graph freer = [&] {
    capture cap(s, "captured freer");
    cap.free_async(a.ptr);
    return cap.end();
  }();
  EXPECT_EQ(freer.ledger().foreign_frees().size(), 1u);
  EXPECT_NE(freer.ledger().foreign_frees()[0].free_node, node_handle{0});
  graph_exec p(producer), c(freer);
  p.launch(s);
  c.launch(s);
  s.synchronize();
  const std::string msg = usage_error_of([&] { free_in_stream(a.ptr, s); });
  EXPECT_NE(msg.find(allocation_text(a.ptr)), std::string::npos) << msg;
  EXPECT_NE(msg.find("already has a free node in graph 'captured freer'"), std::string::npos)
      << msg;
  EXPECT_NE(raw_free_async(a.ptr, s), cudaSuccess);
  s.synchronize();
  // A second capture freeing it is refused too, and its capture ends cleanly.
  capture again(s, "second capture");
  const std::string msg2 = usage_error_of([&] { again.free_async(a.ptr); });
  EXPECT_NE(msg2.find("already has a free node in graph 'captured freer'"), std::string::npos)
      << msg2;
  graph empty = again.end();
  EXPECT_EQ(empty.node_count(), 0u);
}

TEST_F(SecondFree, CapturedFreeAfterAnOrphanWasFreedInAStreamIsRefused) {
  void* ptr = nullptr;
  stream s, raw_stream;
  {
    graph g("orphan for a capture");
    ptr = g.add_alloc({bytes, 0}).ptr;
    graph_exec exec(g);
    exec.launch(s);
  }
  free_in_stream(ptr, s);
  s.synchronize();
  {
    capture cap(s, "capture frees again");
    const std::string msg = usage_error_of([&] { cap.free_async(ptr); });
    EXPECT_NE(msg.find(allocation_text(ptr)), std::string::npos) << msg;
    EXPECT_NE(msg.find(stream_free_text(s)), std::string::npos) << msg;
    EXPECT_EQ(cap.end().node_count(), 0u);
  }
  // The driver, capturing the same free: refused at once, or when the capture ends.
  ASSERT_EQ(cudaStreamBeginCapture(raw_stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const cudaError_t at_free = cudaFreeAsync(ptr, raw_stream);
  cudaGraph_t raw = nullptr;
  const cudaError_t at_end = cudaStreamEndCapture(raw_stream, &raw);
  if (raw) (void)cudaGraphDestroy(raw);
  (void)cudaGetLastError();
  EXPECT_TRUE(at_free != cudaSuccess || at_end != cudaSuccess)
      << cudaGetErrorName(at_free) << " / " << cudaGetErrorName(at_end);
  EXPECT_FALSE(is_capturing(raw_stream));
}

// The driver hands a freed address out again (seen: a capture allocating where a destroyed
// graph's allocation, freed in a stream, was): the capture frees its own allocation, and gmem
// must not take that for a second free of the old one.
TEST_F(SecondFree, ACaptureAllocatingAtAFreedOrphansAddressFreesItsOwnAllocation) {
  constexpr std::size_t big = 64u << 20;
  void* old_ptr = nullptr;
  stream s;
  {
    graph g("earlier owner");
    old_ptr = g.add_alloc({big, 0}).ptr;
    graph_exec exec(g);
    exec.launch(s);
    free_in_stream(old_ptr, s);
    s.synchronize();
  }
  graph captured = [&] {
    capture cap(s, "reuser");
    void* p = cap.malloc_async(big);
    std::printf("capture allocated %s the freed orphan's address\n",
                p == old_ptr ? "at" : "away from");
    GMEM_CUDA_TRY(cudaMemsetAsync(p, 1, 4096, s));
    cap.free_async(p);
    return cap.end();
  }();
  EXPECT_EQ(captured.ledger().alloc_count(), 1u);
  EXPECT_EQ(captured.ledger().free_count(), 1u);
  EXPECT_TRUE(captured.ledger().foreign_frees().empty());
  EXPECT_TRUE(captured.ledger().unfreed().empty());
  graph_exec exec(captured);
  exec.launch(s);
  exec.launch(s);  // it frees what it allocates, so it relaunches
  s.synchronize();
}

TEST_F(SecondFree, SecondCapturedFreeOfTheCapturesOwnAllocationIsRefused) {
  stream s;
  graph g = [&] {
    capture cap(s, "frees its own twice");
    void* p = cap.malloc_async(bytes);
    cap.free_async(p);
    const std::string msg = usage_error_of([&] { cap.free_async(p); });
    EXPECT_NE(msg.find("capture of graph 'frees its own twice'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(allocation_text(p)), std::string::npos) << msg;
    EXPECT_NE(msg.find("already freed"), std::string::npos) << msg;
    return cap.end();  // the capture went on
  }();
  EXPECT_EQ(g.ledger().alloc_count(), 1u);
  EXPECT_EQ(g.ledger().free_count(), 1u);
  // The driver, capturing the same second free: refused at once, or when the capture ends.
  stream raw_stream;
  ASSERT_EQ(cudaStreamBeginCapture(raw_stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  void* p = nullptr;
  ASSERT_EQ(cudaMallocAsync(&p, bytes, raw_stream), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(p, raw_stream), cudaSuccess);
  const cudaError_t at_free = cudaFreeAsync(p, raw_stream);
  cudaGraph_t raw = nullptr;
  const cudaError_t at_end = cudaStreamEndCapture(raw_stream, &raw);
  if (raw) (void)cudaGraphDestroy(raw);
  (void)cudaGetLastError();
  EXPECT_TRUE(at_free != cudaSuccess || at_end != cudaSuccess)
      << cudaGetErrorName(at_free) << " / " << cudaGetErrorName(at_end);
  EXPECT_FALSE(is_capturing(raw_stream));
}

TEST_F(SecondFree, AbortedCaptureGivesItsClaimBack) {
  graph producer("producer");
  const auto a = producer.add_alloc({bytes, 0});
  stream s;
  {
    capture cap(s, "abandoned");
    cap.free_async(a.ptr);
  }  // never ended: its graph is discarded with its free
  graph freer("real freer");
  (void)freer.add_free(a.ptr, {});
  graph_exec p(producer), c(freer);
  p.launch(s);
  c.launch(s);
  s.synchronize();
}

// Graphs each leaving an allocation to be freed in a stream (half after the graph is destroyed):
// the registry keeps no orphan and a bounded memory of the frees. (tests/gpu/free_soak.cu runs
// 10,000 and measures the registry and the host memory.)
TEST_F(SecondFree, GraphsFreedInStreamsLeaveTheRegistryBounded) {
  auto& registry = allocation_registry::global();
  const auto before = registry.size();
  stream s;
  for (int i = 0; i < 200; ++i) {
    void* ptr = nullptr;
    {
      graph g("soak " + std::to_string(i));
      ptr = g.add_alloc({bytes, 0}).ptr;
      graph_exec exec(g);
      exec.launch(s);
      if (i % 2) free_in_stream(ptr, s);
    }
    if (i % 2 == 0) {  // destroyed first: an orphan until the free
      const auto orphan = registry.find(reinterpret_cast<std::uintptr_t>(ptr));
      ASSERT_TRUE(orphan.has_value()) << i;
      EXPECT_FALSE(orphan->freed_by.has_value()) << i;
      free_in_stream(ptr, s);
    }
    const auto freed = registry.find(reinterpret_cast<std::uintptr_t>(ptr));
    ASSERT_TRUE(freed.has_value()) << i;  // remembered, to name this free to a second one
    ASSERT_TRUE(freed->freed_by.has_value()) << i;
    EXPECT_TRUE(is_outside_free(*freed->freed_by)) << i;
  }
  s.synchronize();
  const auto after = registry.size();
  // Orphans only go (other tests may leave some that this loop's addresses replace).
  EXPECT_LE(after.orphans, before.orphans);
  EXPECT_EQ(after.live_graphs, before.live_graphs);
  EXPECT_LE(after.remembered_frees, allocation_registry::remembered_frees_max);
}

}  // namespace
}  // namespace gmem::test
