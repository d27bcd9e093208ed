#pragma once
// What one graph allocation asks for, and the checks gmem makes before the driver sees it.
// Plain C++ (no CUDA): the rules are tested on machines without a GPU.

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace gmem {

/// The memory type of a graph allocation. Graph memory nodes support pinned device memory
/// (cudaMemAllocationTypePinned) only.
enum class memory_type { pinned };

/// One graph allocation: its size, resident device, memory type and the peer devices that get
/// read-write access (the resident device always has access and needs no entry).
struct alloc_request {
  alloc_request() = default;
  alloc_request(std::size_t bytes_, int device_ = 0, std::vector<int> peers_ = {},
                memory_type type_ = memory_type::pinned)
      : bytes(bytes_), device(device_), peers(std::move(peers_)), type(type_) {}

  std::size_t bytes = 0;
  int device = 0;
  std::vector<int> peers;
  memory_type type = memory_type::pinned;
};

/// Answers "can device `peer` access memory resident on device `resident`?".
using peer_access_query = std::function<bool(int peer, int resident)>;

/// Checks `request` for graph `graph_name` against a machine of `device_count` devices.
/// Throws usage_error for a zero-byte request, a device or peer out of range, a repeated peer,
/// or a peer that cannot access the resident device. Returns the peers to describe, in order,
/// without the resident device (listing it is harmless and dropped).
[[nodiscard]] std::vector<int> validate_alloc_request(const alloc_request& request,
                                                      int device_count,
                                                      const peer_access_query& can_access_peer,
                                                      const std::string& graph_name);

/// True for the common request that validate_alloc_request would pass with no peers to
/// describe: some bytes on a device in range, no peers. Inline, for every alloc node.
[[nodiscard]] inline bool is_plain_request(const alloc_request& request, int device_count) {
  return request.peers.empty() && request.bytes > 0 && request.device >= 0 &&
         request.device < device_count;
}

}  // namespace gmem
