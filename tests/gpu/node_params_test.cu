// One node's parameters changed on an executable graph (graph_exec::set_kernel,
// set_node_params): kernel nodes change the next launch's result, memory nodes are refused
// before the driver. And the combined approach for dynamic parameters: kernels captured as they
// are, one kernel node added to the capture by hand, its parameters set before each launch.
#include "gpu_test_support.cuh"

namespace gmem::test {
namespace {

using ExecNodeParams = GpuTest;
using DynamicParameters = GpuTest;

constexpr int n = 1024;
constexpr std::size_t bytes = n * sizeof(int);

/// The generic parameters of alloc node `node`, as the driver reads them back.
cudaGraphNodeParams alloc_node_params(cudaGraphNode_t node) {
  const cudaMemAllocNodeParams a = alloc_params(node);
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeMemAlloc;
  p.alloc.poolProps = a.poolProps;
  p.alloc.accessDescs = a.accessDescs;
  p.alloc.accessDescCount = a.accessDescCount;
  p.alloc.bytesize = a.bytesize;
  p.alloc.dptr = a.dptr;
  return p;
}

TEST_F(ExecNodeParams, NewKernelArgumentsChangeTheNextLaunchOnly) {
  device_ints out(n, 0);
  graph g("fill");
  const auto k = g.add_kernel({}, fill_iota, blocks_for(n), threads(), 0, out.get(), n, 1);
  stream s;
  graph_exec exec(g);
  exec.launch(s);
  s.synchronize();
  EXPECT_EQ(out.to_host()[0], 1);
  exec.set_kernel(k, fill_iota, blocks_for(n), threads(), 0, out.get(), n, 500);
  exec.launch(s);
  s.synchronize();
  const auto h = out.to_host();
  for (int i = 0; i < n; ++i) ASSERT_EQ(h[i], 500 + i);
  // A smaller grid and count: the launch configuration is a node parameter too.
  exec.set_kernel(k, fill_iota, dim3(1), threads(), 0, out.get(), 128, -1000);
  exec.launch(s);
  s.synchronize();
  const auto h2 = out.to_host();
  EXPECT_EQ(h2[0], -1000);
  EXPECT_EQ(h2[127], -873);
  EXPECT_EQ(h2[128], 500 + 128);  // beyond the smaller grid: the previous launch's value
}

TEST_F(ExecNodeParams, AKernelNodeOfAGraphWithMemoryNodesChangesAndItsAllocationStays) {
  device_ints out(n, 0);
  graph g("chain");
  const auto buf = g.add_alloc({bytes, 0});
  int* p = static_cast<int*>(buf.ptr);
  const auto fill = g.add_kernel({buf.node}, fill_iota, blocks_for(n), threads(), 0, p, n, 1);
  const auto scale = g.add_kernel({fill}, scale_into, blocks_for(n), threads(), 0,
                                  static_cast<const int*>(p), out.get(), n, 2);
  (void)g.add_free(p, {scale});
  stream s;
  graph_exec exec(g);
  for (int step = 0; step < 4; ++step) {
    exec.set_kernel(fill, fill_iota, blocks_for(n), threads(), 0, p, n, 10 * step);
    exec.set_kernel(scale, scale_into, blocks_for(n), threads(), 0, static_cast<const int*>(p),
                    out.get(), n, step + 1);
    exec.launch(s);
    s.synchronize();
    const auto h = out.to_host();
    ASSERT_EQ(h[3], (step + 1) * (10 * step + 3)) << "step " << step;
  }
}

TEST_F(ExecNodeParams, MemoryNodesAndOtherKindsAreRefusedBeforeTheDriver) {
  device_ints out(n, 0);
  graph g("chain");
  const auto buf = g.add_alloc({bytes, 0});
  const auto set = g.add_memset({buf.node}, buf.ptr, 1, bytes);
  const auto copy = g.add_memcpy({set}, out.get(), buf.ptr, bytes, cudaMemcpyDeviceToDevice);
  const auto free_node = g.add_free(buf.ptr, {copy});
  graph_exec exec(g);

  cudaGraphNodeParams params = alloc_node_params(buf.node);
  params.alloc.bytesize = 2 * bytes;
  update_error e = update_error_of([&] { exec.set_node_params(buf.node, params); });
  EXPECT_EQ(e.reason(), update_refusal::not_supported);
  EXPECT_EQ(e.node(), handle(buf.node));
  EXPECT_NE(std::string(e.what()).find("setting the parameters of the alloc node " +
                                       format_address(handle(buf.node)) +
                                       " in executable graph 'chain': the parameters of alloc "
                                       "and free nodes are fixed"),
            std::string::npos)
      << e.what();

  e = update_error_of([&] {
    exec.set_kernel(free_node, fill_iota, blocks_for(n), threads(), 0, out.get(), n, 0);
  });
  EXPECT_EQ(e.reason(), update_refusal::not_supported);
  EXPECT_EQ(e.node(), handle(free_node));

  e = update_error_of([&] {
    exec.set_kernel(set, fill_iota, blocks_for(n), threads(), 0, out.get(), n, 0);
  });
  EXPECT_EQ(e.reason(), update_refusal::node_type_changed);
  EXPECT_NE(std::string(e.what()).find("the memset node"), std::string::npos) << e.what();

  // The memset node's own kind of parameters: a new value.
  cudaGraphNodeParams memset_params{};
  memset_params.type = cudaGraphNodeTypeMemset;
  memset_params.memset.dst = buf.ptr;
  memset_params.memset.value = 2;
  memset_params.memset.elementSize = 1;
  memset_params.memset.width = bytes;
  memset_params.memset.height = 1;
  exec.set_node_params(set, memset_params);
  stream s;
  exec.launch(s);
  s.synchronize();
  EXPECT_EQ(out.to_host()[17], 0x02020202);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(ExecNodeParams, TheDriverAskedDirectlyRefusesAnAllocNodesParameters) {
  graph g("alloc");
  const auto buf = g.add_alloc({bytes, 0});
  (void)g.add_free(buf.ptr, {buf.node});
  graph_exec exec(g);
  cudaGraphNodeParams params = alloc_node_params(buf.node);
  const cudaError_t err = cudaGraphExecNodeSetParams(exec.get(), buf.node, &params);
  (void)cudaGetLastError();
  driver_fact("exec_alloc_node_set_params", cudaGetErrorName(err));
  EXPECT_NE(err, cudaSuccess);  // "memory allocation: API unsupported"
  stream s;
  exec.launch(s);  // the refusal leaves the executable graph usable
  s.synchronize();
}

// After an update with B, the nodes of which graph name the executable graph's nodes? The
// documentation says the graph it was instantiated from; gmem passes either on.
TEST_F(ExecNodeParams, AfterAnUpdateTheInstantiatedGraphsNodesStillNameTheKernels) {
  device_ints out(n, 0);
  graph a("A");
  const auto ka = a.add_kernel({}, fill_iota, blocks_for(n), threads(), 0, out.get(), n, 1);
  graph b("B");
  const auto kb = b.add_kernel({}, fill_iota, blocks_for(n), threads(), 0, out.get(), n, 2);
  graph_exec exec(a);
  exec.update(b);
  stream s;
  cudaKernelNodeParams p{};
  int base = 300;
  int* ptr = out.get();
  int count = n;
  void* args[] = {&ptr, &count, &base};
  p.func = reinterpret_cast<void*>(fill_iota);
  p.gridDim = blocks_for(n);
  p.blockDim = threads();
  p.kernelParams = args;
  const cudaError_t by_a = cudaGraphExecKernelNodeSetParams(exec.get(), ka, &p);
  (void)cudaGetLastError();
  base = 400;
  const cudaError_t by_b = cudaGraphExecKernelNodeSetParams(exec.get(), kb, &p);
  (void)cudaGetLastError();
  exec.launch(s);
  s.synchronize();
  const int ran = out.to_host()[0];
  driver_fact("exec_node_after_update",
              std::string("A's node: ") + cudaGetErrorName(by_a) + ", B's node: " +
                  cudaGetErrorName(by_b) + ", the launch ran base " + std::to_string(ran));
  EXPECT_EQ(by_a, cudaSuccess);
  EXPECT_TRUE(ran == 300 || ran == 400) << ran;
}

// The combined approach: first_static and second_static captured, the dynamic kernel added by
// hand to the captured graph and its parameters set on the executable graph before each launch.
TEST_F(DynamicParameters, ACapturedGraphWithAnAddedKernelNodeTakesNewParametersEachLaunch) {
  device_ints scratch(n, 0), mid(n, 0), out(n, 0);
  stream s;
  capture cap(s, "static kernels and a dynamic one");
  fill_iota<<<blocks_for(n), threads(), 0, s>>>(scratch.get(), n, 1);
  scale_into<<<blocks_for(n), threads(), 0, s>>>(scratch.get(), mid.get(), n, 2);
  const cudaGraphNode_t dynamic = cap.add_kernel(nullptr, add_into, blocks_for(n), threads(), 0,
                                                 static_cast<const int*>(mid.get()), out.get(), n,
                                                 0);
  graph g = cap.end();

  EXPECT_EQ(g.node_count(), 3u);
  const auto deps = dependencies_of(dynamic);
  ASSERT_EQ(deps.size(), 1u);  // after the second static kernel, as a captured launch would be
  cudaGraphNodeType t{};
  ASSERT_EQ(cudaGraphNodeGetType(deps[0], &t), cudaSuccess);
  EXPECT_EQ(t, cudaGraphNodeTypeKernel);

  graph_exec exec(g);
  for (const int parameter : {5, -3, 1000, 0}) {
    exec.set_kernel(dynamic, add_into, blocks_for(n), threads(), 0,
                    static_cast<const int*>(mid.get()), out.get(), n, parameter);
    exec.launch(s);
    s.synchronize();
    const auto h = out.to_host();
    for (int i = 0; i < n; i += 97) {
      ASSERT_EQ(h[i], 2 * (1 + i) + parameter) << "parameter " << parameter;
    }
  }
}

TEST_F(DynamicParameters, TheAddedNodeOrdersTheCapturesLaterFreeAfterIt) {
  device_ints mid(n, 0), out(n, 0);
  stream s;
  capture cap(s, "dynamic with an allocation");
  int* p = static_cast<int*>(cap.malloc_async(bytes));
  fill_iota<<<blocks_for(n), threads(), 0, s>>>(p, n, 1);
  scale_into<<<blocks_for(n), threads(), 0, s>>>(p, mid.get(), n, 3);
  const cudaGraphNode_t dynamic = cap.add_kernel(nullptr, add_into, blocks_for(n), threads(), 0,
                                                 static_cast<const int*>(p), out.get(), n, 0);
  cap.free_async(p);
  graph g = cap.end();

  const auto frees = nodes_of_type(g.get(), cudaGraphNodeTypeMemFree);
  ASSERT_EQ(frees.size(), 1u);
  const auto free_deps = dependencies_of(frees[0]);
  ASSERT_EQ(free_deps.size(), 1u);
  EXPECT_EQ(free_deps[0], dynamic);  // the free waits for the kernel that reads the allocation

  graph_exec exec(g);
  for (const int parameter : {7, 70}) {
    exec.set_kernel(dynamic, add_into, blocks_for(n), threads(), 0, static_cast<const int*>(p),
                    out.get(), n, parameter);
    exec.launch(s);
    s.synchronize();
    EXPECT_EQ(out.to_host()[11], 1 + 11 + parameter);
    EXPECT_EQ(mid.to_host()[11], 3 * (1 + 11));
  }
}

TEST_F(DynamicParameters, AddingANodeFromAStreamOutsideTheCaptureIsRefused) {
  device_ints out(n, 0);
  stream s, outside;
  capture cap(s, "one stream");
  fill_iota<<<blocks_for(n), threads(), 0, s>>>(out.get(), n, 1);
  try {
    (void)cap.add_kernel(outside.get(), fill_iota, blocks_for(n), threads(), 0, out.get(), n, 2);
    ADD_FAILURE() << "no usage_error";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("a kernel node"), std::string::npos) << e.what();
  }
  graph g = cap.end();
  EXPECT_EQ(g.node_count(), 1u);
}

}  // namespace
}  // namespace gmem::test
