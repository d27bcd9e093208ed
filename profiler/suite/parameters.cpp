#include "suite/parameters.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <stdexcept>

namespace gmem::profiler {
namespace {

__extension__ typedef unsigned __int128 u128;

struct unit {
  const char* name;
  std::uint64_t bytes;
};
constexpr unit units[] = {{"B", 1},
                          {"KiB", std::uint64_t{1} << 10},
                          {"MiB", std::uint64_t{1} << 20},
                          {"GiB", std::uint64_t{1} << 30},
                          {"TiB", std::uint64_t{1} << 40}};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string quoted(const std::string& s) { return "'" + s + "'"; }

/// Digits as a number, stopping (returning > max_param_value) once it is too large.
u128 digits_value(const std::string& digits) {
  u128 v = 0;
  for (char c : digits) {
    v = v * 10 + static_cast<unsigned>(c - '0');
    if (v > max_param_value) return u128{max_param_value} + 1;
  }
  return v;
}

std::string too_large(const std::string& text) {
  return quoted(text) + " is too large: the most is " + std::to_string(max_param_value) +
         " (2^63 - 1)";
}

}  // namespace

const char* to_string(param_kind k) noexcept {
  switch (k) {
    case param_kind::size: return "size";
    case param_kind::count: return "count";
    case param_kind::flag: return "flag";
  }
  return "?";
}

void scenario_parameters::set(const std::string& name, std::vector<std::uint64_t> values) {
  values_[name] = std::move(values);
}

const std::vector<std::uint64_t>& scenario_parameters::values(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) {
    throw std::logic_error("scenario parameter '" + name +
                           "' was read but never declared; declare it in scenario_definitions()");
  }
  return it->second;
}

std::uint64_t scenario_parameters::get(const std::string& name) const {
  const auto& v = values(name);
  if (v.size() != 1) {
    throw std::logic_error("scenario parameter '" + name + "' has " + std::to_string(v.size()) +
                           " values; a sweep is read with values(), not get()");
  }
  return v.front();
}

int scenario_parameters::count(const std::string& name) const {
  const std::uint64_t v = get(name);
  if (v > static_cast<std::uint64_t>(INT_MAX)) {
    throw std::logic_error("scenario parameter '" + name + "' = " + std::to_string(v) +
                           " does not fit an int; declare a smaller maximum");
  }
  return static_cast<int>(v);
}

std::uint64_t parse_size(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("the value is empty");
  if (text[0] == '-') throw std::invalid_argument(quoted(text) + " is negative");
  std::size_t i = 0;
  while (i < text.size() && is_digit(text[i])) ++i;
  const std::string whole = text.substr(0, i);
  std::string fraction;
  if (i < text.size() && text[i] == '.') {
    const std::size_t start = ++i;
    while (i < text.size() && is_digit(text[i])) ++i;
    fraction = text.substr(start, i - start);
    if (fraction.empty()) {
      throw std::invalid_argument(quoted(text) + " is not a number: a '.' needs digits after it");
    }
  }
  if (whole.empty()) {
    throw std::invalid_argument(quoted(text) + " is not a number: it must start with a digit");
  }
  while (i < text.size() && text[i] == ' ') ++i;
  const std::string unit_text = text.substr(i);
  for (char c : unit_text) {
    if (!std::isalpha(static_cast<unsigned char>(c))) {
      throw std::invalid_argument(quoted(text) + " is not a number with a unit");
    }
  }
  std::uint64_t unit_bytes = 0;
  const std::string u = lower(unit_text);
  if (u.empty()) {
    unit_bytes = 1;
  } else {
    for (const auto& candidate : units) {
      if (u == lower(candidate.name)) unit_bytes = candidate.bytes;
    }
  }
  if (unit_bytes == 0) {
    if (u == "k" || u == "kb" || u == "m" || u == "mb" || u == "g" || u == "gb" || u == "t" ||
        u == "tb") {
      throw std::invalid_argument(
          "the unit " + quoted(unit_text) + " of " + quoted(text) +
          " is ambiguous (powers of 1000 or of 1024?): write " +
          std::string(1, static_cast<char>(std::toupper(static_cast<unsigned char>(u[0])))) +
          "iB for powers of 1024, or the number of bytes");
    }
    throw std::invalid_argument("unknown unit " + quoted(unit_text) + " in " + quoted(text));
  }
  // Trailing zeros of the fraction change nothing; more than 18 digits would not fit below.
  while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  if (fraction.size() > 18) {
    throw std::invalid_argument(quoted(text) + " has more decimals than make a whole byte");
  }
  const u128 w = digits_value(whole);
  if (w > max_param_value) throw std::invalid_argument(too_large(text));
  u128 bytes = w * unit_bytes;  // < 2^63 * 2^40: fits
  if (!fraction.empty()) {
    u128 scale = 1;
    for (std::size_t k = 0; k < fraction.size(); ++k) scale *= 10;
    const u128 part = digits_value(fraction) * unit_bytes;  // < 10^18 * 2^40: fits
    if (part % scale != 0) {
      throw std::invalid_argument(quoted(text) + " is not a whole number of bytes");
    }
    bytes += part / scale;
  }
  if (bytes > max_param_value) throw std::invalid_argument(too_large(text));
  return static_cast<std::uint64_t>(bytes);
}

