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
