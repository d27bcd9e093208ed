#include "record/recording_merge.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

namespace gmem::record {

namespace {

// A process's rank as a number for ordering (ranks "0" ... "10" in numeric order); nullopt where
// it has none or it is not a whole number.
std::optional<long> rank_number(const process_report& p) {
  if (!p.report.recorded || p.report.recorded->rank.empty()) return std::nullopt;
  const std::string& r = p.report.recorded->rank;
  if (r.size() > 9 || r.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stol(r);
}

long pid_of(const process_report& p) { return p.report.recorded ? p.report.recorded->pid : 0; }

}  // namespace

profiler::report merge_recordings(std::vector<process_report> reports, const std::string& command) {
  // A launcher's workers are named by their ranks where those differ (two runs pair their processes
  // rank by rank; torchrun itself, which has none, and any other process keep "p1", "p2", ... in
  // pid order), else every process by pid order.
  std::set<long> ranks;
  bool by_rank = true;
  std::size_t ranked = 0;
  for (const auto& p : reports) {
    if (const auto n = rank_number(p)) {
      ++ranked;
      by_rank = by_rank && ranks.insert(*n).second;
    }
  }
  by_rank = by_rank && ranked >= 2;
  const auto rank_of = [by_rank](const process_report& p) { return by_rank ? rank_number(p) : std::nullopt; };
  std::sort(reports.begin(), reports.end(), [&rank_of](const process_report& a, const process_report& b) {
    const auto ra = rank_of(a), rb = rank_of(b);
    if (ra.has_value() != rb.has_value()) return ra.has_value();  // ranks first
    return ra ? *ra < *rb : pid_of(a) < pid_of(b);
  });
  if (reports.size() == 1) return std::move(reports.front().report);
  profiler::report out;
  profiler::recording rec;
  rec.command = command;
  std::size_t unranked = 0;
  for (std::size_t k = 0; k < reports.size(); ++k) {
    profiler::report& r = reports[k].report;
    if (out.env.device_name.empty() && !r.env.device_name.empty()) out.env = r.env;
    const std::string label = rank_of(reports[k]) ? "rank " + r.recorded->rank : "p" + std::to_string(++unranked);
    const long pid = r.recorded ? r.recorded->pid : 0;
    const std::string prefix = "[" + label + " pid " + std::to_string(pid) + "] ";
    profiler::recorded_process proc;
    proc.pid = pid;
    if (r.recorded) proc.rank = r.recorded->rank;
    proc.report = reports[k].path;
    proc.graphs = r.scenarios.size();
    for (auto& s : r.scenarios) {
      s.name = prefix + s.name;
      for (auto& sk : s.skeletons) sk.name = prefix + sk.name;
      out.scenarios.push_back(std::move(s));
    }
    if (!r.recorded) {
      rec.processes.push_back(std::move(proc));
      continue;
    }
    profiler::recording& pr = *r.recorded;
    proc.command = pr.command;
    rec.partial = rec.partial || pr.partial;
    if (pr.partial) {
      rec.partial_reason += (rec.partial_reason.empty() ? "" : "; ") + label + ": " + pr.partial_reason;
    }
    rec.graphs_without_memory_nodes += pr.graphs_without_memory_nodes;
    rec.updates_without_memory_nodes += pr.updates_without_memory_nodes;
    rec.refused_updates_without_memory_nodes += pr.refused_updates_without_memory_nodes;
    rec.node_param_sets_without_memory_nodes += pr.node_param_sets_without_memory_nodes;
    for (const auto& n : pr.notes) rec.notes.push_back(label + ": " + n);
    for (auto& g : pr.graphs) {
      g.name = prefix + g.name;
      g.identity = label + "/" + g.identity;  // stable across runs: the rank, or the pid's order
      if (!g.site.empty()) g.site = label + "/" + g.site;
      g.pid = pid;
      rec.graphs.push_back(std::move(g));
    }
    for (auto& p : pr.timeline) {
      if (!p.graph.empty()) p.graph = prefix + p.graph;
      rec.timeline.push_back(std::move(p));
    }
    for (auto& pool : pr.pools) {
      pool.process = label;
      if (!pool.high_graph.empty()) pool.high_graph = prefix + pool.high_graph;
      for (auto& a : pool.attribution) {
        if (!a.graph.empty()) a.graph = prefix + a.graph;
      }
      for (auto& t : pool.timeline) {
        if (!t.graph.empty()) t.graph = prefix + t.graph;
      }
      rec.pools.push_back(std::move(pool));
    }
    for (auto& fp : pr.framework_pools) {
      fp.id = prefix + fp.id;
      for (auto& g : fp.graphs) g = prefix + g;
      rec.framework_pools.push_back(std::move(fp));
    }
    for (auto& b : pr.bills) {
      b.process = label;
      rec.bills.push_back(std::move(b));
    }
    for (auto& c : pr.cost) {
      c.process = label;
      rec.cost.push_back(std::move(c));
    }
    rec.processes.push_back(std::move(proc));
  }
  rec.notes.push_back("merged from " + std::to_string(reports.size()) +
                      " processes, each with its own graph memory pool and its own report (listed "
                      "under processes); `gmemprof replay --set` replays one of those");
  out.recorded = std::move(rec);
  return out;
}

}  // namespace gmem::record
