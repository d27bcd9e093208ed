#pragma once
// One way to write a size in every view: binary units, three significant digits, the unit that
// reads best ("0 B", "512 KiB", "32.0 MiB", "796 MiB", "1.16 GiB"). Exact bytes belong in JSON.
// Plain C++.

#include <cstdint>
#include <string>

namespace gmem::profiler {

/// `bytes` in the unit that keeps it below 1024 (B, KiB, MiB, GiB, TiB), three significant
/// digits. Throws nothing but std::bad_alloc.
[[nodiscard]] std::string size_text(std::uint64_t bytes);
/// The same with a sign ("+32.0 MiB", "-2.00 MiB", "0 B").
[[nodiscard]] std::string signed_size_text(std::int64_t bytes);
/// A host time given in microseconds: "25 us" below a millisecond, else "1.4 ms".
[[nodiscard]] std::string duration_text(double us);

}  // namespace gmem::profiler
