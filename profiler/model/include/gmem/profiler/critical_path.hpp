#pragma once
// The price of an ordering change in launch time: a graph's nodes weighted by the
// durations measured on the real graph, and the longest path through them, with and without
// the edges a change adds. Plain C++ (no CUDA): measure/node_durations measures the weights.

#include <cstddef>
#include <utility>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/graph_model.hpp"

namespace gmem::profiler {

/// The longest path through `flat`, each node weighing duration_us[v] (missing entries weigh
/// 0), with `added` edges (from, to) besides the graph's own: the launch's duration when every
/// ready branch runs at once. A prediction, so labelled wherever it is shown: branches that
/// share the GPU's SMs run slower than alone. Linear in nodes and edges. Throws
/// std::invalid_argument naming the edge when `added` names a node that does not exist or closes
/// a cycle.
[[nodiscard]] double critical_path_us(const flat_graph& flat, const std::vector<double>& duration_us,
                                      const std::vector<std::pair<std::size_t, std::size_t>>& added = {});

/// Durations of a graph's own nodes (in g.nodes order) placed at their indices in flatten(g),
/// which inlines each child graph right after its node: the weights critical_path_us takes.
/// Nodes inside child graphs weigh 0. Missing entries of top_level_us weigh 0.
[[nodiscard]] std::vector<double> flat_durations(const graph_model& g,
                                                 const std::vector<double>& top_level_us);

/// What a change costs in launch time, predicted: the critical path before and after.
struct time_price {
  double before_us = 0;
  double after_us = 0;
  [[nodiscard]] double price_us() const noexcept { return after_us - before_us; }
};

[[nodiscard]] time_price price_of(const flat_graph& flat, const std::vector<double>& duration_us,
                                  const std::vector<std::pair<std::size_t, std::size_t>>& added);

}  // namespace gmem::profiler
