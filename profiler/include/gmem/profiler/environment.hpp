#pragma once
// The machine a report was measured on, and the driver's reservation granularity, measured.

#include <cstdint>
#include <string>

#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

struct granularity_measurement {
  std::uint64_t bytes = 0;
  std::string method;
};

/// Measures how much graph memory the driver reserves for the smallest allocation: trims the
/// pool, maps one 1-byte graph allocation, and reads the growth of ReservedMemCurrent.
/// Leaves the pool trimmed. Throws cuda_error.
[[nodiscard]] granularity_measurement measure_granularity(int device);

/// The kernel driver release ("580.159.04") from /proc/driver/nvidia/version, or "".
[[nodiscard]] std::string driver_release();

/// Describes `device` (name, CC, memory, versions), the tool and the run; measures the
/// granularity. Throws usage_error for a device out of range, cuda_error otherwise.
[[nodiscard]] environment collect_environment(int device, const std::string& command_line);

/// The current time in ISO 8601, UTC ("2026-11-22T02:30:00Z").
[[nodiscard]] std::string utc_now();

}  // namespace gmem::profiler
