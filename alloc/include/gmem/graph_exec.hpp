#pragma once
// An owned executable graph: instantiation with the graph-memory options, upload, launch, and
// updates (of the whole graph from another graph, or of one kernel node's parameters).

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmem/detail/graph_shape.hpp"
#include "gmem/detail/kernel_args.hpp"
#include "gmem/graph.hpp"

namespace gmem {

/// How an update went: done, or refused, by gmem's checks or by the driver, with the node to
/// blame. Converts to true when the update was made.
struct update_result {
  bool updated = false;
  /// The reason, as the driver's enum (gmem's refusals mapped to the nearest:
  /// update_refusal::not_supported and instantiated_elsewhere to ErrorNotSupported).
  cudaGraphExecUpdateResult result = cudaGraphExecUpdateSuccess;
  bool refused_by_gmem = false;  ///< gmem refused before the driver was asked
  /// gmem's reason, when gmem refused.
  std::optional<update_refusal> refusal;
  cudaGraphNode_t node = nullptr;       ///< the node of the update's graph to blame, if any
  cudaGraphNode_t from_node = nullptr;  ///< the other end of a dependency that does not match
  std::string message;                  ///< names the graphs and the node; empty when updated
  [[nodiscard]] explicit operator bool() const noexcept { return updated; }
};

struct instantiate_options {
  /// cudaGraphInstantiateFlagAutoFreeOnLaunch: a relaunch frees the allocations the previous
  /// launch left unfreed.
  bool auto_free_on_launch = false;
  /// cudaGraphInstantiateFlagDeviceLaunch (forbidden for graphs with memory nodes).
  bool device_launch = false;
  /// cudaGraphInstantiateFlagUseNodePriority.
  bool use_node_priority = false;
  /// cudaGraphInstantiateFlagUpload into this stream: the physical memory is mapped during
  /// instantiation instead of at the first launch.
  std::optional<cudaStream_t> upload_stream;
};

class graph_exec {
 public:
  /// Instantiates `g`. Checks the graph-memory rules first (usage_error: device launch with
  /// memory nodes, AutoFreeOnLaunch with device launch, a second executable graph of a graph
  /// with memory nodes), then throws cuda_error if the driver refuses.
  graph_exec(const graph& g, const instantiate_options& options = {});
  ~graph_exec();
  graph_exec(graph_exec&& other) noexcept;
  graph_exec& operator=(graph_exec&& other) noexcept;
  graph_exec(const graph_exec&) = delete;
  graph_exec& operator=(const graph_exec&) = delete;

  [[nodiscard]] cudaGraphExec_t get() const noexcept { return handle_; }
  /// The name of the graph it was instantiated from, or last updated with.
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const instantiate_options& options() const noexcept { return options_; }
  /// The allocations each launch leaves for someone else to free.
  [[nodiscard]] const std::vector<alloc_record>& unfreed() const noexcept { return unfreed_; }

  /// Maps the graph's memory ahead of launch and binds it to `s` (cudaGraphUpload).
  /// Throws cuda_error.
  void upload(cudaStream_t s);

  /// Launches into `s`. When the driver refuses a relaunch because the previous launch left
  /// allocations unfreed, the cuda_error names them and says how to free them.
  void launch(cudaStream_t s);

  [[nodiscard]] int launch_count() const noexcept { return launches_; }

  /// Updates the executable graph with the parameters of `g` (cudaGraphExecUpdate), which must
  /// have its topology; the next launch runs them. When either graph holds memory nodes, gmem
  /// checks first (update_error naming the node of `g`): `g` is not instantiated as another
  /// executable graph; node counts, node kinds and dependencies match, nodes paired in creation
  /// order; alloc nodes ask for the same size, device and peers, and the same free nodes free
  /// them. After the update the executable graph counts as `g`'s (for a graph with memory
  /// nodes, the one it may have: `g` cannot be instantiated again while it lives, the graph it
  /// came from can), and name() and unfreed() are `g`'s. When the driver refuses, throws
  /// cuda_error (cudaErrorGraphExecUpdateFailure) naming the node and the driver's reason.
  /// Either way a refused update changes nothing.
  void update(const graph& g);

  /// update() that reports a refusal instead of throwing it, for code that re-instantiates
  /// when an update is refused. Throws usage_error for an empty graph or executable graph,
  /// cuda_error for a failure other than a refusal (reading `g`).
  [[nodiscard]] update_result try_update(const graph& g);

  /// Sets kernel node `node` to run `kernel<<<grid, block, shared_bytes>>>(args...)` from the
  /// next launch on (cudaGraphExecKernelNodeSetParams); `node` is the node of the graph it was
  /// instantiated from. Throws update_error when `node` is not a kernel node (memory nodes'
  /// parameters are fixed), cuda_error naming the node if the driver refuses.
  template <typename... Params, typename... Args>
  void set_kernel(cudaGraphNode_t node, void (*kernel)(Params...), dim3 grid, dim3 block,
                  unsigned int shared_bytes, Args&&... args) {
    detail::kernel_args<Params...> packed(std::forward<Args>(args)...);
    set_kernel_raw(node, reinterpret_cast<void*>(kernel), grid, block, shared_bytes,
                   packed.get());
  }

  /// set_kernel from raw parameters (`args` as for cudaLaunchKernel).
  void set_kernel_raw(cudaGraphNode_t node, void* func, dim3 grid, dim3 block,
                      unsigned int shared_bytes, void** args);

  /// Sets the parameters of `node` from the next launch on (cudaGraphExecNodeSetParams; the
  /// driver says which changes each kind allows). Throws update_error for an alloc or free node
  /// (the driver supports no update of them) or parameters of another kind than the node's,
  /// cuda_error naming the node if the driver refuses.
  void set_node_params(cudaGraphNode_t node, cudaGraphNodeParams& params);

 private:
  void release() noexcept;
  /// The checks of update() for graphs with memory nodes; reads `g` into `next`.
  [[nodiscard]] std::optional<update_mismatch> check_update(const graph& g,
                                                            std::unique_ptr<graph_shape>& next);
  /// Takes `g` as the graph this executable graph now comes from.
  void adopt_source(const graph& g, std::unique_ptr<graph_shape> shape);

  cudaGraphExec_t handle_ = nullptr;
  std::shared_ptr<graph_ledger> ledger_;
  std::string name_;
  instantiate_options options_;
  std::vector<alloc_record> unfreed_;
  int launches_ = 0;
  /// The graph it came from (valid while ledger_->graph_alive()), and its shape once read:
  /// at the first update with memory nodes, then from each update's graph.
  cudaGraph_t source_ = nullptr;
  std::unique_ptr<graph_shape> shape_;
};

}  // namespace gmem
