#pragma once
// Registration of gmem's benchmark families (called from main once the device is known).

#include <cstdint>
#include <utility>
#include <vector>

namespace gmem::bench {

/// Graph memory phases for each (bytes per allocation, allocations per graph).
void register_graph_benchmarks(const std::vector<std::pair<std::uint64_t, int>>& shapes);

/// The alternatives at each size: the VMM floor, stream-ordered pool allocation, a graph over
/// memory allocated ahead.
void register_alternative_benchmarks(const std::vector<std::uint64_t>& sizes);
/// floor/map_fresh: the virtual memory floor on memory the process never mapped; register
/// before every other benchmark (it must run first).
void register_fresh_floor_benchmarks(const std::vector<std::uint64_t>& sizes);

/// What gmem itself costs: building and instantiating 1000 memory nodes through gmem versus
/// raw CUDA calls; reading the counters; a launch loop with and without the sampler.
void register_overhead_benchmarks();

/// Where profile_graph's time goes on a 1000-allocation graph, independent and chained.
void register_profile_time_benchmarks();

/// Moving an executable graph with memory nodes to another graph of its shape: updated
/// (gmem, raw) or instantiated anew (gmem, raw), for each (bytes per allocation, allocations).
void register_update_benchmarks(const std::vector<std::pair<std::uint64_t, int>>& shapes);

/// The plan's price in launch time: predicted by profile_graph, and the planned graph launched.
void register_advice_price_benchmarks();

}  // namespace gmem::bench
