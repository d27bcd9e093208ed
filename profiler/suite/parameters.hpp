#pragma once
// Scenario parameters: what each scenario takes, with its default and range, and the
// values of `gmemprof run --set NAME=VALUE` parsed and checked against them. Plain C++ (no CUDA):
// tested on the host.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gmem::profiler {

/// size: bytes (units B, KiB, MiB, GiB, TiB); count: a whole number; flag: true or false.
enum class param_kind { size, count, flag };

/// "size", "count" or "flag".
[[nodiscard]] const char* to_string(param_kind k) noexcept;

/// One parameter a scenario declares.
struct param_spec {
  std::string name;
  param_kind kind = param_kind::count;
  /// One value, or several that the scenario runs in turn (a sweep, e.g. single_alloc's sizes);
  /// --set replaces them with the one value given. A flag is 1 (true) or 0 (false).
  std::vector<std::uint64_t> defaults;
  std::uint64_t min = 0;  ///< the smallest value --set may give (inclusive)
  std::uint64_t max = 0;  ///< the largest (inclusive)
  std::string meaning;    ///< one line: what it sets
};

/// The values a scenario runs with: each declared parameter's defaults, or the one value --set
/// gave it.
class scenario_parameters {
 public:
  void set(const std::string& name, std::vector<std::uint64_t> values);
  /// Every value of `name` (several only for a sweep left at its defaults). Throws
  /// std::logic_error naming the parameter when it was never set (a scenario reading a
  /// parameter it did not declare: a bug in the suite).
  [[nodiscard]] const std::vector<std::uint64_t>& values(const std::string& name) const;
  /// The one value of `name`. Throws std::logic_error when it has none or several.
  [[nodiscard]] std::uint64_t get(const std::string& name) const;
  /// get() as an int (counts' ranges keep them far below INT_MAX; checked).
  [[nodiscard]] int count(const std::string& name) const;
  [[nodiscard]] bool flag(const std::string& name) const { return get(name) != 0; }
  [[nodiscard]] bool has(const std::string& name) const { return values_.count(name) != 0; }

 private:
  std::map<std::string, std::vector<std::uint64_t>> values_;
};

/// The largest value a size or count may have before any range check: what a report's
/// parameter (a signed 64-bit integer) holds, 2^63 - 1.
inline constexpr std::uint64_t max_param_value = (std::uint64_t{1} << 63) - 1;

/// Parses a size: a whole number of bytes ("4096"), or a number with a unit B, KiB, MiB, GiB or
/// TiB, powers of 1024, case-insensitive, optionally after spaces ("64MiB", "64 MiB",
/// "1.5GiB"; a fraction must come to a whole number of bytes). KB, MB, GB, TB, K, M, G and T
/// are refused as ambiguous (powers of 1000 or of 1024?). Throws std::invalid_argument saying
/// what is wrong (empty, negative, malformed, unknown or ambiguous unit, not a whole number of
/// bytes, more than 2^63 - 1).
[[nodiscard]] std::uint64_t parse_size(const std::string& text);

/// Parses a count: a whole number without sign or unit, at most 2^63 - 1. Throws
/// std::invalid_argument saying what is wrong.
[[nodiscard]] std::uint64_t parse_count(const std::string& text);

/// Parses a flag: true, false, 1 or 0 (case-insensitive). Throws std::invalid_argument.
[[nodiscard]] bool parse_flag(const std::string& text);

/// Parses `text` as a value of `kind` (a flag as 1 or 0).
[[nodiscard]] std::uint64_t parse_param(param_kind kind, const std::string& text);

/// A value as --set would take it back: sizes in the largest unit that divides them exactly
/// ("2MiB", "1536MiB", "1000B"), counts as numbers, flags as true / false.
[[nodiscard]] std::string format_param_value(param_kind kind, std::uint64_t value);

/// What a value of `kind` looks like, for error messages.
[[nodiscard]] std::string accepted_values(param_kind kind);

/// One line for `gmemprof run --list`: "bytes=2MiB  size, 1B to 1TiB: each allocation's size";
/// a sweep's defaults are listed with "in turn".
[[nodiscard]] std::string describe(const param_spec& spec);

}  // namespace gmem::profiler
