// A recording as a report: graphs become scenario results (so that show and check work on them
// unchanged), and the events, the counter timeline and how the recording ended go in the
// report's optional "recorded" section.
#include <algorithm>
#include <map>
#include <cstdio>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/report_io.hpp"
#include "record/recorder.hpp"
#include "record/record_command.hpp"

namespace gmem::record {
namespace {

using json = nlohmann::ordered_json;

profiler::stats order_stats(std::vector<double> v) {
  profiler::stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.count = v.size();
  s.min_us = v.front();
  s.max_us = v.back();
  const std::size_t m = v.size() / 2;
  s.median_us = v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
  return s;
}

std::string phase_of(const graph_event& e) { return e.kind == "launch" ? e.cls : e.kind; }

json counters_json(const counters& c) {
  return json{{"used_current", c.used_current},
              {"used_high", c.used_high},
              {"reserved_current", c.reserved_current},
              {"reserved_high", c.reserved_high}};
}

}  // namespace

profiler::report assemble(const recorder& r, const profiler::environment& env,
                          std::uint64_t granularity) {
  profiler::report rep;
  rep.env = env;
  for (const graph_record& g : r.graphs()) {
    profiler::scenario_result s;
    s.name = g.name;
    s.params.emplace_back("source", std::string("recorded"));
    std::uint64_t used_high = 0, reserved_high = 0;
    std::map<std::string, std::vector<double>> host_by_phase;
    std::vector<std::string> phase_order;
    std::set<std::uint64_t> streams;
    for (const graph_event& e : g.events) {
      const std::string phase = phase_of(e);
      if (!host_by_phase.count(phase)) phase_order.push_back(phase);
      host_by_phase[phase].push_back(e.host_us);
      if (e.stream) streams.insert(e.stream);
      if (!e.after) continue;
      s.counters_after_phase.push_back({phase, *e.after});
      used_high = std::max(used_high, e.after->used_high);
      reserved_high = std::max(reserved_high, e.after->reserved_high);
    }
    if (!g.steady_host_us.empty()) {
      if (!host_by_phase.count("steady")) phase_order.push_back("steady");
      auto& v = host_by_phase["steady"];
      v.insert(v.end(), g.steady_host_us.begin(), g.steady_host_us.end());
    }
    for (const std::string& phase : phase_order) {
      profiler::launch_cost c;
      c.phase = phase;
      c.host = order_stats(host_by_phase[phase]);
      // No wall time: measuring it would synchronize the application's streams.
      s.launch_costs.push_back(c);
    }
    try {
      const profiler::graph_analysis a = profiler::analyse(g.model, granularity);
      s.analysis = profiler::summarize(a, used_high, reserved_high);
      profiler::runtime_facts facts;
      facts.graph_name = g.name;
      for (std::uint64_t st : streams) facts.launches.emplace_back(g.name, "stream " + std::to_string(st));
      facts.reserved_high = reserved_high;
      s.diagnostics = profiler::diagnose(profiler::flatten(g.model), a, facts);
    } catch (const std::exception& e) {
      s.status = profiler::scenario_status::error;
      s.status_message = std::string("the recorded graph could not be analysed: ") + e.what();
    }
    rep.scenarios.push_back(std::move(s));
  }
  return rep;
}

std::string to_json_string(const recorder& r, const profiler::report& rep,
                           const recording_info& info) {
  json root = json::parse(profiler::to_json_string(rep));
  json rec;
  rec["partial"] = info.partial;
  if (info.partial) rec["partial_reason"] = info.partial_reason;
  rec["command"] = info.command;
  rec["pid"] = info.pid;
  rec["name_from"] = to_string(r.names());
  rec["graphs_without_memory_nodes"] = r.graphs_without_memory_nodes();
  json notes = json::array();
  for (const auto& n : info.notes) notes.push_back(n);
  if (r.graphs_without_memory_nodes() > 0 && r.graphs().empty()) {
    notes.push_back(std::to_string(r.graphs_without_memory_nodes()) +
                    " graph(s) were instantiated, none with memory nodes: their memory came "
                    "from the application's own allocator (PyTorch's caching allocator keeps it "
                    "in the graph's private memory pool), not from graph memory; this is not an "
                    "error. PyTorch makes memory nodes with "
                    "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync");
  }
  rec["notes"] = std::move(notes);
  json graphs = json::array();
  for (const graph_record& g : r.graphs()) {
    json jg;
    jg["name"] = g.name;
    jg["nvtx"] = g.nvtx;
    jg["stream"] = g.stream;
    jg["sequence"] = g.sequence;
    jg["devices"] = g.devices;
    std::set<int> peers;
    for (const auto& n : profiler::flatten(g.model).nodes) peers.insert(n.peers.begin(), n.peers.end());
    jg["peers"] = std::vector<int>(peers.begin(), peers.end());
    jg["nodes"] = profiler::flatten(g.model).nodes.size();
    jg["launches"] = g.launches;
    jg["steady_launches"] = g.steady_host_us.size();
    if (!g.instantiate_stack.empty()) jg["instantiate_stack"] = g.instantiate_stack;
    json events = json::array();
    for (const graph_event& e : g.events) {
      json je;
      je["t_us"] = e.t_us;
      je["kind"] = e.kind;
      if (!e.cls.empty()) je["class"] = e.cls;
      je["device"] = e.device;
      je["host_us"] = e.host_us;
      if (e.stream) je["stream"] = "stream " + std::to_string(e.stream);
      if (e.before) je["before"] = counters_json(*e.before);
      if (e.after) je["after"] = counters_json(*e.after);
      events.push_back(std::move(je));
    }
    jg["events"] = std::move(events);
    graphs.push_back(std::move(jg));
  }
  rec["graphs"] = std::move(graphs);
  json timeline = json::array();
  for (const timeline_point& p : r.timeline()) {
    json jp = counters_json(p.values);
    jp["t_us"] = p.t_us;
    jp["device"] = p.device;
    jp["event"] = p.event;
    jp["graph"] = p.graph;
    timeline.push_back(std::move(jp));
  }
  rec["timeline"] = std::move(timeline);
  root["recorded"] = std::move(rec);
  return root.dump(2, ' ', false, json::error_handler_t::replace);
}

void write_recording(const recorder& r, const profiler::report& rep, const recording_info& info,
                     const std::string& path) {
  profiler::write_text_atomically(to_json_string(r, rep, info) + "\n", path);
}

}  // namespace gmem::record

