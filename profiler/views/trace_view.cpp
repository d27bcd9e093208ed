#include <algorithm>
#include <cstddef>
#include <nlohmann/json.hpp>

#include "views/views.hpp"

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

// A pool's process id, apart from the device's (the graphs' tracks).
constexpr int pool_pid_base = 1000;

json counter_sample(const char* name, double ts, int pid, int tid, std::uint64_t bytes) {
  return json{{"name", name}, {"cat", "counter"}, {"ph", "C"}, {"ts", ts},
              {"pid", pid}, {"tid", tid}, {"args", {{"bytes", bytes}}}};
}

void add_counters(const counters& c, double ts, int pid, int tid, json& events) {
  events.push_back(counter_sample("used_current", ts, pid, tid, c.used_current));
  events.push_back(counter_sample("used_high", ts, pid, tid, c.used_high));
  events.push_back(counter_sample("reserved_current", ts, pid, tid, c.reserved_current));
  events.push_back(counter_sample("reserved_high", ts, pid, tid, c.reserved_high));
}

// A recording's pools, one process each: the reservation as a counter track, an instant per
// call that changed it (and per trim) on a "mapping events" track, and the high watermark. A call
// another thread's call overlapped says so in its name and args: its growth is the pool model's
// share, and such calls' readings need not rise in time order.
void add_pools(const recording& rec, json& events) {
  for (const auto& p : rec.pools) {
    const int pid = pool_pid_base + p.device;
    events.push_back(meta("process_name", pid, 0,
                          "graph memory pool, device " + std::to_string(p.device) +
                              (p.process.empty() ? "" : " of " + p.process)));
    events.push_back(meta("thread_name", pid, 1, "mapping events"));
    for (const auto& t : p.timeline) {
      const double ts = std::max(0.0, t.t_us);
      events.push_back(json{{"name", "pool reserved"}, {"cat", "pool"}, {"ph", "C"}, {"ts", ts},
                            {"pid", pid}, {"tid", 0}, {"args", {{"bytes", t.reserved_bytes}}}});
      json args = {{"graph", t.graph}, {"event", t.event}, {"growth_bytes", t.growth_bytes},
                   {"reserved_bytes", t.reserved_bytes}};
      if (t.concurrent) args["concurrent"] = true;
      events.push_back(json{{"name", (t.graph.empty() ? "" : t.graph + ": ") + t.event +
                                         (t.concurrent ? " (concurrent)" : "")},
                            {"cat", "mapping"}, {"ph", "i"}, {"s", "t"}, {"ts", ts},
                            {"pid", pid}, {"tid", 1}, {"args", args}});
    }
    json args = {{"bytes", p.high_bytes}, {"graph", p.high_graph}, {"event", p.high_event},
                 {"model_bytes", p.model_high_bytes}};
    if (p.high_concurrent) args["concurrent"] = true;
    events.push_back(json{{"name", p.high_concurrent ? "high watermark (concurrent calls)" : "high watermark"},
                          {"cat", "pool_high"}, {"ph", "i"}, {"s", "p"},
                          {"ts", std::max(0.0, p.high_t_us)}, {"pid", pid}, {"tid", 1}, {"args", args}});
  }
}

