#pragma once
// An owned executable graph: instantiation with the graph-memory options, upload, launch.

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmem/graph.hpp"

namespace gmem {

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

 private:
  void release() noexcept;

  cudaGraphExec_t handle_ = nullptr;
  std::shared_ptr<graph_ledger> ledger_;
  std::string name_;
  instantiate_options options_;
  std::vector<alloc_record> unfreed_;
  int launches_ = 0;
};

}  // namespace gmem
