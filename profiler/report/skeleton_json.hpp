#pragma once
// A skeleton as JSON (the "skeletons" section of a scenario in a report). Only the report code's
// .cpp files see nlohmann's types (this header declares them, json_fwd).

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "gmem/profiler/skeleton.hpp"

namespace gmem::profiler {

/// {"graph": name, "nodes": [{"kind", "bytes", "device", "peers", "frees", "deps", "label"}],
///  "late_edges": [[from, to], ...]}; alloc-only and free-only fields are left out elsewhere. A
/// label of the recorder's form, "<word> node #<index> in graph '<graph>'", is written as
/// "node": "<word>" (a report of 2000 graphs carried 24,000 of them).
[[nodiscard]] nlohmann::ordered_json skeleton_to_json(const skeleton& s);
[[nodiscard]] std::string skeleton_to_json_text(const skeleton& s);

/// Whether the two skeletons have one shape: skeleton_to_json gives them the same JSON but for the
/// graph's name and the alloc nodes' "bytes" (what a recording's shared shapes leave out), made
/// without the JSON. shape_hash is equal for skeletons of one shape.
[[nodiscard]] bool same_shape(const skeleton& a, const skeleton& b);
[[nodiscard]] std::uint64_t shape_hash(const skeleton& s);

/// Reads what skeleton_to_json wrote, and validates the skeleton. Throws std::invalid_argument
/// whose message starts with `path` and names the field that is wrong.
[[nodiscard]] skeleton skeleton_from_json(const nlohmann::ordered_json& j, const std::string& path);
[[nodiscard]] skeleton skeleton_from_json_text(const std::string& text, const std::string& path);

/// The words of a shared shape's labels of the recorder's form, by node ("" where the shape gives
/// a label of its own or none): what skeleton_of_shape sets for each graph.
[[nodiscard]] std::vector<std::string> shape_label_words(const nlohmann::ordered_json& shape);

/// `first` with the labels that `words` makes for each graph emptied, for skeleton_of_shape.
[[nodiscard]] skeleton blank_word_labels(skeleton first, const std::vector<std::string>& words);

/// What skeleton_from_json reads from a shared shape made whole for another graph (the shape with
/// "graph": `graph` and each alloc node's "bytes" the next of `bytes`, in node order), made from
/// `first`, the shape's skeleton as skeleton_from_json read it for a graph before: its name, sizes
/// and the labels of the shape's `words` (shape_label_words) set for this graph. No JSON is copied
/// or read again: a recording's 2000 graphs of one 331-node shape spent most of `gmemprof show` so.
/// Pass `first` with the labels of `words` empty (blank_word_labels): they are made anew here, and
/// copying them first took a third of reading such a recording.
/// Throws std::invalid_argument as skeleton_from_json does, naming the field under `path`; `bytes`
/// must hold as many sizes as the shape has alloc nodes (the caller checks).
[[nodiscard]] skeleton skeleton_of_shape(const skeleton& first, const std::vector<std::string>& words,
                                         const nlohmann::ordered_json& graph, const nlohmann::ordered_json& bytes,
                                         const std::string& path);

}  // namespace gmem::profiler
