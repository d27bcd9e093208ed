#pragma once
// A recording as JSON text (a report's "recorded" section). JSON stays in the .cpp:
// report_json.cpp splices the text in and hands the section's text back.

#include <string>

#include "gmem/profiler/recording.hpp"

namespace gmem::profiler {

/// The "recorded" section: partial, command, pid, notes, graphs (each with its events), the
/// counter timeline, pools (high watermark, attribution, diagnostics, timeline), the sequence.
[[nodiscard]] std::string recording_to_json_text(const recording& r);

/// One bill as the "recorded" section writes it (each kind only where the recording saw it), for
/// `gmemprof show --format json`.
[[nodiscard]] std::string bill_to_json_text(const graph_bill& b);

/// Reads what recording_to_json_text wrote, and recordings of earlier gmem versions (fields
/// added since are optional). Throws std::invalid_argument whose message starts with `path`
/// and names the field that is wrong. It neither limits nesting nor escapes control
/// characters: from_json_string did both before it hands the section over.
[[nodiscard]] recording recording_from_json_text(const std::string& text, const std::string& path);

}  // namespace gmem::profiler
