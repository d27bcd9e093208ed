#include "gmem/profiler/report_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gmem/profiler/lifetime.hpp"
#include "gmem/profiler/parallel_for.hpp"
#include "report/fields.hpp"
#include "report/json_tree.hpp"
#include "report/number_runs.hpp"
#include "report/recording_json.hpp"
#include "report/report_json.hpp"
#include "report/shared_values.hpp"
#include "report/skeleton_json.hpp"

namespace gmem::profiler {

using json = nlohmann::ordered_json;
using namespace fields;  // NOLINT: the one way a report's fields are read
namespace fs = std::filesystem;

report_error::report_error(kind k, const std::string& message)
    : std::runtime_error(message), kind_(k) {}

const char* to_string(report_error::kind k) noexcept {
  switch (k) {
    case report_error::kind::missing:
      return "missing";
    case report_error::kind::unreadable:
      return "unreadable";
    case report_error::kind::not_json:
      return "not_json";
    case report_error::kind::wrong_schema_version:
      return "wrong_schema_version";
    case report_error::kind::invalid:
      return "invalid";
    case report_error::kind::different_gpu:
      return "different_gpu";
    case report_error::kind::different_kinds:
      return "different_kinds";
    case report_error::kind::unwritable:
      return "unwritable";
  }
  return "unknown";
}

namespace {

// ---------------------------------------------------------------------------------------------
// Writing

// nlohmann would write NaN and infinity as null anyway; saying so here keeps the reader's
// "null reads as NaN" rule next to the writer's.
json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json to_json(const param_value& v) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, double>) {
          return number(x);
        } else {
          return json(x);
        }
      },
      v);
}

json to_json(const stats& s) {
  json j;
  j["count"] = s.count;
  j["median_us"] = number(s.median_us);
  j["min_us"] = number(s.min_us);
  j["max_us"] = number(s.max_us);
  return j;
}

json to_json(const environment& e) {
  json j;
  j["device_name"] = e.device_name;
  j["device_index"] = e.device_index;
  j["compute_capability"] = std::to_string(e.cc_major) + "." + std::to_string(e.cc_minor);
  j["total_memory_bytes"] = e.total_memory_bytes;
  j["driver_version"] = e.driver_version;
  j["driver_release"] = e.driver_release;
  j["runtime_version"] = e.runtime_version;
  j["device_count"] = e.device_count;
  j["granularity_bytes"] = e.granularity_bytes;
  j["granularity_method"] = e.granularity_method;
  j["tool_version"] = e.tool_version;
  j["git_commit"] = e.git_commit;
  j["command_line"] = e.command_line;
  j["date"] = e.date;
  return j;
}

json to_json(const analysis_summary& a) {
  json j;
  j["alloc_nodes"] = a.alloc_nodes;
  j["free_nodes"] = a.free_nodes;
  j["unfreed_allocations"] = a.unfreed_allocations;
  j["requested_bytes"] = a.requested_bytes;
  j["distinct_addresses"] = a.distinct_addresses;
  j["va_reuse_ratio"] = number(a.va_reuse_ratio);
  j["lower_bound_bytes"] = a.lower_bound_bytes;
  j["lower_bound_rounded_bytes"] = a.lower_bound_rounded_bytes;
  j["used_high_bytes"] = a.used_high_bytes;
  j["reserved_high_bytes"] = a.reserved_high_bytes;
  j["physical_reuse_ratio"] = number(a.physical_reuse_ratio);
  j["bound_ratio"] = number(a.bound_ratio);
  return j;
}

bool same(const stats& a, const stats& b) {
  return a.count == b.count && a.median_us == b.median_us && a.min_us == b.min_us && a.max_us == b.max_us;
}

bool same(const launch_cost& a, const launch_cost& b) {
  return a.phase == b.phase && a.warmups == b.warmups && same(a.host, b.host) && same(a.wall, b.wall) &&
         same(a.reference_host, b.reference_host) && same(a.reference_wall, b.reference_wall);
}

// How many of a recorded scenario's launch costs its graph's events give (add_event_phases), where
// its counters_after_phase are theirs too; nullopt where they are not (a hand-made report).
std::optional<std::size_t> phases_from_events(const scenario_result& s, const recorded_graph& g) {
  scenario_result d;
  add_event_phases(d, g);
  if (d.counters_after_phase.size() != s.counters_after_phase.size() || d.launch_costs.size() > s.launch_costs.size()) {
    return std::nullopt;
  }
  for (std::size_t k = 0; k < d.counters_after_phase.size(); ++k) {
    const phase_counters &a = d.counters_after_phase[k], &b = s.counters_after_phase[k];
    if (a.phase != b.phase || a.values != b.values) return std::nullopt;
  }
  for (std::size_t k = 0; k < d.launch_costs.size(); ++k) {
    if (!same(d.launch_costs[k], s.launch_costs[k])) return std::nullopt;
  }
  return d.launch_costs.size();
}

