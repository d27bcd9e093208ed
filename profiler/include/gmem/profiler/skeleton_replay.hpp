#pragma once
// Skeleton replay: a graph of memory nodes and empty nodes only, built on the driver in the
// skeleton's creation order (dependencies at creation, late edges added afterwards with
// cudaGraphAddDependencies), instantiated and launched once. No user kernel runs, so it is safe
// for any graph, recorded or hypothetical. And advice measured that way: each candidate change
// of reuse_model.hpp replayed, printed only with the saving the driver gave.

#include <cstdint>
#include <string>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/report.hpp"
#include "gmem/profiler/reuse_model.hpp"

namespace gmem::profiler {

struct replay_result {
  std::uint64_t reserved_bytes = 0;  ///< reserved high during the launch, above what was reserved before
  std::uint64_t used_bytes = 0;      ///< used high, likewise
  double first_launch_ms = 0;        ///< launch to completion: the driver maps the memory here
  std::uint64_t reserved_after_destroy = 0;  ///< reserved current after the graph is destroyed
  std::uint64_t reserved_after_trim = 0;     ///< after cudaDeviceGraphMemTrim
  std::size_t distinct_addresses = 0;        ///< among the alloc nodes, as the driver returned them
  std::size_t unfreed_allocations = 0;       ///< alloc nodes the skeleton does not free
};

struct replay_options {
  bool auto_free_on_launch = false;  ///< instantiate with cudaGraphInstantiateFlagAutoFreeOnLaunch
  int launches = 1;                  ///< launches before the counters are read
};

/// Builds `s` on `device`, launches it (options.launches times), frees what it left allocated,
/// destroys it and trims the pool. Throws cuda_error naming the skeleton and the node the driver
/// refused, and std::invalid_argument when `s` is not valid (validate()).
[[nodiscard]] replay_result replay(const skeleton& s, int device, const replay_options& options = {});

/// Builds every skeleton on `device`, launches them into one stream in this order and returns
/// the reservation that took (above what was reserved before, from a trimmed pool).
[[nodiscard]] std::uint64_t replay_in_one_stream(const std::vector<skeleton>& graphs, int device);

/// One change measured on the driver: the report's measured_change (report.hpp), which
/// profiling stores as it is.
using measured_advice = measured_change;

struct advice_report {
  std::string graph;
  reuse_bounds bounds;
  std::uint64_t baseline_bytes = 0;  ///< the skeleton as recorded, replayed
  double baseline_first_launch_ms = 0;
  /// Changes that saved at least min_saving on the driver, largest saving first.
  std::vector<measured_advice> advice;
  /// The combined set (reuse_model.hpp), measured as a whole, even when it saves nothing.
  measured_advice combined;
  bool combined_reaches_order_free_bound = false;  ///< its measured bytes <= bounds.order_free_bytes
  /// Candidates measured that saved less than min_saving: not advice, shown as tried.
  std::vector<measured_advice> tried;
};

/// What prices a change in launch time: the graph flattened (skeleton node v is
/// flat node v) and its nodes' GPU durations (measure_node_durations, placed by flat_durations).
struct advice_pricing {
  flat_graph flat;
  std::vector<double> duration_us;
  double critical_path_us = 0;  ///< critical_path_us(flat, duration_us)
};

/// Replays `s` and each candidate change on `device`, and the plan (plan_changes); keeps the advice whose measured saving is
/// at least `min_saving` (one reservation granule is the honest minimum: less is noise of the
/// rounding). With `untrimmed` (the program destroys the graph and does not trim), adds "trim"
/// when the replay kept at least min_saving reserved after the graph was destroyed. A skeleton
/// that leaves allocations unfreed is also replayed with AutoFreeOnLaunch, launched twice
/// ("auto_free_on_launch"). Throws as replay does.
/// With `pricing`, each change that adds dependencies (plan, add_dependency) gets its predicted
/// launch time and price (measured_change::predicted_launch_us, predicted_price_us).
[[nodiscard]] advice_report measure_advice(const skeleton& s, const graph_analysis& a,
                                           std::uint64_t granularity, std::uint64_t min_saving,
                                           int device, bool untrimmed = false,
                                           const advice_pricing* pricing = nullptr);

/// Graphs a program launched into several streams (`streams[i]` names graph i's), in their
/// launch order: the "one_stream" change, the graphs replayed in one stream, its saving against
/// `reserved_as_launched` (the footprint measured with the program's own kernels: a replay
/// without them cannot reproduce how the launches overlapped). predicted_bytes is the largest
/// graph's prediction (graphs in one stream share memory: measured, README).
[[nodiscard]] measured_advice measure_one_stream(const std::vector<skeleton>& graphs,
                                                 const std::vector<std::string>& streams,
                                                 std::uint64_t reserved_as_launched,
                                                 std::uint64_t granularity, int device);

/// The advice in words, one line each: "saves X measured (predicted Y): where".
[[nodiscard]] std::string describe(const advice_report& r);

}  // namespace gmem::profiler
