// The one way gmem reads a report's fields (suite reports, recordings, skeletons, their shared
// tables): each accessor takes the field's JSON path ("scenarios[3].analysis.peak_bytes"), and
// every problem is a field_error that names that path and says what the value must be. The file's
// reader (report_json.cpp) turns a field_error into a report_error that names the file and says
// what to do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gmem::profiler::fields {

using json = nlohmann::ordered_json;

/// A field of a report that is missing or has the wrong type or value. what(): "PATH PROBLEM".
class field_error : public std::invalid_argument {
 public:
  field_error(const std::string& path, const std::string& problem);
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

[[noreturn]] void fail(const std::string& path, const std::string& problem);

/// "a.b" ("b" at the top level), "a[3]".
[[nodiscard]] std::string join(const std::string& path, const char* key);
[[nodiscard]] std::string at(const std::string& path, std::size_t index);
/// How a message names a value: "1025", "the negative integer -3", "the number 1.5", "a string",
/// "an object", "null".
[[nodiscard]] std::string kind_of(const json& j);

/// Whether a field must be there (its absence is an error) or may be left out (a default).
enum class presence { required, optional };
inline constexpr presence required = presence::required;
inline constexpr presence optional = presence::optional;

/// The field, or nullptr.
[[nodiscard]] const json* find(const json& object, const char* key);
/// The field; missing is an error.
const json& need(const json& object, const char* key, const std::string& path);
const json& object(const json& parent, const char* key, const std::string& path);
/// An optional object: nullptr where absent.
const json* optional_object(const json& parent, const char* key, const std::string& path);
/// An absent optional array reads as empty.
const json& array(const json& parent, const char* key, const std::string& path, presence p = required);
/// Element `i` of `array_`, which must be an object (`path` is the array's).
const json& object_at(const json& array_, std::size_t i, const std::string& path);
/// An optional boolean: `fallback` where absent.
bool flag(const json& parent, const char* key, const std::string& path, bool fallback = false);
/// An absent optional string reads as `fallback`.
std::string text(const json& parent, const char* key, const std::string& path, presence p = required,
                 const std::string& fallback = "");
/// A non-empty string (names that key a scenario, a phase or a diagnostic).
std::string name(const json& parent, const char* key, const std::string& path);
/// Integers; absent optional ones read as 0.
std::uint64_t u64(const json& parent, const char* key, const std::string& path, presence p = required);
std::int64_t i64(const json& parent, const char* key, const std::string& path, presence p = required);
std::size_t size(const json& parent, const char* key, const std::string& path);
/// An int >= 0 (device indexes and counts, CUDA versions).
int integer(const json& parent, const char* key, const std::string& path, presence p = required);
/// A number; null (how a value that is not finite is written) reads as NaN.
double real(const json& parent, const char* key, const std::string& path);
/// A time in microseconds: a finite number >= 0 (a negative or non-finite time was not
/// measured). Absent optional ones read as 0.
double time_us(const json& parent, const char* key, const std::string& path, presence p = required);
/// A JSON integer as int64 (nullopt: not an integer, or beyond int64).
[[nodiscard]] std::optional<std::int64_t> as_int64(const json& j);
/// Device indexes (0 to 1024) and strings: an absent array reads as empty.
std::vector<int> devices(const json& parent, const char* key, const std::string& path);
std::vector<std::string> strings(const json& parent, const char* key, const std::string& path);
/// A node index (an unsigned integer) at `path`.
std::size_t index(const json& j, const std::string& path);

}  // namespace gmem::profiler::fields