// Whether the scenario's one skeleton states its allocations but for their addresses (the
// lifetimes read from it give each allocation's bytes and steps, in the same order), so that a
// recording may write the addresses alone.
bool skeleton_states_allocations(const scenario_result& s) {
  if (s.allocations.empty() || s.skeletons.size() != 1) return false;
  try {
    const std::vector<allocation_lifetime> stated = lifetimes(s.skeletons.front());
    if (stated.size() != s.allocations.size()) return false;
    for (std::size_t i = 0; i < stated.size(); ++i) {
      const allocation_lifetime& a = s.allocations[i];
      if (a.bytes != stated[i].bytes || a.alloc_step != stated[i].alloc_step || a.free_step != stated[i].free_step) {
        return false;
      }
    }
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

json phase_counters_json(const std::vector<phase_counters>& list) {
  json phases = json::array();
  for (const auto& p : list) {
    json c;
    c["phase"] = p.phase;
    c["used_current"] = p.values.used_current;
    c["used_high"] = p.values.used_high;
    c["reserved_current"] = p.values.reserved_current;
    c["reserved_high"] = p.values.reserved_high;
    phases.push_back(std::move(c));
  }
  return phases;
}

// The launch costs from the `first` on (those before it the graph's events state).
json launch_costs_json(const std::vector<launch_cost>& list, std::size_t first) {
  json costs = json::array();
  for (std::size_t k = first; k < list.size(); ++k) {
    const launch_cost& l = list[k];
    json c;
    c["phase"] = l.phase;
    if (l.warmups) c["warmups"] = l.warmups;
    c["host"] = to_json(l.host);
    if (l.wall.count > 0) c["wall"] = to_json(l.wall);  // a recording measures host time only
    if (l.reference_host.count > 0) {  // Optional member
      c["reference"] = {{"host", to_json(l.reference_host)}, {"wall", to_json(l.reference_wall)}};
    }
    costs.push_back(std::move(c));
  }
  return costs;
}

json diagnostics_json(const std::vector<diagnostic>& list) {
  json diags = json::array();
  for (const auto& d : list) {
    json c;
    c["code"] = d.code;
    c["severity"] = d.severity;
    c["message"] = d.message;
    c["bytes"] = d.bytes;
    diags.push_back(std::move(c));
  }
  return diags;
}

// A recording's compact form: the skeleton states each allocation's size and steps, and
// each address is the lowest one's plus an offset (a model's layers at addresses of 12 or more
// digits came to half the report of 2000 graphs).
void write_allocation_offsets(const std::vector<allocation_lifetime>& allocations, json& j) {
  std::uint64_t base = allocations.front().address;
  for (const auto& a : allocations) base = std::min(base, a.address);
  std::vector<std::uint64_t> offsets;
  offsets.reserve(allocations.size());
  for (const auto& a : allocations) offsets.push_back(a.address - base);
  // In the unit that divides them all where the text is shorter for it (an H100's driver placed
  // a model's allocations at multiples of 512 bytes from the lowest).
  const std::uint64_t unit = shortening_unit(offsets, std::strlen("\"allocation_offset_unit\": ,"));
  for (std::uint64_t& o : offsets) o /= unit;
  j["allocation_base"] = base;
  if (unit > 1) j["allocation_offset_unit"] = unit;
  j["allocation_offsets"] = runs_of(offsets);
}

json allocations_json(const std::vector<allocation_lifetime>& allocations) {
  json allocs = json::array();
  for (const auto& a : allocations) {
    allocs.push_back({{"address", a.address},
                      {"bytes", a.bytes},
                      {"alloc_step", a.alloc_step},
                      {"free_step", a.free_step < 0 ? json(nullptr) : json(a.free_step)}});
  }
  return allocs;
}

// Each skeleton whole, or as the place of its shared shape and its allocations' sizes.
json skeletons_json(const scenario_result& s, const std::vector<std::size_t>* shapes) {
  json skeletons = json::array();
  for (std::size_t k = 0; k < s.skeletons.size(); ++k) {
    const skeleton& sk = s.skeletons[k];
    const std::size_t shape = shapes && k < shapes->size() ? (*shapes)[k] : no_node;
    if (shape == no_node) {
      skeletons.push_back(skeleton_to_json(sk));
      continue;
    }
    std::vector<std::uint64_t> bytes;
    for (const skeleton_node& n : sk.nodes) {
      if (n.kind == skeleton_kind::alloc) bytes.push_back(n.bytes);
    }
    json named = sk.name == s.name ? json::object() : json{{"graph", sk.name}};  // the scenario's name by default
    named["shape"] = shape;
    named["bytes"] = runs_of(bytes);
    skeletons.push_back(std::move(named));
  }
  return skeletons;
}

json trials_json(const std::vector<trial_sample>& list) {
  json trials = json::array();
  for (const auto& t : list) {
    json c;
    c["used_high_bytes"] = t.used_high_bytes;
    c["reserved_high_bytes"] = t.reserved_high_bytes;
    c["va_reuse_ratio"] = number(t.va_reuse_ratio);
    c["physical_reuse_ratio"] = number(t.physical_reuse_ratio);
    json launches = json::array();
    for (const auto& l : t.launches) {
      json tl{{"phase", l.phase},
              {"host_median_us", number(l.host_median_us)},
              {"wall_median_us", number(l.wall_median_us)}};
      if (l.reference_host_median_us > 0) {  // Optional members
        tl["reference_host_median_us"] = number(l.reference_host_median_us);
        tl["reference_wall_median_us"] = number(l.reference_wall_median_us);
      }
      launches.push_back(std::move(tl));
    }
    c["launches"] = std::move(launches);
    trials.push_back(std::move(c));
  }
  return trials;
}

json change_json(const measured_change& c) {
  json out{{"kind", c.kind},
           {"where", c.where},
           {"predicted_bytes", c.predicted_bytes},
           {"measured_bytes", c.measured_bytes},
           {"saving_bytes", c.saving_bytes}};
  if (c.added_dependencies) out["added_dependencies"] = c.added_dependencies;
  if (c.predicted_launch_us) out["predicted_launch_us"] = *c.predicted_launch_us;
  if (c.predicted_price_us) out["predicted_price_us"] = *c.predicted_price_us;
  return out;
}

json changes_json(const std::vector<measured_change>& list) {
  json out = json::array();
  for (const auto& c : list) out.push_back(change_json(c));
  return out;
}

json advice_json(const advice_measurement& advice) {
  json out = {{"baseline_bytes", advice.baseline_bytes},
              {"changes", changes_json(advice.changes)},
              {"combined", change_json(advice.combined)},
              {"combined_reaches_order_free_bound", advice.combined_reaches_order_free_bound},
              {"tried", changes_json(advice.tried)}};
  if (advice.critical_path_us) out["critical_path_us"] = *advice.critical_path_us;
  if (!advice.durations_note.empty()) out["durations_note"] = advice.durations_note;
  return out;
}

// `g`: the recorded graph of a recording's scenario, whose events state the scenario's counters
// after each call and the launch costs of its calls: those are left out ("phases_from_events")
// and derived again when the report is read.
// `shapes`: by skeleton, the place in recorded.skeleton_shapes of its shared shape (no_node: the
// skeleton is written whole).
json to_json(const scenario_result& s, const recorded_graph* g = nullptr,
             const std::vector<std::size_t>* shapes = nullptr) {
  const std::optional<std::size_t> derived = g ? phases_from_events(s, *g) : std::nullopt;
  json j;
  j["name"] = s.name;
  json params = json::object();
  for (const auto& [name, value] : s.params) params[name] = to_json(value);
  j["parameters"] = std::move(params);
  j["status"] = to_string(s.status);
  if (!s.status_message.empty()) j["status_message"] = s.status_message;

  if (derived) j["phases_from_events"] = true;
  if (!derived) j["counters_after_phase"] = phase_counters_json(s.counters_after_phase);
  j["launch_costs"] = launch_costs_json(s.launch_costs, derived.value_or(0));
  j["analysis"] = to_json(s.analysis);
  j["diagnostics"] = diagnostics_json(s.diagnostics);
  if (g && skeleton_states_allocations(s)) {
    write_allocation_offsets(s.allocations, j);
  } else if (!s.allocations.empty()) {  // optional section, written only when recorded
    j["allocations"] = allocations_json(s.allocations);
  }
  if (!s.skeletons.empty()) j["skeletons"] = skeletons_json(s, shapes);  // Optional section
  if (!s.trials.empty()) j["trials"] = trials_json(s.trials);
  if (s.advice) j["advice"] = advice_json(*s.advice);  // Optional section
  return j;
}

// ---------------------------------------------------------------------------------------------
// Reading: every accessor takes the JSON path of the value so that a message can say exactly
// which field of which file is wrong.

// What to do about an invalid report depends on what made it: the suite's reports are written
// again by `gmemprof run`, a program's recording only by recording the program again.
constexpr const char* suite_advice =
    "; the file was not written by this gmemprof or was edited by hand: write it again with "
    "`gmemprof run --out FILE`, or list every problem with tools/validate_report.py "
    "reports/schema/report.schema.json FILE";
constexpr const char* recording_advice =
    "; this recording was written by another gmemprof or edited by hand (if this gmemprof "
    "recorded it, that is a bug: please report it): record it again with "
    "`gmemprof record --out FILE -- COMMAND`, or list every problem with "
    "tools/validate_report.py reports/schema/report.schema.json FILE";


stats read_stats(const json& parent, const char* key, const std::string& path) {
  const json& j = object(parent, key, path);
  const std::string p = join(path, key);
  stats s;
  s.count = size(j, "count", p);
  s.median_us = time_us(j, "median_us", p);
  s.min_us = time_us(j, "min_us", p);
  s.max_us = time_us(j, "max_us", p);
  return s;
}

// The four graph memory counters as the driver keeps them: what is used is reserved, and a
// high watermark is at least the current value (also right after a reset; measured on H100 and
// H200: tests/gpu/profiler_test.cu). Counters that contradict that were not read from a driver.
void refuse_above(const std::string& path, const char* a, std::uint64_t va,
                  const char* b, std::uint64_t vb) {
  if (va > vb) {
    fail(path, std::string("has ") + a + " " + std::to_string(va) + " above " + b + " " +
                      std::to_string(vb) +
                      ": counters that contradict each other (used memory is reserved, and a "
                      "high watermark is at least the current value)");
  }
}

void check_counters(const counters& c, const std::string& path) {
  refuse_above(path, "used_current", c.used_current, "reserved_current", c.reserved_current);
  refuse_above(path, "used_high", c.used_high, "reserved_high", c.reserved_high);
  refuse_above(path, "used_current", c.used_current, "used_high", c.used_high);
  refuse_above(path, "reserved_current", c.reserved_current, "reserved_high", c.reserved_high);
}

environment read_environment(const json& root) {
  const json& j = object(root, "environment", "");
  const std::string p = "environment";
  environment e;
  e.device_name = text(j, "device_name", p);
  e.device_index = integer(j, "device_index", p);
  const std::string cc = text(j, "compute_capability", p);
  const auto dot = cc.find('.');
  const auto all_digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 4 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (dot == std::string::npos || !all_digits(cc.substr(0, dot)) ||
      !all_digits(cc.substr(dot + 1))) {
    fail("environment.compute_capability",
            "must be \"MAJOR.MINOR\" such as \"9.0\", is \"" + cc + "\"");
  }
  e.cc_major = std::stoi(cc.substr(0, dot));
  e.cc_minor = std::stoi(cc.substr(dot + 1));
  e.total_memory_bytes = u64(j, "total_memory_bytes", p);
  e.driver_version = integer(j, "driver_version", p);
  e.driver_release = text(j, "driver_release", p);
  e.runtime_version = integer(j, "runtime_version", p);
  e.device_count = integer(j, "device_count", p);
  e.granularity_bytes = u64(j, "granularity_bytes", p);
  e.granularity_method = text(j, "granularity_method", p);
  e.tool_version = text(j, "tool_version", p);
  e.git_commit = text(j, "git_commit", p);
  e.command_line = text(j, "command_line", p);
  e.date = text(j, "date", p);
  return e;
}

param_value read_param(const json& j, const std::string& path) {
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (j.is_number()) {
    if (const auto v = as_int64(j)) return *v;
    fail(path, "is an integer beyond the int64 range (" +
                      std::to_string(std::numeric_limits<std::int64_t>::min()) + " to " +
                      std::to_string(std::numeric_limits<std::int64_t>::max()) + "): " + j.dump());
  }
  fail(path, "must be a number, string or bool, is " + kind_of(j));
}

scenario_status read_status(const json& j, const std::string& path) {
  const std::string s = text(j, "status", path);
  if (s == "ok") return scenario_status::ok;
  if (s == "skipped") return scenario_status::skipped;
  if (s == "error") return scenario_status::error;
  fail(join(path, "status"),
          "must be \"ok\", \"skipped\" or \"error\", is \"" + s + "\"");
}

analysis_summary read_analysis(const json& parent, const std::string& path) {
  const json& j = object(parent, "analysis", path);
  const std::string p = join(path, "analysis");
  analysis_summary a;
  a.alloc_nodes = size(j, "alloc_nodes", p);
  a.free_nodes = size(j, "free_nodes", p);
  a.unfreed_allocations = size(j, "unfreed_allocations", p);
  a.requested_bytes = u64(j, "requested_bytes", p);
  a.distinct_addresses = size(j, "distinct_addresses", p);
  a.va_reuse_ratio = real(j, "va_reuse_ratio", p);
  a.lower_bound_bytes = u64(j, "lower_bound_bytes", p);
  a.lower_bound_rounded_bytes = u64(j, "lower_bound_rounded_bytes", p);
  a.used_high_bytes = u64(j, "used_high_bytes", p);
  a.reserved_high_bytes = u64(j, "reserved_high_bytes", p);
  a.physical_reuse_ratio = real(j, "physical_reuse_ratio", p);
  a.bound_ratio = real(j, "bound_ratio", p);
  refuse_above(p, "used_high_bytes", a.used_high_bytes, "reserved_high_bytes",
               a.reserved_high_bytes);
  return a;
}

const json& element(const json& array, std::size_t i, const std::string& path) {
  const json& c = array[i];
  if (!c.is_object()) fail(path, "must be an object, is " + kind_of(c));
  return c;
}

// A scenario's counters after each phase. Left out where the recorded graph's events state them
// (from_json_string derives them).
std::vector<phase_counters> read_phase_counters(const json& j, const std::string& path) {
  const std::string counters_path = join(path, "counters_after_phase");
  const json& counters_json = flag(j, "phases_from_events", path) && !j.contains("counters_after_phase")
                                  ? empty_json_array()
                                  : array(j, "counters_after_phase", path);
  std::vector<phase_counters> out;
  for (std::size_t i = 0; i < counters_json.size(); ++i) {
    const std::string p = at(counters_path, i);
    const json& c = element(counters_json, i, p);
    phase_counters pc;
    pc.phase = name(c, "phase", p);
    pc.values.used_current = u64(c, "used_current", p);
    pc.values.used_high = u64(c, "used_high", p);
    pc.values.reserved_current = u64(c, "reserved_current", p);
    pc.values.reserved_high = u64(c, "reserved_high", p);
    check_counters(pc.values, p);
    out.push_back(std::move(pc));
  }
  return out;
}

std::vector<launch_cost> read_launch_costs(const json& j, const std::string& path) {
  const std::string costs_path = join(path, "launch_costs");
  const json& costs_json = array(j, "launch_costs", path);
  std::vector<launch_cost> out;
  for (std::size_t i = 0; i < costs_json.size(); ++i) {
    const std::string p = at(costs_path, i);
    const json& c = element(costs_json, i, p);
    launch_cost l;
    l.phase = name(c, "phase", p);
    if (c.contains("warmups")) l.warmups = size(c, "warmups", p);
    l.host = read_stats(c, "host", p);
    if (c.contains("wall")) l.wall = read_stats(c, "wall", p);
    if (c.contains("reference")) {  // Optional member
      const json& ref = object(c, "reference", p);
      const std::string rp = join(p, "reference");
      l.reference_host = read_stats(ref, "host", rp);
      l.reference_wall = read_stats(ref, "wall", rp);
    }
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<diagnostic> read_diagnostics(const json& j, const std::string& path) {
  const std::string diags_path = join(path, "diagnostics");
  const json& diags_json = array(j, "diagnostics", path);
  std::vector<diagnostic> out;
  for (std::size_t i = 0; i < diags_json.size(); ++i) {
    const std::string p = at(diags_path, i);
    const json& c = element(diags_json, i, p);
    diagnostic d;
    d.code = name(c, "code", p);
    d.severity = text(c, "severity", p);
    if (d.severity != "info" && d.severity != "warning" && d.severity != "error") {
      fail(p + ".severity",
              "must be \"info\", \"warning\" or \"error\", is \"" + d.severity + "\"");
    }
    d.message = text(c, "message", p);
    d.bytes = u64(c, "bytes", p);
    out.push_back(std::move(d));
  }
  return out;
}

// The optional section "allocations" (gmem 0.2): each allocation written whole.
std::vector<allocation_lifetime> read_allocations(const json& j, const std::string& path) {
  const std::string allocs_path = join(path, "allocations");
  const json& allocs_json = array(j, "allocations", path);
  std::vector<allocation_lifetime> out;
  for (std::size_t i = 0; i < allocs_json.size(); ++i) {
    const std::string p = at(allocs_path, i);
    const json& c = element(allocs_json, i, p);
    allocation_lifetime a;
    a.address = u64(c, "address", p);
    a.bytes = u64(c, "bytes", p);
    a.alloc_step = u64(c, "alloc_step", p);
    const json& f = need(c, "free_step", p);
    if (!f.is_null()) {
      const std::uint64_t step = u64(c, "free_step", p);
      if (step <= a.alloc_step) {
        fail(p + ".free_step", "is " + std::to_string(step) + ", but must come after alloc_step " +
                                      std::to_string(a.alloc_step));
      }
      a.free_step = static_cast<std::int64_t>(step);
    }
    out.push_back(a);
  }
  return out;
}

// The optional section "skeletons": those made whole from shared shapes are taken from
// `skeletons`, the others read here.
std::vector<skeleton> read_skeleton_section(const json& j, const std::string& path,
                                            std::vector<std::optional<skeleton>>* skeletons) {
  const std::string sk_path = join(path, "skeletons");
  const json& sk = array(j, "skeletons", path);
  std::vector<skeleton> out;
  for (std::size_t i = 0; i < sk.size(); ++i) {
    const std::string p = at(sk_path, i);
    if (skeletons && i < skeletons->size() && (*skeletons)[i]) {
      out.push_back(std::move(*(*skeletons)[i]));
      continue;
    }
    out.push_back(skeleton_from_json(element(sk, i, p), p));
  }
  return out;
}

// The addresses of allocation_offsets (at `p`): each the base plus its offset in the unit.
void read_allocation_offsets(const json& j, const std::string& path, const std::string& p,
                             std::vector<allocation_lifetime>& allocations) {
  const std::uint64_t base = u64(j, "allocation_base", path);
  const std::uint64_t unit = j.contains("allocation_offset_unit") ? u64(j, "allocation_offset_unit", path) : 1;
  if (unit == 0) fail(join(path, "allocation_offset_unit"), "must be 1 or more: the bytes each offset counts");
  std::vector<std::uint64_t> from_base;
  try {
    from_base = values_of_runs(j["allocation_offsets"], allocations.size(), p);
  } catch (const std::invalid_argument& e) {
    fail(p, std::string("must give one offset per alloc node of the scenario's skeleton (") +
                   std::to_string(allocations.size()) + ", in the skeleton's order): " + e.what());
  }
  for (std::size_t i = 0; i < from_base.size(); ++i) {
    if (from_base[i] > (std::numeric_limits<std::uint64_t>::max() - base) / unit) {
      fail(at(p, i), "puts the address past 2^64 - 1");
    }
    allocations[i].address = base + from_base[i] * unit;
  }
}

// The addresses of allocation_addresses (at `p`): one each, in the skeleton's order.
void read_allocation_addresses(const json& j, const std::string& path, const std::string& p,
                               std::vector<allocation_lifetime>& allocations) {
  const json& addresses = array(j, "allocation_addresses", path);
  if (addresses.size() != allocations.size()) {
    fail(p, "gives " + std::to_string(addresses.size()) + " addresses, but the scenario's skeleton has " +
                   std::to_string(allocations.size()) +
                   " alloc nodes: one address each, in the skeleton's order");
  }
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    if (!addresses[i].is_number_unsigned()) {
      fail(at(p, i), "must be an integer >= 0, is " + kind_of(addresses[i]));
    }
    allocations[i].address = addresses[i].get<std::uint64_t>();
  }
}

// A recording's compact forms of allocations: the scenario's one skeleton states each
// allocation's size and steps, and the report its address (allocation_offsets or
// allocation_addresses).
void read_compact_allocations(const json& j, const std::string& path, scenario_result& s) {
  const bool offsets = j.contains("allocation_offsets");
  const char* key = offsets ? "allocation_offsets" : "allocation_addresses";
  const std::string p = join(path, key);
  if (j.contains("allocations")) {
    fail(p, "is given beside allocations: a scenario states its allocations in one of the two forms");
  }
  if (offsets && j.contains("allocation_addresses")) {
    fail(p, "is given beside allocation_addresses: a scenario states its addresses in one of the two forms");
  }
  if (s.skeletons.size() != 1) {
    fail(p, "needs the scenario's one skeleton, which states each allocation's size and steps, but the "
               "scenario has " + std::to_string(s.skeletons.size()) + " skeletons");
  }
  try {
    s.allocations = lifetimes(s.skeletons.front());
  } catch (const std::invalid_argument& e) {
    fail(p, std::string("cannot be read with the scenario's skeleton (") + e.what() + ")");
  }
  if (offsets) {
    read_allocation_offsets(j, path, p, s.allocations);
  } else {
    read_allocation_addresses(j, path, p, s.allocations);
  }
}

// The optional section "trials": reports of one sample have none.
std::vector<trial_sample> read_trials(const json& j, const std::string& path) {
  const std::string trials_path = join(path, "trials");
  const json& trials_json = array(j, "trials", path);
  std::vector<trial_sample> out;
  for (std::size_t i = 0; i < trials_json.size(); ++i) {
    const std::string p = at(trials_path, i);
    const json& c = element(trials_json, i, p);
    trial_sample t;
    t.used_high_bytes = u64(c, "used_high_bytes", p);
    t.reserved_high_bytes = u64(c, "reserved_high_bytes", p);
    t.va_reuse_ratio = real(c, "va_reuse_ratio", p);
    t.physical_reuse_ratio = real(c, "physical_reuse_ratio", p);
    refuse_above(p, "used_high_bytes", t.used_high_bytes, "reserved_high_bytes",
                 t.reserved_high_bytes);
    const std::string lp = join(p, "launches");
    const json& launches = array(c, "launches", p);
    for (std::size_t k = 0; k < launches.size(); ++k) {
      const std::string q = at(lp, k);
      const json& l = element(launches, k, q);
      trial_sample::launch tl{name(l, "phase", q), time_us(l, "host_median_us", q),
                              time_us(l, "wall_median_us", q)};
      if (l.contains("reference_host_median_us")) {  // Optional members
        tl.reference_host_median_us = time_us(l, "reference_host_median_us", q);
        tl.reference_wall_median_us = time_us(l, "reference_wall_median_us", q);
      }
      t.launches.push_back(std::move(tl));
    }
    out.push_back(std::move(t));
  }
  return out;
}

measured_change read_change(const json& c, const std::string& p) {
  measured_change m;
  m.kind = name(c, "kind", p);
  m.where = text(c, "where", p);
  m.predicted_bytes = u64(c, "predicted_bytes", p);
  m.measured_bytes = u64(c, "measured_bytes", p);
  m.saving_bytes = u64(c, "saving_bytes", p);
  if (c.contains("added_dependencies")) m.added_dependencies = u64(c, "added_dependencies", p);
  if (c.contains("predicted_launch_us")) m.predicted_launch_us = real(c, "predicted_launch_us", p);
  if (c.contains("predicted_price_us")) m.predicted_price_us = real(c, "predicted_price_us", p);
  return m;
}

// The optional section "advice": the changes measured and their combination.
advice_measurement read_advice(const json& j, const std::string& path) {
  const std::string ap = join(path, "advice");
  const json& a = object(j, "advice", path);
  const auto read_list = [&](const char* key, std::vector<measured_change>& list) {
    const json& items = array(a, key, ap);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::string p = at(join(ap, key), i);
      list.push_back(read_change(element(items, i, p), p));
    }
  };
  advice_measurement adv;
  adv.baseline_bytes = u64(a, "baseline_bytes", ap);
  read_list("changes", adv.changes);
  if (a.contains("tried")) read_list("tried", adv.tried);  // optional
  adv.combined = read_change(object(a, "combined", ap), join(ap, "combined"));
  const json& reaches = need(a, "combined_reaches_order_free_bound", ap);
  if (!reaches.is_boolean()) {
    fail(join(ap, "combined_reaches_order_free_bound"),
            "must be true or false, is " + kind_of(reaches));
  }
  adv.combined_reaches_order_free_bound = reaches.get<bool>();
  if (a.contains("critical_path_us")) adv.critical_path_us = real(a, "critical_path_us", ap);
  if (a.contains("durations_note")) adv.durations_note = text(a, "durations_note", ap);
  return adv;
}

// `skeletons`: the scenario's skeletons made whole from shared shapes (expand_skeleton_shapes),
// read in place of those written as a shape's name and sizes.
scenario_result read_scenario(const json& j, const std::string& path,
                              std::vector<std::optional<skeleton>>* skeletons = nullptr) {
  if (!j.is_object()) fail(path, "must be an object, is " + kind_of(j));
  scenario_result s;
  s.name = name(j, "name", path);

  const std::string params_path = join(path, "parameters");
  for (const auto& [name, value] : object(j, "parameters", path).items()) {
    s.params.emplace_back(name, read_param(value, params_path + "." + name));
  }

  s.status = read_status(j, path);
  // Optional: a writer may leave it out for an ok scenario.
  if (j.contains("status_message")) s.status_message = text(j, "status_message", path);

  s.counters_after_phase = read_phase_counters(j, path);
  s.launch_costs = read_launch_costs(j, path);
  s.analysis = read_analysis(j, path);
  s.diagnostics = read_diagnostics(j, path);
  if (j.contains("allocations")) s.allocations = read_allocations(j, path);
  if (j.contains("skeletons")) s.skeletons = read_skeleton_section(j, path, skeletons);
  if (j.contains("allocation_offsets") || j.contains("allocation_addresses")) read_compact_allocations(j, path, s);
  if (j.contains("trials")) s.trials = read_trials(j, path);
  if (j.contains("advice")) s.advice = read_advice(j, path);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Input from elsewhere: checks made on the text before nlohmann sees it.

// The byte offset at which `text` opens an array or object deeper than `limit` (outside
// strings), or nullopt. One pass that tracks only strings, escapes and brackets: whether the
// text is JSON at all is the parser's business once the depth is known to be safe.
std::optional<std::size_t> offset_beyond_depth(const std::string& text, std::size_t limit) noexcept {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

// Strings from a report reach terminals (show, check, record's summary, messages) and pages:
// a graph name, an NVTX range, a device name or a stack frame comes from someone else's program
// or file. Each is made printable once, when the report is read, so every view gets clean text:
// C0 controls (tab and newline too: the views lay text out themselves), DEL and bytes that are
// not UTF-8 become `\xHH`; the C1 controls U+0080..U+009F (CSI among them) become `\u00HH`.
// Clean text is unchanged, so reading what was written from a read report gives the same report.

// How many bytes the well-formed UTF-8 sequence at s[i] takes, or 0 where none starts.
std::size_t utf8_length(const std::string& s, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range (RFC 3629, section 4)
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

// Whether the `n`-byte character at s[i] must be escaped (n == 0: not UTF-8).
bool controls_a_terminal(const std::string& s, std::size_t i, std::size_t n) noexcept {
  const auto c = static_cast<unsigned char>(s[i]);
  if (n == 0) return true;
  if (n == 1) return c < 0x20 || c == 0x7F;
  return n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F;  // U+0080..U+009F
}

bool is_printable(const std::string& s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_length(s, i);
    if (controls_a_terminal(s, i, n)) return false;
    i += n;
  }
  return true;
}

std::string printable(const std::string& s) {
  if (is_printable(s)) return s;
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 16);
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_length(s, i);
    if (!controls_a_terminal(s, i, n)) {
      out.append(s, i, n);
      i += n;
      continue;
    }
    // A C1 control is one character (two bytes): named by its code point; anything else by its byte.
    const auto b = static_cast<unsigned char>(n == 2 ? s[i + 1] : s[i]);
    out += n == 2 ? "\\u00" : "\\x";
    out += hex[b >> 4];
    out += hex[b & 0xF];
    i += n == 0 ? 1 : n;
  }
  return out;
}

// Where a value sits in the document, for a message: frames on the stack, joined on failure only.
struct where {
  const where* parent;
  const std::string* key;  // nullptr: an array element
  std::size_t index;
};

std::string path_of(const where* w) {
  if (!w) return "";
  const std::string up = path_of(w->parent);
  if (!w->key) return at(up, w->index);
  return join(up, printable(*w->key).c_str());
}

// Every string and key of `j` made printable (keys too: parameter names are printed). Two keys
// that read the same afterwards ("a" + BEL and the text "a\x07") are refused: one would be lost.
// Recursion is bounded by report_max_depth, checked before parsing. `each`, where given, takes
// the long arrays of the first three levels (a recording's graphs, calls and counter points) in
// runs; the error told is the first a walk in order meets.
void make_printable(json& j, const where* here, const for_each_index& each = {},
                    std::size_t depth = 0) {
  if (j.is_string()) {
    auto& s = j.get_ref<std::string&>();
    if (!is_printable(s)) s = printable(s);
  } else if (j.is_array()) {
    if (each && depth < 3 && j.size() >= 256) {
      run_in_runs(each, j.size(), 128, [&](std::size_t i) {
        const where w{here, nullptr, i};
        make_printable(j[i], &w);
      });
      return;
    }
    for (std::size_t i = 0; i < j.size(); ++i) {
      const where w{here, nullptr, i};
      make_printable(j[i], &w, each, depth + 1);
    }
  } else if (j.is_object()) {
    bool keys_printable = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const where w{here, &it.key(), 0};
      make_printable(it.value(), &w, each, depth + 1);
      keys_printable = keys_printable && is_printable(it.key());
    }
    if (keys_printable) return;
    json out = json::object();
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string key = printable(it.key());
      if (out.contains(key)) {
        const std::string path = path_of(here);
        fail(path.empty() ? "the top level" : path,
                "has two keys that read \"" + key +
                    "\" once control characters are escaped: rename one of them");
      }
      out.emplace(std::move(key), std::move(it.value()));
    }
    j = std::move(out);
  }
}

