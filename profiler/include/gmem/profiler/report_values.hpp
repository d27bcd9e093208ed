#pragma once
// Values the report (report.hpp) and the recording (recording.hpp) both hold.

#include <cstdint>
#include <string>

#include "gmem/profiler/model_results.hpp"

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


}  // namespace gmem::profiler
