#pragma once
// `gmemprof predict` as text: the predicted bill of a warm-up by kind, linear extrapolation beside
// it, and the allocator model against the sample it came from.

#include <string>

#include "gmem/profiler/predict.hpp"

namespace gmem::profiler {

[[nodiscard]] std::string format_prediction(const warmup_prediction& p, const predict_sample& sample);

}  // namespace gmem::profiler
