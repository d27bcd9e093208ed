#pragma once
// The prediction's files: the sample gmem.predict.sample writes (format "gmem.predict.sample",
// version 1) read into the model's input, and the prediction as JSON (format "gmem.predict").

#include <cstdint>
#include <string>
#include <vector>

#include "gmem/profiler/predict.hpp"

namespace gmem::profiler {

/// Reads a sample file. Throws report_error naming the file and what is wrong with it.
[[nodiscard]] predict_sample read_predict_sample(const std::string& path);
/// The same from JSON text; `source` names it in errors.
[[nodiscard]] predict_sample predict_sample_from_json(const std::string& text, const std::string& source);

/// Batch sizes from text: "1,2,4", "1-512", "8-512:8" (from 8 to 512 by 8), or a mix
/// ("1,2,4,8-512:8"). Throws std::invalid_argument saying which part is not a size.
[[nodiscard]] std::vector<std::int64_t> parse_batch_sizes(const std::string& text);

/// The prediction as JSON text, with the sample's description.
[[nodiscard]] std::string prediction_json(const warmup_prediction& p, const predict_sample& sample);

}  // namespace gmem::profiler