// ---------------------------------------------------------------------------------------------
// Files

std::string errno_text(int err) { return std::strerror(err); }

[[noreturn]] void fail_write(const std::string& path, const std::string& problem) {
  throw report_error(report_error::kind::unwritable,
                     "cannot write report '" + path + "': " + problem +
                         "; pass --out a path in an existing, writable directory");
}

// The directory a report at `path` lands in, after checking that the path names a file there.
fs::path directory_for(const std::string& path) {
  const fs::path target(path);
  if (path.empty() || !target.has_filename()) fail_write(path, "the path names no file");
  std::error_code ec;
  if (fs::is_directory(target, ec)) fail_write(path, "it is a directory");
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) fail_write(path, "directory '" + dir.string() + "' does not exist");
  if (!fs::is_directory(st)) fail_write(path, "'" + dir.string() + "' is not a directory");
  return dir;
}

// A temporary file next to the target (a rename is atomic only within one file system); it
// is closed and removed on destruction unless the rename over the target succeeded.
// The process umask, read without changing it (umask() would, for every thread at once).
mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
  }
  return 022;
}

class temp_file {
 public:
  temp_file(const fs::path& dir, const std::string& target) : target_(target) {
    // A prefix of the name only: a report name near NAME_MAX must not fail for its temp file.
    const std::string stem = fs::path(target).filename().string().substr(0, 64);
    const std::string pattern = (dir / ("." + stem + ".tmp-XXXXXX")).string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    fd_ = ::mkstemp(buf.data());
    if (fd_ < 0) fail_write(target, "cannot create a file in its directory: " + errno_text(errno));
    name_ = buf.data();
    // mkstemp makes the file 0600; a report is an ordinary file: 0666 less the umask.
    (void)::fchmod(fd_, 0666 & ~current_umask());
  }
  ~temp_file() {
    if (fd_ >= 0) ::close(fd_);
    if (!name_.empty()) ::unlink(name_.c_str());
  }
  temp_file(const temp_file&) = delete;
  temp_file& operator=(const temp_file&) = delete;

