#include <cstdio>

#include "gmem/usage_error.hpp"

namespace gmem {

std::string format_address(std::uintptr_t address) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(address));
  return buf;
}

std::string format_bytes(std::size_t bytes) {
  char buf[64];
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  if (bytes >= (std::size_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%zu B (%.1f MiB)", bytes, mib);
  } else {
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  }
  return buf;
}

}  // namespace gmem
