// User objects (gmem::user_object, graph::retain) and outside buffers: the object lives while
// any graph, clone or executable graph holds a reference, and its destructor runs once, after
// the last one goes. The driver runs destructors later, on a thread of its own: the tests wait
// for them (eventually), and check that nothing ran before the last owner went by waiting a
// while first.
#include "gpu_test_support.cuh"

#include <atomic>
#include <future>
#include <optional>
#include <thread>

namespace gmem::test {
namespace {

using UserObject = GpuTest;
using OutsideBuffer = GpuTest;

constexpr int n = 1024;
constexpr std::size_t bytes = n * sizeof(int);
constexpr auto settle = std::chrono::milliseconds(50);

/// A C++ object with a destructor that counts and signals, as the guide's Object.
struct counted {
  std::atomic<int>* destroyed;
  std::promise<void>* signal;
  ~counted() {
    destroyed->fetch_add(1);
    if (signal) signal->set_value();
  }
};

user_object counted_object(std::atomic<int>& destroyed, std::promise<void>* signal = nullptr) {
  // Made in place: a temporary counted would count its own destruction.
  return user_object::owning(std::unique_ptr<counted>(new counted{&destroyed, signal}));
}

/// A graph of one kernel writing `out`, so that its launches do some work.
graph kernel_graph(const std::string& name, int* out, int base) {
  graph g(name);
  (void)g.add_kernel({}, fill_iota, blocks_for(n), threads(), 0, out, n, base);
  return g;
}

// The programming guide's sequence: the graph takes the caller's reference, the executable
// graph one of its own, the graph goes, a launch, the executable graph goes unsynchronized.
TEST_F(UserObject, TheGuidesSequenceDestroysTheObjectOnceAfterTheLastLaunch) {
  device_ints out(n, 0);
  std::atomic<int> destroyed{0};
  std::promise<void> signal;
  std::future<void> done = signal.get_future();
  stream s;
  std::optional<graph> g;
  g.emplace(kernel_graph("user object guide", out.get(), 1));
  user_object object = counted_object(destroyed, &signal);
  g->retain(std::move(object));
  EXPECT_FALSE(object);  // its reference moved into the graph
  std::optional<graph_exec> exec;
  exec.emplace(*g);
  g.reset();  // the executable graph still holds a reference
  std::this_thread::sleep_for(settle);
  EXPECT_EQ(destroyed.load(), 0);
  exec->launch(s);
  exec.reset();  // the launch is not synchronized: the release waits for it
  s.synchronize();
  // The destructor signals (the guide's way to wait for it): it ran once, after the launch.
  EXPECT_EQ(done.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  std::this_thread::sleep_for(settle);
  EXPECT_EQ(destroyed.load(), 1);
  EXPECT_EQ(out.to_host()[5], 6);
}

TEST_F(UserObject, AGraphsOwnReferenceLeavesTheHandlesReferenceToTheHandle) {
  device_ints out(n, 0);
  std::atomic<int> destroyed{0};
  user_object object = counted_object(destroyed);
  {
    graph g = kernel_graph("copy", out.get(), 1);
    g.retain(object);  // a reference of the graph's own
    graph_exec exec(g);
    stream s;
    exec.launch(s);
    s.synchronize();
  }
  std::this_thread::sleep_for(settle);
  EXPECT_EQ(destroyed.load(), 0);  // the handle still holds its reference
  EXPECT_TRUE(object);
  object = user_object();
  EXPECT_TRUE(eventually([&] { return destroyed.load() == 1; }));
}

TEST_F(UserObject, ACloneHoldsItsOwnReferences) {
  device_ints out(n, 0);
  std::atomic<int> destroyed{0};
  std::optional<graph> original;
  original.emplace(kernel_graph("original", out.get(), 1));
  original->retain(counted_object(destroyed));
  std::optional<graph> copy;
  copy.emplace(original->clone("clone"));
  original.reset();
  std::this_thread::sleep_for(settle);
  EXPECT_EQ(destroyed.load(), 0);
  copy.reset();
  EXPECT_TRUE(eventually([&] { return destroyed.load() == 1; }));
}

// The guide: an update clones the new graph's references into the executable graph and
// releases the ones it replaces.
TEST_F(UserObject, AnUpdateSwapsTheExecutableGraphsReferencesForTheNewGraphs) {
  device_ints out(n, 0);
  std::atomic<int> a_destroyed{0}, b_destroyed{0};
  std::optional<graph> a, b;
  a.emplace(kernel_graph("A", out.get(), 1));
  a->retain(counted_object(a_destroyed));
  b.emplace(kernel_graph("B", out.get(), 2));
  b->retain(counted_object(b_destroyed));
  stream s;
  std::optional<graph_exec> exec;
  exec.emplace(*a);
  a.reset();  // A's object: held by the executable graph alone
  exec->update(*b);
  b.reset();  // B's object: held by the executable graph alone
  exec->launch(s);
  s.synchronize();
  EXPECT_TRUE(eventually([&] { return a_destroyed.load() == 1; }));
  std::this_thread::sleep_for(settle);
  EXPECT_EQ(b_destroyed.load(), 0);
  EXPECT_EQ(out.to_host()[0], 2);
  exec.reset();
  EXPECT_TRUE(eventually([&] { return b_destroyed.load() == 1; }));
  EXPECT_EQ(a_destroyed.load(), 1);
}

TEST_F(UserObject, AGraphWithMemoryNodesKeepsItsObjectThroughItsExecutableGraph) {
  device_ints out(n, 0);
  std::atomic<int> destroyed{0};
  std::optional<graph> g;
  g.emplace("memory nodes");
  const auto buf = g->add_alloc({bytes, 0});
  const auto k = g->add_kernel({buf.node}, fill_iota, blocks_for(n), threads(), 0,
                               static_cast<int*>(buf.ptr), n, 3);
  const auto copy = g->add_memcpy({k}, out.get(), buf.ptr, bytes, cudaMemcpyDeviceToDevice);
  (void)g->add_free(buf.ptr, {copy});
  g->retain(counted_object(destroyed));
  std::optional<graph_exec> exec;
  exec.emplace(*g);
  g.reset();
  stream s;
  exec->launch(s);
  s.synchronize();
  std::this_thread::sleep_for(settle);
  EXPECT_EQ(destroyed.load(), 0);
  exec.reset();
  EXPECT_TRUE(eventually([&] { return destroyed.load() == 1; }));
  EXPECT_EQ(out.to_host()[2], 5);
}

TEST_F(UserObject, ADeferredReleaseRunsOnGmemsThreadWhereCudaCallsWork) {
  device_ints out(n, 0);
  std::atomic<int> ran{0};
  std::atomic<int> cuda_status{-1};
  std::thread::id where;
  user_object object = user_object::deferred([&] {
    int device = -1;
    cuda_status = static_cast<int>(cudaGetDevice(&device));
    where = std::this_thread::get_id();
    ran.fetch_add(1);
  });
  {
    graph g = kernel_graph("deferred", out.get(), 1);
    g.retain(std::move(object));
    graph_exec exec(g);
    stream s;
    exec.launch(s);
    s.synchronize();
  }
  EXPECT_TRUE(eventually([&] { return ran.load() == 1; }));
  wait_for_deferred_releases();
  EXPECT_EQ(cuda_status.load(), static_cast<int>(cudaSuccess));
  EXPECT_NE(where, std::this_thread::get_id());
}

TEST_F(UserObject, AnEmptyHandleIsRefused) {
  graph g("empty handle");
  user_object empty;
  EXPECT_THROW(g.retain(empty), usage_error);
  EXPECT_THROW(g.retain(std::move(empty)), usage_error);
  std::atomic<int> destroyed{0};
  user_object object = counted_object(destroyed);
  const cudaUserObject_t raw = object.release();
  EXPECT_FALSE(object);
  ASSERT_EQ(cudaUserObjectRelease(raw, 1), cudaSuccess);  // the caller's to release now
  EXPECT_TRUE(eventually([&] { return destroyed.load() == 1; }));
}

// When a destructor runs once the last reference goes with no launch in flight: at once inside
// the call that released it, or later on the driver's thread (the guide says it may be later).
TEST_F(UserObject, WhenTheDestructorRunsAfterTheLastReferenceGoes) {
  std::atomic<int> destroyed{0};
  device_ints out(n, 0);
  std::optional<graph_exec> exec;
  {
    graph g = kernel_graph("timing", out.get(), 1);
    g.retain(counted_object(destroyed));
    exec.emplace(g);
  }
  stream s;
  exec->launch(s);
  s.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  exec.reset();
  const bool at_once = destroyed.load() == 1;
  EXPECT_TRUE(eventually([&] { return destroyed.load() == 1; }));
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  driver_fact("user_object_destructor_after_exec_destroy",
              std::string(at_once ? "ran inside cudaGraphExecDestroy" : "ran later") +
                  ", seen after " + std::to_string(us) + " us");
}

TEST_F(OutsideBuffer, FreedOnTheReleaseThreadOnceTheLastExecutableGraphUsingItGoes) {
  device_ints out(n, 0);
  std::atomic<int> freed{0};
  std::optional<outside_buffer> buf;
  buf.emplace(bytes, 0, [&] { freed.fetch_add(1); });
  int* p = static_cast<int*>(buf->get());
  std::optional<graph> g;
  g.emplace("uses an outside buffer");
  const auto k = g->add_kernel({}, fill_iota, blocks_for(n), threads(), 0, p, n, 1);
  (void)g->add_kernel({k}, scale_into, blocks_for(n), threads(), 0, static_cast<const int*>(p),
                      out.get(), n, 2);
  g->retain(buf->owner());
  std::optional<graph_exec> exec;
  exec.emplace(*g);
  buf.reset();  // the host's reference goes
  g.reset();    // and the graph's
  std::this_thread::sleep_for(settle);
  EXPECT_EQ(freed.load(), 0);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, p), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);  // still allocated: the executable graph holds it

