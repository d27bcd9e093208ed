#include "gmem/alloc_request.hpp"

#include <algorithm>
#include <string>

#include "gmem/usage_error.hpp"

namespace gmem {

std::vector<int> validate_alloc_request(const alloc_request& request, int device_count,
                                        const peer_access_query& can_access_peer,
                                        const std::string& graph_name) {
  // Messages are built only on failure: this runs for every alloc node.
  const auto where = [&graph_name] { return "alloc node in graph '" + graph_name + "'"; };
  if (request.bytes == 0) {
    throw usage_error(where() + ": a zero-byte allocation was requested on device " +
                      std::to_string(request.device) +
                      "; graph memory nodes need at least 1 byte: skip the node or ask for a "
                      "positive size");
  }
  if (device_count <= 0) {
    throw usage_error(where() + ": no CUDA device is available for an allocation of " +
                      format_bytes(request.bytes));
  }
  const auto range = [device_count] {
    return "valid devices are 0.." + std::to_string(device_count - 1);
  };
  if (request.device < 0 || request.device >= device_count) {
    throw usage_error(where() + ": resident device " + std::to_string(request.device) +
                      " is out of range for an allocation of " + format_bytes(request.bytes) +
                      " (" + range() + ")");
  }
  std::vector<int> peers;
  peers.reserve(request.peers.size());
  for (int peer : request.peers) {
    if (peer < 0 || peer >= device_count) {
      throw usage_error(where() + ": peer device " + std::to_string(peer) +
                        " is out of range for an allocation of " + format_bytes(request.bytes) +
                        " resident on device " + std::to_string(request.device) + " (" + range() +
                        ")");
    }
    if (peer == request.device) {
      continue;  // the resident device always has access; describing it adds nothing
    }
    if (std::find(peers.begin(), peers.end(), peer) != peers.end()) {
      throw usage_error(where() + ": peer device " + std::to_string(peer) +
                        " is listed twice; give each peer once");
    }
    if (!can_access_peer(peer, request.device)) {
      throw usage_error(where() + ": device " + std::to_string(peer) +
                        " cannot access memory resident on device " +
                        std::to_string(request.device) + " (cudaDeviceCanAccessPeer is 0), so "
                        "it cannot be given access to an allocation of " +
                        format_bytes(request.bytes) +
                        "; drop it from the peers or place the allocation on a device it can "
                        "reach");
    }
    peers.push_back(peer);
  }
  return peers;
}

}  // namespace gmem
