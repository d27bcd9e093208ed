// `gmemprof predict`: the bill of a whole warm-up from a sample (or a recording) of a few captured sizes.

#include <algorithm>
#include <functional>
#include <ostream>

#include "gmemprof/commands.hpp"
#include "gmem/profiler/predict_io.hpp"
#include "gmem/profiler/report_io.hpp"
#include "views/predict_view.hpp"

namespace gmem::profiler {

int run_predict(const predict_options& options, std::ostream& out, std::ostream& err) {
  try {
    if (!options.json_path.empty()) check_writable(options.json_path);
    const predict_sample sample = read_predict_input(
        options.sample_path, options.sampled_sizes.empty() ? std::vector<std::int64_t>{} : parse_batch_sizes(options.sampled_sizes));
    std::vector<std::int64_t> order;
    if (!options.sizes.empty()) {
      order = parse_batch_sizes(options.sizes);
      if (options.order == "largest-first") std::sort(order.begin(), order.end(), std::greater<>());
      else if (options.order != "as-given") {
        throw std::invalid_argument("--order is largest-first or as-given, not '" + options.order + "'");
      }
    } else if (!sample.capture_order.empty()) {
      order = sample.capture_order;
    } else {
      for (const sampled_size& s : sample.sizes) order.push_back(s.size);
    }
    const warmup_prediction p = predict_warmup(sample, order);
    const std::string json = options.format == "json" || !options.json_path.empty() ? prediction_json(p, sample) : "";
    out << (options.format == "json" ? json : format_prediction(p, sample, options.graphs));
    if (!options.json_path.empty()) {
      write_text_atomically(json, options.json_path);
      if (options.format != "json") out << "wrote " << options.json_path << "\n";
    }
    return 0;
  } catch (const report_error& e) {
    err << "gmemprof predict: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    err << "gmemprof predict: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace gmem::profiler