  stream s;
  exec->launch(s);
  s.synchronize();
  const auto h = out.to_host();
  for (int i = 0; i < n; ++i) ASSERT_EQ(h[i], 2 * (1 + i));
  exec.reset();
  EXPECT_TRUE(eventually([&] { return freed.load() == 1; }));
  attr = {};
  const cudaError_t after = cudaPointerGetAttributes(&attr, p);
  (void)cudaGetLastError();
  EXPECT_TRUE(after != cudaSuccess || attr.type != cudaMemoryTypeDevice);  // cudaFree ran
  std::this_thread::sleep_for(settle);
  EXPECT_EQ(freed.load(), 1);
}

TEST_F(OutsideBuffer, TwoGraphsShareItUntilBothAreGone) {
  device_ints out1(n, 0), out2(n, 0);
  std::atomic<int> freed{0};
  outside_buffer buf(bytes, 0, [&] { freed.fetch_add(1); });
  int* p = static_cast<int*>(buf.get());
  std::optional<graph> g1, g2;
  g1.emplace("first user");
  (void)g1->add_kernel({}, fill_iota, blocks_for(n), threads(), 0, p, n, 7);
  g2.emplace("second user");
  (void)g2->add_kernel({}, scale_into, blocks_for(n), threads(), 0, static_cast<const int*>(p),
                       out2.get(), n, 3);
  g2->retain(buf.owner());
  g1->retain(std::move(buf.owner()));  // the host's reference, given away
  EXPECT_FALSE(buf.owner());
  stream s;
  {
    graph_exec e1(*g1), e2(*g2);
    e1.launch(s);
    e2.launch(s);
    s.synchronize();
  }
  EXPECT_EQ(out2.to_host()[4], 3 * (7 + 4));
  g1.reset();
  std::this_thread::sleep_for(settle);
  EXPECT_EQ(freed.load(), 0);
  g2.reset();
  EXPECT_TRUE(eventually([&] { return freed.load() == 1; }));
}

TEST_F(OutsideBuffer, ZeroBytesAndDevicesOutOfRangeAreRefused) {
  EXPECT_THROW(outside_buffer(0, 0), usage_error);
  EXPECT_THROW(outside_buffer(bytes, device_count()), usage_error);
  EXPECT_THROW(outside_buffer(bytes, -1), usage_error);
}

}  // namespace
}  // namespace gmem::test
