#include "views/show.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/reuse_model.hpp"
#include "gmem/profiler/size_text.hpp"
#include "views/show_parts.hpp"
#include "views/text_layout.hpp"

namespace gmem::profiler {
namespace {

// CUDA encodes versions as 1000 * major + 10 * minor.
std::string cuda_version(int v) {
  if (v <= 0) return "unknown";
  return show_format("%d.%d (%d)", v / 1000, (v % 1000) / 10, v);
}

std::string or_unknown(const std::string& s) { return s.empty() ? "unknown" : s; }

std::string us(double v) { return show_format("%.2f", v); }

std::string ratio(double v) { return std::isfinite(v) ? show_format("%.3f", v) : "n/a"; }

}  // namespace

std::string format_environment(const environment& e) {
  std::vector<std::vector<std::string>> rows;
  if (e.device_name.empty() && e.device_count == 0) {
    // A recorded process that used no device (a compile worker): no device's figures to show.
    rows.push_back({"device", "none used"});
  } else {
    rows = {
        {"device", or_unknown(e.device_name) + " (device " + std::to_string(e.device_index) + " of " +
                       std::to_string(e.device_count) + ")"},
        {"compute capability", std::to_string(e.cc_major) + "." + std::to_string(e.cc_minor)},
        {"memory", size_text(e.total_memory_bytes)},
        {"driver", cuda_version(e.driver_version) + (e.driver_release.empty() ? "" : ", release " + e.driver_release)},
        {"runtime", cuda_version(e.runtime_version)},
        {"granularity", size_text(e.granularity_bytes) + ", " + or_unknown(e.granularity_method)},
    };
  }
  rows.push_back({"tool", or_unknown(e.tool_version) + ", commit " + or_unknown(e.git_commit)});
  rows.push_back({"date", or_unknown(e.date)});
  rows.push_back({"command", or_unknown(e.command_line)});
  std::size_t label = 0;
  for (const auto& row : rows) label = std::max(label, row[0].size());
  std::string out;
  for (const auto& row : rows) {
    out += wrap(row[1], row[0] + std::string(label - row[0].size() + 2, ' '), std::string(label + 2, ' '));
  }
  return out;
}

std::string format_diagnostic(const diagnostic& d, const std::string& indent) {
  std::string text = "[" + d.severity + "] " + d.message;
  if (d.bytes != 0) text += " (" + size_text(d.bytes) + ")";
  return wrap(text, indent, indent + "  ");
}

// `recorded`: the report is a recording, whose scenarios are its graphs and whose per-graph
// figures are each graph's own (alone, predicted): labelled so, since the device's watermark,
// which holds every graph's memory, is the pool's and shows only in the pool section.
std::string format_scenario(const scenario_result& s, bool recorded, std::uint64_t granularity) {
  std::string out = wrap(s.key() + "  " + to_string(s.status) + (s.status_message.empty() ? "" : ": " + s.status_message),
                         "", "  ");
  // A recorded graph whose analysis at exit was deferred (past the recording's budget): its
  // skeleton is analysed here, where time is not the program's.
  if (recorded && s.status == scenario_status::skipped && !s.skeletons.empty() &&
      s.status_message.rfind("analysis deferred", 0) == 0) {
    try {
      const skeleton& sk = s.skeletons.front();
      const graph_analysis a = analyse(flat_of(sk), granularity);
      out += wrap("analysed now: requested " + size_text(a.requested_bytes) + ", lower bound " +
                      size_text(a.lower_bound_rounded_bytes) + " (rounded), alone (predicted) " +
                      size_text(predict_reuse(sk, granularity).rounded_bytes) + "; " +
                      std::to_string(a.allocations.size()) + " allocations, " + std::to_string(a.unfreed.size()) +
                      " unfreed",
                  "  ", "    ");
    } catch (const std::exception& e) {
      out += wrap("its skeleton cannot be analysed: " + std::string(e.what()), "  ", "    ");
    }
  }

  const analysis_summary& a = s.analysis;
  // A scenario that was skipped, or failed before its graph was built, has no numbers: a
  // block of zeros would read like a measurement.
  // A recorded graph without memory nodes (its memory in a framework's pool) has none of these
  // figures either: they are the memory nodes'.
  const bool measured = recorded ? a.alloc_nodes != 0
                                 : s.status == scenario_status::ok || a.alloc_nodes != 0 || a.requested_bytes != 0 ||
                                       a.reserved_high_bytes != 0;
  if (measured) {
    if (recorded) {
      out += wrap("memory: requested " + size_text(a.requested_bytes) + ", lower bound " +
                      size_text(a.lower_bound_rounded_bytes) + " (rounded), alone (predicted): used high " +
                      size_text(a.used_high_bytes) + ", reserved " + size_text(a.reserved_high_bytes),
                  "  ", "    ");
    } else {
      out += wrap("memory: requested " + size_text(a.requested_bytes) + ", lower bound " +
                      size_text(a.lower_bound_rounded_bytes) + " (rounded), used high " + size_text(a.used_high_bytes) +
                      ", reserved high " + size_text(a.reserved_high_bytes),
                  "  ", "    ");
    }
    out += "  nodes: " + std::to_string(a.alloc_nodes) + " alloc, " + std::to_string(a.free_nodes) + " free, " +
           std::to_string(a.unfreed_allocations) + " unfreed, " + std::to_string(a.distinct_addresses) +
           " distinct addresses\n";
    out += "  ratios: va reuse " + ratio(a.va_reuse_ratio) + ", physical reuse " + ratio(a.physical_reuse_ratio) +
           (recorded ? ", alone / lower bound " : ", reserved / lower bound ") + ratio(a.bound_ratio) + "\n";
  }

  if (!s.launch_costs.empty() && recorded) {
    // Host times only: record mode measures no wall time (that would synchronize the
    // program's streams), and columns of zeros would read like a measurement.
    std::vector<std::vector<std::string>> rows = {{"call", "calls", "host median", "min", "max (us)"}};
    for (const auto& l : s.launch_costs) {
      rows.push_back({l.phase, std::to_string(l.host.count), us(l.host.median_us), us(l.host.min_us),
                      us(l.host.max_us)});
    }
    out += table(rows, "  ");
  } else if (!s.launch_costs.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"phase", "runs", "host median", "min", "max", "wall median", "min", "max (us)"}};
    for (const auto& l : s.launch_costs) {
      rows.push_back({l.phase, std::to_string(l.host.count), us(l.host.median_us), us(l.host.min_us),
                      us(l.host.max_us), us(l.wall.median_us), us(l.wall.min_us), us(l.wall.max_us)});
    }
    out += table(rows, "  ");
  }

  for (const auto& d : s.diagnostics) out += format_diagnostic(d, "  ");
  if (s.advice) {
    out += wrap(std::string("advice, measured on the driver (") +
                    (s.skeletons.size() > 1 ? "the graphs as launched: " : "the skeleton replayed: ") +
                    size_text(s.advice->baseline_bytes) + "):" + (s.advice->changes.empty() ? " none saves a granule" : ""),
                "  ", "    ");
    for (const auto& c : s.advice->changes) {
      std::string line = "[" + c.kind + "] saves " + size_text(c.saving_bytes) + " measured (predicted " +
                         size_text(c.predicted_bytes) + " after it)";
      if (c.predicted_price_us) {
        line += show_format("; predicted price %+.1f us of launch time (%.1f -> %.1f us)", *c.predicted_price_us,
                            *c.predicted_launch_us - *c.predicted_price_us, *c.predicted_launch_us);
      }
      out += wrap(line + ": " + c.where, "    ", "      ");
    }
    if (!s.advice->durations_note.empty()) out += wrap("price: " + s.advice->durations_note, "    ", "      ");
    for (const auto& c : s.advice->tried) {
      out += "    tried, saves less than a granule: " + c.kind + " (reserved " + size_text(c.measured_bytes) + ")\n";
    }
  }
  return out;
}

