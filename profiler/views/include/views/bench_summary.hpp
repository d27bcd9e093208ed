#pragma once
// The markdown summary of a gmem_bench run, made from its Google Benchmark JSON: mapping cost
// per GiB, its ratio to the virtual-memory floor, what an upload saves, what remaps cost, and
// the alternatives' cost and footprint. Plain C++ (no CUDA).

#include <nlohmann/json.hpp>
#include <string>

namespace gmem::profiler {

/// Parses Google Benchmark JSON read from `source` (named in errors): non-finite numbers
/// (gmem_bench writes the cv of a constant counter as bare NaN) read as null. Throws
/// report_error not_json when it is not JSON, invalid when it has no "benchmarks" array.
[[nodiscard]] nlohmann::json parse_benchmark_json(const std::string& json_text,
                                                  const std::string& source);

/// The string member `field` of one benchmark row, or `fallback` where the row is not an object
/// or the member is absent or not a string (nlohmann's value() would throw there).
[[nodiscard]] std::string benchmark_string(const nlohmann::json& row, const char* field,
                                           const std::string& fallback);

/// The real time of a row in microseconds, from its time_unit (ns when absent, as Google
/// Benchmark's default); NaN where real_time is absent or not a number.
[[nodiscard]] double benchmark_real_time_us(const nlohmann::json& row);

/// Builds the summary of the gmem_bench JSON `json_text` (read from `source`, named in errors).
/// Throws report_error (not_json, invalid) when the text is not a gmem_bench result.
[[nodiscard]] std::string bench_summary_markdown(const std::string& json_text,
                                                 const std::string& source);

/// Reads `path` and builds its summary. Throws report_error (missing, unreadable, not_json,
/// invalid), naming the file.
[[nodiscard]] std::string bench_summary_of_file(const std::string& path);

}  // namespace gmem::profiler
