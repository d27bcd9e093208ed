#include "gmem/capability.hpp"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>

#include "gmem/error.hpp"

namespace gmem {

std::optional<std::string> graph_mem_nodes_unsupported_reason(
    int driver_version, const std::function<bool()>& query_memory_pools) {
  if (driver_version < min_graph_mem_driver_version) {
    return "CUDA driver " + format_cuda_version(driver_version) +
           " is older than 11.4, the first with graph memory nodes; update the driver";
  }
  if (!query_memory_pools()) {
    return "the device does not support memory pools (cudaDevAttrMemoryPoolsSupported is 0), "
           "which graph memory nodes need";
  }
  return std::nullopt;
}

std::string format_cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

namespace {

struct availability {
  int count = 0;
  std::optional<std::string> reason;
};

const availability& probe_availability() noexcept {
  static const availability result = [] {
    availability a;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      a.reason = std::string("no usable CUDA GPU: cudaGetDeviceCount failed with ") +
                 cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
    } else if (count == 0) {
      a.reason = "no usable CUDA GPU: cudaGetDeviceCount found 0 devices";
    } else {
      a.count = count;
    }
    return a;
  }();
  return result;
}

}  // namespace

std::optional<std::string> gpu_unavailable_reason() noexcept {
  return probe_availability().reason;
}

int device_count() noexcept { return probe_availability().count; }

const device_capability& probe_device(int device) {
  if (const auto why = gpu_unavailable_reason()) throw unsupported_error("gmem: " + *why);
  const int count = device_count();
  if (device < 0 || device >= count) {
    throw usage_error("device " + std::to_string(device) + " is out of range: this machine has " +
                      std::to_string(count) + " CUDA device(s), 0.." + std::to_string(count - 1));
  }
  static std::mutex mutex;
  static std::map<int, device_capability> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(device); it != cache.end()) return it->second;

  device_capability cap;
  cap.device = device;
  const std::string ctx = "probing device " + std::to_string(device);
  GMEM_CUDA_TRY_CTX(cudaDriverGetVersion(&cap.driver_version), ctx);
  GMEM_CUDA_TRY_CTX(cudaRuntimeGetVersion(&cap.runtime_version), ctx);
  cudaDeviceProp prop{};
  GMEM_CUDA_TRY_CTX(cudaGetDeviceProperties(&prop, device), ctx);
  cap.name = prop.name;
  cap.cc_major = prop.major;
  cap.cc_minor = prop.minor;
  cap.total_memory = prop.totalGlobalMem;
  const auto reason = graph_mem_nodes_unsupported_reason(cap.driver_version, [&] {
    int pools = 0;
    GMEM_CUDA_TRY_CTX(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device),
                      ctx);
    cap.memory_pools_supported = pools != 0;
    return cap.memory_pools_supported;
  });
  cap.graph_mem_nodes_supported = !reason.has_value();
  cap.unsupported_reason = reason.value_or("");
  return cache.emplace(device, std::move(cap)).first->second;
}

void require_graph_mem_nodes(int device) {
  const device_capability& cap = probe_device(device);
  if (!cap.graph_mem_nodes_supported) {
    throw unsupported_error("gmem: device " + std::to_string(device) + " (" + cap.name +
                            ") does not support graph memory nodes: " + cap.unsupported_reason);
  }
}

bool can_access_peer(int peer, int resident) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, bool> cache;
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(peer, resident);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  int can = 0;
  GMEM_CUDA_TRY_CTX(cudaDeviceCanAccessPeer(&can, peer, resident),
                    "asking whether device " + std::to_string(peer) + " can access device " +
                        std::to_string(resident));
  return cache.emplace(key, can != 0).first->second;
}

}  // namespace gmem
