#pragma once
// What `gmemprof info` says about the machine. The text is built from plain data so that it is
// tested without a GPU.

#include <iosfwd>
#include <optional>
#include <string>

#include "gmem/capability.hpp"

namespace gmem::profiler {

/// "gmem 0.1.0 (commit abc123)".
[[nodiscard]] std::string tool_version();

/// Several lines describing one device: name, compute capability, memory, driver and runtime
/// versions, and whether graph memory nodes are supported (with the reason when not).
[[nodiscard]] std::string describe_device(const device_capability& cap);

/// Writes the `info` report for `device` (every device when empty) to `out`. Without a GPU it
/// writes one line saying so and returns 3 (gmemprof's exit status for no usable GPU); a device out of range is reported on `err` with
/// the valid range, returning 2. Throws cuda_error when a present device cannot be probed.
int run_info(std::ostream& out, std::ostream& err, std::optional<int> device);

}  // namespace gmem::profiler