  void write_all(const std::string& text) {
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail_write(target_, "writing '" + name_ + "' failed: " + errno_text(errno));
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }

  // fsync before rename: otherwise a crash can leave a renamed but empty report.
  void sync_and_close() {
    if (::fsync(fd_) != 0) {
      fail_write(target_, "fsync of '" + name_ + "' failed: " + errno_text(errno));
    }
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) {
      fail_write(target_, "closing '" + name_ + "' failed: " + errno_text(errno));
    }
  }

  void rename_over_target() {
    if (::rename(name_.c_str(), target_.c_str()) != 0) {
      fail_write(target_, "renaming '" + name_ + "' over it failed: " + errno_text(errno));
    }
    name_.clear();
  }

 private:
  std::string target_;
  std::string name_;
  int fd_ = -1;
};

// Makes the rename itself durable; a failure here loses nothing already written, so it is
// not reported.
void sync_directory(const fs::path& dir) noexcept {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

// A string as dump(-1) writes it: quoted, and printable ASCII without quotes or backslashes as it
// is (a report's keys, names and labels), anything else by nlohmann.
void append_string(const std::string& text, std::string& out) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  if (!plain) {
    out += json(text).dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  out += '"';
  out += text;
  out += '"';
}

// A scalar (or an empty array or object) as dump(-1) writes it; integers and plain strings
// without a temporary string each (most of a recording's text).
void append_scalar(const json& v, std::string& out) {
  char digits[24];
  if (v.is_number_unsigned() || v.is_number_integer()) {
    const auto r = v.is_number_unsigned() ? std::to_chars(digits, digits + sizeof digits, v.get<std::uint64_t>())
                                          : std::to_chars(digits, digits + sizeof digits, v.get<std::int64_t>());
    out.append(digits, r.ptr);
  } else if (v.is_string()) {
    append_string(v.get_ref<const std::string&>(), out);
  } else {
    out += v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

// j's one-line text appended to `out`: compact (dump(-1): "," and ":") or spaced (", " and ": "),
// each scalar as dump(-1) writes it. False, with `out` past `start + most`, as soon as the text
// from `start` is longer than `most`: a value too long for its line is not written out whole
// (a recording's events: megabytes) to learn that it does not fit.
bool one_line(const json& j, bool spaced, std::string& out, std::size_t start, std::size_t most) {
  if (!j.is_structured() || j.empty()) {
    append_scalar(j, out);
    return out.size() - start <= most;
  }
  const bool object = j.is_object();
  out += object ? '{' : '[';
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it != j.begin()) out += spaced ? ", " : ",";
    if (object) {
      append_string(it.key(), out);
      out += spaced ? ": " : ":";
    }
    if (!one_line(*it, spaced, out, start, most)) return false;
  }
  out += object ? '}' : ']';
  return out.size() - start <= most;
}

// JSON a person can read at a tenth of the size of one value per line: a value whose one-line
// form fits `width` columns at its indentation stays on one line (an event, a counter sample, a
// skeleton node), larger ones open one member per line. Invalid UTF-8 (a device name or command
// line can hold any bytes) is replaced rather than thrown on: losing a report at the end of a
// long run over one byte would be worse.
// `deep`: from this indentation on, a value too wide for one line with spaces is written on one
// line without them where that is at most 4 KiB (a recording's graph, scenario or pool entry: a
// recording of 2000 graphs spent a third of its bytes on indentation); 0: never.
// `each`, where given, makes long arrays' text in runs (fitted_in_runs_from elements or more).
constexpr std::size_t fitted_in_runs_from = 256;

void fit(const json& j, std::size_t indent, std::size_t width, std::size_t deep, std::string& out,
         const for_each_index& each = {}) {
  if (!j.is_structured() || j.empty()) {
    one_line(j, false, out, out.size(), std::string::npos);
    return;
  }
  const std::size_t start = out.size();
  if (deep && indent >= deep) {
    if (one_line(j, false, out, start, 4096) && indent + (out.size() - start) > width) return;
    out.resize(start);
  }
  // On one line with spaces where that leaves two columns of the width.
  if (indent + 2 <= width && one_line(j, true, out, start, width - indent - 2)) return;
  out.resize(start);
  const bool object = j.is_object();
  out += object ? '{' : '[';
  // One member's lines, as they follow the opening bracket or the member before; `inner` passed on
  // to it (a member holding a long array: the recording's section, its rows).
  const auto member = [&](auto it, bool first, std::string& into, const for_each_index& inner) {
    into += first ? "\n" : ",\n";
    into.append(indent + 2, ' ');
    if (object) {
      append_string(it.key(), into);
      into += ": ";
    }
    fit(*it, indent + 2, width, deep, into, inner);
  };
  if (each && !object && j.size() >= fitted_in_runs_from) {
    // A long array's elements in runs, each run's text made alone and joined in order: a
    // recording's scenarios, graphs, calls and counter points. The same text.
    std::vector<std::string> texts(run_count(j.size(), 8));
    run_ranges(each, j.size(), 8, [&](std::size_t r, std::size_t from, std::size_t to) {
      for (std::size_t i = from; i < to; ++i) {
        member(j.begin() + static_cast<std::ptrdiff_t>(i), i == 0, texts[r], for_each_index{});
      }
    });
    for (const std::string& t : texts) out += t;
  } else {
    for (auto it = j.begin(); it != j.end(); ++it) member(it, it == j.begin(), out, each);
  }
  out += '\n';
  out.append(indent, ' ');
  out += object ? '}' : ']';
}

std::string fitted_json(const json& j, std::size_t deep, std::size_t width = 120, const for_each_index& each = {}) {
  std::string out;
  fit(j, 0, width, deep, out, each);
  return out;
}

// A skeleton's shape: the skeleton without its graph's name and its allocations' sizes.
json shape_of_skeleton(const json& sk, json& bytes) {
  json shape = sk;
  shape.erase("graph");
  bytes = json::array();
  for (auto& n : shape["nodes"]) {
    if (n.contains("bytes")) {
      bytes.push_back(n["bytes"]);
      n.erase("bytes");
    }
  }
  return shape;
}

// The skeletons of a recording's graphs whose shape another graph shares (a site captured at
// many sizes: 2000 graphs of one engine had three) name it in recorded.skeleton_shapes and give
// their allocations' sizes in node order: {"graph", "shape", "bytes"}. The shapes are told apart
// on the skeletons (same_shape), not on their JSON: 2000 graphs of 331 nodes spent a sixth of the
// recording's end making each graph's skeleton whole in JSON to compare it.
struct shared_shapes {
  std::vector<std::vector<std::size_t>> place;  // by scenario and skeleton: its shape's, or no_node
  json table = json::array();
};

shared_shapes plan_shared_shapes(const std::vector<scenario_result>& scenarios) {
  struct group {
    const skeleton* first;
    std::size_t uses = 0, place = no_node;
  };
  std::vector<group> groups;
  std::unordered_multimap<std::uint64_t, std::size_t> by_hash;
  std::vector<std::vector<std::size_t>> group_of(scenarios.size());
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    for (const skeleton& sk : scenarios[i].skeletons) {
      const std::uint64_t h = shape_hash(sk);
      std::size_t found = no_node;
      for (auto [it, end] = by_hash.equal_range(h); it != end && found == no_node; ++it) {
        if (same_shape(*groups[it->second].first, sk)) found = it->second;
      }
      if (found == no_node) {
        found = groups.size();
        groups.push_back(group{&sk});
        by_hash.emplace(h, found);
      }
      ++groups[found].uses;
      group_of[i].push_back(found);
    }
  }
  shared_shapes out;
  out.place.resize(scenarios.size());
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    for (const std::size_t k : group_of[i]) {
      group& g = groups[k];
      if (g.uses >= 2 && g.place == no_node) {
        g.place = out.table.size();
        json bytes;
        out.table.push_back(shape_of_skeleton(skeleton_to_json(*g.first), bytes));
      }
      out.place[i].push_back(g.uses >= 2 ? g.place : no_node);
    }
  }
  return out;
}

