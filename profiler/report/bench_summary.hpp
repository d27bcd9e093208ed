#pragma once
// The markdown summary of a gmem_bench run, made from its Google Benchmark JSON: mapping cost
// per GiB, its ratio to the virtual-memory floor, what an upload saves, what remaps cost, and
// the alternatives' cost and footprint. Plain C++ (no CUDA).

#include <string>

namespace gmem::profiler {

/// Builds the summary of the gmem_bench JSON `json_text` (read from `source`, named in errors).
/// Throws report_error (not_json, invalid) when the text is not a gmem_bench result.
[[nodiscard]] std::string bench_summary_markdown(const std::string& json_text,
                                                 const std::string& source);

/// Reads `path` and builds its summary. Throws report_error (missing, unreadable, not_json,
/// invalid), naming the file.
[[nodiscard]] std::string bench_summary_of_file(const std::string& path);

}  // namespace gmem::profiler
