#include <algorithm>
#include <cstddef>
#include <nlohmann/json.hpp>

#include "report/views.hpp"

namespace gmem::profiler {
namespace {

using json = nlohmann::json;

const launch_cost* find_cost(const scenario_result& s, const std::string& phase) {
  for (const auto& c : s.launch_costs) {
    if (c.phase == phase) return &c;
  }
  return nullptr;
}

json meta(const char* what, int pid, int tid, const std::string& name) {
  return json{{"name", what}, {"ph", "M"}, {"ts", 0}, {"pid", pid}, {"tid", tid},
              {"args", {{"name", name}}}};
}

}  // namespace

std::string trace_json(const report& r) {
  json events = json::array();
  const int pid = r.env.device_index;
  events.push_back(meta("process_name", pid, 0,
                        "GPU " + std::to_string(pid) + ": " + r.env.device_name));
  double t = 0;  // microseconds
  constexpr double gap_us = 10;
  int tid = 0;
  for (const auto& s : r.scenarios) {
    ++tid;
    events.push_back(meta("thread_name", pid, tid, s.key()));
    const double start = t;
    const auto scenario_at = events.size();  // the scenario's span goes before its phases
    for (const auto& p : s.counters_after_phase) {
      const launch_cost* c = find_cost(s, p.phase);
      const double wall = c ? c->wall.median_us : 0;
      const double host = c ? c->host.median_us : 0;
      const double dur = std::max({1.0, wall, host});
      json args = {{"timed", c != nullptr}};
      if (c) {
        args["wall_median_us"] = wall;
        args["host_median_us"] = host;
        args["samples"] = c->wall.count;
      }
      events.push_back(json{{"name", p.phase}, {"cat", "phase"}, {"ph", "X"}, {"ts", t},
                            {"dur", dur}, {"pid", pid}, {"tid", tid}, {"args", args}});
      if (c) {
        events.push_back(json{{"name", "launch: " + p.phase}, {"cat", "launch"}, {"ph", "X"},
                              {"ts", t}, {"dur", std::max(host, 0.001)}, {"pid", pid},
                              {"tid", tid}, {"args", {{"host_median_us", host}}}});
      }
      t += dur;
      const std::pair<const char*, std::uint64_t> counters[] = {
          {"used_current", p.values.used_current},
          {"used_high", p.values.used_high},
          {"reserved_current", p.values.reserved_current},
          {"reserved_high", p.values.reserved_high}};
      for (const auto& [name, bytes] : counters) {
        events.push_back(json{{"name", name}, {"cat", "counter"}, {"ph", "C"}, {"ts", t},
                              {"pid", pid}, {"tid", tid}, {"args", {{"bytes", bytes}}}});
      }
    }
    if (s.counters_after_phase.empty()) {
      events.push_back(json{{"name", std::string(to_string(s.status)) + ": " + s.status_message},
                            {"cat", "scenario"}, {"ph", "i"}, {"s", "t"}, {"ts", t},
                            {"pid", pid}, {"tid", tid}});
    }
    events.insert(events.begin() + static_cast<std::ptrdiff_t>(scenario_at),
                  json{{"name", s.key()}, {"cat", "scenario"}, {"ph", "X"}, {"ts", start},
                       {"dur", std::max(t - start, 1.0)}, {"pid", pid}, {"tid", tid},
                       {"args", {{"status", to_string(s.status)}}}});
    t = std::max(t, start + 1.0) + gap_us;
  }
  json doc = {{"traceEvents", events},
              {"displayTimeUnit", "ms"},
              {"otherData",
               {{"device", r.env.device_name},
                {"git_commit", r.env.git_commit},
                {"date", r.env.date},
                {"note", "timeline laid out from the report's medians, not recorded timestamps"}}}};
  return doc.dump(1);
}

}  // namespace gmem::profiler