// The inverse, before the report is read: each {"graph", "shape", "bytes"} skeleton made whole
// from recorded.skeleton_shapes, by scenario and skeleton (nothing where a skeleton is written
// whole). Each shape's first graph's skeleton is made whole in JSON and read; the others are
// copies of it with their own name, sizes and labels (skeleton_of_shape): a JSON copy and a read
// per graph took 60% of `gmemprof show` on a recording of 2000 graphs of a 331-node shape.
using read_skeletons = std::vector<std::vector<std::optional<skeleton>>>;

// What is known of one of recorded.skeleton_shapes while its uses are read.
struct shape_read {
  std::size_t allocs = 0;             // its alloc nodes
  std::optional<std::size_t> first;   // the use that reads it whole: its first
  std::optional<skeleton> whole;      // as its first graph read it, its word labels blank
  std::vector<std::string> words;     // its labels' words (shape_label_words)
};

// A skeleton written as a shape's name and sizes.
struct shape_use {
  std::size_t scenario = 0, k = 0;
  std::size_t shape = 0;  // table.size(): named none of the table's
  std::string path;
};

// Every skeleton of `scenarios` that names a shape of `table`, in order; each shape's first use
// and alloc nodes noted in `shapes`, and `out` sized by scenario and skeleton.
std::vector<shape_use> find_shape_uses(const json& scenarios, const json& table, std::vector<shape_read>& shapes,
                                       read_skeletons& out) {
  std::vector<shape_use> uses;
  out.resize(scenarios.size());
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    const json& sc = scenarios[i];
    if (!sc.is_object() || !sc.contains("skeletons") || !sc["skeletons"].is_array()) continue;
    out[i].resize(sc["skeletons"].size());
    for (std::size_t k = 0; k < sc["skeletons"].size(); ++k) {
      const json& sk = sc["skeletons"][k];
      if (!sk.is_object() || !sk.contains("shape")) continue;
      shape_use u{i, k, table.size(), at(at("scenarios", i) + ".skeletons", k)};
      const json& n = sk["shape"];
      const std::size_t k_shape = n.is_number_unsigned() ? n.get<std::size_t>() : table.size();
      if (k_shape < table.size() && table[k_shape].is_object() && table[k_shape].contains("nodes") &&
          table[k_shape]["nodes"].is_array()) {
        u.shape = k_shape;
        shape_read& known = shapes[k_shape];
        if (!known.first) {
          known.first = uses.size();
          for (const auto& node : table[k_shape]["nodes"]) {
            known.allocs += node.is_object() && node.contains("kind") && node["kind"] == "alloc" ? 1 : 0;
          }
        }
      }
      uses.push_back(std::move(u));
    }
  }
  return uses;
}

