#pragma once
// Shared pieces of the GPU tests: fixtures that skip loudly without a GPU, small kernels, and
// a device buffer for results that outlive the graph allocations.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "gmem/gmem.hpp"

namespace gmem::test {

/// Skips (with the reason) unless device 0 exists and supports graph memory nodes.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
};

/// Also skips unless a second GPU exists.
class PeerTest : public GpuTest {
 protected:
  void SetUp() override;
};

// p[i] = base + i
__global__ void fill_iota(int* p, int n, int base);
// out[i] = in[i] * factor
__global__ void scale_into(const int* in, int* out, int n, int factor);
// out[i] = in[i] + addend
__global__ void add_into(const int* in, int* out, int n, int addend);
// out[i] += in[i]
__global__ void accumulate(const int* in, int* out, int n);
// One block: a[i] = 1000 * (*counter) + i, b[i] = 2000 * (*counter) + i, then ++*counter.
__global__ void produce_from_counter(int* counter, int* a, int* b, int n);

/// Blocks for `n` threads in blocks of 128.
inline dim3 blocks_for(int n) { return dim3(static_cast<unsigned>((n + 127) / 128)); }
inline dim3 threads() { return dim3(128); }

/// A cudaMalloc'd array of ints (ordinary memory, not graph memory).
class device_ints {
 public:
  explicit device_ints(int n, int fill_byte = 0);
  ~device_ints();
  device_ints(const device_ints&) = delete;
  device_ints& operator=(const device_ints&) = delete;
  [[nodiscard]] int* get() const noexcept { return ptr_; }
  [[nodiscard]] std::vector<int> to_host() const;

 private:
  int* ptr_ = nullptr;
  int n_ = 0;
};

/// Copies n ints from device memory to the host (synchronous).
std::vector<int> copy_ints(const void* src, int n);

/// The types of the top-level nodes of `g`, counted.
std::multiset<cudaGraphNodeType> node_types(cudaGraph_t g);

/// The dependencies of `node`.
std::vector<cudaGraphNode_t> dependencies_of(cudaGraphNode_t node);

/// The nodes of type `type` at the top level of `g`.
std::vector<cudaGraphNode_t> nodes_of_type(cudaGraph_t g, cudaGraphNodeType type);

/// Reads an alloc node's parameters back from the driver.
cudaMemAllocNodeParams alloc_params(cudaGraphNode_t node);

/// Reads a free node's address back from the driver.
void* free_address(cudaGraphNode_t node);

/// Whether `s` is capturing (cudaStreamIsCapturing).
bool is_capturing(cudaStream_t s);

/// Runs a tiny kernel in `s` and waits for it: the stream is usable.
void expect_stream_usable(cudaStream_t s);

/// The update_error `f` throws (a test failure, and an empty error, when it throws none).
template <typename F>
update_error update_error_of(F&& f) {
  try {
    f();
  } catch (const update_error& e) {
    return e;
  }
  ADD_FAILURE() << "no update_error";
  return update_error(update_refusal::topology_changed, 0, 0, "");
}

/// A node's handle as gmem's errors carry it.
inline node_handle handle(cudaGraphNode_t node) { return reinterpret_cast<node_handle>(node); }

/// Polls `condition` every millisecond until it holds or `limit` passed; says whether it held.
/// For what the driver does later on a thread of its own (a user object's destructor).
bool eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds limit = std::chrono::seconds(5));

/// Prints "driver fact: <what>" and records it as a property of the test (in the XML of
/// --gtest_output): what the driver did where the documentation does not say.
void driver_fact(const std::string& key, const std::string& what);

}  // namespace gmem::test
