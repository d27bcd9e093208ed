#include "gmem/profiler/size_text.hpp"

#include <cstdio>

namespace gmem::profiler {

std::string size_text(std::uint64_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    // Three significant digits; a value that rounds up to 1024 is written in the next unit.
    const char* fmt = v >= 99.95 ? "%.0f %s" : v >= 9.995 ? "%.1f %s" : "%.2f %s";
    if (v >= 1023.5 && u + 1 < sizeof units / sizeof units[0]) {
      v /= 1024;
      ++u;
      fmt = "%.2f %s";
    }
    std::snprintf(buf, sizeof buf, fmt, v, units[u]);
  }
  return buf;
}

std::string duration_text(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us >= 1000 ? "%.1f ms" : "%.0f us", us >= 1000 ? us / 1000 : us);
  return buf;
}

std::string signed_size_text(std::int64_t bytes) {
  if (bytes == 0) return "0 B";
  const std::uint64_t magnitude = bytes < 0 ? static_cast<std::uint64_t>(-(bytes + 1)) + 1 : static_cast<std::uint64_t>(bytes);
  return (bytes < 0 ? "-" : "+") + size_text(magnitude);
}

}  // namespace gmem::profiler