// One use made whole into `slot`: its shape's first made whole in JSON and read (and noted in
// `known` for the others), any other a copy of that first with its own name and sizes.
void expand_shape_use(const json& scenarios, const json& table, const shape_use& u, bool first,
                      std::vector<shape_read>& shapes, std::optional<skeleton>& slot) {
  if (u.shape >= table.size()) {
    fail(u.path + ".shape", "must name one of the " + std::to_string(table.size()) +
                                   " skeleton shapes in recorded.skeleton_shapes");
  }
  const json& sc = scenarios[u.scenario];
  const json& sk = sc["skeletons"][u.k];
  const json& shape = table[u.shape];
  shape_read& known = shapes[u.shape];
  const json graph = sk.contains("graph") ? sk["graph"] : sc.contains("name") ? sc["name"] : json("");
  json bytes;
  try {
    bytes = values_of_runs(sk.contains("bytes") ? sk["bytes"] : empty_json_array(), known.allocs, u.path + ".bytes");
  } catch (const std::invalid_argument& e) {
    fail(u.path + ".bytes", std::string("must give one size per alloc node of its shape (") +
                                   std::to_string(known.allocs) + "): " + e.what());
  }
  if (!first) {
    slot = skeleton_of_shape(*known.whole, known.words, graph, bytes, u.path);
    return;
  }
  json whole = json{{"graph", graph}};
  for (const auto& [key, value] : shape.items()) whole[key] = value;
  std::size_t b = 0;
  for (auto& node : whole["nodes"]) {
    if (node.is_object() && node.contains("kind") && node["kind"] == "alloc") node["bytes"] = bytes[b++];
  }
  slot = skeleton_from_json(whole, u.path);
  known.words = shape_label_words(shape);
  known.whole = blank_word_labels(*slot, known.words);
}

read_skeletons expand_skeleton_shapes(const json& root, const for_each_index& each) {
  read_skeletons out;
  const auto rec = root.find("recorded");
  if (rec == root.end() || !rec->is_object() || !rec->contains("skeleton_shapes")) return out;
  const json& table = (*rec)["skeleton_shapes"];
  if (!table.is_array()) fail("recorded.skeleton_shapes", "must be an array of skeleton shapes");
  const auto scenarios = root.find("scenarios");
  if (scenarios == root.end() || !scenarios->is_array()) return out;  // the reader says what is wrong
  std::vector<shape_read> shapes(table.size());
  const std::vector<shape_use> uses = find_shape_uses(*scenarios, table, shapes, out);
  // Each use is read alone but for its shape's first, which the others copy: the firsts on this
  // thread, then the others through `each`. Each error is kept by use, and the earliest thrown:
  // the one a reading in order would stop at (a use whose shape's first failed is never read, as
  // a reading in order stops before it).
  std::vector<std::exception_ptr> failed(uses.size());
  const auto read = [&](std::size_t u_index, bool firsts) {
    const shape_use& u = uses[u_index];
    const bool valid = u.shape < table.size();
    if (firsts != (!valid || *shapes[u.shape].first == u_index)) return;
    if (!firsts && !shapes[u.shape].whole) return;  // its first failed
    try {
      expand_shape_use(*scenarios, table, u, firsts, shapes, out[u.scenario][u.k]);
    } catch (...) {
      failed[u_index] = std::current_exception();
    }
  };
  for (std::size_t u = 0; u < uses.size(); ++u) read(u, true);
  run_each(each, uses.size(), [&](std::size_t u) { read(u, false); });
  rethrow_first(failed);
  return out;
}

