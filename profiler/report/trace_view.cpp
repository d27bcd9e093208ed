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

// A pool's process id: apart from the device's (the scenarios' process), whose times are laid
// out from medians while a pool's are the program's own.
constexpr int pool_pid_base = 1000;

// A recording's pools, one process each: the reservation as a counter track, an instant per
// call that changed it (and per trim) on a "mapping events" track, and the high watermark.
void add_pools(const recording& rec, json& events) {
  for (const auto& p : rec.pools) {
    const int pid = pool_pid_base + p.device;
    events.push_back(meta("process_name", pid, 0,
                          "graph memory pool, device " + std::to_string(p.device) +
                              " (recorded times)"));
    events.push_back(meta("thread_name", pid, 1, "mapping events"));
    for (const auto& t : p.timeline) {
      const double ts = std::max(0.0, t.t_us);
      events.push_back(json{{"name", "pool reserved"}, {"cat", "pool"}, {"ph", "C"}, {"ts", ts},
                            {"pid", pid}, {"tid", 0}, {"args", {{"bytes", t.reserved_bytes}}}});
      events.push_back(json{{"name", (t.graph.empty() ? "" : t.graph + ": ") + t.event},
                            {"cat", "mapping"}, {"ph", "i"}, {"s", "t"}, {"ts", ts},
                            {"pid", pid}, {"tid", 1},
                            {"args", {{"graph", t.graph}, {"event", t.event},
                                      {"growth_bytes", t.growth_bytes},
                                      {"reserved_bytes", t.reserved_bytes}}}});
    }
    events.push_back(json{{"name", "high watermark"}, {"cat", "pool_high"}, {"ph", "i"},
                          {"s", "p"}, {"ts", std::max(0.0, p.high_t_us)}, {"pid", pid},
                          {"tid", 1},
                          {"args", {{"bytes", p.high_bytes}, {"graph", p.high_graph},
                                    {"event", p.high_event},
                                    {"model_bytes", p.model_high_bytes}}}});
  }
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
  if (r.recorded) add_pools(*r.recorded, events);
  json doc = {{"traceEvents", events},
              {"displayTimeUnit", "ms"},
              {"otherData",
               {{"device", r.env.device_name},
                {"git_commit", r.env.git_commit},
                {"date", r.env.date},
                {"note", r.recorded && !r.recorded->pools.empty()
                             ? "scenario timeline laid out from the report's medians; the pools' "
                               "tracks at the times the program made its calls"
                             : "timeline laid out from the report's medians, not recorded "
                               "timestamps"}}}};
  return doc.dump(1);
}

}  // namespace gmem::profiler
