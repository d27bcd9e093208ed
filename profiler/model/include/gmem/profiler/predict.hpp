#pragma once
// The bill of a whole CUDA graph warm-up (every batch size an engine captures, in its order,
// into one shared graph pool of PyTorch's caching allocator), predicted from a few captured
// sizes. Plain C++, no CUDA: its input is what gmem.predict.sample read in the engine's process.
//
// Graphs of one engine differ across batch sizes in their sizes, not their structure. Each
// sampled size is the allocator's calls its captures made in the pool, in order: allocations,
// and frees of blocks that size made or an earlier size made. A size not sampled takes the
// calls of the nearest sampled size (a later one's where it is not the first in the order, for
// its frees of the earlier size's blocks), each allocation's bytes interpolated linearly in the
// batch size between the two nearest sampled sizes with the same calls (exact for activations,
// whose bytes are linear in it). The calls of every size, in the capture order, go through
// caching_pool_model: the pool's size after each size. The executable graphs' own state is the
// sample's per graph (copies of each sampled graph instantiated and read) times the graphs of each
// size. What captures take outside the pools is the sample's net (one-time: library workspaces
// and the cache of the eager runs before each capture, less what the cache emptied before later
// captures released), and for each size not sampled the mean of the sampled sizes after the
// second where the readings resolve it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gmem::profiler {

/// One call of the allocator in the graph pool, as the sample read it.
struct sampled_call {
  enum class kind { alloc, free, segment };
  kind what = kind::alloc;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;  ///< alloc and segment
  std::uint64_t stream = 0;  ///< alloc: the stream it was made for (a capture's side stream has its own blocks)
};

/// One graph of a sampled size, as the sample read it at the end of its capture.
struct sampled_graph {
  std::size_t calls = 0;                     ///< the size's calls made by then
  std::int64_t node_pool_change = 0;         ///< the memory-node pool's reservation, its change over the capture
  std::optional<double> exec_state_bytes;    ///< the state of one instantiation of it
};

struct sampled_size {
  std::int64_t size = 0;
  std::uint64_t graphs = 0;
  std::vector<sampled_graph> each_graph;     ///< in capture order, where the sample read each graph
  std::vector<sampled_call> calls;
  std::uint64_t pool_bytes_after = 0;        ///< the graph pools' segments after this size (PyTorch's)
  std::int64_t used_change = 0;              ///< the device memory in use, its change over the capture
  std::int64_t node_pool_change = 0;         ///< the memory-node pool's reservation, its change
  std::optional<double> exec_state_bytes;    ///< the state of one instantiation of its graphs
};

struct predict_sample {
  std::string device, torch, allocator;
  /// "sample" (gmem.predict.sample) or "recording" (a gmemprof record report of the sampled
  /// captures: graphs with memory nodes only, no allocator calls, one reading of each graph's state)
  std::string source = "sample";
  std::vector<std::string> notes;            ///< what reading it said about itself, for the prediction's notes
  std::uint64_t copies = 0;                  ///< copies instantiated to read the executable-graph state
  std::uint64_t pool_bytes_before = 0;
  std::vector<sampled_size> sizes;           ///< in the order they were captured
  std::vector<std::int64_t> capture_order;   ///< the engine's, when the sample says
};

struct predicted_size {
  std::int64_t size = 0;
  std::int64_t calls_from = 0;               ///< the sampled size whose calls it takes
  bool sampled = false;
  std::uint64_t graphs = 0;
  std::uint64_t pool_bytes_after = 0;
  std::uint64_t pool_growth = 0;
  double exec_state_bytes = 0;
  std::int64_t outside_bytes = 0;
  std::int64_t node_pool_bytes = 0;
};

/// One graph of the warm-up: its position among its size's graphs, and what it costs of the
/// kinds that belong to graphs. Its size's figures split: the graph pool's growth as the model
/// replays its calls; the executable-graph state and the memory-node pool's reservation in the
/// proportions the sampled size it takes its calls from read for its graphs. What captures take
/// outside the pools is its size's, not a graph's.
struct predicted_graph {
  std::int64_t size = 0;
  std::size_t index = 0;
  std::uint64_t pool_growth = 0;
  double exec_state_bytes = 0;
  std::int64_t node_pool_bytes = 0;
};

/// One kind of the bill: predicted, and how far it may be off (what the prediction measured of
/// itself: the allocator model against the sample, the fit without each sampled size, the
/// executable-graph state's reading).
struct predicted_kind {
  std::string kind;
  std::int64_t bytes = 0;
  std::uint64_t uncertainty_bytes = 0;
};

/// The allocator model on the sample's own calls: the pool it simulates after each sampled size
/// against the pool PyTorch listed.
struct model_check {
  std::int64_t size = 0;
  std::uint64_t simulated_bytes = 0;
  std::uint64_t measured_bytes = 0;
};

struct warmup_prediction {
  std::vector<std::int64_t> order;
  std::vector<predicted_size> sizes;
  std::vector<predicted_graph> graphs;       ///< every size's, in capture order; empty where the sample read no graph apart
  std::vector<predicted_kind> kinds;         ///< framework_pool, exec_state, outside, node_pool
  predicted_kind total;
  /// Linear extrapolation from two sizes (what engines do): the device memory the largest and
  /// the smallest sampled size took, a line through them, summed over every size of the order.
  std::int64_t linear_bytes = 0;
  std::int64_t linear_from_large = 0, linear_from_small = 0;
  std::vector<model_check> checks;
  std::vector<std::string> notes;
};

/// Throws std::invalid_argument naming what is wrong (no sampled size, an empty order).
warmup_prediction predict_warmup(const predict_sample& sample, const std::vector<std::int64_t>& order);

}  // namespace gmem::profiler
