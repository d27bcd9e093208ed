#pragma once
// The pool of a recording: what each graph added to its device's graph memory pool, what the
// whole set cost, and why. Plain C++ (no CUDA): the measured counters of the recording and the
// pool model (pool_model.hpp) over its call sequence.

#include <cstdint>
#include <vector>

#include "gmem/profiler/parallel_for.hpp"
#include "gmem/profiler/recording.hpp"
#include "gmem/profiler/skeleton.hpp"

namespace gmem::profiler {

/// Fills a recording's pool figures. Per event, `growth_bytes`: the measured growth of the
/// device's reservation inside the call (after minus before); where another thread's call
/// overlapped the window (`concurrent`), the group's measured growth split in proportion to
/// what the pool model says each call grew it by, no call above its graph's own footprint where
/// the others have room. Per graph: the sum of its events' growth and its held bytes. Per device
/// (`rec.pools`): the measured high watermark, the call that reached it, the pool model's
/// reservation there and what was mapped, by graph and why (sums to model_high_bytes), the pool
/// timeline and diagnostics about the set: small held allocations that each take whole granules,
/// launches in other streams that could not share, relaunches that had to map again because
/// another graph held their memory. `skeletons[i]` is graph i's (none for private_pool graphs:
/// empty). Throws std::invalid_argument when granularity is 0. `each`, where given, lays out the
/// graphs in the pool (each alone: its reuse prediction) on its threads; the figures are the same.
void analyse_pools(recording& rec, const std::vector<skeleton>& skeletons, std::uint64_t granularity,
                   const for_each_index& each = {});

}  // namespace gmem::profiler