std::uint64_t parse_count(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("the value is empty");
  if (text[0] == '-') throw std::invalid_argument(quoted(text) + " is negative");
  if (!std::all_of(text.begin(), text.end(), is_digit)) {
    throw std::invalid_argument(quoted(text) + " is not a whole number");
  }
  const u128 v = digits_value(text);
  if (v > max_param_value) throw std::invalid_argument(too_large(text));
  return static_cast<std::uint64_t>(v);
}

bool parse_flag(const std::string& text) {
  const std::string t = lower(text);
  if (t == "true" || t == "1") return true;
  if (t == "false" || t == "0") return false;
  throw std::invalid_argument(text.empty() ? std::string("the value is empty")
                                           : quoted(text) + " is not true or false");
}

std::uint64_t parse_param(param_kind kind, const std::string& text) {
  switch (kind) {
    case param_kind::size: return parse_size(text);
    case param_kind::count: return parse_count(text);
    case param_kind::flag: return parse_flag(text) ? 1 : 0;
  }
  throw std::logic_error("unknown parameter kind");
}

std::string format_param_value(param_kind kind, std::uint64_t value) {
  if (kind == param_kind::flag) return value ? "true" : "false";
  if (kind == param_kind::count || value == 0) return std::to_string(value);
  for (auto it = std::rbegin(units); it != std::rend(units); ++it) {
    if (value % it->bytes == 0) return std::to_string(value / it->bytes) + it->name;
  }
  return std::to_string(value) + "B";
}

std::string accepted_values(param_kind kind) {
  switch (kind) {
    case param_kind::size:
      return "a size: a whole number of bytes, or a number with the unit B, KiB, MiB, GiB or TiB "
             "(powers of 1024; e.g. 4096, 64MiB, 1.5GiB; KB, MB and GB are refused as "
             "ambiguous)";
    case param_kind::count: return "a count: a whole number such as 64, without sign or unit";
    case param_kind::flag: return "a flag: true or false (or 1 or 0)";
  }
  return "?";
}

std::string describe(const param_spec& spec) {
  std::string defaults;
  for (const auto v : spec.defaults) {
    defaults += (defaults.empty() ? "" : ",") + format_param_value(spec.kind, v);
  }
  std::string line = spec.name + "=" + defaults;
  line += std::string(line.size() < 28 ? 28 - line.size() : 1, ' ');
  line += to_string(spec.kind);
  if (spec.kind != param_kind::flag) {
    line += ", " + format_param_value(spec.kind, spec.min) + " to " +
            format_param_value(spec.kind, spec.max);
  }
  if (spec.defaults.size() > 1) line += ", each default in turn";
  return line + ": " + spec.meaning;
}

}  // namespace gmem::profiler
