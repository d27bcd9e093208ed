// JSON text to an nlohmann::ordered_json tree without deep copies. nlohmann's ordered_map keeps
// its members in a std::vector<std::pair<const std::string, json>>: a pair with a const key cannot
// be moved without the risk of an exception, so each time an object's vector grows, every member
// it already holds is copied whole. json::parse builds each object member by member, so in a
// recording whose `recorded` object holds the graphs, the counter timeline and the call sequence
// before its seventeenth key, all of them were copied once while it was read.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "gmem/profiler/parallel_for.hpp"

namespace gmem::profiler {

/// The tree json::parse(text) gives, with the same exceptions for text that is not JSON
/// (json::parse_error; json::out_of_range for a number beyond a double); each object's members
/// are gathered first and moved into it at its end, with the room they need.
[[nodiscard]] nlohmann::ordered_json parse_json_tree(const std::string& text);

/// The same tree, the same exceptions, with the text's large arrays parsed in pieces (of 1/16 of `split_from_bytes` or more) through
/// `each`: a recording's graphs, calls and counter points are most of its text, and the read-back
/// at a program's end parsed them on one thread. Text shorter than `split_from_bytes`,
/// or with no array of that size and 16 elements or more within its first three levels, is parsed
/// whole. Any piece that does not parse sends the whole text to parse_json_tree(text), so an error
/// is json::parse's, byte offset and all. `pieces`, where given, is set to the number of pieces
/// the tree was parsed in (0: whole).
[[nodiscard]] nlohmann::ordered_json parse_json_tree(const std::string& text, const for_each_index& each,
                                                     std::size_t split_from_bytes = std::size_t{1} << 20,
                                                     std::size_t* pieces = nullptr);

/// An empty JSON array that lives as long as the process: a reader's stand-in for an absent
/// array. Never destroyed, because a recording may write a report early (on a signal) and again
/// at exit, after the destructors of statics first made by the early write have run.
[[nodiscard]] const nlohmann::ordered_json& empty_json_array();

/// An empty object with room for `members` members: members set into it up to that many are not
/// copied as it grows.
[[nodiscard]] nlohmann::ordered_json object_with_room(std::size_t members);

}  // namespace gmem::profiler
