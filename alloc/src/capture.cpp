#include "gmem/capture.hpp"

#include <optional>

#include "gmem/detail/graph_ledger.hpp"
#include "gmem/error.hpp"

namespace gmem {
namespace {

stream_handle handle_of(cudaStream_t s) { return reinterpret_cast<stream_handle>(s); }

}  // namespace

capture::capture(cudaStream_t origin, std::string name, cudaStreamCaptureMode mode)
    : origin_(origin),
      tracker_(handle_of(origin), name),
      ledger_(std::make_shared<graph_ledger>(std::move(name))) {
  GMEM_CUDA_TRY_CTX(cudaStreamBeginCapture(origin_, mode),
                    "beginning the capture of graph '" + tracker_.graph_name() + "' on " +
                        describe_stream(origin_));
  active_ = true;
}

capture::~capture() { abort(); }

void capture::abort() noexcept {
  if (!active_) return;
  active_ = false;
  for (stream_handle s : tracker_.unjoined()) {
    // Join what is still forked so the capture can end and every stream leaves capture mode.
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) continue;
    (void)cudaEventRecord(e, reinterpret_cast<cudaStream_t>(s));
    (void)cudaStreamWaitEvent(origin_, e, 0);
    (void)cudaEventDestroy(e);
  }
  cudaGraph_t g = nullptr;
  (void)cudaStreamEndCapture(origin_, &g);
  if (g) (void)cudaGraphDestroy(g);
  (void)cudaGetLastError();
}

void capture::fork(cudaStream_t other, cudaStream_t from) {
  from = resolve(from);
  capture_tracker next = tracker_;  // validate first, commit only once the driver agreed
  next.fork(handle_of(from), handle_of(other));
  events_.emplace_back();
  events_.back().record(from);
  events_.back().wait_in(other);
  tracker_ = std::move(next);
}

void capture::join(cudaStream_t other, cudaStream_t into) {
  into = resolve(into);
  capture_tracker next = tracker_;
  next.join(handle_of(other), handle_of(into));
  events_.emplace_back();
  events_.back().record(other);
  events_.back().wait_in(into);
  tracker_ = std::move(next);
}

void* capture::malloc_async(std::size_t bytes, cudaStream_t s) {
  s = resolve(s);
  if (bytes == 0) {
    throw usage_error("capture of graph '" + tracker_.graph_name() +
                      "': cudaMallocAsync of 0 bytes; graph allocations need at least 1 byte");
  }
  tracker_.check_in_capture(handle_of(s), "cudaMallocAsync of " + format_bytes(bytes));
  void* p = nullptr;
  GMEM_CUDA_TRY_CTX(cudaMallocAsync(&p, bytes, s),
                    "capturing cudaMallocAsync of " + format_bytes(bytes) + " in " +
                        describe_stream(s) + " for graph '" + tracker_.graph_name() + "'");
  allocated_[reinterpret_cast<std::uintptr_t>(p)] = {bytes, false};
  return p;
}

void* capture::malloc_async(const mem_pool& pool, std::size_t bytes, cudaStream_t s) {
  s = resolve(s);
  if (bytes == 0) {
    throw usage_error("capture of graph '" + tracker_.graph_name() +
                      "': cudaMallocFromPoolAsync of 0 bytes; graph allocations need at least "
                      "1 byte");
  }
  tracker_.check_in_capture(handle_of(s), "cudaMallocFromPoolAsync of " + format_bytes(bytes));
  void* p = nullptr;
  GMEM_CUDA_TRY_CTX(cudaMallocFromPoolAsync(&p, bytes, pool.get(), s),
                    "capturing cudaMallocFromPoolAsync of " + format_bytes(bytes) +
                        " from the pool on device " + std::to_string(pool.device()) + " in " +
                        describe_stream(s) + " for graph '" + tracker_.graph_name() + "'");
  allocated_[reinterpret_cast<std::uintptr_t>(p)] = {bytes, false};
  return p;
}

