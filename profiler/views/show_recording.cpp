// `gmemprof show` of a recording: the first answer (what the graphs cost, which graphs, why the
// pool reached its high watermark), then the detail asked for.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmem/profiler/size_text.hpp"
#include "views/bill_view.hpp"
#include "views/processes_view.hpp"
#include "views/show_parts.hpp"
#include "views/text_layout.hpp"

namespace gmem::profiler {
namespace {

std::string quoted(const std::string& graph) { return graph.empty() ? "(no graph)" : "'" + graph + "'"; }

std::string ms(double t_us) { return show_format("%.3f", t_us / 1000.0); }

std::string percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? "n/a" : show_format("%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

// The attribution's reasons in words a reader of the table needs no glossary for.
std::string why_in_words(const std::string& why) {
  if (why == "working_set") return "working set of its call";
  if (why == "held_outputs") return "outputs held between launches";
  if (why == "concurrent_launch") return "launch in another stream at the time";
  if (why == "held_before") return "held before the first call (other graphs)";
  if (why == "idle") return "mapped, held by no graph";
  if (why == "private_pool") return "the framework's private pool";
  return why;
}

bool on_device(const recorded_graph& g, int device, std::size_t pools) {
  // A graph with no device recorded can only be placed when there is one pool.
  if (g.devices.empty()) return pools == 1;
  return std::find(g.devices.begin(), g.devices.end(), device) != g.devices.end();
}

std::string pool_title(const recorded_pool& p) {
  return "device " + std::to_string(p.device) + (p.process.empty() ? "" : " of process " + p.process);
}

// Whether the device's memory-node pool is the recording's to show: it took memory, or a graph
// with memory nodes ran on the device. Else its figures would be zeros no graph made.
bool has_graph_memory(const recorded_pool& p, const recording& rec) {
  return p.high_bytes != 0 || std::any_of(rec.graphs.begin(), rec.graphs.end(), [&](const recorded_graph& g) {
           return g.kind != "private_pool" && std::find(g.devices.begin(), g.devices.end(), p.device) != g.devices.end();
         });
}

std::string held_text(const recorded_graph& g) {
  if (g.held_requested_bytes == 0 && g.held_granule_bytes == 0) return "-";
  return size_text(g.held_requested_bytes) + " in " + size_text(g.held_granule_bytes);
}

std::string state_text(const recorded_graph& g) {
  if (g.exec_state_bytes < 0) return "unread";
  return g.exec_state_bytes == 0 ? "-" : size_text(static_cast<std::uint64_t>(g.exec_state_bytes));
}

std::string growth_text(const recorded_graph& g) {
  if (g.kind == "private_pool" && g.framework_pool_added_known) {
    return signed_size_text(g.framework_pool_added_bytes);
  }
  if (g.kind == "private_pool") return size_text(g.capture_pool_growth_bytes) + " (capture)";
  return size_text(g.growth_bytes) + (g.instances > 1 ? " (" + std::to_string(g.instances) + " instances)" : "");
}

// The updates in place the driver refused (its result kept on the update's event).
std::size_t refused_updates(const recorded_graph& g) {
  std::size_t refused = 0;
  for (const recorded_event& e : g.events) refused += e.kind == "update" && !e.result.empty();
  return refused;
}

// The launches column: how many, how many calls the driver refused, and the updates in place (a
// graph updated in place shows its last graph's figures).
std::string launches_text(const recorded_graph& g) {
  // Refused updates are among the calls the driver refused, said as updates (the detail has them).
  const std::size_t refused = refused_updates(g);
  const std::uint64_t failed = g.failed_calls - std::min<std::uint64_t>(g.failed_calls, refused);
  std::string launches = std::to_string(g.launches);
  if (failed != 0) launches += " (" + std::to_string(failed) + " failed)";
  if (g.updates != 0) launches += ", " + std::to_string(g.updates) + " upd.";
  if (refused != 0) launches += (g.updates != 0 ? " + " : ", ") + std::to_string(refused) + " refused";
  return launches;
}

// What an update in place and node parameters did to a graph, in one sentence; "" where neither.
std::string updates_text(const recorded_graph& g) {
  const std::size_t refused = refused_updates(g);
  std::string out;
  if (g.updates != 0) {
    out = "updated " + std::string(g.updates == 1 ? "once" : std::to_string(g.updates) + " times") +
          " in place (cuGraphExecUpdate): its figures are its last graph's";
  }
  if (refused != 0) {
    out += (out.empty() ? "" : "; ") + plural(refused, "update", "updates") +
           " refused by the driver, which changed nothing";
  }
  if (g.node_param_sets != 0) {
    out += (out.empty() ? "" : "; ") + plural(g.node_param_sets, "call", "calls") +
           " set a node's parameters (cuGraphExec*SetParams), which cannot change its memory nodes";
  }
  return out;
}

std::vector<std::string> graph_names(const recording& rec) {
  std::vector<std::string> names;
  names.reserve(rec.graphs.size());
  for (const recorded_graph& g : rec.graphs) names.push_back(g.name);
  return names;
}

// The one sentence that says what the table's "cost" is, for the kinds of graphs it lists.
std::string cost_definition(const recording& rec) {
  bool nodes = false, pools = false, added = false;
  for (const recorded_graph& g : rec.graphs) {
    (g.kind == "private_pool" ? pools : nodes) = true;
    added = added || g.framework_pool_added_known;
  }
  std::string what;
  if (nodes) what = "the memory-node pool's growth at its launches";
  if (pools) {
    what += (what.empty() ? "" : ", or ") +
            std::string(added ? "what its framework pool grew by from the previous capture into it (warm-up runs and capture)"
                              : "what its capture took into its framework pool");
  }
  return "cost: what a graph added to the device, " + what +
         ", with its executable-graph state; in a shared pool a graph made after a larger one may add nothing";
}

constexpr std::size_t name_width = 32;

// The names of the graphs `order` lists first (`shown` of them) as the cost table shows them:
// without a pid that tells nothing apart, without the process label where one process made every
// graph, and, where every one of them was made at one site ("gen.py:26 in <module>
// (GPT2LMHeadModel.forward, batch 16)"), without that site, which `site` then holds.
std::vector<std::string> table_names(const recording& rec, const std::vector<std::size_t>& order, std::size_t shown,
                                     std::string& site) {
  const std::set<std::string> shared = labels_of_several_processes(graph_names(rec));
  std::set<long> makers;
  for (const auto& g : rec.graphs) makers.insert(g.pid);
  std::vector<std::string> names;
  for (std::size_t k = 0; k < std::min(shown, order.size()); ++k) {
    std::string name = without_lone_pid(rec.graphs[order[k]].name, shared);
    const std::size_t end = name.find("] ");
    if (makers.size() == 1 && name.rfind("[", 0) == 0 && end != std::string::npos) name = name.substr(end + 2);
    names.push_back(std::move(name));
  }
  site.clear();
  for (const std::string& name : names) {
    const std::size_t open = name.find(" (");
    if (open == std::string::npos || name.back() != ')' || (!site.empty() && name.compare(0, open, site) != 0) ||
        (site.empty() && &name != &names.front())) {
      site.clear();
      break;
    }
    site = name.substr(0, open);
  }
  if (names.size() < 2) site.clear();
  if (!site.empty()) {
    for (std::string& name : names) name = name.substr(site.size() + 2, name.size() - site.size() - 3);
  }
  return names;
}

// The ranked table: the first `shown` of `order`, then one row for the rest; `names`: the listed
// graphs' names as table_names writes them.
std::string cost_table(const report& r, const std::vector<std::size_t>& order, std::size_t shown,
                       const std::vector<std::string>& names, const std::string& indent) {
  const recording& rec = *r.recorded;
  std::vector<std::vector<std::string>> rows = {
      {"graph", "cost", "pool growth", "held (requested in mapped)", "exec state", "launches", "1st launch"}};
  const std::size_t n = std::min(shown, order.size());
  for (std::size_t k = 0; k < n; ++k) {
    const recorded_graph& g = rec.graphs[order[k]];
    const double first = first_launch_us(scenario_of(r, order[k]));
    const std::string launches = launches_text(g);
    // A graph never launched (a CUDA graph tree's placeholder, a graph made and let go) is marked
    // as such: its figures are what making it cost.
    rows.push_back({quoted(names[k]), size_text(graph_cost(g)), growth_text(g), held_text(g),
                    state_text(g), launches,
                    first >= 0 ? show_format("%.1f us", first) : g.launches == 0 ? "never" : "-"});
  }
  if (order.size() > n) {
    std::uint64_t cost = 0, growth = 0, requested = 0, mapped = 0, state = 0, launches = 0;
    for (std::size_t k = n; k < order.size(); ++k) {
      const recorded_graph& g = rec.graphs[order[k]];
      cost += graph_cost(g);
      growth += g.kind == "private_pool" ? g.capture_pool_growth_bytes : g.growth_bytes;
      requested += g.held_requested_bytes;
      mapped += g.held_granule_bytes;
      if (g.exec_state_bytes > 0) state += static_cast<std::uint64_t>(g.exec_state_bytes);
      launches += g.launches;
    }
    rows.push_back({plural(order.size() - n, "other", "others"), size_text(cost), size_text(growth),
                    size_text(requested) + " in " + size_text(mapped), size_text(state), std::to_string(launches), ""});
  }
  // A column with nothing to say in any listed graph (no held outputs, no state measured) goes.
  std::string align = "lrrrrrr";
  for (std::size_t c = rows.front().size(); c-- > 1;) {
    bool empty = true;
    for (std::size_t k = 1; k <= n; ++k) empty = empty && (rows[k][c] == "-" || rows[k][c] == "0 B");
    if (!empty) continue;
    for (auto& row : rows) row.erase(row.begin() + static_cast<std::ptrdiff_t>(c));
    align.erase(c, 1);
  }
  fit_first_column(rows, indent.size());
  return table(rows, indent, align);
}

// Why the pool reached its high watermark: the attribution at that moment grouped by reason,
// the largest first, each with the graphs that held it.
std::vector<std::string> why_lines(const recorded_pool& p, const recording& rec, std::size_t max_causes) {
  std::vector<std::string> out;
  std::string head = "why the pool of " + pool_title(p) + " reached " + size_text(p.high_bytes);
  if (!p.high_graph.empty()) {
    head += ": at " + ms(p.high_t_us) + " ms, " + quoted(p.high_graph) + " " + p.high_event;
    if (p.high_concurrent) head += " (other threads' calls overlapped it: concurrent)";
  }
  out.push_back(clip(head, text_width));
  struct cause {
    std::string why;
    std::uint64_t bytes = 0;
    std::vector<std::string> graphs;
  };
  std::map<std::string, cause> by_why;
  std::uint64_t sum = 0;
  std::vector<const recorded_pool::share*> shares;
  for (const auto& a : p.attribution) shares.push_back(&a);
  std::stable_sort(shares.begin(), shares.end(), [](const recorded_pool::share* a, const recorded_pool::share* b) {
    if (a->bytes != b->bytes) return a->bytes > b->bytes;
    return natural_less(a->graph, b->graph);
  });
  for (const recorded_pool::share* a : shares) {
    cause& c = by_why[a->why];
    c.why = a->why;
    c.bytes += a->bytes;
    if (!a->graph.empty()) c.graphs.push_back(a->graph);
    sum += a->bytes;
  }
  std::vector<cause> causes;
  for (auto& entry : by_why) causes.push_back(std::move(entry.second));
  std::stable_sort(causes.begin(), causes.end(), [](const cause& a, const cause& b) { return a.bytes > b.bytes; });
  std::map<std::string, const recorded_graph*> by_name;
  for (const auto& g : rec.graphs) by_name.emplace(g.name, &g);
  for (std::size_t k = 0; k < causes.size() && k < max_causes; ++k) {
    const cause& c = causes[k];
    std::string text;
    if (c.why == "held_outputs") {
      std::uint64_t requested = 0;
      for (const auto& name : c.graphs) {
        const auto g = by_name.find(name);
        if (g != by_name.end()) requested += g->second->held_requested_bytes;
      }
      text = "held between launches by " + plural(c.graphs.size(), "other graph", "other graphs") + ", " +
             size_text(requested) + " requested in whole granules: " + listed(c.graphs, 2, true);
    } else if (c.why == "working_set") {
      text = "working set of " + listed(c.graphs, 2, true) + ", the launch that reached it";
    } else if (c.why == "concurrent_launch") {
      text = "launches in other streams still running: " + listed(c.graphs, 3, true);
    } else {
      text = why_in_words(c.why) + (c.graphs.empty() ? "" : " (" + listed(c.graphs, 2, true) + ")");
    }
    append_lines(out, wrap(text, "  " + show_format("%9s", size_text(c.bytes).c_str()) + "  ", std::string(13, ' ')));
  }
  if (causes.size() > max_causes) out.push_back("  and " + plural(causes.size() - max_causes, "smaller cause", "smaller causes"));
  if (!p.attribution.empty() && sum != p.high_bytes) {
    const bool above = sum > p.high_bytes;
    out.push_back("  (the pool model's shares sum to " + size_text(sum) + ", " +
                  size_text(above ? sum - p.high_bytes : p.high_bytes - sum) + (above ? " above" : " below") +
                  " the device's measurement)");
  }
  return out;
}

// What a diagnostic's code says and what to do, in one line, for the first answer (the full
// message is in the detail); empty for a code without one.
std::string code_summary(const std::string& code) {
  // Never destroyed: a recording summarizes its report from exit handlers (report_json.cpp).
  static const auto& summaries = *new std::map<std::string, std::string>{
      {"held_outputs", "outputs held between launches pin whole granules each"},
      {"separate_streams", "launches that may run at once cannot share memory"},
      {"remap_contention", "relaunches had to map their memory again"},
      {"remap_unexplained", "pool growth gmem's model does not explain: please report it"},
      {"unfreed_allocation", "no free node: held between launches"},
      {"missed_reuse", "a free node could be ordered before a later alloc node"},
      {"reservation_above_bound", "the driver reserved more than the graph needs"},
      {"reserved_until_trim", "reserved after the graphs are gone, until a trim"},
      {"private_pool", "memory of the framework's allocator, not memory nodes"},
      {"advice_not_measured", "the candidate changes were not measured"},
  };
  const auto it = summaries.find(code);
  return it == summaries.end() ? std::string() : it->second;
}

// The diagnostics of the set (each pool's) and of the graphs (grouped by kind), one line each,
// the largest first.
std::vector<std::string> diagnostic_lines(const report& r, std::size_t max_lines) {
  struct kind {
    std::string severity, code, first_message;
    std::uint64_t bytes = 0;
    std::vector<std::string> graphs;
    bool pool = false;
  };
  std::vector<kind> kinds;
  for (const auto& p : r.recorded->pools) {
    for (const auto& d : p.diagnostics) {
      kinds.push_back({d.severity, d.code, d.message, d.bytes, {}, true});
      if (r.recorded->pools.size() > 1) kinds.back().code += " (" + pool_title(p) + ")";
    }
  }
  std::map<std::pair<std::string, std::string>, std::size_t> graph_kind;
  for (const auto& s : r.scenarios) {
    for (const auto& d : s.diagnostics) {
      const auto key = std::make_pair(d.severity, d.code);
      auto it = graph_kind.find(key);
      if (it == graph_kind.end()) {
        it = graph_kind.emplace(key, kinds.size()).first;
        kinds.push_back({d.severity, d.code, d.message, 0, {}, false});
      }
      kind& k = kinds[it->second];
      k.bytes += d.bytes;
      if (k.graphs.empty() || k.graphs.back() != s.name) k.graphs.push_back(s.name);
    }
  }
  const auto rank = [](const std::string& severity) { return severity == "error" ? 0 : severity == "warning" ? 1 : 2; };
  std::stable_sort(kinds.begin(), kinds.end(), [&](const kind& a, const kind& b) {
    if (rank(a.severity) != rank(b.severity)) return rank(a.severity) < rank(b.severity);
    return a.bytes > b.bytes;
  });
  std::vector<std::string> out;
  for (std::size_t k = 0; k < kinds.size() && k < max_lines; ++k) {
    const kind& d = kinds[k];
    std::string line = "  [" + d.severity + "] " + d.code;
    if (!d.pool) line += ", " + plural(d.graphs.size(), "graph", "graphs");
    if (d.bytes) line += ", " + size_text(d.bytes);
    const std::string summary = code_summary(d.code.substr(0, d.code.find(' ')));
    line += ": " + (summary.empty() ? d.first_message : summary);
    if (!d.pool && d.graphs.size() <= 2) line += " (" + listed(d.graphs, 2) + ")";
    out.push_back(clip(line, text_width));
  }
  if (kinds.size() > max_lines) out.push_back("  and " + plural(kinds.size() - max_lines, "more kind", "more kinds"));
  return out;
}

// A device without graph memory nodes: what there is lives in the framework's graph pools.
std::string framework_pools_text(const recorded_pool& p, const recording& rec) {
  std::string out = "\nframework graph pools of " + pool_title(p) + " (no graph memory nodes)\n";
  out += "  " + size_text(p.private_pool_bytes) + " taken by the application's allocator while graphs were captured\n";
  for (const auto& fp : rec.framework_pools) {
    if (fp.device != p.device) continue;
    out += wrap(fp.id + ": warm-up " + size_text(fp.warmup_bytes) + ", captures " + size_text(fp.capture_bytes) +
                    ", retained " + size_text(fp.retained_bytes) +
                    (fp.snapshot_bytes >= 0
                         ? " (the framework's figure: " + size_text(static_cast<std::uint64_t>(fp.snapshot_bytes)) + ")"
                         : "") +
                    ", " + plural(fp.graphs.size(), "graph", "graphs"),
                "  ", "    ");
    std::size_t differing = 0;
    for (const pool_check& c : fp.after_captures) {
      if (c.retained_bytes == c.framework_bytes) continue;
      if (++differing > 8) continue;
      out += wrap("after the capture of " + quoted(c.graph.empty() ? "a capture never instantiated" : c.graph) + ": " +
                      size_text(c.retained_bytes) + " against the framework's " + size_text(c.framework_bytes),
                  "    ", "      ");
    }
    if (!fp.after_captures.empty()) {
      out += "    " + (differing == 0 ? "equal to the framework's figure after each of " : std::to_string(differing) + " differing of ") +
             plural(fp.after_captures.size(), "capture", "captures") + "\n";
    }
  }
  return out;
}

// The pool's figures as labelled lines: its high watermark and what reached it, its end, the
// model's reservation against the measurement, its private pools.
std::string pool_head_text(const recorded_pool& p) {
  std::vector<std::vector<std::string>> head;
  head.push_back({"high watermark", size_text(p.high_bytes) + " measured (the device's high watermark: every graph's memory)"});
  if (!p.high_graph.empty() || !p.high_event.empty()) {
    head.push_back({"reached by", quoted(p.high_graph) + (p.high_event.empty() ? "" : ", " + p.high_event) + ", at " +
                                      ms(p.high_t_us) + " ms" +
                                      (p.high_concurrent ? " (concurrent: other threads' calls overlapped it)" : "")});
  }
  head.push_back({"at the end", size_text(p.end_bytes) + " reserved"});
  std::string model = size_text(p.model_high_bytes) + " (the pool model's reservation at the high watermark";
  if (p.model_high_bytes == p.high_bytes) {
    model += ", as measured)";
  } else {
    const bool above = p.model_high_bytes > p.high_bytes;
    model += "; " + size_text(above ? p.model_high_bytes - p.high_bytes : p.high_bytes - p.model_high_bytes) +
             (above ? " above" : " below") + " the measurement)";
  }
  head.push_back({"model", model});
  if (p.private_pool_bytes != 0) {
    head.push_back({"private pools", size_text(p.private_pool_bytes) +
                                         " taken by the application's allocator while graphs were captured"});
  }
  std::size_t label = 0;
  for (const auto& row : head) label = std::max(label, row[0].size());
  std::string out;
  for (const auto& row : head) {
    out += wrap(row[1], "  " + row[0] + std::string(label - row[0].size() + 2, ' '), std::string(label + 4, ' '));
  }
  return out;
}

// The pool model's shares at the high watermark by graph, the largest first (`show --all`: every
// share).
std::string attribution_text(const recorded_pool& p) {
  std::string out = "  at the high watermark, by graph (pool model):\n";
  std::vector<std::size_t> order(p.attribution.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return p.attribution[a].bytes > p.attribution[b].bytes;
  });
  std::vector<std::vector<std::string>> rows = {{"graph", "why", "size", "share"}};
  std::uint64_t sum = 0;
  for (const auto& a : p.attribution) sum += a.bytes;
  for (const std::size_t k : order) {
    const auto& a = p.attribution[k];
    rows.push_back({clip(quoted(a.graph), name_width), why_in_words(a.why), size_text(a.bytes), percent(a.bytes, sum)});
  }
  rows.push_back({"total", plural(p.attribution.size(), "share", "shares"), size_text(sum), percent(sum, sum)});
  return out + table(rows, "    ", "llrr");
}

// The graphs of the pool's device by cost, each with its own figures (`show --all`: every one).
std::string pool_graphs_text(const recorded_pool& p, const recording& rec) {
  std::vector<std::size_t> in_pool;
  for (std::size_t gi : graphs_by_cost(rec)) {
    if (on_device(rec.graphs[gi], p.device, rec.pools.size())) in_pool.push_back(gi);
  }
  if (in_pool.empty()) return "";
  std::string out =
      wrap("graphs in this pool by cost, each one's own figures: alone, what the graph by itself reserves "
           "from a trimmed pool (predicted); growth, the pool's growth its calls caused; held, what it leaves "
           "allocated between launches, in mapped granules; auto-free, instantiated with AutoFreeOnLaunch:",
           "  ", "  ");
  std::vector<std::vector<std::string>> rows = {
      {"graph", "kind", "alone", "growth", "held", "mapped", "launches", "auto-free"}};
  const std::set<std::string> shared = labels_of_several_processes(graph_names(rec));
  for (const std::size_t gi : in_pool) {
    const recorded_graph& g = rec.graphs[gi];
    const std::string launches = launches_text(g);
    // A private pool's graph has no memory-node figures unless one was recorded: "-", not zeros.
    const bool nodes = g.kind != "private_pool";
    const auto figure = [nodes](std::uint64_t v) { return nodes || v != 0 ? size_text(v) : std::string("-"); };
    rows.push_back({quoted(without_lone_pid(g.name, shared)), nodes ? "memory nodes" : "private pool",
                    figure(g.own_footprint_bytes), growth_text(g), figure(g.held_requested_bytes),
                    figure(g.held_granule_bytes), launches,
                    !g.flags_known ? "unknown" : g.flags.auto_free_on_launch ? "yes" : "no"});
  }
  fit_first_column(rows, 4);
  out += table(rows, "    ", "llrrrrrl");
  return out;
}

// The pool's mapping events, every one (`show --all`; `gmemprof html` draws them).
std::string pool_timeline_text(const recorded_pool& p) {
  std::string out = "  mapping events (reserved after each call that changed it, and trims):\n";
  std::vector<std::vector<std::string>> rows = {{"t (ms)", "graph", "event", "growth", "reserved after"}};
  bool concurrent = false;
  for (const pool_point& t : p.timeline) {
    rows.push_back({ms(t.t_us), t.graph.empty() ? "-" : clip(quoted(t.graph), name_width),
                    t.event + (t.concurrent ? " *" : ""), signed_size_text(t.growth_bytes), size_text(t.reserved_bytes)});
    concurrent = concurrent || t.concurrent;
    if (t.t_us == p.high_t_us && t.reserved_bytes == p.high_bytes) rows.back().push_back("<- high watermark");
  }
  out += table(rows, "    ", "rllrr");
  if (concurrent) {
    out += "    * concurrent: another thread's call overlapped it; its growth is the pool model's share, and\n"
           "      readings of overlapping calls need not rise in time order\n";
  }
  return out;
}

// A pool's section of `show --all`.
std::string format_pool(const recorded_pool& p, const report& r) {
  const recording& rec = *r.recorded;
  if (!has_graph_memory(p, rec)) return framework_pools_text(p, rec);
  std::string out = "\npool of " + pool_title(p) + "\n";
  out += pool_head_text(p);
  if (!p.attribution.empty()) out += attribution_text(p);
  out += pool_graphs_text(p, rec);
  for (const auto& d : p.diagnostics) out += format_diagnostic(d, "  ");
  if (!p.timeline.empty()) out += pool_timeline_text(p);
  return out;
}

// A recorded graph's own figures in the pool, under its block.
// `framework_words`: the framework's own words for the graph too (--all, --graph).
std::string pool_figures(const recorded_graph& g, const recording& rec, bool framework_words) {
  std::string out = wrap("in the pool: cost " + size_text(graph_cost(g)) + ", pool growth " + growth_text(g) +
                             ", held between launches " + held_text(g) + ", executable-graph state " +
                             (g.exec_state_bytes < 0 ? std::string("unread (another thread's call overlapped)")
                                                     : size_text(static_cast<std::uint64_t>(g.exec_state_bytes))) +
                             (g.libraries_at_capture_bytes != 0
                                  ? ", libraries at its capture " + size_text(g.libraries_at_capture_bytes)
                                  : std::string()) +
                             ", " + plural(g.launches, "launch", "launches") +
                             (g.instances > 1 ? ", " + std::to_string(g.instances) + " instances" : ""),
                         "  ", "    ");
  if (const std::string updates = updates_text(g); !updates.empty()) out += wrap(updates, "  ", "    ");
  if (!g.python_site.empty() || !g.framework_label.empty()) {
    out += wrap("captured at " + (g.python_site.empty() ? std::string("an unknown site") : g.python_site) +
                    (g.framework_label.empty() ? "" : " (" + g.framework_label + ")"),
                "  ", "    ");
  }
  if (framework_words && !g.framework_detail.empty()) {
    out += wrap("the framework's own words: " + g.framework_detail, "  ", "    ");
  }
  for (const auto& p : rec.pools) {
    std::uint64_t share = 0;
    std::string why;
    for (const auto& a : p.attribution) {
      if (a.graph != g.name) continue;
      share += a.bytes;
      why = why_in_words(a.why);
    }
    if (share) out += "  at the high watermark of " + pool_title(p) + ": " + size_text(share) + ", " + why + "\n";
    std::size_t points = 0;
    for (const auto& t : p.timeline) points += t.graph == g.name;
    if (points) {
      // Its own growth only: what the pool held after each call is the pool's figure, not the graph's.
      std::vector<std::vector<std::string>> rows = {{"t (ms)", "event", "growth"}};
      for (const auto& t : p.timeline) {
        if (t.graph != g.name || rows.size() > 10) continue;
        rows.push_back({ms(t.t_us), t.event + (t.concurrent ? " (concurrent)" : ""), signed_size_text(t.growth_bytes)});
      }
      out += "  its calls that grew the pool of " + pool_title(p) + ":\n" + table(rows, "    ", "rlr");
      if (points + 1 > rows.size()) out += "    and " + std::to_string(points + 1 - rows.size()) + " more\n";
    }
  }
  return out;
}

// Whether a recording's note belongs on the first screen: not how the recording was made (which
// hook took the calls, as recordings made before each bill named it said; that processes were
// merged, which the process labels and the process list say), which --all prints.
bool first_screen_note(const std::string& note) {
  const std::size_t colon = note.find(": ");
  const std::string text = colon != std::string::npos && colon < 16 ? note.substr(colon + 2) : note;
  return text.rfind("driver calls were taken by gmem's own interception", 0) != 0 && text.rfind("merged from ", 0) != 0;
}

// A command as the first line shows it: each path as its file's name ("python3 gpt2_compile.py
// out.json"); `show --all` lists the whole command.
std::string short_command(const std::string& command) {
  std::string out, word;
  const auto flush = [&] {
    const std::size_t slash = word.find('/') == std::string::npos || word.back() == '/' ? std::string::npos : word.rfind('/');
    if (!word.empty()) out += (out.empty() ? "" : " ") + (slash == std::string::npos ? word : word.substr(slash + 1));
    word.clear();
  };
  for (char ch : command) {
    if (ch == ' ') flush();
    else word += ch;
  }
  flush();
  return out;
}

std::string header_line(const report& r) {
  const recording& rec = *r.recorded;
  std::string out = "recording of " + (rec.command.empty() ? std::string("(command unknown)") : "`" + clip_middle(short_command(rec.command), 56) + "`");
  if (rec.pid != 0) out += " (pid " + std::to_string(rec.pid) + ")";
  // A process of the command that never used a device (a compile worker) records no device.
  if (r.env.device_name.empty() && r.env.device_count == 0 && rec.bills.empty() && rec.graphs.empty()) {
    return out + ", a process that used no CUDA device";
  }
  out += " on " + (r.env.device_name.empty() ? std::string("an unknown device") : r.env.device_name);
  if (!r.env.driver_release.empty()) out += ", driver " + r.env.driver_release;
  return out;
}

}  // namespace

std::uint64_t graph_cost(const recorded_graph& g) {
  std::uint64_t pool = g.kind == "private_pool" ? g.capture_pool_growth_bytes : g.growth_bytes;
  if (g.kind == "private_pool" && g.framework_pool_added_known) {
    pool = g.framework_pool_added_bytes > 0 ? static_cast<std::uint64_t>(g.framework_pool_added_bytes) : 0;
  }
  if (g.instances > 1 && g.kind != "private_pool") {
    // A graph made again and again (destroyed, often trimmed, between instances) grows the pool
    // once per instance: what it costs the device is its costliest instance, not the sum (16,000
    // rounds of a 32 MiB graph grew the pool by 64 GiB in all). Instances start at their
    // "instantiate" event; the events kept (4096 at most) decide.
    std::uint64_t instance = 0, most = 0;
    for (const recorded_event& e : g.events) {
      if (e.kind == "instantiate") instance = 0;
      if (e.growth_bytes > 0) instance += static_cast<std::uint64_t>(e.growth_bytes);
      most = std::max(most, instance);
    }
    pool = most;
  }
  return pool + (g.exec_state_bytes > 0 ? static_cast<std::uint64_t>(g.exec_state_bytes) : 0);
}

std::vector<std::size_t> graphs_by_cost(const recording& rec) {
  std::vector<std::size_t> order(rec.graphs.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::vector<std::uint64_t> cost(rec.graphs.size());
  for (std::size_t k = 0; k < cost.size(); ++k) cost[k] = graph_cost(rec.graphs[k]);
  // By cost, the graphs never launched after those launched at the same cost.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (cost[a] != cost[b]) return cost[a] > cost[b];
    const bool a_ran = rec.graphs[a].launches != 0, b_ran = rec.graphs[b].launches != 0;
    if (a_ran != b_ran) return a_ran;
    return natural_less(rec.graphs[a].name, rec.graphs[b].name);
  });
  return order;
}

