#include "gmem/profiler/graph_alone.hpp"

#include <algorithm>
#include <utility>

#include "gmem/profiler/diagnostics.hpp"

namespace gmem::profiler {

graph_alone study_alone(flat_graph flat, const std::string& name, std::uint64_t granularity,
                        bool auto_free_on_launch, const std::vector<std::string>& streams,
                        const deadline& until) {
  graph_alone g;
  g.flat = std::move(flat);
  g.analysis = analyse(g.flat, granularity, until);
  g.shape = skeleton_of(g.flat, g.analysis, name, until);
  std::vector<std::size_t> held_nodes;
  for (std::size_t i : g.analysis.unfreed) held_nodes.push_back(g.analysis.allocations[i].alloc_node);
  std::sort(held_nodes.begin(), held_nodes.end());
  for (std::size_t v : held_nodes) {
    g.held_addresses.push_back(g.flat.nodes[v].address);
    g.held_requested_bytes += g.flat.nodes[v].bytes;
  }
  if (granularity > 0) {
    g.layout = pool_graph_of(g.shape, granularity, auto_free_on_launch, until);
    pool_model alone(granularity);
    const std::size_t k = alone.add(g.layout);
    alone.launch(k, 1);
    for (const pool_device_layout& d : g.layout.devices) {
      g.reserved_bytes += alone.reserved(d.device);
      g.used_bytes += alone.used(d.device);
    }
    g.held_granule_bytes = held_granule_bytes(g.layout, granularity);
  } else {
    g.reserved_bytes = g.used_bytes = predict_reuse(g.shape, 0, until).rounded_bytes;
    g.held_granule_bytes = g.held_requested_bytes;
  }
  g.summary = summarize(g.analysis, g.used_bytes, g.reserved_bytes);
  runtime_facts facts;
  facts.graph_name = name;
  facts.auto_free_on_launch = auto_free_on_launch;
  facts.held_granule_bytes = granularity > 0 ? g.held_granule_bytes : 0;
  for (const std::string& s : streams) facts.launches.emplace_back(name, s);
  facts.reserved_high = g.reserved_bytes;
  g.diagnostics = diagnose(g.flat, g.analysis, facts);
  return g;
}

}  // namespace gmem::profiler
