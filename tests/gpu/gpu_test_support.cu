#include "gpu_test_support.cuh"

#include <cstdio>
#include <thread>

namespace gmem::test {

void GpuTest::SetUp() {
  if (const auto why = gpu_unavailable_reason()) GTEST_SKIP() << "needs a GPU: " << *why;
  const device_capability& cap = probe_device(0);
  if (!cap.graph_mem_nodes_supported) {
    GTEST_SKIP() << "device 0 (" << cap.name
                 << ") does not support graph memory nodes: " << cap.unsupported_reason;
  }
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

void GpuTest::TearDown() {
  if (IsSkipped()) return;
  // Every test leaves the device without pending errors.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

void PeerTest::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  if (device_count() < 2) {
    GTEST_SKIP() << "peer access needs two GPUs; this machine has " << device_count();
  }
  if (!probe_device(1).graph_mem_nodes_supported) {
    GTEST_SKIP() << "device 1 does not support graph memory nodes";
  }
}

__global__ void fill_iota(int* p, int n, int base) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = base + i;
}

__global__ void scale_into(const int* in, int* out, int n, int factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}

__global__ void add_into(const int* in, int* out, int n, int addend) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + addend;
}

__global__ void accumulate(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += in[i];
}

__global__ void produce_from_counter(int* counter, int* a, int* b, int n) {
  const int it = *counter;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    a[i] = 1000 * it + i;
    b[i] = 2000 * it + i;
  }
  __syncthreads();
  if (threadIdx.x == 0) *counter = it + 1;
}

device_ints::device_ints(int n, int fill_byte) : n_(n) {
  GMEM_CUDA_TRY(cudaMalloc(&ptr_, sizeof(int) * static_cast<std::size_t>(n)));
  GMEM_CUDA_TRY(cudaMemset(ptr_, fill_byte, sizeof(int) * static_cast<std::size_t>(n)));
}
device_ints::~device_ints() { GMEM_CUDA_TRY_NOTHROW(cudaFree(ptr_)); }
std::vector<int> device_ints::to_host() const { return copy_ints(ptr_, n_); }

std::vector<int> copy_ints(const void* src, int n) {
  std::vector<int> out(static_cast<std::size_t>(n));
  GMEM_CUDA_TRY(cudaDeviceSynchronize());
  GMEM_CUDA_TRY(cudaMemcpy(out.data(), src, sizeof(int) * out.size(), cudaMemcpyDeviceToHost));
  return out;
}

std::multiset<cudaGraphNodeType> node_types(cudaGraph_t g) {
  std::size_t n = 0;
  GMEM_CUDA_TRY(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  GMEM_CUDA_TRY(cudaGraphGetNodes(g, nodes.data(), &n));
  std::multiset<cudaGraphNodeType> types;
  for (auto node : nodes) {
    cudaGraphNodeType t{};
    GMEM_CUDA_TRY(cudaGraphNodeGetType(node, &t));
    types.insert(t);
  }
  return types;
}

std::vector<cudaGraphNode_t> dependencies_of(cudaGraphNode_t node) {
  std::size_t n = 0;
  GMEM_CUDA_TRY(cudaGraphNodeGetDependencies(node, nullptr, nullptr, &n));
  std::vector<cudaGraphNode_t> deps(n);
  if (n) GMEM_CUDA_TRY(cudaGraphNodeGetDependencies(node, deps.data(), nullptr, &n));
  return deps;
}

std::vector<cudaGraphNode_t> nodes_of_type(cudaGraph_t g, cudaGraphNodeType type) {
  std::size_t n = 0;
  GMEM_CUDA_TRY(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n), out;
  GMEM_CUDA_TRY(cudaGraphGetNodes(g, nodes.data(), &n));
  for (auto node : nodes) {
    cudaGraphNodeType t{};
    GMEM_CUDA_TRY(cudaGraphNodeGetType(node, &t));
    if (t == type) out.push_back(node);
  }
  return out;
}

cudaMemAllocNodeParams alloc_params(cudaGraphNode_t node) {
  cudaMemAllocNodeParams p{};
  GMEM_CUDA_TRY(cudaGraphMemAllocNodeGetParams(node, &p));
  return p;
}

void* free_address(cudaGraphNode_t node) {
  void* p = nullptr;
  GMEM_CUDA_TRY(cudaGraphMemFreeNodeGetParams(node, &p));
  return p;
}

bool is_capturing(cudaStream_t s) {
  cudaStreamCaptureStatus status{};
  GMEM_CUDA_TRY(cudaStreamIsCapturing(s, &status));
  return status != cudaStreamCaptureStatusNone;
}

void expect_stream_usable(cudaStream_t s) {
  device_ints out(64);
  fill_iota<<<1, 64, 0, s>>>(out.get(), 64, 5);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(out.to_host()[63], 68);
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void driver_fact(const std::string& key, const std::string& what) {
  std::printf("driver fact: %s: %s\n", key.c_str(), what.c_str());
  ::testing::Test::RecordProperty(key, what);
}

}  // namespace gmem::test