const scenario_result* scenario_of(const report& r, std::size_t gi) {
  const recording& rec = *r.recorded;
  if (gi >= rec.graphs.size()) return nullptr;
  if (gi < r.scenarios.size() && r.scenarios[gi].name == rec.graphs[gi].name) return &r.scenarios[gi];
  for (const auto& s : r.scenarios) {
    if (s.name == rec.graphs[gi].name) return &s;
  }
  return nullptr;
}

double first_launch_us(const scenario_result* s) {
  if (!s) return -1;
  for (const auto& c : s->launch_costs) {
    if (c.phase == "first_launch" || c.phase == "first_launch_after_upload") return c.host.median_us;
  }
  return -1;
}

std::string cost_line(const recording& rec) {
  std::map<std::string, std::pair<std::uint64_t, double>> parts;  // calls, us, over processes
  double library_us = 0, companion_us = 0;
  for (const auto& c : rec.cost) {
    auto& [calls, us] = parts[c.part];
    calls += c.calls;
    us += c.us;
    (c.part == companion_cost_part ? companion_us : library_us) += c.us;
  }
  if (parts.empty()) return "";
  std::vector<std::pair<std::string, std::pair<std::uint64_t, double>>> order(parts.begin(), parts.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::string line = "recording took " + duration_text(library_us) + " of the program's time in its CUDA calls";
  std::size_t shown = 0;
  for (const auto& [part, figures] : order) {
    if (part == companion_cost_part || shown == 3 || figures.second < 0.05 * library_us) continue;
    line += (shown++ ? ", " : ": ") + part + " " + duration_text(figures.second) +
            show_format(" (%llu x %.1f us)", static_cast<unsigned long long>(figures.first),
                        figures.second / static_cast<double>(figures.first));
  }
  if (companion_us > 0) line += "; its Python companion " + duration_text(companion_us);
  return line;
}

// What the program did to its graphs without memory nodes once instantiated (XLA updates its
// command buffers in place), where it did anything: " (12 updates in place, 1 refused, 40 node
// parameter calls)".
std::string without_memory_nodes_calls(const recording& rec) {
  std::string out;
  const auto add = [&out](std::uint64_t n, const std::string& one, const std::string& many) {
    if (n != 0) out += (out.empty() ? "" : ", ") + plural(n, one, many);
  };
  add(rec.updates_without_memory_nodes, "update in place", "updates in place");
  add(rec.refused_updates_without_memory_nodes, "refused", "refused");
  add(rec.node_param_sets_without_memory_nodes, "node parameter call", "node parameter calls");
  return out.empty() ? out : " (" + out + ")";
}

std::vector<std::string> recording_overview(const report& r, const show_options& o) {
  const recording& rec = *r.recorded;
  std::vector<std::string> out;
  out.push_back(clip(header_line(r), text_width));
  std::size_t memory_nodes = 0;
  for (const auto& g : rec.graphs) memory_nodes += g.kind == "memory_nodes";
  std::string counts = plural(memory_nodes, "graph", "graphs") + " with memory nodes";
  if (rec.graphs.size() > memory_nodes) counts += ", " + std::to_string(rec.graphs.size() - memory_nodes) + " in the framework's graph pools";
  std::size_t never = 0;
  for (const auto& g : rec.graphs) never += g.launches == 0;
  if (never != 0) counts += " (" + std::to_string(never) + " never launched)";
  if (rec.graphs_without_memory_nodes) {
    counts += ", " + std::to_string(rec.graphs_without_memory_nodes) + " without graph memory" +
              without_memory_nodes_calls(rec);
  }
  if (rec.processes.size() > 1) {
    const std::size_t making = static_cast<std::size_t>(std::count_if(
        rec.processes.begin(), rec.processes.end(), [](const recorded_process& p) { return p.graphs != 0; }));
    counts += ", in " + std::to_string(rec.processes.size()) + " processes";
    if (making != rec.processes.size()) counts += ", " + std::to_string(making) + " of them making graphs";
  }
  append_lines(out, wrap(counts, "", "  "));
  if (rec.partial) out.push_back(clip("PARTIAL: " + (rec.partial_reason.empty() ? std::string("unknown") : rec.partial_reason), text_width));
  for (const auto& n : rec.notes) {
    if (o.all || first_screen_note(n)) append_lines(out, wrap("note: " + n, "", "  "));
  }

  if (rec.bills.size() > 1) {  // several processes (ranks) or devices: side by side
    out.push_back("");
    for (std::string& line : processes_side_by_side(rec)) out.push_back(clip(line, text_width));
  } else {
    for (const auto& b : rec.bills) {
      out.push_back("");
      for (std::string& line : bill_lines(b)) out.push_back(std::move(line));
    }
  }

  if (!rec.graphs.empty()) {
    out.push_back("");
    const std::vector<std::size_t> order = graphs_by_cost(rec);
    const std::size_t shown = std::min(o.top, order.size());
    std::string site;
    const std::vector<std::string> names = table_names(rec, order, shown, site);
    std::string head = shown == order.size() ? "the graphs by what they cost the device"
                                             : "the top " + std::to_string(shown) + " of " + std::to_string(order.size()) +
                                                   " graphs by what they cost the device";
    append_lines(out, wrap(head + (site.empty() ? ":" : ", all made at " + site + ":"), "", "  "));
    append_lines(out, cost_table(r, order, shown, names, "  "));
    append_lines(out, wrap(cost_definition(rec), "  ", "  "));
  }

  for (const auto& p : rec.pools) {
    if (!has_graph_memory(p, rec) || p.high_bytes == 0) continue;
    out.push_back("");
    for (std::string& line : why_lines(p, rec, 4)) out.push_back(std::move(line));
  }

  const std::vector<std::string> diagnostics = diagnostic_lines(r, 5);
  if (!diagnostics.empty()) {
    out.push_back("");
    out.push_back("diagnostics (the full text: --all, or --graph NAME):");
    out.insert(out.end(), diagnostics.begin(), diagnostics.end());
  }
  if (!o.source.empty()) {
    out.push_back("");
    out.push_back(clip("more: gmemprof show " + o.source + " --graph NAME | --all | --top N | --format json", text_width));
  }
  return out;
}

std::string format_recording(const report& r, const show_options& o) {
  const recording& rec = *r.recorded;
  std::vector<std::string> names;
  for (const auto& g : rec.graphs) names.push_back(g.name);
  if (!o.graphs.empty()) {
    // One graph's (or a few graphs') detail: what the user asked for, nothing else.
    std::string out = header_line(r) + "\n";
    for (std::size_t gi : select_names(names, o.graphs, "graph")) {
      out += "\n";
      const scenario_result* s = scenario_of(r, gi);
      if (s) out += format_scenario(*s, true, r.env.granularity_bytes);
      else out += quoted(rec.graphs[gi].name) + "\n";
      out += pool_figures(rec.graphs[gi], rec, true);
    }
    return out;
  }
  std::string out;
  for (const std::string& line : recording_overview(r, o)) out += line + "\n";
  const bool detail = o.all;
  if (!detail) return out;

  out += "\n" + format_environment(r.env);
  for (const auto& pr : rec.processes) {
    out += wrap("process " + std::to_string(pr.pid) + (pr.rank.empty() ? "" : " (rank " + pr.rank + ")") + ": " +
                    (pr.command.empty() ? "unknown" : pr.command) + ", " + plural(pr.graphs, "graph", "graphs") +
                    (pr.report.empty() ? "" : ", " + pr.report),
                "", "  ");
  }
  if (rec.bills.size() > 1) {
    for (const auto& b : rec.bills) {
      out += "\n";
      for (const std::string& line : bill_lines(b)) out += line + "\n";
    }
  }
  if (rec.analysis_deferred) {
    out += wrap("note: the analysis at exit ran out of its time budget: the graphs' figures are the graph models' "
                "own, analysed here",
                "", "  ");
  }
  if (rec.sequence_truncated) {
    out += "note: the call sequence was cut at its bound: `gmemprof replay --set` replays its start\n";
  }
  for (std::size_t gi = 0; gi < rec.graphs.size(); ++gi) {
    out += "\n";
    const scenario_result* s = scenario_of(r, gi);
    if (s) out += format_scenario(*s, true, r.env.granularity_bytes);
    else out += quoted(rec.graphs[gi].name) + "\n";
    out += pool_figures(rec.graphs[gi], rec, true);
  }
  for (const auto& p : rec.pools) out += format_pool(p, r);
  if (rec.pools.empty() && !rec.graphs.empty()) {
    out += "\nno graph memory pool in this recording (an older gmemprof, or the device's granularity unknown): "
           "record the program again for the pool's high watermark and what held it\n";
  }
  return out;
}

}  // namespace gmem::profiler