// The recorded graph a scenario of a recording stands for: the one at its index where the report
// is as written, else the first of its name; null when none.
const recorded_graph* graph_of(const report& r, std::size_t si) {
  const auto& graphs = r.recorded->graphs;
  const std::string& name = r.scenarios[si].name;
  if (si < graphs.size() && graphs[si].name == name) return &graphs[si];
  for (const auto& g : graphs) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

// The calls that read the counters, as the recording lists them under the scenario's
// counters_after_phase (frees, releases and captures are not the graph's phases).
bool reads_phase(const recorded_event& e) {
  return e.after && e.kind != "free" && e.kind != "release" && e.kind != "capture";
}

std::string call_name(const recorded_event& e) {
  std::string name = e.kind == "launch" && !e.cls.empty() ? e.cls : e.kind;
  if (!e.result.empty()) name += " failed";
  return e.concurrent ? name + " (concurrent)" : name;
}

json call_args(const recorded_event& e) {
  json args = {{"kind", e.kind}, {"device", e.device}, {"host_us", e.host_us}};
  if (!e.cls.empty()) args["class"] = e.cls;
  if (!e.stream.empty()) args["stream"] = e.stream;
  if (!e.result.empty()) args["result"] = e.result;
  if (e.growth_bytes != 0) args["growth_bytes"] = e.growth_bytes;
  if (e.concurrent) args["concurrent"] = true;
  return args;
}

// The medians of a graph's calls by phase: annotations (args), never times.
json medians_of(const scenario_result& s) {
  json args = json::object();
  for (const auto& c : s.launch_costs) {
    json m = {{"host_median_us", c.host.median_us}, {"samples", c.host.count}};
    if (c.wall.count > 0) m["wall_median_us"] = c.wall.median_us;
    args[c.phase] = m;
  }
  return args;
}

// One scenario of a recording on its track, every call at the time the program made it (the
// recording's clock, the pools' too): a slice per recorded call as long as its host time, the
// device's counters after each call that read them, and the medians of its launches as an
// instant at its first call.
void add_recorded_scenario(const report& r, std::size_t si, int pid, int tid, json& events) {
  const scenario_result& s = r.scenarios[si];
  const recorded_graph* g = graph_of(r, si);
  const std::vector<recorded_event> none;
  const std::vector<recorded_event>& calls = g ? g->events : none;
  double first = calls.empty() ? 0 : calls.front().t_us, last = first;
  std::size_t reads = 0;
  for (const auto& e : calls) {
    first = std::min(first, e.t_us);
    last = std::max(last, e.t_us + std::max(0.0, e.host_us));
    reads += reads_phase(e);
  }
  events.push_back(json{{"name", s.key()}, {"cat", "scenario"}, {"ph", "X"}, {"ts", first},
                        {"dur", std::max(last - first, 1.0)}, {"pid", pid}, {"tid", tid},
                        {"args", {{"status", to_string(s.status)}}}});
  // The report's counters after each phase belong to these calls, in order; a recording whose
  // lists differ (events past the recorder's bound) keeps the calls' own readings.
  const bool paired = reads == s.counters_after_phase.size();
  std::size_t phase = 0;
  for (const auto& e : calls) {
    events.push_back(json{{"name", call_name(e)}, {"cat", "call"}, {"ph", "X"}, {"ts", e.t_us},
                          {"dur", std::max(0.0, e.host_us)}, {"pid", pid}, {"tid", tid},
                          {"args", call_args(e)}});
    if (!reads_phase(e)) continue;
    const counters& c = paired ? s.counters_after_phase[phase++].values : *e.after;
    add_counters(c, e.t_us + std::max(0.0, e.host_us), pid, tid, events);
  }
  if (!s.launch_costs.empty()) {
    events.push_back(json{{"name", "launch medians (host us)"}, {"cat", "medians"}, {"ph", "i"},
                          {"s", "t"}, {"ts", first}, {"pid", pid}, {"tid", tid},
                          {"args", medians_of(s)}});
  }
}

// A suite report holds medians, not times: its scenarios are laid out one after another, each
// phase as long as its wall median.
double add_suite_scenario(const scenario_result& s, double t, int pid, int tid, json& events) {
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
    add_counters(p.values, t, pid, tid, events);
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
  return std::max(t, start + 1.0);
}

}  // namespace

std::string trace_json(const report& r) {
  json events = json::array();
  const int pid = r.env.device_index;
  events.push_back(meta("process_name", pid, 0,
                        "GPU " + std::to_string(pid) + ": " + r.env.device_name));
  double t = 0;  // microseconds, a suite report's laid-out clock
  constexpr double gap_us = 10;
  for (std::size_t si = 0; si < r.scenarios.size(); ++si) {
    const int tid = static_cast<int>(si) + 1;
    events.push_back(meta("thread_name", pid, tid, r.scenarios[si].key()));
    if (r.recorded) {
      add_recorded_scenario(r, si, pid, tid, events);
    } else {
      t = add_suite_scenario(r.scenarios[si], t, pid, tid, events) + gap_us;
    }
  }
  if (r.recorded) add_pools(*r.recorded, events);
  json doc = {{"traceEvents", events},
              {"displayTimeUnit", "ms"},
              {"otherData",
               {{"device", r.env.device_name},
                {"git_commit", r.env.git_commit},
                {"date", r.env.date},
                {"note", r.recorded
                             ? "one clock, the recording's: every call, counter reading and "
                               "pool event at the time the program made it; launch medians are "
                               "the args of each graph's 'launch medians' instant, not times"
                             : "timeline laid out from the report's medians, not recorded "
                               "timestamps"}}}};
  return doc.dump(1);
}

}  // namespace gmem::profiler
