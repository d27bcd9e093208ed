#pragma once
// A recording as JSON (a report's "recorded" section). Only the report code's .cpp files see
// nlohmann's types (this header declares them, json_fwd).

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "gmem/profiler/parallel_for.hpp"
#include "gmem/profiler/recording.hpp"

namespace gmem::profiler {

/// The "recorded" section: partial, command, pid, notes, graphs (each with its events), the
/// counter timeline, pools (high watermark, attribution, diagnostics, timeline), the sequence.
/// Instantiation stacks are written once each, in "stacks", and graphs name theirs by index.
[[nodiscard]] nlohmann::ordered_json recording_to_json(const recording& r, const for_each_index& each = {});
[[nodiscard]] std::string recording_to_json_text(const recording& r);

/// A written report's compact form of the "recorded" section that recording_to_json made: the
/// values every graph of a site shares move out of its graphs into "site_fields" (the reader puts
/// them back). Not for the page, whose script reads each graph's own values.
void share_site_fields(nlohmann::ordered_json& recorded);

/// One bill as the "recorded" section writes it (each kind only where the recording saw it), for
/// `gmemprof show --format json`.
[[nodiscard]] std::string bill_to_json_text(const graph_bill& b);

/// Reads what recording_to_json wrote, and recordings of earlier gmem versions (fields
/// added since are optional). Throws std::invalid_argument whose message starts with `path`
/// and names the field that is wrong. It neither limits nesting nor escapes control
/// characters: from_json_string did both before it hands the section over. `each`, where given,
/// reads the graphs, the counter points and the calls in runs on its threads; the recording, and
/// the first error a reading in order meets, are the same.
[[nodiscard]] recording recording_from_json(const nlohmann::ordered_json& j, const std::string& path,
                                            const for_each_index& each = {});
[[nodiscard]] recording recording_from_json_text(const std::string& text, const std::string& path);

}  // namespace gmem::profiler
