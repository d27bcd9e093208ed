#pragma once
// Values the report (report.hpp) and the recording (recording.hpp) both hold.

#include <cstdint>
#include <string>

namespace gmem::profiler {

/// The four cudaGraphMemAttr counters at one moment.
struct counters {
  std::uint64_t used_current = 0;
  std::uint64_t used_high = 0;
  std::uint64_t reserved_current = 0;
  std::uint64_t reserved_high = 0;
};

inline bool operator==(const counters& a, const counters& b) {
  return a.used_current == b.used_current && a.used_high == b.used_high &&
         a.reserved_current == b.reserved_current && a.reserved_high == b.reserved_high;
}
inline bool operator!=(const counters& a, const counters& b) { return !(a == b); }

struct diagnostic {
  std::string code;      ///< stable identifier, e.g. "unfreed_allocation"
  std::string severity;  ///< "info", "warning"
  std::string message;   ///< words a user can act on
  std::uint64_t bytes = 0;  ///< memory involved (excess or unfreed), 0 when not applicable
};

}  // namespace gmem::profiler