namespace gmem::record {

std::vector<std::string> summarize_recording(const std::string& path) {
  const profiler::report rep = profiler::read_report(path);
  std::vector<std::string> lines;
  std::ifstream f(path);
  const json root = json::parse(f, nullptr, false);
  const json* rec = root.is_object() && root.contains("recorded") ? &root["recorded"] : nullptr;
  // The "recorded" section is optional; where it is present, what the summary reads of it must
  // have its type (a hand-edited or truncated recording is refused, naming the field).
  const auto refuse = [&](const std::string& field, const char* must) {
    throw profiler::report_error(profiler::report_error::kind::invalid,
                                 "recording '" + path + "': recorded." + field + " must be " + must +
                                     "; record again with `gmemprof record`");
  };
  if (rec) {
    if (!rec->is_object()) refuse("", "an object");
    if (rec->contains("partial") && !(*rec)["partial"].is_boolean()) refuse("partial", "true or false");
    if (rec->contains("partial_reason") && !(*rec)["partial_reason"].is_string()) {
      refuse("partial_reason", "a string");
    }
    if (rec->contains("notes")) {
      if (!(*rec)["notes"].is_array()) refuse("notes", "an array of strings");
      for (const auto& n : (*rec)["notes"]) {
        if (!n.is_string()) refuse("notes", "an array of strings");
      }
    }
  }
  std::string head = "wrote " + path + ": " + std::to_string(rep.scenarios.size()) +
                     " graph(s) with memory nodes on " +
                     (rep.env.device_name.empty() ? std::string("no device") : rep.env.device_name);
  if (rec && rec->value("partial", false)) {
    head += " (PARTIAL: " + rec->value("partial_reason", std::string("?")) + ")";
  }
  lines.push_back(head);
  for (const auto& s : rep.scenarios) {
    double first_us = -1;
    for (const auto& c : s.launch_costs) {
      if (c.phase == "first_launch" || c.phase == "first_launch_after_upload") first_us = c.host.median_us;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f us", first_us);
    lines.push_back("  '" + s.name + "': " + std::to_string(s.analysis.alloc_nodes) +
                    " alloc nodes, requested " + profiler::describe_bytes(s.analysis.requested_bytes) +
                    ", reserved high " + profiler::describe_bytes(s.analysis.reserved_high_bytes) +
                    ", lower bound " + profiler::describe_bytes(s.analysis.lower_bound_rounded_bytes) +
                    ", first launch " + (first_us < 0 ? std::string("not launched") : buf) +
                    ", " + std::to_string(s.diagnostics.size()) + " diagnostic(s)");
  }
  if (rec && rec->contains("notes")) {
    for (const auto& n : (*rec)["notes"]) lines.push_back("note: " + n.get<std::string>());
  }
  lines.push_back("details: gmemprof show " + path);
  return lines;
}

}  // namespace gmem::record