// Arrays of objects of one kind (each graph's events, the call sequence, the counter timeline,
// allocations, a pool's attribution and timeline) as rows: the field names once, in recorded.row_fields[kind], each
// object an array of its values in that order, a field written "name?" where some objects lack it
// (a null in its place: absent), trailing absent fields left off. Nearly half of a 2000-graph
// recording's bytes were these names. A table any of whose objects is not a plain object, or holds
// null for a field that others lack, stays as it is.
struct row_table {
  std::vector<std::string> fields;
  std::vector<bool> optional;
  bool usable = true;
};

// A run of the elements of a table's arrays, in their order: a table's objects are shared among
// threads in such runs, each run's work made alone (a recording's calls and counter points, or
// the events of its 2000 graphs: tens of thousands of objects).
struct element_run {
  struct part {
    json* array;
    std::size_t from, to;
  };
  std::vector<part> parts;

  template <typename Each>
  void for_each(Each each) const {
    for (const part& p : parts) {
      for (std::size_t i = p.from; i < p.to; ++i) each((*p.array)[i]);
    }
  }
};

std::vector<element_run> element_runs(const std::vector<json*>& arrays) {
  std::size_t total = 0;
  for (const json* a : arrays) total += a->is_array() ? a->size() : 0;
  const std::size_t size = std::max<std::size_t>(512, total / 64);
  std::vector<element_run> runs;
  std::size_t in_run = size;  // elements in the last run
  for (json* a : arrays) {
    if (!a->is_array()) continue;
    for (std::size_t from = 0; from < a->size();) {
      if (in_run == size) {
        runs.emplace_back();
        in_run = 0;
      }
      const std::size_t to = std::min(a->size(), from + (size - in_run));
      runs.back().parts.push_back({a, from, to});
      in_run += to - from;
      from = to;
    }
  }
  return runs;
}

// The fields of the objects of `run` in the order they are first met; false where one is not a
// plain object.
bool learn_rows(const element_run& run, std::vector<std::string>& fields) {
  bool plain = true;
  run.for_each([&](const json& o) {
    if (!o.is_object()) plain = false;
    if (!plain) return;
    for (const auto& [key, value] : o.items()) {
      if (std::find(fields.begin(), fields.end(), key) == fields.end()) fields.push_back(key);
    }
  });
  return plain;
}

// Which fields some objects of `run` lack (optional), and which some hold null.
void learn_optional(const element_run& run, const row_table& t, std::vector<bool>& optional,
                    std::vector<bool>& has_null) {
  run.for_each([&](const json& o) {
    for (std::size_t f = 0; f < t.fields.size(); ++f) {
      const auto it = o.find(t.fields[f]);
      if (it == o.end()) {
        optional[f] = true;
      } else if (it->is_null()) {
        has_null[f] = true;
      }
    }
  });
}

void to_rows(const element_run& run, const row_table& t) {
  run.for_each([&t](json& o) {
    json row = json::array();
    row.get_ref<json::array_t&>().reserve(t.fields.size());
    for (const auto& f : t.fields) {
      const auto it = o.find(f);
      row.push_back(it == o.end() ? json(nullptr) : std::move(*it));  // the object is dropped after
    }
    std::size_t keep = row.size();
    for (std::size_t f = t.fields.size(); f-- > 0;) {
      if (!t.optional[f] || !row[f].is_null()) break;
      keep = f;
    }
    row.erase(row.begin() + static_cast<std::ptrdiff_t>(keep), row.end());
    o = std::move(row);
  });
}

// The tables of a recording, each with the arrays it gathers.
template <typename Visit>
void visit_tables(json& scenarios, json& recorded, Visit visit) {
  std::vector<json*> events, allocations, attribution, pool_timeline, sequence, timeline;
  if (recorded.contains("graphs") && recorded["graphs"].is_array()) {
    for (auto& g : recorded["graphs"]) {
      if (g.is_object() && g.contains("events")) events.push_back(&g["events"]);
    }
  }
  if (scenarios.is_array()) {
    for (auto& s : scenarios) {
      if (s.is_object() && s.contains("allocations")) allocations.push_back(&s["allocations"]);
    }
  }
  if (recorded.contains("pools") && recorded["pools"].is_array()) {
    for (auto& p : recorded["pools"]) {
      if (!p.is_object()) continue;
      if (p.contains("attribution")) attribution.push_back(&p["attribution"]);
      if (p.contains("timeline")) pool_timeline.push_back(&p["timeline"]);
    }
  }
  if (recorded.contains("sequence")) sequence.push_back(&recorded["sequence"]);
  if (recorded.contains("timeline")) timeline.push_back(&recorded["timeline"]);
  visit("events", events);
  visit("allocations", allocations);
  visit("attribution", attribution);
  visit("pool_timeline", pool_timeline);
  visit("sequence", sequence);
  visit("timeline", timeline);
}

void write_rows(json& scenarios, json& recorded, const for_each_index& each) {
  json fields = json::object();
  visit_tables(scenarios, recorded, [&fields, &each](const char* kind, const std::vector<json*>& arrays) {
    const std::vector<element_run> runs = element_runs(arrays);
    // Each run's fields, joined in the runs' order: the order the objects first name them.
    std::vector<std::vector<std::string>> named(runs.size());
    std::vector<char> plain(runs.size(), 1);
    run_each(each, runs.size(), [&](std::size_t r) { plain[r] = learn_rows(runs[r], named[r]); });
    row_table t;
    for (std::size_t r = 0; r < runs.size() && t.usable; ++r) {
      t.usable = plain[r];
      for (std::string& f : named[r]) {
        if (std::find(t.fields.begin(), t.fields.end(), f) == t.fields.end()) t.fields.push_back(std::move(f));
      }
    }
    if (!t.usable || t.fields.empty()) return;
    std::vector<std::vector<bool>> optional(runs.size(), std::vector<bool>(t.fields.size(), false));
    std::vector<std::vector<bool>> has_null = optional;
    run_each(each, runs.size(), [&](std::size_t r) { learn_optional(runs[r], t, optional[r], has_null[r]); });
    t.optional.assign(t.fields.size(), false);
    for (std::size_t f = 0; f < t.fields.size(); ++f) {
      bool null = false;
      for (std::size_t r = 0; r < runs.size(); ++r) {
        t.optional[f] = t.optional[f] || optional[r][f];
        null = null || has_null[r][f];
      }
      t.usable = t.usable && !(t.optional[f] && null);
    }
    if (!t.usable) return;
    json names = json::array();
    for (std::size_t f = 0; f < t.fields.size(); ++f) names.push_back(t.fields[f] + (t.optional[f] ? "?" : ""));
    fields[kind] = std::move(names);
    run_each(each, runs.size(), [&](std::size_t r) { to_rows(runs[r], t); });
  });
  if (!fields.empty()) recorded["row_fields"] = std::move(fields);
}

// The inverse, before the report is read: rows made objects again.
void read_rows(json& root, const for_each_index& each) {
  const auto rec = root.find("recorded");
  if (rec == root.end() || !rec->is_object() || !rec->contains("row_fields")) return;
  const json all_fields = (*rec)["row_fields"];
  if (!all_fields.is_object()) fail("recorded.row_fields", "must be an object of field lists");
  json empty = json::array();
  json& scenarios = root.contains("scenarios") ? root["scenarios"] : empty;
  visit_tables(scenarios, *rec, [&](const char* kind, const std::vector<json*>& arrays) {
    const auto f = all_fields.find(kind);
    if (f == all_fields.end()) return;
    const std::string fp = std::string("recorded.row_fields.") + kind;
    if (!f->is_array()) fail(fp, "must be an array of field names");
    std::vector<std::string> names;
    std::vector<bool> optional;
    for (const auto& n : *f) {
      if (!n.is_string() || n.get<std::string>().empty()) fail(fp, "must be an array of field names");
      std::string name = n.get<std::string>();
      optional.push_back(name.back() == '?');
      if (optional.back()) name.pop_back();
      names.push_back(std::move(name));
    }
    const std::vector<element_run> runs = element_runs(arrays);
    // Each run alone; the error told is the first a reading in order meets.
    rethrow_first(run_each_keeping_errors(each, runs.size(), [&](std::size_t r) {
      runs[r].for_each([&](json& row) {
        if (!row.is_array()) return;  // an object: the reader takes it as it is
        if (row.size() > names.size()) {
          fail(fp, "names " + std::to_string(names.size()) + " fields, but a row of " + kind + " has " +
                          std::to_string(row.size()) + " values");
        }
        json o = object_with_room(names.size());
        for (std::size_t k = 0; k < names.size(); ++k) {
          if (k >= row.size() || (optional[k] && row[k].is_null())) {
            if (!optional[k]) fail(fp, "names " + names[k] + ", which a row of " + kind + " lacks");
            continue;
          }
          o[names[k]] = std::move(row[k]);
        }
        row = std::move(o);
      });
    }));
  });
}

