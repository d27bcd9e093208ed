#pragma once
// What many objects of a written recording say alike, stated once (2000 graphs of a
// model's size wrote each scenario's "source": "recorded", and 2000 diagnostics the same 300
// characters of advice). Each form has its writer and the reader that undoes it, on the JSON
// text's values. Only the report code's .cpp files see nlohmann's types (json_fwd).

#include <cstddef>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace gmem::profiler {

/// The fields whose value is the same in each of `objects[members]` (at least two), taken out of
/// them and returned as one object; `own(key)`: a key each object always states itself.
[[nodiscard]] nlohmann::ordered_json take_shared_fields(nlohmann::ordered_json& objects,
                                                        const std::vector<std::size_t>& members,
                                                        const std::function<bool(const std::string&)>& own);

/// A recording's scenarios (JSON, as report_to_json writes them) in their compact form, the
/// shared values put in `recorded`: recorded.scenario_fields holds the values every scenario
/// states alike (its name excepted); recorded.message_tails holds, by diagnostic code, the ending
/// every message of that code shares (from a sentence's or clause's start outside parentheses, 40
/// characters at least), and those diagnostics state their message_head alone.
void share_scenario_values(nlohmann::ordered_json& scenarios, nlohmann::ordered_json& recorded);

/// The whole scenarios back from root.recorded.scenario_fields and message_tails (a scenario's own
/// value wins). Throws std::invalid_argument whose message starts with the path of what is wrong.
void expand_scenario_values(nlohmann::ordered_json& root);

}  // namespace gmem::profiler
