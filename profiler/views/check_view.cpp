#include "views/check_view.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "gmem/profiler/size_text.hpp"
#include "report/processes.hpp"
#include "views/text_layout.hpp"

namespace gmem::profiler {

namespace {

std::string bill_label(const graph_bill& b) {
  return (b.process.empty() ? std::string() : b.process + ", ") + "device " + std::to_string(b.device);
}

// The row a check judged for `label` and `metric`, or null.
const comparison_row* row_of(const comparison& c, const std::string& label, const std::string& metric) {
  const auto it = std::find_if(c.rows.begin(), c.rows.end(), [&](const comparison_row& r) {
    return r.scenario == label && r.metric == metric;
  });
  return it == c.rows.end() ? nullptr : &*it;
}

std::string change_text(std::int64_t delta) { return delta == 0 ? "0 B" : signed_size_text(delta); }

// Where a bill's graph memory lives, in words ("" where it has none).
std::string where_memory_lives(const graph_bill& b) {
  std::vector<std::string> kinds;
  if (b.node_pool_seen && b.node_pool_high_bytes != 0) kinds.push_back("the memory-node pool");
  if (b.framework_seen && (b.framework_retained_bytes != 0 || b.framework_peak_bytes != 0)) {
    kinds.push_back("the framework's graph pools");
  }
  std::string s;
  for (std::size_t i = 0; i < kinds.size(); ++i) s += (i ? " and " : "") + kinds[i];
  return s;
}

// One process's and device's bill, baseline against current: a line per kind either saw, graph
// memory in all with the check's verdict, then the process's own figures.
void bill_change(const graph_bill* b, const graph_bill* c, const comparison& cmp, std::vector<std::string>& out) {
  const graph_bill& any = b ? *b : *c;
  std::vector<std::vector<std::string>> rows;
  const auto kind = [&](const char* name, bool b_seen, std::uint64_t bv, bool c_seen, std::uint64_t cv,
                        const std::string& tail = std::string()) {
    if (!b_seen && !c_seen) return;
    const std::string bt = b_seen ? size_text(bv) : "-", ct = c_seen ? size_text(cv) : "-";
    const std::string change = b_seen && c_seen ? change_text(static_cast<std::int64_t>(cv) - static_cast<std::int64_t>(bv)) : "";
    rows.push_back({std::string("    ") + name, bt, ct, change, tail});
  };
  kind("memory-node pool", b && b->node_pool_seen, b ? b->node_pool_retained_bytes : 0, c && c->node_pool_seen,
       c ? c->node_pool_retained_bytes : 0);
  kind("framework graph pools", b && framework_pools_held(*b), b ? b->framework_retained_bytes : 0,
       c && framework_pools_held(*c), c ? c->framework_retained_bytes : 0);
  kind("libraries at capture", b && b->library_allocations + b->library_streams != 0, b ? b->library_bytes : 0,
       c && c->library_allocations + c->library_streams != 0, c ? c->library_bytes : 0);
  kind("executable-graph state", b && b->exec_state_measured, b ? b->exec_state_bytes : 0, c && c->exec_state_measured,
       c ? c->exec_state_bytes : 0);
  const std::string label = bill_row_label(any);
  const auto verdict = [&](const char* metric) {
    const comparison_row* r = row_of(cmp, label, metric);
    return r ? r->verdict + " (" + format_row_change(*r) + ", at most " + format_row_tolerance(*r) + ")" : std::string();
  };
  kind("graph memory in all", b != nullptr, b ? graph_memory_bytes(*b) : 0, c != nullptr,
       c ? graph_memory_bytes(*c) : 0, verdict("graph_memory_bytes"));
  const std::uint64_t bp = b ? graph_memory_peaks_bytes(*b) : 0, cp = c ? graph_memory_peaks_bytes(*c) : 0;
  if ((b && bp != graph_memory_bytes(*b)) || (c && cp != graph_memory_bytes(*c))) {
    kind("each kind at its peak", b != nullptr, bp, c != nullptr, cp, verdict("graph_memory_peak_bytes"));
  }
  const auto process = [&](const char* name, bool b_seen, std::int64_t bv, bool c_seen, std::int64_t cv) {
    if (!b_seen && !c_seen) return;
    rows.push_back({std::string("    ") + name, b_seen ? signed_size_text(bv) : "-", c_seen ? signed_size_text(cv) : "-",
                    b_seen && c_seen ? change_text(cv - bv) : "", ""});
  };
  process("not graph memory", b && b->process_measured, b ? b->not_graph_bytes : 0, c && c->process_measured,
          c ? c->not_graph_bytes : 0);
  process("the process's change", b && b->process_measured, b ? b->process_delta_bytes : 0,
          c && c->process_measured, c ? c->process_delta_bytes : 0);
  std::string heading = "  " + bill_label(any);
  if (!b || !c) heading += std::string(" (in the ") + (b ? "baseline" : "current") + " recording only)";
  out.push_back(heading);
  rows.insert(rows.begin(), {"", "baseline", "current", "change", ""});
  append_lines(out, table(rows, "", "lrrrl"));
}

// What differs between the two runs besides what the bills show: commands, devices, where the
// graphs' memory lives.
std::vector<std::string> differences(const report& b, const report& c) {
  std::vector<std::string> out;
  const recording& br = *b.recorded;
  const recording& cr = *c.recorded;
  const auto quoted = [](const std::string& s) { return "`" + clip_middle(s, 60) + "`"; };
  if (br.command != cr.command) {
    out.push_back("differs: the command: " + quoted(br.command) + " in the baseline, " + quoted(cr.command) + " now");
  }
  if (b.env.device_name != c.env.device_name || b.env.device_count != c.env.device_count) {
    out.push_back("differs: the devices: " + std::to_string(b.env.device_count) + " x " + b.env.device_name +
                  " in the baseline, " + std::to_string(c.env.device_count) + " x " + c.env.device_name + " now");
  }
  if (b.env.driver_release != c.env.driver_release && !b.env.driver_release.empty() && !c.env.driver_release.empty()) {
    out.push_back("differs: the driver: " + b.env.driver_release + " in the baseline, " + c.env.driver_release + " now");
  }
  std::set<std::string> said;
  for (const graph_bill& bb : br.bills) {
    const graph_bill* now_bill = find_bill(cr, bb);
    if (!now_bill) continue;
    const std::string was = where_memory_lives(bb), now = where_memory_lives(*now_bill);
    if (was.empty() || now.empty() || was == now || !said.insert(was + "|" + now).second) continue;
    out.push_back("differs: where the graphs' memory lives: " + was + " in the baseline, " + now +
                  " now (another allocator: PyTorch's native one keeps graph memory in its graph pools, "
                  "cudaMallocAsync and memory nodes in the memory-node pool)");
  }
  return out;
}

// A row's graph name for the table: without its pid where no other process shares its label,
// and without the baseline's name where that differs only so.
std::string graph_heading(const std::string& scenario, const std::set<std::string>& shared) {
  const std::string marker = " (baseline: ";
  const std::size_t at = scenario.find(marker);
  if (at == std::string::npos || scenario.back() != ')') return without_lone_pid(scenario, shared);
  const std::string now = without_lone_pid(scenario.substr(0, at), shared);
  const std::string was = without_lone_pid(scenario.substr(at + marker.size(), scenario.size() - at - marker.size() - 1), shared);
  return was == now ? now : now + marker + was + ")";
}

}  // namespace

std::string format_recorded_check(const report& baseline, const std::string& baseline_path, const report& current,
                                  const std::string& current_path, const comparison& c, bool all) {
  std::vector<std::string> out;
  const auto side = [](const char* which, const std::string& path, const report& r) {
    return std::string(which) + clip_middle(path, 48) + " (" + r.env.device_name + ", " + r.env.date + ", commit " +
           r.env.git_commit.substr(0, 12) + ")";
  };
  append_lines(out, wrap(side("baseline: ", baseline_path, baseline), "", "  "));
  append_lines(out, wrap(side("current:  ", current_path, current), "", "  "));
  for (const std::string& d : differences(baseline, current)) append_lines(out, wrap(d, "", "  "));

  // The bills, every process and device of either recording, in the baseline's order.
  const recording& br = *baseline.recorded;
  const recording& cr = *current.recorded;
  if (!br.bills.empty() || !cr.bills.empty()) {
    out.push_back("");
    out.push_back("what CUDA graphs cost, baseline -> current (at each bill's end):");
    for (const graph_bill& b : br.bills) bill_change(&b, find_bill(cr, b), c, out);
    for (const graph_bill& b : cr.bills) {
      if (!find_bill(br, b)) bill_change(nullptr, &b, c, out);
    }
  }

  // The judged rows, by graph (or pool, or bill): a heading, then its metrics.
  out.push_back("");
  out.push_back(verdict_counts(c));
  std::vector<std::string> names;
  for (const comparison_row& r : c.rows) names.push_back(r.scenario.substr(0, r.scenario.find(" (baseline: ")));
  const std::set<std::string> shared = labels_of_several_processes(names);
  std::vector<std::vector<std::string>> rows;
  std::string last;
  for (const comparison_row& r : c.rows) {
    if (!all && !row_is_notable(r)) continue;
    const std::string heading = graph_heading(r.scenario, shared);
    if (heading != last) {
      rows.push_back({clip_middle(heading, text_width - 2)});
      last = heading;
    }
    rows.push_back({"  " + r.metric, format_row_value(r, r.baseline), format_row_value(r, r.current),
                    format_row_change(r), format_row_tolerance(r), r.verdict});
  }
  if (!rows.empty()) {
    rows.insert(rows.begin(), {"", "baseline", "current", "change", "tolerance", "verdict"});
    // A heading row (one cell) takes the line for itself; the metrics' columns line up below.
    std::vector<std::vector<std::string>> metrics;
    for (const auto& row : rows) {
      if (row.size() > 1) metrics.push_back(row);
    }
    std::vector<std::string> lines;
    append_lines(lines, table(metrics, "  ", "lrrrrl"));
    std::size_t next = 0;
    for (const auto& row : rows) {
      out.push_back(row.size() > 1 ? lines[next++] : "  " + row[0]);
    }
  }
  append_lines(out, comparison_footnote(c, all));
  for (std::size_t i = 0; i < c.notes.size(); ++i) {
    if (std::find(c.said_by_bills.begin(), c.said_by_bills.end(), i) != c.said_by_bills.end()) continue;
    append_lines(out, wrap("note: " + c.notes[i], "", "  "));
  }
  const auto compared = std::count_if(c.rows.begin(), c.rows.end(), [](const comparison_row& r) { return r.verdict != "skipped"; });
  const auto regressed = std::count_if(c.rows.begin(), c.rows.end(), [](const comparison_row& r) {
    return r.verdict == "regression" || r.verdict == "missing";
  });
  out.push_back(std::to_string(compared) + " compared, " + std::to_string(regressed) + " regressed");
  std::string text;
  for (const std::string& l : out) text += l + "\n";
  return text;
}

}  // namespace gmem::profiler
