// The lines `gmemprof record` prints about a report it wrote.
#include <cstdio>

#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/report_io.hpp"
#include "record/record_command.hpp"
#include "report/bill_view.hpp"
#include "gmem/profiler/size_text.hpp"

namespace gmem::record {

std::vector<std::string> summarize_recording(const std::string& path) {
  const profiler::report rep = profiler::read_report(path);
  const profiler::recording empty;
  const profiler::recording& rec = rep.recorded ? *rep.recorded : empty;
  std::vector<std::string> lines;
  std::size_t memory_nodes = 0;
  for (const auto& g : rec.graphs) memory_nodes += g.kind == "memory_nodes";
  std::string head = "wrote " + path + ": " + std::to_string(memory_nodes) + " graph(s) with memory nodes, " +
                     std::to_string(rec.graphs.size() - memory_nodes) + " in the framework's pools, on " +
                     (rep.env.device_name.empty() ? std::string("no device") : rep.env.device_name);
  if (rec.partial) head += " (PARTIAL: " + rec.partial_reason + ")";
  lines.push_back(head);
  for (const auto& b : rec.bills) {
    for (const std::string& line : profiler::bill_lines(b)) lines.push_back(line);
  }
  // A screenful: the first graphs, then a count (a serving warm-up captures hundreds).
  constexpr std::size_t shown = 20;
  for (std::size_t i = 0; i < rep.scenarios.size(); ++i) {
    const auto& s = rep.scenarios[i];
    if (i == shown) {
      lines.push_back("  ... and " + std::to_string(rep.scenarios.size() - shown) + " more graph(s)");
      break;
    }
    if (i < rec.graphs.size() && rec.graphs[i].kind == "private_pool") {
      // No memory nodes: its memory is the framework's pool's, in the framework's terms.
      const auto& g = rec.graphs[i];
      lines.push_back("  '" + s.name + "': no memory nodes; its capture took " +
                      profiler::size_text(g.capture_pool_growth_bytes) + " into the framework's graph pool" +
                      (g.instances == 0 ? " (never instantiated)" : "") +
                      (g.exec_state_bytes > 0 ? ", executable-graph state " +
                                                    profiler::size_text(static_cast<std::uint64_t>(g.exec_state_bytes))
                                              : ""));
      continue;
    }
    double first_us = -1;
    for (const auto& c : s.launch_costs) {
      if (c.phase == "first_launch" || c.phase == "first_launch_after_upload") first_us = c.host.median_us;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f us", first_us);
    std::string grew;
    if (i < rec.graphs.size() && !rec.pools.empty()) {
      grew = ", grew the pool by " + profiler::size_text(rec.graphs[i].growth_bytes);
    }
    lines.push_back("  '" + s.name + "': " + std::to_string(s.analysis.alloc_nodes) +
                    " alloc nodes, requested " + profiler::size_text(s.analysis.requested_bytes) +
                    ", alone " + profiler::size_text(s.analysis.reserved_high_bytes) +
                    " (predicted), lower bound " +
                    profiler::size_text(s.analysis.lower_bound_rounded_bytes) + grew +
                    ", first launch " + (first_us < 0 ? std::string("not launched") : buf) + ", " +
                    std::to_string(s.diagnostics.size()) + " diagnostic(s)");
  }
  for (const auto& p : rec.pools) {
    if (p.high_bytes == 0 && p.private_pool_bytes > 0) continue;  // no graph memory: the bill says it
    std::string line = "pool of device " + std::to_string(p.device) + ": high watermark " +
                       profiler::size_text(p.high_bytes);
    if (!p.high_graph.empty()) line += " (reached by '" + p.high_graph + "', " + p.high_event + ")";
    line += ", " + profiler::size_text(p.end_bytes) + " at the end";
    if (!p.attribution.empty()) {
      line += "; at the high watermark:";
      for (std::size_t k = 0; k < p.attribution.size() && k < 6; ++k) {
        const auto& a = p.attribution[k];
        line += std::string(k ? "," : "") + " " + (a.graph.empty() ? "no graph" : "'" + a.graph + "'") +
                " " + a.why + " " + profiler::size_text(a.bytes);
      }
      if (p.attribution.size() > 6) line += ", ...";
    }
    lines.push_back(line);
    for (const auto& d : p.diagnostics) lines.push_back("  " + d.code + ": " + d.message);
  }
  for (const auto& n : rec.notes) lines.push_back("note: " + n);
  lines.push_back("details: gmemprof show " + path);
  return lines;
}

}  // namespace gmem::record
