#pragma once
// How long each node of a graph runs on the GPU (the launch-time price of advice),
// from CUPTI's kernel, memset and copy activity records, which carry the executable graph's
// node id. CUPTI is
// loaded at run time (dlopen): a process without it gets no durations and a reason, nothing
// else changes.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gmem::profiler {

struct node_durations {
  /// Per node of the graph itself (cudaGraphGetNodes order, as read_graph reads them): the
  /// median over the launches of the GPU time of the kernel, memset or copy it ran; 0 for
  /// nodes that ran none (memory nodes, empty nodes).
  std::vector<double> top_level_us;
  std::size_t kernel_records = 0;  ///< kernel records of the measured launches
  /// Records of nodes inside child graphs: not placed (the executable graph numbers them after
  /// its own nodes; measured, README), so they weigh 0 in the critical path.
  std::size_t unplaced_records = 0;
  int launches = 0;
};

/// Instantiates `g` on `device` (with AutoFreeOnLaunch when `unfreed` is not empty, freeing those
/// addresses after the last launch), launches it `launches` times with CUPTI's concurrent-kernel
/// activity enabled, and destroys the executable graph. The graph must have no other executable
/// graph if it holds memory nodes. Returns nullopt and says why in `why` when CUPTI cannot be
/// loaded or refuses (another tool owns its activity buffers). Throws cuda_error when a CUDA
/// call fails.
[[nodiscard]] std::optional<node_durations> measure_node_durations(
    cudaGraph_t g, int device, const std::vector<void*>& unfreed, std::string& why, int launches = 3);

}  // namespace gmem::profiler
