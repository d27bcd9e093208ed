// The views' groupings of many graphs: the high watermark's composition as a few segments a
// reader can see, and the costliest graphs with the rest counted by cause. A recording of 2000
// graphs drew 2000 one-pixel segments and 2000 bars; these keep a view's size and its reading
// independent of the number of graphs.

#include <algorithm>
#include <map>

#include "views/show.hpp"
#include "views/text_layout.hpp"
#include "views/views.hpp"

namespace gmem::profiler {
namespace {

using share = recorded_pool::share;

bool reached_high(const recorded_pool& p, const share& s) {
  return !p.high_graph.empty() && s.graph == p.high_graph && s.why == "working_set";
}

// The shares with bytes, largest first, ties in natural name order (as show lists them).
std::vector<const share*> by_size(const recorded_pool& p) {
  std::vector<const share*> order;
  for (const auto& s : p.attribution) {
    if (s.bytes > 0) order.push_back(&s);
  }
  std::stable_sort(order.begin(), order.end(), [](const share* a, const share* b) {
    if (a->bytes != b->bytes) return a->bytes > b->bytes;
    return natural_less(a->graph, b->graph);
  });
  return order;
}

}  // namespace

std::vector<attribution_segment> attribution_segments(const recorded_pool& p, std::size_t top,
                                                      double min_fraction) {
  const std::vector<const share*> order = by_size(p);
  std::uint64_t total = 0;
  for (const share* s : order) total += s->bytes;
  std::vector<attribution_segment> single;
  std::map<std::string, attribution_segment> grouped;  // by cause
  for (const share* s : order) {
    const bool reacher = reached_high(p, *s);
    // A share too small to see joins its cause's group, unless it names who reached the high:
    // the bar must show the graph the summary line names.
    const bool large = static_cast<double>(s->bytes) >= min_fraction * static_cast<double>(total);
    if (reacher || (single.size() < top && large)) {
      single.push_back({s->graph, s->why, s->bytes, 1, reacher});
      continue;
    }
    auto [at, fresh] = grouped.try_emplace(s->why, attribution_segment{s->graph, s->why, 0, 0, false});
    at->second.bytes += s->bytes;
    at->second.shares += 1;
    if (!fresh) at->second.graph.clear();  // a group of one share is that share: it keeps its name
  }
  std::vector<attribution_segment> groups;
  for (auto& entry : grouped) groups.push_back(entry.second);
  std::stable_sort(groups.begin(), groups.end(),
                   [](const attribution_segment& a, const attribution_segment& b) { return a.bytes > b.bytes; });
  single.insert(single.end(), groups.begin(), groups.end());
  return single;
}

std::string growth_cause(const recorded_graph& g) {
  if (g.kind == "private_pool") return "capture";
  if (g.growth_bytes == 0) return "none";
  if (g.growth_bytes <= g.held_granule_bytes) return "held_outputs";
  return "working_set";
}

graph_selection select_graphs(const recording& rec, std::size_t top) {
  const std::vector<std::size_t> order = graphs_by_cost(rec);
  graph_selection out;
  std::map<std::string, graph_group> groups;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const recorded_graph& g = rec.graphs[order[k]];
    if (k < top) {
      out.top.push_back(order[k]);
      continue;
    }
    graph_group& group = groups[growth_cause(g)];
    group.cause = growth_cause(g);
    group.graphs += 1;
    group.cost += graph_cost(g);
    group.growth_bytes += g.kind == "private_pool" ? g.capture_pool_growth_bytes : g.growth_bytes;
    group.largest_alone_bytes = std::max(group.largest_alone_bytes, g.own_footprint_bytes);
  }
  for (auto& [cause, group] : groups) out.others.push_back(group);
  std::stable_sort(out.others.begin(), out.others.end(),
                   [](const graph_group& a, const graph_group& b) { return a.cost > b.cost; });
  return out;
}

}  // namespace gmem::profiler
