#pragma once
// The prediction's files: the sample gmem.predict.sample writes (format "gmem.predict.sample",
// version 1) or a recording of the sampled captures read into the model's input, and the
// prediction as JSON (format "gmem.predict").

#include <cstdint>
#include <string>
#include <vector>

#include "gmem/profiler/predict.hpp"
#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

/// Reads a sample file. Throws report_error naming the file and what is wrong with it.
[[nodiscard]] predict_sample read_predict_sample(const std::string& path);

/// Reads what `gmemprof predict` predicts from: a sample file, or a recording (a `gmemprof
/// record` report of a program that captured the sampled sizes, `sampled_sizes` in its capture
/// order; see sample_from_recording). Throws report_error naming the file and what to do.
[[nodiscard]] predict_sample read_predict_input(const std::string& path, const std::vector<std::int64_t>& sampled_sizes);

/// A sample from a recording's graphs with memory nodes, in the order they were instantiated,
/// split evenly among `sampled_sizes` (the sizes captured, in that order): each graph's growth
/// of the memory-node pool, the executable-graph state its instantiation read (one reading, in
/// the driver's 2 MiB pieces), and what libraries took outside the pools while it was captured.
/// A recording holds no allocator calls: graphs that took their memory from the application's
/// allocator (PyTorch's caching allocator) are refused, as are several processes' graphs.
/// Throws std::invalid_argument saying what is wrong and what to do.
[[nodiscard]] predict_sample sample_from_recording(const report& r, const std::vector<std::int64_t>& sampled_sizes);
/// The same from JSON text; `source` names it in errors.
[[nodiscard]] predict_sample predict_sample_from_json(const std::string& text, const std::string& source);

/// Batch sizes from text: "1,2,4", "1-512", "8-512:8" (from 8 to 512 by 8), or a mix
/// ("1,2,4,8-512:8"). Throws std::invalid_argument saying which part is not a size.
[[nodiscard]] std::vector<std::int64_t> parse_batch_sizes(const std::string& text);

/// The prediction as JSON text, with the sample's description.
[[nodiscard]] std::string prediction_json(const warmup_prediction& p, const predict_sample& sample);

}  // namespace gmem::profiler
