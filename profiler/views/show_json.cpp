// `gmemprof show --format json`: what show prints, for scripts, with exact bytes.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

#include "report/recording_json.hpp"
#include "views/show_parts.hpp"

namespace gmem::profiler {
namespace {

using json = nlohmann::ordered_json;

json diagnostics_json(const std::vector<diagnostic>& list, bool messages) {
  json out = json::array();
  for (const auto& d : list) {
    json j{{"code", d.code}, {"severity", d.severity}, {"bytes", d.bytes}};
    if (messages) j["message"] = d.message;
    out.push_back(std::move(j));
  }
  return out;
}

json graph_json(const report& r, std::size_t gi, bool detail) {
  const recorded_graph& g = r.recorded->graphs[gi];
  const scenario_result* s = scenario_of(r, gi);
  json j{{"name", g.name},
         {"identity", g.identity},
         {"kind", g.kind},
         {"cost_bytes", graph_cost(g)},
         {"pool_growth_bytes", g.kind == "private_pool" ? g.capture_pool_growth_bytes : g.growth_bytes},
         {"held_requested_bytes", g.held_requested_bytes},
         {"held_mapped_bytes", g.held_granule_bytes},
         {"exec_state_bytes", g.exec_state_bytes},
         {"launches", g.launches},
         {"instances", g.instances}};
  const double first = first_launch_us(s);
  j["first_launch_us"] = first < 0 ? json(nullptr) : json(first);
  if (!g.python_site.empty()) j["python_site"] = g.python_site;
  if (!g.framework_label.empty()) j["framework_label"] = g.framework_label;
  if (!g.framework_detail.empty()) j["framework_detail"] = g.framework_detail;
  if (s) {
    j["requested_bytes"] = s->analysis.requested_bytes;
    j["lower_bound_rounded_bytes"] = s->analysis.lower_bound_rounded_bytes;
    j["alone_reserved_bytes"] = s->analysis.reserved_high_bytes;
    j["diagnostics"] = diagnostics_json(s->diagnostics, detail);
  }
  return j;
}

json recording_json(const report& r, const show_options& o) {
  const recording& rec = *r.recorded;
  json j{{"kind", "recording"},
         {"command", rec.command},
         {"pid", rec.pid},
         {"device", r.env.device_name},
         {"driver", r.env.driver_release},
         {"partial", rec.partial}};
  json bills = json::array();
  for (const auto& b : rec.bills) bills.push_back(json::parse(bill_to_json_text(b)));
  j["bills"] = std::move(bills);

  std::vector<std::size_t> chosen;
  if (!o.graphs.empty()) {
    std::vector<std::string> names;
    for (const auto& g : rec.graphs) names.push_back(g.name);
    chosen = select_names(names, o.graphs, "graph");
  } else {
    chosen = graphs_by_cost(rec);
    if (!o.all && chosen.size() > o.top) chosen.resize(o.top);
  }
  j["graphs_total"] = rec.graphs.size();
  json graphs = json::array();
  std::vector<bool> shown(rec.graphs.size(), false);
  for (std::size_t gi : chosen) {
    graphs.push_back(graph_json(r, gi, !o.graphs.empty() || o.all));
    shown[gi] = true;
  }
  j["graphs"] = std::move(graphs);
  std::uint64_t others = 0, others_cost = 0;
  for (std::size_t gi = 0; gi < rec.graphs.size(); ++gi) {
    if (shown[gi]) continue;
    ++others;
    others_cost += graph_cost(rec.graphs[gi]);
  }
  j["others"] = {{"graphs", others}, {"cost_bytes", others_cost}};

  json pools = json::array();
  for (const auto& p : rec.pools) {
    json jp{{"device", p.device},
            {"high_bytes", p.high_bytes},
            {"end_bytes", p.end_bytes},
            {"model_high_bytes", p.model_high_bytes},
            {"high_graph", p.high_graph},
            {"high_event", p.high_event},
            {"high_t_us", p.high_t_us},
            {"high_concurrent", p.high_concurrent}};
    if (!p.process.empty()) jp["process"] = p.process;
    // The attribution grouped by reason, the largest first.
    std::map<std::string, std::pair<std::uint64_t, std::vector<std::string>>> by_why;
    for (const auto& a : p.attribution) {
      auto& c = by_why[a.why];
      c.first += a.bytes;
      if (!a.graph.empty()) c.second.push_back(a.graph);
    }
    std::vector<json> causes;
    for (const auto& entry : by_why) {
      causes.push_back({{"why", entry.first}, {"bytes", entry.second.first}, {"graphs", entry.second.second}});
    }
    std::stable_sort(causes.begin(), causes.end(),
                     [](const json& a, const json& b) { return a["bytes"].get<std::uint64_t>() > b["bytes"].get<std::uint64_t>(); });
    jp["causes"] = causes;
    jp["diagnostics"] = diagnostics_json(p.diagnostics, true);
    pools.push_back(std::move(jp));
  }
  j["pools"] = std::move(pools);
  return j;
}

json suite_json(const report& r, const show_options& o) {
  json j{{"kind", "suite"}, {"device", r.env.device_name}, {"driver", r.env.driver_release}};
  std::vector<std::size_t> chosen;
  if (o.graphs.empty()) {
    for (std::size_t i = 0; i < r.scenarios.size(); ++i) chosen.push_back(i);
  } else {
    chosen = select_scenarios(r, o.graphs);
  }
  json scenarios = json::array();
  for (std::size_t i : chosen) {
    const scenario_result& s = r.scenarios[i];
    json js{{"key", s.key()},
            {"status", to_string(s.status)},
            {"requested_bytes", s.analysis.requested_bytes},
            {"lower_bound_rounded_bytes", s.analysis.lower_bound_rounded_bytes},
            {"used_high_bytes", s.analysis.used_high_bytes},
            {"reserved_high_bytes", s.analysis.reserved_high_bytes}};
    json costs = json::array();
    for (const auto& c : s.launch_costs) {
      costs.push_back({{"phase", c.phase}, {"host_median_us", c.host.median_us}, {"wall_median_us", c.wall.median_us}});
    }
    js["launch_costs"] = std::move(costs);
    js["diagnostics"] = diagnostics_json(s.diagnostics, true);
    scenarios.push_back(std::move(js));
  }
  j["scenarios"] = std::move(scenarios);
  return j;
}

}  // namespace

std::string show_json(const report& r, const show_options& o) {
  return (r.recorded ? recording_json(r, o) : suite_json(r, o)).dump(2) + "\n";
}

}  // namespace gmem::profiler
