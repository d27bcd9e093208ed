#pragma once
// A list of unsigned integers written with its repeats folded (a recording's sizes of a model's
// layers, which repeat layer after layer): each element is either a number or [[...], times], the
// elements inside written `times` times in a row (they may hold repeats of their own). Only the
// report code's .cpp files see nlohmann's types (this header declares them, json_fwd).

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace gmem::profiler {

/// `values` with its repeats folded where that makes the JSON text shorter; a plain array of the
/// values where nothing repeats. Reading it back (values_of_runs) gives `values` exactly.
[[nodiscard]] nlohmann::ordered_json runs_of(const std::vector<std::uint64_t>& values);

/// The largest power of two that divides every one of `values`, where writing each value divided
/// by it saves more characters than `stated` (the text that states the unit) plus the unit's
/// digits; 1 otherwise (some value odd, or too few digits saved).
[[nodiscard]] std::uint64_t shortening_unit(const std::vector<std::uint64_t>& values, std::size_t stated);

/// The values of a list runs_of wrote (a plain array of numbers is one too), which must come to
/// exactly `expected` values. Throws std::invalid_argument whose message starts with `path` and
/// says what is wrong (an element that is neither form, a repeat of fewer than 2 times, more or
/// fewer values than expected); a repeat never expands past `expected`.
[[nodiscard]] std::vector<std::uint64_t> values_of_runs(const nlohmann::ordered_json& list, std::size_t expected,
                                                        const std::string& path);

}  // namespace gmem::profiler
