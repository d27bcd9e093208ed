#pragma once
// Errors a user of gmem can cause, caught by gmem before the driver sees them.
// Plain C++: included by the CUDA-free bookkeeping code and its host tests.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace gmem {

/// A request that the CUDA graph memory rules forbid (bad size, unknown address, double free,
/// forbidden instantiation...). The message names the object and says what to do instead.
/// Nothing was changed when it is thrown: the graph, streams and ledgers stay usable.
class usage_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Why an update of an executable graph was refused: the reasons of the driver's
/// cudaGraphExecUpdateResult that the graph-memory rules give, and one of gmem's own.
enum class update_refusal : std::uint8_t {
  topology_changed,    ///< other node count, or other dependencies of a paired node
  node_type_changed,   ///< a paired node of another type
  parameters_changed,  ///< a memory node's parameters changed (they are fixed once made)
  not_supported,       ///< parameters the driver updates on no executable graph (memory nodes)
  instantiated_elsewhere  ///< the graph holds memory nodes and has an executable graph already
};

/// An update of an executable graph (whole-graph, or of one node's parameters) that gmem
/// refuses before the driver: the message names the node and says why and what to do; node()
/// is that node's handle (a cudaGraphNode_t of the graph given to the update, 0 when no single
/// node is to blame), from_node() the other end of a dependency that does not match. The
/// executable graph is unchanged and usable.
class update_error : public usage_error {
 public:
  update_error(update_refusal reason, std::uintptr_t node, std::uintptr_t from_node,
               const std::string& message)
      : usage_error(message), reason_(reason), node_(node), from_node_(from_node) {}
  [[nodiscard]] update_refusal reason() const noexcept { return reason_; }
  [[nodiscard]] std::uintptr_t node() const noexcept { return node_; }
  [[nodiscard]] std::uintptr_t from_node() const noexcept { return from_node_; }

 private:
  update_refusal reason_;
  std::uintptr_t node_;
  std::uintptr_t from_node_;
};

/// The device or driver lacks a capability gmem needs (graph memory nodes, peer access...).
class unsupported_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Formats an address as 0x... for messages.
[[nodiscard]] std::string format_address(std::uintptr_t address);

/// Formats a byte count as "N B (x.y MiB)" for messages.
[[nodiscard]] std::string format_bytes(std::size_t bytes);

}  // namespace gmem
