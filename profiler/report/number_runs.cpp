#include "report/number_runs.hpp"

#include "report/fields.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace gmem::profiler {
namespace {

using json = nlohmann::ordered_json;

std::size_t digits(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

// Looks for repeats at each position among the next few places the same value comes again; the
// search stops (the rest written plainly) once its work passes a bound linear in the list.
constexpr std::size_t candidates_per_position = 16;
constexpr std::size_t work_per_value = 64;

struct folder {
  const std::vector<std::uint64_t>& v;
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> places;
  std::size_t work = 0, budget;

  explicit folder(const std::vector<std::uint64_t>& values) : v(values), budget(work_per_value * values.size() + 64) {
    for (std::size_t i = 0; i < v.size(); ++i) places[v[i]].push_back(i);
  }

  bool same_block(std::size_t a, std::size_t b, std::size_t p) {
    work += p;
    return std::equal(v.begin() + static_cast<std::ptrdiff_t>(a), v.begin() + static_cast<std::ptrdiff_t>(a + p),
                      v.begin() + static_cast<std::ptrdiff_t>(b));
  }

  // [from, to) folded.
  json fold(std::size_t from, std::size_t to) {
    json out = json::array();
    std::size_t i = from;
    while (i < to) {
      std::size_t best_saving = 0, best_p = 0, best_times = 0;
      if (work < budget) {
        const std::vector<std::size_t>& at = places.at(v[i]);
        auto next = std::upper_bound(at.begin(), at.end(), i);
        for (std::size_t c = 0; c < candidates_per_position && next != at.end(); ++c, ++next) {
          const std::size_t p = *next - i;
          if (i + 2 * p > to) break;
          std::size_t times = 1;
          while (i + (times + 1) * p <= to && same_block(i, i + times * p, p)) ++times;
          if (times < 2) continue;
          std::size_t plain = 0;
          for (std::size_t k = i; k < i + p; ++k) plain += digits(v[k]) + 1;
          // Folded: "[[" block "]," times "]" against the block's text `times` times.
          const std::size_t folded = plain + 4 + digits(times);
          const std::size_t whole = plain * times;
          if (whole > folded && whole - folded > best_saving) {
            best_saving = whole - folded;
            best_p = p;
            best_times = times;
          }
        }
      }
      if (best_times) {
        out.push_back(json::array({fold(i, i + best_p), best_times}));
        i += best_p * best_times;
      } else {
        out.push_back(v[i]);
        ++i;
      }
    }
    return out;
  }
};

using fields::fail;

void expand(const json& list, std::size_t expected, const std::string& path, std::vector<std::uint64_t>& out) {
  if (!list.is_array()) fail(path, "must be an array of unsigned integers and [[...], times] repeats");
  for (std::size_t k = 0; k < list.size(); ++k) {
    const json& e = list[k];
    const std::string p = path + "[" + std::to_string(k) + "]";
    if (e.is_number_unsigned()) {
      if (out.size() >= expected) fail(path, "holds more than the " + std::to_string(expected) + " values expected");
      out.push_back(e.get<std::uint64_t>());
      continue;
    }
    if (!e.is_array() || e.size() != 2 || !e[0].is_array() || e[0].empty() || !e[1].is_number_unsigned()) {
      fail(p, "must be an unsigned integer or a repeat [[values...], times]");
    }
    const std::uint64_t times = e[1].get<std::uint64_t>();
    if (times < 2) fail(p + "[1]", "must be 2 or more (the number of times the values repeat)");
    const std::size_t start = out.size();
    expand(e[0], expected, p + "[0]", out);
    const std::size_t block = out.size() - start;
    if (block == 0 || (times - 1) > (expected - out.size()) / block) {
      fail(p, "repeats past the " + std::to_string(expected) + " values expected");
    }
    for (std::uint64_t t = 1; t < times; ++t) {
      for (std::size_t b = 0; b < block; ++b) out.push_back(out[start + b]);
    }
  }
}

}  // namespace

std::uint64_t shortening_unit(const std::vector<std::uint64_t>& values, std::size_t stated) {
  std::uint64_t any = 0;
  for (const std::uint64_t v : values) any |= v;
  const std::uint64_t unit = any & (~any + 1);  // its lowest set bit
  if (unit <= 1) return 1;
  std::size_t saved = 0;
  for (const std::uint64_t v : values) saved += digits(v) - digits(v / unit);
  return saved > stated + digits(unit) ? unit : 1;
}

json runs_of(const std::vector<std::uint64_t>& values) {
  folder f(values);
  return f.fold(0, values.size());
}

std::vector<std::uint64_t> values_of_runs(const json& list, std::size_t expected, const std::string& path) {
  std::vector<std::uint64_t> out;
  out.reserve(std::min<std::size_t>(expected, 1u << 20));
  expand(list, expected, path, out);
  if (out.size() != expected) {
    fail(path, "holds " + std::to_string(out.size()) + " values, " + std::to_string(expected) + " expected");
  }
  return out;
}

}  // namespace gmem::profiler