void capture::free_async(void* ptr, cudaStream_t s) {
  s = resolve(s);
  const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(ptr);
  if (!active_ || !ledger_) {
    throw usage_error("capture of graph '" + tracker_.graph_name() + "': cudaFreeAsync of " +
                      format_address(address) + " after the capture ended; free it in a stream "
                      "(gmem::free_in_stream) or in a graph instead");
  }
  tracker_.check_in_capture(handle_of(s), "cudaFreeAsync of " + format_address(address));
  // An allocation of this capture: the driver checks its free, and the ledger learns both
  // nodes when the capture ends. Any other: claimed before the driver call, committed or given
  // back after it.
  const auto mine = allocated_.find(address);
  const bool own = mine != allocated_.end();
  if (own && mine->second.freed) {
    throw usage_error("capture of graph '" + tracker_.graph_name() +
                      "': cudaFreeAsync of the allocation of " +
                      format_bytes(mine->second.bytes) + " at " + format_address(address) +
                      ", which this capture allocated and already freed; an allocation is "
                      "freed once: remove the second cudaFreeAsync");
  }
  const std::optional<free_claim> claim =
      own ? std::nullopt : ledger_->claim_captured_free(address);
  const cudaError_t err = cudaFreeAsync(ptr, s);
  if (err != cudaSuccess) {
    if (claim) ledger_->unclaim_free(*claim);
    detail::throw_cuda_error(err, "cudaFreeAsync", __FILE__, __LINE__,
                             "capturing cudaFreeAsync of " + format_address(address) + " in " +
                                 describe_stream(s) + " for graph '" + tracker_.graph_name() +
                                 "'");
  }
  if (claim) ledger_->commit_captured_free(*claim);
  if (own) mine->second.freed = true;  // until malloc_async returns the address again
}

cudaGraphNode_t capture::add_kernel_raw(cudaStream_t s, void* func, dim3 grid, dim3 block,
                                        unsigned int shared_bytes, void** args) {
  s = resolve(s);
  const std::string what = "adding a kernel node to the capture of graph '" +
                           tracker_.graph_name() + "' in " + describe_stream(s);
  if (!active_) {
    throw usage_error(what + ": the capture has ended; add the node to the graph instead "
                             "(gmem::graph::add_kernel)");
  }
  tracker_.check_in_capture(handle_of(s), "a kernel node");
  cudaStreamCaptureStatus status{};
  cudaGraph_t g = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  std::size_t count = 0;
  GMEM_CUDA_TRY_CTX(cudaStreamGetCaptureInfo(s, &status, nullptr, &g, &deps, &edges, &count),
                    what);
  if (status != cudaStreamCaptureStatusActive) {
    throw usage_error(what + ": the capture is no longer active (an operation not permitted "
                             "while capturing invalidated it); end it and capture again");
  }
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeKernel;
  p.kernel.func = func;
  p.kernel.gridDim = grid;
  p.kernel.blockDim = block;
  p.kernel.sharedMemBytes = shared_bytes;
  p.kernel.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  GMEM_CUDA_TRY_CTX(cudaGraphAddNode(&node, g, deps, edges, count, &p), what);
  GMEM_CUDA_TRY_CTX(cudaStreamUpdateCaptureDependencies(s, &node, nullptr, 1,
                                                        cudaStreamSetCaptureDependencies),
                    what);
  return node;
}

graph capture::end() {
  if (!active_) {
    throw usage_error("capture of graph '" + tracker_.graph_name() + "' has already ended");
  }
  if (!tracker_.unjoined().empty()) {
    const std::string message = tracker_.unjoined_message();
    abort();
    throw usage_error(message);
  }
  cudaGraph_t g = nullptr;
  const cudaError_t err = cudaStreamEndCapture(origin_, &g);
  active_ = false;
  if (err != cudaSuccess) {
    if (g) (void)cudaGraphDestroy(g);
    std::string ctx = "ending the capture of graph '" + tracker_.graph_name() + "' on " +
                      describe_stream(origin_);
    if (err == cudaErrorStreamCaptureInvalidated) {
      ctx += ": the capture was invalidated by an operation not permitted while capturing (a "
             "synchronization, a synchronous allocation, or work from another stream without "
             "an event join); no graph was made and the streams are usable again";
    } else if (err == cudaErrorStreamCaptureUnjoined) {
      ctx += ": a stream forked into the capture outside gmem was not joined back; join it "
             "with an event before ending the capture";
    }
    detail::throw_cuda_error(err, "cudaStreamEndCapture", __FILE__, __LINE__, ctx);
  }
  return graph::adopt(g, std::move(ledger_));
}

}  // namespace gmem