// The report's text parsed, refused before parsing where it nests too deep.
json parse_report_text(const std::string& text, const std::string& source, const for_each_index& each) {
  // Before parsing: nlohmann parses deep text without recursion, but copies and destroys it
  // recursively (a key after ~100,000 nested arrays overflowed the stack).
  if (const auto at = offset_beyond_depth(text, report_max_depth)) {
    throw report_error(report_error::kind::invalid,
                       "report '" + source + "' nests arrays and objects deeper than " +
                           std::to_string(report_max_depth) + " levels (level " +
                           std::to_string(report_max_depth + 1) + " opens at byte " +
                           std::to_string(*at) +
                           "); gmemprof's reports nest far less, so it did not write this file: pass a "
                           "report written by `gmemprof run --out FILE` or `gmemprof record --out FILE "
                           "-- COMMAND`");
  }
  try {
    return parse_json_tree(text, each);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond double
    throw report_error(report_error::kind::not_json,
                       "report '" + source + "' is not JSON (" + printable(e.what()) +
                           "); pass a report written by `gmemprof run --out FILE` or "
                           "`gmemprof record --out FILE -- COMMAND`");
  }
}

// The report's schema_version, which must be the one this gmemprof reads.
int read_schema_version(const json& root, const std::string& source) {
  const auto version = root.find("schema_version");
  if (version == root.end()) {
    fail("schema_version", "is missing, so this is not a gmem report");
  }
  const std::optional<std::int64_t> v = as_int64(*version);
  if (!v) fail("schema_version", "must be an integer, is " + kind_of(*version));
  if (*v != schema_version) {
    throw report_error(report_error::kind::wrong_schema_version,
                       "report '" + source + "' has schema_version " + std::to_string(*v) +
                           ", but this gmemprof reads schema_version " +
                           std::to_string(schema_version) +
                           "; read it with the gmemprof that wrote it, or measure it again "
                           "with this one");
  }
  return static_cast<int>(*v);
}

// The report's scenarios into `r`, each once. Returns those whose calls' figures are their
// graph's events' (phases_from_events).
std::vector<std::size_t> read_scenarios(const json& root, const for_each_index& each, report& r) {
  const json& scenarios = array(root, "scenarios", "");
  // After the version's check: a report of another version is refused for its version, not for
  // a skeleton this gmemprof would not read.
  read_skeletons skeletons = expand_skeleton_shapes(root, each);
  // Each scenario is read alone; the errors are thrown in the order a reading in order meets them.
  std::vector<scenario_result> read(scenarios.size());
  const std::vector<std::exception_ptr> failed = run_each_keeping_errors(each, scenarios.size(), [&](std::size_t i) {
    read[i] = read_scenario(scenarios[i], at("scenarios", i), i < skeletons.size() ? &skeletons[i] : nullptr);
  });
  skeletons.clear();
  std::map<std::string, std::size_t> first_of_key;
  std::vector<std::size_t> derived;  // scenarios whose calls' figures are their graph's events'
  r.scenarios.reserve(scenarios.size());
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    if (failed[i]) std::rethrow_exception(failed[i]);
    r.scenarios.push_back(std::move(read[i]));
    if (flag(scenarios[i], "phases_from_events", at("scenarios", i))) derived.push_back(i);
    const auto [it, fresh] = first_of_key.emplace(r.scenarios.back().key(), i);
    if (!fresh) {
      fail(at("scenarios", i),
              "repeats the scenario '" + it->first + "' of scenarios[" +
                  std::to_string(it->second) +
                  "]: a report holds each scenario (name and parameters) once, so a check "
                  "could not tell which of the two to compare");
    }
  }
  return derived;
}

// The counters after each phase and the first launch costs of the `derived` scenarios, from
// their recorded graphs' events.
void add_derived_phases(const std::vector<std::size_t>& derived, report& r) {
  for (const std::size_t i : derived) {
    if (!r.recorded || i >= r.recorded->graphs.size()) {
      fail(at("scenarios", i) + ".phases_from_events",
              "is true, but recorded.graphs has no graph " + std::to_string(i) + " whose events state them");
    }
    scenario_result& s = r.scenarios[i];
    scenario_result d;
    add_event_phases(d, r.recorded->graphs[i]);
    s.counters_after_phase = std::move(d.counters_after_phase);
    s.launch_costs.insert(s.launch_costs.begin(), d.launch_costs.begin(), d.launch_costs.end());
  }
}

}  // namespace

json report_to_json(const report& r, bool leave_out_derived, const for_each_index& each) {
  json j;
  j["schema_version"] = r.version;
  j["environment"] = to_json(r.env);
  const bool compact = r.recorded && leave_out_derived;
  shared_shapes shapes = compact ? plan_shared_shapes(r.scenarios) : shared_shapes{};
  std::vector<json> made(r.scenarios.size());
  rethrow_first(run_each_keeping_errors(each, r.scenarios.size(), [&](std::size_t i) {  // std::bad_alloc, no other
    const bool graph = compact && i < r.recorded->graphs.size();
    made[i] = to_json(r.scenarios[i], graph ? &r.recorded->graphs[i] : nullptr,
                      i < shapes.place.size() ? &shapes.place[i] : nullptr);
  }));
  json scenarios = json::array();
  for (json& m : made) scenarios.push_back(std::move(m));
  json recorded = r.recorded ? recording_to_json(*r.recorded, each) : json();
  if (compact) {
    share_site_fields(recorded);
    share_scenario_values(scenarios, recorded);
    if (!shapes.table.empty()) recorded["skeleton_shapes"] = std::move(shapes.table);
    write_rows(scenarios, recorded, each);
  }
  j["scenarios"] = std::move(scenarios);
  if (r.recorded) j["recorded"] = std::move(recorded);
  return j;
}

std::string to_json_string(const report& r, const for_each_index& each, kept_trees* keep) {
  json tree = report_to_json(r, true, each);
  std::string text = fitted_json(tree, r.recorded ? 4 : 0, 120, each);
  if (keep) keep->trees.push_back(std::make_shared<json>(std::move(tree)));
  return text;
}

report from_json_string(const std::string& text, const std::string& source, const for_each_index& each,
                        kept_trees* keep) {
  json root = parse_report_text(text, source, each);
  try {
    make_printable(root, nullptr, each);
    if (!root.is_object()) fail("the top level", "must be an object, is " + kind_of(root));
    read_rows(root, each);
    expand_scenario_values(root);
    report r;
    r.version = read_schema_version(root, source);
    r.env = read_environment(root);
    const std::vector<std::size_t> derived = read_scenarios(root, each, r);
    if (const auto rec = root.find("recorded"); rec != root.end()) {  // gmemprof record's section
      r.recorded = recording_from_json(*rec, "recorded", each);
    }
    add_derived_phases(derived, r);
    if (keep) keep->trees.push_back(std::make_shared<json>(std::move(root)));
    return r;
  } catch (const std::invalid_argument& e) {  // a field_error, or a model's refusal of the values
    const bool recording = root.is_object() && root.contains("recorded");
    throw report_error(report_error::kind::invalid,
                       "report '" + source + "': " + e.what() + (recording ? recording_advice : suite_advice));
  }
}

void write_report(const report& r, const std::string& path) {
  write_text_atomically(to_json_string(r) + "\n", path);
}

void write_text_atomically(const std::string& text, const std::string& path) {
  const fs::path dir = directory_for(path);
  temp_file tmp(dir, path);
  tmp.write_all(text);
  tmp.sync_and_close();
  tmp.rename_over_target();
  sync_directory(dir);
}

void check_writable(const std::string& path) {
  const fs::path dir = directory_for(path);
  // Creating (and at once removing) the very kind of file write_report makes is the only
  // honest test: permissions, read-only mounts and ACLs all show up here.
  const temp_file probe(dir, path);
}

report read_report(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) {
    throw report_error(report_error::kind::missing,
                       "report '" + path +
                           "' does not exist; check the path, or write it with `gmemprof run "
                           "--out " + path + "` (the suite) or `gmemprof record --out " + path +
                           " -- COMMAND` (a program)");
  }
  if (fs::is_directory(st)) {
    throw report_error(report_error::kind::unreadable,
                       "report '" + path + "' is a directory; pass the report's JSON file");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw report_error(
        report_error::kind::unreadable,
        "report '" + path + "' cannot be opened: " + errno_text(errno) + "; check its permissions");
  }
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) {
    throw report_error(report_error::kind::unreadable,
                       "report '" + path + "' cannot be read: " + errno_text(errno));
  }
  // Its scenarios read on the CPUs there are (a recording of 2000 graphs: most of the read).
  return from_json_string(text.str(), path, on_threads(cpus_to_use(8)));
}

}  // namespace gmem::profiler
