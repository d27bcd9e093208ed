#pragma once
// `gmemprof predict` as text: the predicted bill of a warm-up by kind, linear extrapolation beside
// it, the costliest graphs, and the allocator model against the sample it came from.

#include <string>

#include "gmem/profiler/predict.hpp"

namespace gmem::profiler {

/// `listed_graphs`: how many graphs to list, costliest first (all of them in capture order where it is
/// at least their number).
[[nodiscard]] std::string format_prediction(const warmup_prediction& p, const predict_sample& sample,
                                            std::size_t listed_graphs = 5);

}  // namespace gmem::profiler
