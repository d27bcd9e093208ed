#include "report/show.hpp"

#include "report/bill_view.hpp"

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/reuse_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace gmem::profiler {
namespace {

template <typename... Args>
std::string format(const char* fmt, Args... args) {
  char buf[128];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

std::string mib(std::uint64_t bytes) {
  return format("%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

std::string gib(std::uint64_t bytes) {
  return format("%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

// CUDA encodes versions as 1000 * major + 10 * minor.
std::string cuda_version(int v) {
  if (v <= 0) return "unknown";
  return format("%d.%d (%d)", v / 1000, (v % 1000) / 10, v);
}

std::string or_unknown(const std::string& s) { return s.empty() ? "unknown" : s; }

std::string us(double v) { return format("%.2f", v); }

std::string ratio(double v) { return std::isfinite(v) ? format("%.3f", v) : "n/a"; }

// Each line indented by `indent`; column i left-aligned where align[i] is 'l' (names, words),
// else right-aligned (numbers); by default the first column only.
std::string table(const std::vector<std::vector<std::string>>& rows, const std::string& indent,
                  const std::string& align = "l") {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(width[i] - row[i].size(), ' ');
      if (i != 0) line += "  ";
      line += i < align.size() && align[i] == 'l' ? row[i] + pad : pad + row[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string format_environment(const environment& e) {
  std::vector<std::vector<std::string>> rows = {
      {"device", or_unknown(e.device_name) + " (device " + std::to_string(e.device_index) + " of " +
                     std::to_string(e.device_count) + ")"},
      {"compute capability", std::to_string(e.cc_major) + "." + std::to_string(e.cc_minor)},
      {"memory", gib(e.total_memory_bytes)},
      {"driver", cuda_version(e.driver_version) +
                     (e.driver_release.empty() ? "" : ", release " + e.driver_release)},
      {"runtime", cuda_version(e.runtime_version)},
      {"granularity", mib(e.granularity_bytes) + " (" + std::to_string(e.granularity_bytes) +
                          " B), " + or_unknown(e.granularity_method)},
      {"tool", or_unknown(e.tool_version) + ", commit " + or_unknown(e.git_commit)},
      {"date", or_unknown(e.date)},
      {"command", or_unknown(e.command_line)},
  };
  // Labels only: a value column padded to the right would be noise.
  std::size_t label = 0;
  for (const auto& row : rows) label = std::max(label, row[0].size());
  std::string out;
  for (const auto& row : rows)
    out += row[0] + std::string(label - row[0].size() + 2, ' ') + row[1] + "\n";
  return out;
}

// `recorded`: the report is a recording, whose scenarios are its graphs and whose per-graph
// figures are each graph's own (alone, predicted): labelled so, since the device's watermark,
// which holds every graph's memory, is the pool's and shows only in the pool section.
std::string format_scenario(const scenario_result& s, bool recorded, std::uint64_t granularity) {
  std::string out = s.key() + "  " + to_string(s.status);
  if (!s.status_message.empty()) out += ": " + s.status_message;
  out += "\n";
  // A recorded graph whose analysis at exit was deferred (past the recording's budget): its
  // skeleton is analysed here, where time is not the program's.
  if (recorded && s.status == scenario_status::skipped && !s.skeletons.empty() &&
      s.status_message.rfind("analysis deferred", 0) == 0) {
    try {
      const skeleton& sk = s.skeletons.front();
      const graph_analysis a = analyse(flat_of(sk), granularity);
      out += "  analysed now: requested " + mib(a.requested_bytes) + ", lower bound " +
             mib(a.lower_bound_rounded_bytes) + " (rounded), alone (predicted) " +
             mib(predict_reuse(sk, granularity).rounded_bytes) + "; " +
             std::to_string(a.allocations.size()) + " allocations, " + std::to_string(a.unfreed.size()) +
             " unfreed\n";
    } catch (const std::exception& e) {
      out += "  its skeleton cannot be analysed: " + std::string(e.what()) + "\n";
    }
  }

  const analysis_summary& a = s.analysis;
  // A scenario that was skipped, or failed before its graph was built, has no numbers: a
  // block of zeros would read like a measurement.
  const bool measured = s.status == scenario_status::ok || a.alloc_nodes != 0 ||
                        a.requested_bytes != 0 || a.reserved_high_bytes != 0;
  if (measured) {
    if (recorded) {
      out += "  memory: requested " + mib(a.requested_bytes) + ", lower bound " +
             mib(a.lower_bound_rounded_bytes) + " (rounded), alone (predicted): used high " +
             mib(a.used_high_bytes) + ", reserved " + mib(a.reserved_high_bytes) + "\n";
    } else {
      out += "  memory: requested " + mib(a.requested_bytes) + ", lower bound " +
             mib(a.lower_bound_rounded_bytes) + " (rounded), used high " +
             mib(a.used_high_bytes) + ", reserved high " + mib(a.reserved_high_bytes) + "\n";
    }
    out += "  nodes: " + std::to_string(a.alloc_nodes) + " alloc, " + std::to_string(a.free_nodes) +
           " free, " + std::to_string(a.unfreed_allocations) + " unfreed, " +
           std::to_string(a.distinct_addresses) + " distinct addresses\n";
    out += "  ratios: va reuse " + ratio(a.va_reuse_ratio) + ", physical reuse " +
           ratio(a.physical_reuse_ratio) +
           (recorded ? ", alone / lower bound " : ", reserved / lower bound ") +
           ratio(a.bound_ratio) + "\n";
  }

  if (!s.launch_costs.empty() && recorded) {
    // Host times only: record mode measures no wall time (that would synchronize the
    // program's streams), and columns of zeros would read like a measurement.
    std::vector<std::vector<std::string>> rows = {
        {"call", "calls", "host median", "min", "max (us)"}};
    for (const auto& l : s.launch_costs) {
      rows.push_back({l.phase, std::to_string(l.host.count), us(l.host.median_us),
                      us(l.host.min_us), us(l.host.max_us)});
    }
    out += table(rows, "  ");
  } else if (!s.launch_costs.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"phase", "runs", "host median", "min", "max", "wall median", "min", "max (us)"}};
    for (const auto& l : s.launch_costs) {
      rows.push_back({l.phase, std::to_string(l.host.count), us(l.host.median_us),
                      us(l.host.min_us), us(l.host.max_us), us(l.wall.median_us), us(l.wall.min_us),
                      us(l.wall.max_us)});
    }
    out += table(rows, "  ");
  }

  for (const auto& d : s.diagnostics) {
    out += "  [" + d.severity + "] " + d.message;
    if (d.bytes != 0) out += " (" + mib(d.bytes) + ")";
    out += "\n";
  }
  if (s.advice) {
    out += std::string("  advice, measured on the driver (") +
           (s.skeletons.size() > 1 ? "the graphs as launched: " : "the skeleton replayed: ") +
           mib(s.advice->baseline_bytes) + "):";
    if (s.advice->changes.empty()) out += " none saves a granule";
    out += "\n";
    for (const auto& c : s.advice->changes) {
      out += "    [" + c.kind + "] saves " + mib(c.saving_bytes) + " measured (predicted " +
             mib(c.predicted_bytes) + " after it)";
      if (c.predicted_price_us) {
        char price[160];
        std::snprintf(price, sizeof price, "; predicted price %+.1f us of launch time (%.1f -> %.1f us)",
                      *c.predicted_price_us, *c.predicted_launch_us - *c.predicted_price_us,
                      *c.predicted_launch_us);
        out += price;
      }
      out += ": " + c.where + "\n";
    }
    if (!s.advice->durations_note.empty()) out += "    price: " + s.advice->durations_note + "\n";
    for (const auto& c : s.advice->tried) {
      out += "    tried, saves less than a granule: " + c.kind + " (reserved " + mib(c.measured_bytes) + ")\n";
    }
  }
  return out;
}

// Growth can be negative (a trim unmaps): signed, so a trim reads as one.
std::string signed_mib(std::int64_t bytes) {
  return (bytes > 0 ? "+" : bytes < 0 ? "-" : "") +
         mib(static_cast<std::uint64_t>(bytes < 0 ? -bytes : bytes));
}

std::string ms(double t_us) { return format("%.3f", t_us / 1000.0); }

std::string percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? "n/a" : format("%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

std::string quoted(const std::string& graph) { return graph.empty() ? "(no graph)" : "'" + graph + "'"; }

// The attribution's reasons in words a reader of the table needs no glossary for.
std::string why_in_words(const std::string& why) {
  if (why == "working_set") return "working set of its call";
  if (why == "held_outputs") return "outputs held between launches";
  if (why == "concurrent_launch") return "launch in another stream at the time";
  if (why == "held_before") return "held before the first call (other graphs)";
  if (why == "idle") return "mapped, held by no graph";
  return why;
}

bool on_device(const recorded_graph& g, int device, std::size_t pools) {
  // A graph with no device recorded can only be placed when there is one pool.
  if (g.devices.empty()) return pools == 1;
  return std::find(g.devices.begin(), g.devices.end(), device) != g.devices.end();
}

// Enough rows to see how the pool grew; a long-running program makes thousands of points,
// which the report (and `gmemprof html`) hold in full.
constexpr std::size_t timeline_rows = 40;

std::string format_pool(const recorded_pool& p, const recording& rec) {
  if (p.high_bytes == 0 && p.private_pool_bytes != 0) {
    // No graph memory nodes on the device: what there is lives in the framework's graph pools.
    std::string out = "\nframework graph pools of device " + std::to_string(p.device) + " (no graph memory nodes)\n";
    out += "  " + mib(p.private_pool_bytes) + " taken by the application's allocator while graphs were captured\n";
    for (const auto& fp : rec.framework_pools) {
      if (fp.device != p.device) continue;
      out += "  " + fp.id + ": warm-up " + mib(fp.warmup_bytes) + ", captures " + mib(fp.capture_bytes) + ", retained " +
             mib(fp.retained_bytes) + (fp.snapshot_bytes >= 0 ? " (the framework's figure: " + mib(static_cast<std::uint64_t>(fp.snapshot_bytes)) + ")" : "") +
             ", " + std::to_string(fp.graphs.size()) + " graph(s)\n";
    }
    return out;
  }
  std::string out = "\npool of device " + std::to_string(p.device) + "\n";
  std::vector<std::vector<std::string>> head;
  std::string reached = mib(p.high_bytes) + " measured (the device's high watermark: every graph's memory)";
  head.push_back({"high watermark", reached});
  if (!p.high_graph.empty() || !p.high_event.empty()) {
    head.push_back({"reached by", quoted(p.high_graph) + (p.high_event.empty() ? "" : ", " + p.high_event) +
                                      ", at " + ms(p.high_t_us) + " ms"});
  }
  head.push_back({"at the end", mib(p.end_bytes) + " reserved"});
  std::string model = mib(p.model_high_bytes) + " (the pool model's reservation at the high watermark";
  if (p.model_high_bytes == p.high_bytes) {
    model += ", as measured)";
  } else {
    const bool above = p.model_high_bytes > p.high_bytes;
    model += "; " + mib(above ? p.model_high_bytes - p.high_bytes : p.high_bytes - p.model_high_bytes) +
             (above ? " above" : " below") + " the measurement)";
  }
  head.push_back({"model", model});
  if (p.private_pool_bytes != 0) {
    head.push_back({"private pools", mib(p.private_pool_bytes) +
                                         " taken by the application's allocator while graphs were captured"});
  }
  std::size_t label = 0;
  for (const auto& row : head) label = std::max(label, row[0].size());
  for (const auto& row : head) out += "  " + row[0] + std::string(label - row[0].size() + 2, ' ') + row[1] + "\n";

  if (!p.attribution.empty()) {
    out += "  at the high watermark, by graph (pool model):\n";
    std::vector<std::vector<std::string>> rows = {{"graph", "why", "bytes", "share"}};
    std::uint64_t sum = 0;
    for (const auto& a : p.attribution) sum += a.bytes;
    for (const auto& a : p.attribution) {
      rows.push_back({quoted(a.graph), why_in_words(a.why), mib(a.bytes), percent(a.bytes, sum)});
    }
    rows.push_back({"total", std::to_string(p.attribution.size()) + " shares", mib(sum), percent(sum, sum)});
    out += table(rows, "    ", "ll");
    if (sum != p.high_bytes) {
      out += "    (the shares sum to the model's " + mib(sum) + "; the device measured " + mib(p.high_bytes) + ")\n";
    }
  }

  std::vector<std::vector<std::string>> graphs = {
      {"graph", "kind", "alone (predicted)", "growth it caused", "held requested", "held mapped",
       "launches", "AutoFreeOnLaunch"}};
  for (const auto& g : rec.graphs) {
    if (!on_device(g, p.device, rec.pools.size())) continue;
    const bool private_pool = g.kind == "private_pool";
    std::string launches = std::to_string(g.launches);
    if (g.failed_calls != 0) launches += " (" + std::to_string(g.failed_calls) + " failed)";
    graphs.push_back({quoted(g.name), private_pool ? "private pool" : "memory nodes",
                      mib(g.own_footprint_bytes),
                      // A private pool's growth is what its capture took from the device.
                      private_pool ? mib(g.capture_pool_growth_bytes) + " (capture)" : mib(g.growth_bytes),
                      mib(g.held_requested_bytes), mib(g.held_granule_bytes), launches,
                      !g.flags_known ? "unknown" : g.flags.auto_free_on_launch ? "yes" : "no"});
  }
  if (graphs.size() > 1) {
    out += "  graphs in this pool (each one's own figures; alone = the graph by itself from a trimmed pool):\n";
    out += table(graphs, "    ", "ll");
  }

  for (const auto& d : p.diagnostics) {
    out += "  [" + d.severity + "] " + d.message;
    if (d.bytes != 0) out += " (" + mib(d.bytes) + ")";
    out += "\n";
  }

  if (!p.timeline.empty()) {
    out += "  mapping events (reserved after each call that changed it, and trims):\n";
    std::vector<std::vector<std::string>> rows = {{"t (ms)", "graph", "event", "growth", "reserved after"}};
    const std::size_t shown = std::min(p.timeline.size(), timeline_rows);
    for (std::size_t i = 0; i < shown; ++i) {
      const pool_point& t = p.timeline[i];
      rows.push_back({ms(t.t_us), t.graph.empty() ? "-" : quoted(t.graph), t.event, signed_mib(t.growth_bytes),
                      mib(t.reserved_bytes)});
      if (t.t_us == p.high_t_us && t.reserved_bytes == p.high_bytes) rows.back().push_back("<- high watermark");
    }
    out += table(rows, "    ", "rll");
    if (p.timeline.size() > shown) {
      out += "    ... " + std::to_string(p.timeline.size() - shown) + " more (gmemprof html draws them all)\n";
    }
  }
  return out;
}

// The "recorded" section: what record mode knows that the suite does not (the program, its
// graphs' calls, the pools they shared), after the per-graph blocks.
std::string format_recording(const recording& rec) {
  std::string out = "\nrecorded: " + (rec.command.empty() ? "(command unknown)" : rec.command);
  if (rec.pid != 0) out += " (pid " + std::to_string(rec.pid) + ")";
  out += "\n";
  if (rec.partial) out += "  PARTIAL: " + or_unknown(rec.partial_reason) + "\n";
  out += "  " + std::to_string(rec.graphs.size()) + " graph(s) with memory nodes";
  if (rec.graphs_without_memory_nodes != 0) {
    out += ", " + std::to_string(rec.graphs_without_memory_nodes) + " without";
  }
  out += "; the figures above are each graph's own (alone, predicted by the reuse model; "
         "`gmemprof replay` measures them); what the graphs reserved together is the pool's, below\n";
  if (rec.analysis_deferred) {
    out += "  the analysis at exit ran out of its time budget: the figures above are the graph "
           "models' own, not analysed\n";
  }
  for (const auto& pr : rec.processes) {
    out += "  process " + std::to_string(pr.pid) + ": " + or_unknown(pr.command) + ", " +
           std::to_string(pr.graphs) + " graph(s)" + (pr.report.empty() ? "" : ", " + pr.report) + "\n";
  }
  for (const auto& b : rec.bills) {
    for (const std::string& line : bill_lines(b)) out += "  " + line + "\n";
  }
  for (const auto& n : rec.notes) out += "  note: " + n + "\n";
  if (rec.sequence_truncated) {
    out += "  note: the call sequence was cut at its bound: `gmemprof replay --set` replays its start\n";
  }
  for (const auto& p : rec.pools) out += format_pool(p, rec);
  if (rec.pools.empty() && !rec.graphs.empty()) {
    // Recordings made before issue 24, or where the granularity could not be read, have none.
    out += "\nno graph memory pool in this recording (an older gmemprof, or the device's granularity "
           "unknown): record the program again for the pool's high watermark and what held it\n";
  }
  return out;
}

}  // namespace

std::string format_report(const report& r) {
  std::string out = format_environment(r.env);
  for (const auto& s : r.scenarios) {
    out += "\n" + format_scenario(s, r.recorded.has_value(), r.env.granularity_bytes);
  }
  if (r.scenarios.empty()) out += r.recorded ? "\nno graphs with memory nodes\n" : "\nno scenarios\n";
  if (r.recorded) out += format_recording(*r.recorded);
  return out;
}

}  // namespace gmem::profiler