std::vector<std::size_t> select_names(const std::vector<std::string>& names, const std::vector<std::string>& patterns,
                                      const char* what) {
  std::vector<bool> chosen(names.size(), false);
  for (const std::string& p : patterns) {
    bool any = false;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == p || fnmatch(p.c_str(), names[i].c_str(), 0) == 0) chosen[i] = any = true;
    }
    if (!any) {
      std::vector<std::string> sorted = names;
      std::sort(sorted.begin(), sorted.end(), natural_less);
      throw std::invalid_argument("no " + std::string(what) + " is named '" + p + "' (the report has " +
                                  std::to_string(names.size()) + ": " + listed(sorted, 5) +
                                  "); quote a pattern such as 'decode*' so the shell leaves it alone");
    }
  }
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (chosen[i]) out.push_back(i);
  }
  return out;
}

std::vector<std::size_t> select_scenarios(const report& r, const std::vector<std::string>& patterns) {
  // A scenario is named by its key ("single_alloc[bytes=2097152]") or by its name, which
  // selects every key of it: "NAME" also matches as "NAME[*".
  std::vector<std::string> keys;
  for (const auto& s : r.scenarios) keys.push_back(s.key());
  std::vector<std::string> widened;
  for (const std::string& p : patterns) {
    bool by_name = false;
    for (const auto& s : r.scenarios) by_name = by_name || s.name == p;
    widened.push_back(by_name ? p + "*" : p);
  }
  return select_names(keys, widened, "scenario");
}

std::string format_report(const report& r, const show_options& o) {
  if (r.recorded) return format_recording(r, o);
  std::vector<std::size_t> shown;
  if (o.graphs.empty()) {
    for (std::size_t i = 0; i < r.scenarios.size(); ++i) shown.push_back(i);
  } else {
    shown = select_scenarios(r, o.graphs);
  }
  std::string out = format_environment(r.env);
  for (std::size_t i : shown) out += "\n" + format_scenario(r.scenarios[i], false, r.env.granularity_bytes);
  if (r.scenarios.empty()) out += "\nno scenarios\n";
  return out;
}

}  // namespace gmem::profiler
