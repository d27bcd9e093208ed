#pragma once
// A skeleton as JSON text (the "skeletons" section of a scenario in a report). JSON stays in the
// .cpp: report_json.cpp splices the text in and hands the section's text back.

#include <string>

#include "gmem/profiler/skeleton.hpp"

namespace gmem::profiler {

/// {"graph": name, "nodes": [{"kind", "bytes", "device", "peers", "frees", "deps", "label"}],
///  "late_edges": [[from, to], ...]}; alloc-only and free-only fields are left out elsewhere.
[[nodiscard]] std::string skeleton_to_json_text(const skeleton& s);

/// Reads what skeleton_to_json_text wrote, and validates the skeleton. Throws
/// std::invalid_argument whose message starts with `path` and names the field that is wrong.
[[nodiscard]] skeleton skeleton_from_json_text(const std::string& text, const std::string& path);

}  // namespace gmem::profiler
