// JSON text to an nlohmann::ordered_json tree without deep copies. nlohmann's ordered_map keeps
// its members in a std::vector<std::pair<const std::string, json>>: a pair with a const key cannot
// be moved without the risk of an exception, so each time an object's vector grows, every member
// it already holds is copied whole. json::parse builds each object member by member, so in a
// recording whose `recorded` object holds the graphs, the counter timeline and the call sequence
// before its seventeenth key, all of them were copied once while it was read (issue 35).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gmem::profiler {

/// The tree json::parse(text) gives, with the same exceptions for text that is not JSON
/// (json::parse_error; json::out_of_range for a number beyond a double); each object's members
/// are gathered first and moved into it at its end, with the room they need.
[[nodiscard]] nlohmann::ordered_json parse_json_tree(const std::string& text);

/// An empty object with room for `members` members: members set into it up to that many are not
/// copied as it grows.
[[nodiscard]] nlohmann::ordered_json object_with_room(std::size_t members);

}  // namespace gmem::profiler
