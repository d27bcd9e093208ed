#pragma once
// Stream capture of stream-ordered allocations into a graph: begin/end on an origin stream,
// fork/join across streams through events, cudaMallocAsync / cudaMallocFromPoolAsync /
// cudaFreeAsync inside the capture.

#include <cuda_runtime_api.h>

#include <memory>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "gmem/detail/capture_tracker.hpp"
#include "gmem/detail/kernel_args.hpp"
#include "gmem/graph.hpp"
#include "gmem/handles.hpp"

namespace gmem {

class capture {
 public:
  /// Begins capturing `origin` into a graph called `name`. Throws cuda_error (for example when
  /// the stream is already capturing).
  explicit capture(cudaStream_t origin, std::string name = "captured graph",
                   cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal);
  /// Ends a capture still in progress and discards its graph; never throws.
  ~capture();
  capture(const capture&) = delete;
  capture& operator=(const capture&) = delete;
  capture(capture&&) = delete;
  capture& operator=(capture&&) = delete;

  /// Makes `other` wait for `from` (the origin by default), pulling it into the capture.
  /// Throws usage_error when `from` is not in the capture or `other` already is, cuda_error.
  void fork(cudaStream_t other, cudaStream_t from = nullptr);
  /// Makes `into` (the origin by default) wait for `other`, joining it back. Throws
  /// usage_error when `other` was not forked, cuda_error.
  void join(cudaStream_t other, cudaStream_t into = nullptr);

  /// Captures cudaMallocAsync in `s` (the origin by default). Throws usage_error for a zero
  /// size or a stream outside the capture, cuda_error if the driver refuses.
  void* malloc_async(std::size_t bytes, cudaStream_t s = nullptr);
  /// Captures cudaMallocFromPoolAsync: the alloc node records the pool's peer access as it is
  /// now. Throws as malloc_async above.
  void* malloc_async(const mem_pool& pool, std::size_t bytes, cudaStream_t s = nullptr);
  /// Captures cudaFreeAsync of `ptr` in `s` (the origin by default). The captured graph holds
  /// the free: a second free of the allocation (a free node in any graph, another capture,
  /// free_in_stream / free_now) is refused. Throws usage_error for a stream outside the capture
  /// or an allocation that already has a free (a second free of an allocation of this capture
  /// included), cuda_error.
  void free_async(void* ptr, cudaStream_t s = nullptr);

  /// Adds a kernel node running `kernel<<<grid, block, shared_bytes>>>(args...)` to the graph
  /// being captured, after the work captured so far in `s` (the origin when null), and makes
  /// the stream's later work wait for it (cudaStreamGetCaptureInfo, cudaGraphAddNode,
  /// cudaStreamUpdateCaptureDependencies). Unlike a captured launch it returns the node, which
  /// graph_exec::set_kernel takes to change the kernel's parameters on the executable graph.
  /// Throws usage_error for a stream outside the capture or a capture no longer active,
  /// cuda_error if the driver refuses.
  template <typename... Params, typename... Args>
  cudaGraphNode_t add_kernel(cudaStream_t s, void (*kernel)(Params...), dim3 grid, dim3 block,
                             unsigned int shared_bytes, Args&&... args) {
    detail::kernel_args<Params...> packed(std::forward<Args>(args)...);
    return add_kernel_raw(s, reinterpret_cast<void*>(kernel), grid, block, shared_bytes,
                          packed.get());
  }

  /// add_kernel from raw parameters (`args` as for cudaLaunchKernel).
  cudaGraphNode_t add_kernel_raw(cudaStream_t s, void* func, dim3 grid, dim3 block,
                                 unsigned int shared_bytes, void** args);

  /// Ends the capture and returns the graph. If streams forked into the capture were not
  /// joined, they are joined, the graph is discarded and usage_error names them; if the capture
  /// was invalidated, cuda_error says so. Either way every stream is out of capture mode and
  /// usable afterwards.
  graph end();

  [[nodiscard]] cudaStream_t origin() const noexcept { return origin_; }
  [[nodiscard]] bool active() const noexcept { return active_; }

 private:
  cudaStream_t resolve(cudaStream_t s) const noexcept { return s ? s : origin_; }
  void abort() noexcept;

  cudaStream_t origin_;
  bool active_ = false;
  capture_tracker tracker_;
  /// The captured graph's ledger from the start: it holds the claims of free_async.
  std::shared_ptr<graph_ledger> ledger_;
  /// The allocations malloc_async made in this capture, by address: their free is the
  /// capture's own (the ledger learns both nodes when it ends), not a free of an allocation an
  /// earlier graph made at the same address; a second free of one is refused.
  struct own_allocation {
    std::size_t bytes = 0;
    bool freed = false;
  };
  std::unordered_map<std::uintptr_t, own_allocation> allocated_;
  std::vector<event> events_;
};

}  // namespace gmem
