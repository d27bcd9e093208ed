// Whole-graph updates of executable graphs (graph_exec::update, cudaGraphExecUpdate): allowed
// with the same topology, refused (by gmem first where memory nodes are involved, naming the
// node) when it or a memory node's parameters change; the guide's recapture-then-update loop.
// Tests in GraphUpdateDriverFacts check what gmem's model assumes of the driver where the
// documentation says nothing: a failure there means the model is wrong, not the code under it.
#include "gpu_test_support.cuh"

#include <optional>

namespace gmem::test {
namespace {

using GraphUpdate = GpuTest;
using GraphUpdateDriverFacts = GpuTest;

constexpr int n = 1024;
constexpr std::size_t bytes = n * sizeof(int);

/// alloc -> fill_iota(buf, base) -> scale_into(buf, out, factor) -> free.
struct chain {
  graph g;
  graph_allocation buf;
  cudaGraphNode_t fill = nullptr;
  cudaGraphNode_t scale = nullptr;
  cudaGraphNode_t free_node = nullptr;
};

chain make_chain(const std::string& name, int* out, int base, int factor,
                 std::size_t alloc_bytes = bytes) {
  chain c{graph(name), {}, nullptr, nullptr, nullptr};
  c.buf = c.g.add_alloc({alloc_bytes, 0});
  int* buf = static_cast<int*>(c.buf.ptr);
  c.fill = c.g.add_kernel({c.buf.node}, fill_iota, blocks_for(n), threads(), 0, buf, n, base);
  c.scale = c.g.add_kernel({c.fill}, scale_into, blocks_for(n), threads(), 0,
                           static_cast<const int*>(buf), out, n, factor);
  c.free_node = c.g.add_free(buf, {c.scale});
  return c;
}

void expect_scaled(const device_ints& out, int base, int factor) {
  const auto h = out.to_host();
  for (int i = 0; i < n; ++i) ASSERT_EQ(h[i], factor * (base + i)) << "at " << i;
}

TEST_F(GraphUpdate, WithoutMemoryNodesTheNewKernelArgumentsRunFromTheNextLaunch) {
  device_ints out(n, 0);
  graph a("fill from 1");
  (void)a.add_kernel({}, fill_iota, blocks_for(n), threads(), 0, out.get(), n, 1);
  graph b("fill from 50");
  (void)b.add_kernel({}, fill_iota, blocks_for(n), threads(), 0, out.get(), n, 50);
  stream s;
  graph_exec exec(a);
  exec.launch(s);
  s.synchronize();
  EXPECT_EQ(out.to_host()[7], 8);
  exec.update(b);
  EXPECT_EQ(exec.name(), "fill from 50");
  exec.launch(s);
  s.synchronize();
  const auto h = out.to_host();
  for (int i = 0; i < n; ++i) ASSERT_EQ(h[i], 50 + i);
}

TEST_F(GraphUpdate, MemoryNodesAskingForTheSameUpdateAndTheNewGraphsArgumentsRun) {
  device_ints out(n, 0);
  chain a = make_chain("chain A", out.get(), 10, 2);
  chain b = make_chain("chain B", out.get(), 20, 3);
  EXPECT_NE(a.buf.ptr, b.buf.ptr);  // each alloc node has an address of its own
  stream s;
  graph_exec exec(a.g);
  exec.launch(s);
  s.synchronize();
  expect_scaled(out, 10, 2);

  exec.update(b.g);
  EXPECT_EQ(exec.name(), "chain B");
  EXPECT_EQ(a.g.ledger().live_execs(), 0);  // the executable graph is B's now
  EXPECT_EQ(b.g.ledger().live_execs(), 1);
  for (int launch = 0; launch < 3; ++launch) exec.launch(s);  // freed in the graph: relaunchable
  s.synchronize();
  expect_scaled(out, 20, 3);
}

TEST_F(GraphUpdate, AGraphChangedAfterInstantiationReachesItsExecutableGraphOnlyByAnUpdate) {
  device_ints out(n, 0);
  chain a = make_chain("chain", out.get(), 10, 2);
  stream s;
  graph_exec exec(a.g);
  a.g.set_kernel(a.fill, fill_iota, blocks_for(n), threads(), 0, static_cast<int*>(a.buf.ptr), n,
                 77);
  exec.launch(s);
  s.synchronize();
  expect_scaled(out, 10, 2);  // the executable graph kept what it was made with

  exec.update(a.g);  // its own graph: the same memory nodes, the new kernel arguments
  exec.launch(s);
  s.synchronize();
  expect_scaled(out, 77, 2);
  EXPECT_EQ(a.g.ledger().live_execs(), 1);
}

TEST_F(GraphUpdate, AChangedAllocSizeIsRefusedNamingTheAllocNodeAndNothingChanges) {
  device_ints out(n, 0);
  chain a = make_chain("chain A", out.get(), 10, 2, bytes);
  chain b = make_chain("chain B", out.get(), 20, 3, 2 * bytes);
  stream s;
  graph_exec exec(a.g);
  const update_error e = update_error_of([&] { exec.update(b.g); });
  EXPECT_EQ(e.reason(), update_refusal::parameters_changed);
  EXPECT_EQ(e.node(), handle(b.buf.node));
  const std::string msg = e.what();
  EXPECT_NE(msg.find("the 1st alloc node of graph 'chain B' (" +
                     format_address(handle(b.buf.node)) + ") asks for " +
                     format_bytes(2 * bytes) + " on device 0 where its pair in the executable "
                     "graph (" + format_address(handle(a.buf.node)) + ") asks for " +
                     format_bytes(bytes)),
            std::string::npos)
      << msg;

  const update_result r = exec.try_update(b.g);
  EXPECT_FALSE(r);
  EXPECT_TRUE(r.refused_by_gmem);
  EXPECT_EQ(r.result, cudaGraphExecUpdateErrorParametersChanged);
  EXPECT_EQ(r.node, b.buf.node);
  EXPECT_EQ(r.message, msg);

  // Nothing changed: the executable graph is A's, and B may still be instantiated.
  EXPECT_EQ(exec.name(), "chain A");
  EXPECT_EQ(b.g.ledger().live_execs(), 0);
  exec.launch(s);
  s.synchronize();
  expect_scaled(out, 10, 2);
  graph_exec of_b(b.g);
}

TEST_F(GraphUpdate, AChangedAllocSizeIsRefusedAfterTheOriginalGraphIsGone) {
  device_ints out(n, 0);
  std::optional<chain> a;
  a.emplace(make_chain("chain A", out.get(), 10, 2, bytes));
  graph_exec exec(a->g);
  a.reset();  // gmem now knows the executable graph's memory nodes from its ledger alone
  chain b = make_chain("chain B", out.get(), 20, 3, 3 * bytes);
  const update_error e = update_error_of([&] { exec.update(b.g); });
  EXPECT_EQ(e.reason(), update_refusal::parameters_changed);
  EXPECT_EQ(e.node(), handle(b.buf.node));
  EXPECT_NE(std::string(e.what()).find(format_bytes(3 * bytes)), std::string::npos) << e.what();

  chain same = make_chain("chain C", out.get(), 30, 4, bytes);
  exec.update(same.g);
  stream s;
  exec.launch(s);
  s.synchronize();
  expect_scaled(out, 30, 4);
}

TEST_F(GraphUpdate, AChangedDependencyIsRefusedNamingTheNodeAndTheDependency) {
  device_ints out(n, 0);
  chain a = make_chain("chain A", out.get(), 10, 2);
  // B: the scale kernel depends on the alloc node instead of the fill kernel.
  graph b("chain B");
  const auto buf = b.add_alloc({bytes, 0});
  int* p = static_cast<int*>(buf.ptr);
  const auto fill = b.add_kernel({buf.node}, fill_iota, blocks_for(n), threads(), 0, p, n, 20);
  const auto scale = b.add_kernel({buf.node}, scale_into, blocks_for(n), threads(), 0,
                                  static_cast<const int*>(p), out.get(), n, 3);
  (void)b.add_free(p, {fill, scale});
  graph_exec exec(a.g);
  // The free node's dependencies differ too, but the scale kernel comes first.
  const update_error e = update_error_of([&] { exec.update(b); });
  EXPECT_EQ(e.reason(), update_refusal::topology_changed);
  EXPECT_EQ(e.node(), handle(scale));
  EXPECT_EQ(e.from_node(), handle(buf.node));
  EXPECT_NE(std::string(e.what()).find("the kernel node " + format_address(handle(scale)) +
                                       " (the 3rd node created in graph 'chain B') depends on "
                                       "the alloc node " + format_address(handle(buf.node))),
            std::string::npos)
      << e.what();
  stream s;
  exec.launch(s);
  s.synchronize();
  expect_scaled(out, 10, 2);
}

TEST_F(GraphUpdate, AnExtraNodeOrAnotherNodeKindIsRefused) {
  device_ints out(n, 0);
  chain a = make_chain("chain A", out.get(), 10, 2);
  graph_exec exec(a.g);

  chain longer = make_chain("longer", out.get(), 20, 3);
  (void)longer.g.add_empty({longer.free_node});
  update_error e = update_error_of([&] { exec.update(longer.g); });
  EXPECT_EQ(e.reason(), update_refusal::topology_changed);
  EXPECT_EQ(e.node(), 0u);
  EXPECT_NE(std::string(e.what()).find("graph 'longer' has 5 nodes where the executable graph "
                                       "has 4"),
            std::string::npos)
      << e.what();

  graph other("memset instead");
  const auto buf = other.add_alloc({bytes, 0});
  const auto set = other.add_memset({buf.node}, buf.ptr, 0, bytes);
  const auto scale = other.add_kernel({set}, scale_into, blocks_for(n), threads(), 0,
                                      static_cast<const int*>(buf.ptr), out.get(), n, 3);
  (void)other.add_free(buf.ptr, {scale});
  e = update_error_of([&] { exec.update(other); });
  EXPECT_EQ(e.reason(), update_refusal::node_type_changed);
  EXPECT_EQ(e.node(), handle(set));
  EXPECT_NE(std::string(e.what()).find("the memset node " + format_address(handle(set)) +
                                       " (the 2nd node created in graph 'memset instead') pairs "
                                       "with a kernel node"),
            std::string::npos)
      << e.what();
}

TEST_F(GraphUpdate, AGraphWithMemoryNodesInstantiatedElsewhereIsRefusedUntilThatOneIsGone) {
  device_ints out(n, 0), other_out(n, 0);
  chain a = make_chain("chain A", out.get(), 10, 2);
  chain b = make_chain("chain B", other_out.get(), 20, 3);
  graph_exec exec(a.g);
  std::optional<graph_exec> of_b;
  of_b.emplace(b.g);
  const update_error e = update_error_of([&] { exec.update(b.g); });
  EXPECT_EQ(e.reason(), update_refusal::instantiated_elsewhere);
  EXPECT_NE(std::string(e.what()).find("'chain B' holds memory nodes and is already "
                                       "instantiated as another executable graph"),
            std::string::npos)
      << e.what();
  of_b.reset();
  exec.update(b.g);
  stream s;
  exec.launch(s);
  s.synchronize();
  expect_scaled(other_out, 20, 3);
}

TEST_F(GraphUpdate, TheDriversRefusalWithoutMemoryNodesNamesItsNodeAndReason) {
  device_ints out(n, 0);
  graph a("kernel");
  (void)a.add_kernel({}, fill_iota, blocks_for(n), threads(), 0, out.get(), n, 1);
  graph b("memset");
  const auto set = b.add_memset({}, out.get(), 0, bytes);
  graph_exec exec(a);

  const update_result r = exec.try_update(b);
  EXPECT_FALSE(r);
  EXPECT_FALSE(r.refused_by_gmem);
  EXPECT_EQ(r.result, cudaGraphExecUpdateErrorNodeTypeChanged);
  EXPECT_EQ(r.node, set);
  EXPECT_NE(r.message.find("updating executable graph 'kernel' with graph 'memset': the driver "
                           "refused it for a node whose type changed, at the memset node " +
                           format_address(handle(set)) + " (the 1st node created in graph "
                           "'memset')"),
            std::string::npos)
      << r.message;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // a refusal leaves no error behind

  try {
    exec.update(b);
    ADD_FAILURE() << "no cuda_error";
  } catch (const cuda_error& e) {
    EXPECT_EQ(e.code(), cudaErrorGraphExecUpdateFailure);
    EXPECT_NE(std::string(e.what()).find("the memset node"), std::string::npos) << e.what();
  }
  stream s;
  exec.launch(s);
  s.synchronize();
  EXPECT_EQ(out.to_host()[9], 10);
}

TEST_F(GraphUpdate, TheDriversTopologyRefusalNamesANodeOfTheNewGraph) {
  device_ints out(n, 0);
  graph a("two in a row");
  const auto a1 = a.add_kernel({}, fill_iota, blocks_for(n), threads(), 0, out.get(), n, 1);
  (void)a.add_kernel({a1}, fill_iota, blocks_for(n), threads(), 0, out.get(), n, 2);
  graph b("two side by side");
  const auto b1 = b.add_kernel({}, fill_iota, blocks_for(n), threads(), 0, out.get(), n, 1);
  const auto b2 = b.add_kernel({}, fill_iota, blocks_for(n), threads(), 0, out.get(), n, 2);
  graph_exec exec(a);
  const update_result r = exec.try_update(b);
  EXPECT_FALSE(r);
  EXPECT_FALSE(r.refused_by_gmem);  // no memory nodes: the driver's to refuse
  EXPECT_EQ(r.result, cudaGraphExecUpdateErrorTopologyChanged);
  EXPECT_TRUE(r.node == b1 || r.node == b2) << r.message;
  driver_fact("topology_refusal", r.message);
}

TEST_F(GraphUpdate, TheGuidesRecaptureThenUpdateLoopInstantiatesOnce) {
  device_ints out(n, 0);
  stream s;
  std::optional<graph_exec> exec;
  int instantiations = 0;
  for (int i = 0; i < 10; ++i) {
    capture cap(s, "step " + std::to_string(i));
    fill_iota<<<blocks_for(n), threads(), 0, s>>>(out.get(), n, 100 * i);
    graph g = cap.end();
    if (!exec || !exec->try_update(g)) {
      exec.reset();
      exec.emplace(g);
      ++instantiations;
    }
    exec->launch(s);
    s.synchronize();
    ASSERT_EQ(out.to_host()[3], 100 * i + 3) << "iteration " << i;
  }
  EXPECT_EQ(instantiations, 1);
}

TEST_F(GraphUpdate, TheRecaptureLoopWithCapturedAllocationsUpdatesTooAndComputesEachStep) {
  device_ints out(n, 0);
  stream s;
  std::optional<graph_exec> exec;
  int instantiations = 0;
  std::string refusals;
  for (int i = 0; i < 10; ++i) {
    capture cap(s, "step " + std::to_string(i));
    int* p = static_cast<int*>(cap.malloc_async(bytes));
    fill_iota<<<blocks_for(n), threads(), 0, s>>>(p, n, 100 * i);
    scale_into<<<blocks_for(n), threads(), 0, s>>>(p, out.get(), n, 2);
    cap.free_async(p);
    graph g = cap.end();
    update_result r;
    if (exec) r = exec->try_update(g);
    if (!r) {
      if (exec) refusals += "iteration " + std::to_string(i) + ": " + r.message + "\n";
      exec.reset();
      exec.emplace(g);
      ++instantiations;
    }
    exec->launch(s);
    s.synchronize();
    const auto h = out.to_host();
    ASSERT_EQ(h[5], 2 * (100 * i + 5)) << "iteration " << i;
    ASSERT_EQ(h[n - 1], 2 * (100 * i + n - 1)) << "iteration " << i;
  }
  driver_fact("recapture_with_allocations_instantiations", std::to_string(instantiations));
  // Each capture's allocation has a new address: the driver updates the executable graph to
  // the new graph's allocations (or refuses, and the loop instantiates again).
  EXPECT_EQ(instantiations, 1) << refusals;
}

TEST_F(GraphUpdate, AnUnfreedAllocationAfterAnUpdateIsTheNewGraphs) {
  graph a("producer A");
  const auto pa = a.add_alloc({bytes, 0});
  (void)a.add_kernel({pa.node}, fill_iota, blocks_for(n), threads(), 0, static_cast<int*>(pa.ptr),
                     n, 10);
  graph b("producer B");
  const auto pb = b.add_alloc({bytes, 0});
  (void)b.add_kernel({pb.node}, fill_iota, blocks_for(n), threads(), 0, static_cast<int*>(pb.ptr),
                     n, 20);
  stream s;
  graph_exec exec(a);
  exec.launch(s);
  EXPECT_EQ(copy_ints(pa.ptr, n)[4], 14);
  free_in_stream(pa.ptr, s);
  s.synchronize();

  exec.update(b);
  ASSERT_EQ(exec.unfreed().size(), 1u);
  EXPECT_EQ(exec.unfreed()[0].address, reinterpret_cast<std::uintptr_t>(pb.ptr));
  exec.launch(s);
  // The launch made B's allocation: its kernel wrote there.
  EXPECT_EQ(copy_ints(pb.ptr, n)[4], 24);
  free_in_stream(pb.ptr, s);
  s.synchronize();
}

// What gmem's model of an update assumes: the executable graph becomes the new graph's
// instantiation, so the graph it came from may be instantiated again and the new one not.
TEST_F(GraphUpdateDriverFacts, AfterAnUpdateTheOldGraphInstantiatesAgainAndTheNewOneDoesNot) {
  device_ints out(n, 0), again_out(n, 0);
  chain a = make_chain("chain A", again_out.get(), 10, 2);
  chain b = make_chain("chain B", out.get(), 20, 3);
  graph_exec exec(a.g);
  exec.update(b.g);

  cudaGraphExec_t raw_a = nullptr;
  const cudaError_t again_a = cudaGraphInstantiate(&raw_a, a.g.get(), 0);
  (void)cudaGetLastError();
  cudaGraphExec_t raw_b = nullptr;
  const cudaError_t again_b = cudaGraphInstantiate(&raw_b, b.g.get(), 0);
  (void)cudaGetLastError();
  driver_fact("instantiate_old_graph_after_update", cudaGetErrorName(again_a));
  driver_fact("instantiate_new_graph_after_update", cudaGetErrorName(again_b));
  EXPECT_EQ(again_a, cudaSuccess) << "the driver still counts the executable graph as A's";
  EXPECT_NE(again_b, cudaSuccess) << "the driver let B have a second executable graph";
  stream s;
  if (raw_a) {
    ASSERT_EQ(cudaGraphLaunch(raw_a, s), cudaSuccess);
    exec.launch(s);
    s.synchronize();
    expect_scaled(again_out, 10, 2);
    expect_scaled(out, 20, 3);
    ASSERT_EQ(cudaGraphExecDestroy(raw_a), cudaSuccess);
  }
  if (raw_b) ASSERT_EQ(cudaGraphExecDestroy(raw_b), cudaSuccess);
}

// gmem refuses a changed alloc size before the driver (the guide lists memory nodes' parameters
// as fixed); what the driver itself does with one, asked directly. On an H100 with driver
// 580.159.04 it accepted the update, and the next launch allocated the new graph's size at its
// address (the kernels of the new graph, which use that address, ran right): the test says so,
// and fails on a driver that does otherwise.
TEST_F(GraphUpdateDriverFacts, TheDriverAskedDirectlyAboutAChangedAllocSize) {
  constexpr std::size_t larger = 96u << 20;  // three 32 MiB granules, where A needs one
  device_ints out(n, 0);
  chain a = make_chain("chain A", out.get(), 10, 2, bytes);
  chain b = make_chain("chain B", out.get(), 20, 3, larger);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, a.g.get(), 0), cudaSuccess);
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t err = cudaGraphExecUpdate(exec, b.g.get(), &info);
  (void)cudaGetLastError();
  std::string fact = std::string(cudaGetErrorName(err)) + ", result " + std::to_string(info.result) +
                     ", error node is B's alloc node: " + (info.errorNode == b.buf.node ? "yes" : "no");
  if (err == cudaSuccess) {
    // What the launch allocates after the update: from a trimmed pool, its used high watermark.
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaDeviceGraphMemTrim(0), cudaSuccess);
    std::uint64_t zero = 0, used_high = 0;
    ASSERT_EQ(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero), cudaSuccess);
    stream s;
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    s.synchronize();
    expect_scaled(out, 20, 3);
    ASSERT_EQ(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &used_high), cudaSuccess);
    fact += ", the launch's used high " + std::to_string(used_high >> 20) + " MiB (A asks " +
            std::to_string(bytes) + " B, B " + std::to_string(larger >> 20) + " MiB)";
    EXPECT_GE(used_high, larger) << "the updated executable graph allocated less than its new graph asks";
  }
  driver_fact("update_changed_alloc_size", fact);
  EXPECT_EQ(err, cudaSuccess) << "the driver refuses an update that changes an alloc node's size now: "
                                 "docs/allocator.md says it accepts one";
  ASSERT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
}

}  // namespace
}  // namespace gmem::test
