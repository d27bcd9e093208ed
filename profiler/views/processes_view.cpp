#include "views/processes_view.hpp"

#include <algorithm>
#include <map>

#include "gmem/profiler/size_text.hpp"
#include "report/processes.hpp"
#include "views/show.hpp"
#include "views/text_layout.hpp"

namespace gmem::profiler {
namespace {

std::string who(const graph_bill& b) { return b.process.empty() ? "this process" : b.process; }

// A graph's identity without its process's label ("rank 0/nvtx:step" -> "nvtx:step"), the key
// under which two processes' graphs are the same graph.
std::string own_identity(const recorded_graph& g, const std::string& process) {
  const std::string prefix = process + "/";
  return g.identity.rfind(prefix, 0) == 0 ? g.identity.substr(prefix.size()) : g.identity;
}

}  // namespace

std::vector<std::string> processes_side_by_side(const recording& rec) {
  std::vector<std::string> out;
  if (rec.bills.size() < 2) return out;
  bool node = false, framework = false, libraries = false, state = false, process = false;
  for (const auto& b : rec.bills) {
    node = node || b.node_pool_seen;
    framework = framework || framework_pools_held(b);
    libraries = libraries || b.library_allocations + b.library_streams != 0;
    state = state || b.exec_state_measured;
    process = process || b.process_measured;
  }
  // The end's first words where the whole would not fit ("the program's end").
  std::string end = rec.bills.front().end;
  if (end.size() > 40 && end.find(" (") != std::string::npos) end = end.substr(0, end.find(" ("));
  out.push_back("what CUDA graphs cost each process's device (at " + end + "):");
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head = {"process", "device"};
  if (node) head.push_back("node pool (high)");
  if (framework) head.push_back("framework pools");
  if (libraries) head.push_back("libraries");
  if (state) head.push_back("graph state");
  head.push_back("graph memory");
  if (process) head.push_back("process change");
  rows.push_back(head);
  const auto or_dash = [](bool seen, const std::string& text) { return seen ? text : std::string("-"); };
  for (const auto& b : rec.bills) {
    std::vector<std::string> row = {who(b), std::to_string(b.device)};
    if (node) {
      row.push_back(or_dash(b.node_pool_seen, size_text(b.node_pool_retained_bytes) + " (" +
                                                  size_text(b.node_pool_high_bytes) + ")"));
    }
    if (framework) row.push_back(or_dash(framework_pools_held(b), size_text(b.framework_retained_bytes)));
    if (libraries) row.push_back(size_text(b.library_bytes));
    if (state) row.push_back(or_dash(b.exec_state_measured, size_text(b.exec_state_bytes)));
    row.push_back(size_text(graph_memory_bytes(b)));
    if (process) row.push_back(or_dash(b.process_measured, signed_size_text(b.process_delta_bytes)));
    rows.push_back(std::move(row));
  }
  append_lines(out, table(rows, "  ", "ll"));

  const auto [low, high] = std::minmax_element(rec.bills.begin(), rec.bills.end(), [](const graph_bill& a, const graph_bill& b) {
    return graph_memory_bytes(a) < graph_memory_bytes(b);
  });
  const std::uint64_t more = graph_memory_bytes(*high) - graph_memory_bytes(*low);
  if (more == 0) {
    out.push_back("  every process's graphs cost the same");
    return out;
  }
  std::string why = who(*high) + "'s graphs cost " + size_text(more) + " more than " + who(*low) + "'s:";
  const auto kind = [&why](bool seen, const char* name, std::uint64_t a, std::uint64_t b) {
    if (seen && a != b) {
      why += std::string(" ") + name + " " + signed_size_text(static_cast<std::int64_t>(a) - static_cast<std::int64_t>(b)) + ",";
    }
  };
  kind(high->node_pool_seen, "memory-node pool", high->node_pool_retained_bytes, low->node_pool_retained_bytes);
  kind(framework_pools_held(*high), "framework pools", high->framework_retained_bytes, low->framework_retained_bytes);
  kind(true, "libraries at capture", high->library_bytes, low->library_bytes);
  kind(high->exec_state_measured, "graph state", high->exec_state_bytes, low->exec_state_bytes);
  if (why.back() == ',') why.pop_back();
  // The graphs behind it: the same graph (identity without the process's label) costing more in
  // the costlier process, and graphs it alone has.
  std::map<std::string, std::uint64_t> low_cost;
  for (const auto& g : rec.graphs) {
    if (process_of(g) == low->process) low_cost[own_identity(g, low->process)] += graph_cost(g);
  }
  std::vector<std::pair<std::int64_t, std::string>> costlier;
  std::vector<std::string> alone;
  for (const auto& g : rec.graphs) {
    if (process_of(g) != high->process) continue;
    const auto it = low_cost.find(own_identity(g, high->process));
    if (it == low_cost.end()) {
      alone.push_back(g.name);
    } else if (graph_cost(g) > it->second) {
      costlier.emplace_back(static_cast<std::int64_t>(graph_cost(g) - it->second), g.name);
    }
  }
  std::sort(costlier.begin(), costlier.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (!costlier.empty()) {
    std::string list;
    for (std::size_t k = 0; k < std::min<std::size_t>(costlier.size(), 3); ++k) {
      list += (k ? ", '" : "'") + costlier[k].second + "' " + signed_size_text(costlier[k].first);
    }
    why += "; graphs that cost more there: " + list +
           (costlier.size() > 3 ? " and " + std::to_string(costlier.size() - 3) + " more" : "");
  }
  if (!alone.empty()) why += "; graphs only it made: " + listed(alone, 3);
  append_lines(out, wrap(why, "  ", "    "));
  return out;
}

}  // namespace gmem::profiler
