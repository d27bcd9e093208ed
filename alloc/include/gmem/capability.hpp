#pragma once
// What the machine can do: GPUs present, driver and runtime versions, graph memory node
// support. Probes are made once and cached. This header is plain C++.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace gmem {

/// Graph memory nodes need CUDA driver 11.4 (and a device with memory pools).
inline constexpr int min_graph_mem_driver_version = 11040;

struct device_capability {
  int device = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  std::size_t total_memory = 0;
  int driver_version = 0;   ///< e.g. 13000 for CUDA 13.0
  int runtime_version = 0;  ///< the CUDA runtime linked into gmem
  bool memory_pools_supported = false;
  bool graph_mem_nodes_supported = false;
  std::string unsupported_reason;  ///< empty when graph memory nodes are supported
};

/// The support rule of the CUDA Programming Guide: the driver version is checked first and
/// `query_memory_pools` (cudaDevAttrMemoryPoolsSupported) is only called on a driver >= 11.4,
/// so that old drivers are never asked for an attribute they do not know. Returns the reason
/// graph memory nodes are unsupported, or nothing when they are supported.
[[nodiscard]] std::optional<std::string> graph_mem_nodes_unsupported_reason(
    int driver_version, const std::function<bool()>& query_memory_pools);

/// Why no CUDA GPU can be used here (no driver, no device...), or nothing when one can.
/// Cached after the first call. Never throws.
[[nodiscard]] std::optional<std::string> gpu_unavailable_reason() noexcept;

/// The number of CUDA devices, 0 when none can be used. Never throws.
[[nodiscard]] int device_count() noexcept;

/// Probes `device` once and caches the answer. Throws usage_error for a device out of range,
/// unsupported_error when no GPU can be used, cuda_error when a query fails.
[[nodiscard]] const device_capability& probe_device(int device);

/// Throws unsupported_error (naming the device and the reason) unless `device` supports
/// graph memory nodes.
void require_graph_mem_nodes(int device);

/// Whether `peer` can access memory resident on `resident` (cudaDeviceCanAccessPeer), cached.
/// Throws cuda_error.
[[nodiscard]] bool can_access_peer(int peer, int resident);

/// Formats a CUDA version number (12040) as "12.4".
[[nodiscard]] std::string format_cuda_version(int version);

}  // namespace gmem
