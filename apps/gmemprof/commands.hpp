#pragma once
// The commands of gmemprof as library functions: each writes to the given streams and returns
// the process exit code, so that they are tested without the command line.

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "gmem/profiler/compare.hpp"
#include "suite/runner.hpp"
#include "views/show.hpp"

namespace gmem::profiler {

/// `gmemprof check`: compares `current_path` against `baseline_path`, prints the table to `out`.
/// Returns 0 when everything passes, 1 on any regression, 2 on unusable input (missing file,
/// not JSON, wrong schema version, a different GPU model), with the reason on `err`.
int run_check(const std::string& baseline_path, const std::string& current_path,
              const tolerances& t, std::ostream& out, std::ostream& err, bool all = false,
              const std::string& format = "text");

/// `gmemprof show`: prints a report as text (views/show.hpp) or, with `format` "json", as
/// JSON for scripts. Returns 0, or 2 when the report is unusable or a --graph pattern matches
/// nothing (the reason on `err`).
int run_show(const std::string& path, const show_options& options, const std::string& format, std::ostream& out,
             std::ostream& err);

/// `gmemprof bench-summary`: the markdown summary of gmem_bench's JSON at `in_path`, printed to
/// `out`, or written atomically to `out_path` when it is not empty. Returns 0, or 2 when the
/// input is unusable or the output cannot be written (the reason on `err`).
int run_bench_summary(const std::string& in_path, const std::string& out_path, std::ostream& out,
                      std::ostream& err);

/// `gmemprof run`: checks that `out_path` can be written and the scenario names and device
/// are valid before anything runs, runs the suite (progress on `err`), writes the report
/// atomically and prints a summary on `out`. Returns 0 when every scenario is ok or skipped,
/// 1 when one ended in error (the report is still written), 2 on bad input.
int run_run(const run_options& options, const std::string& out_path,
            const std::string& command_line, std::ostream& out, std::ostream& err);

/// The arguments of one trial's process (argv[0] first): `gmemprof run SCENARIO... --set
/// NAME=VALUE... --device N --reps N --warmups N --trials 1 --out PATH`, so that each trial
/// measures what the parent was asked to (run_run runs it when trials > 1 in processes).
[[nodiscard]] std::vector<std::string> trial_arguments(const run_options& options,
                                                       const std::string& path);

/// `gmemprof html`: the report at `report_path` as one self-contained HTML page written
/// atomically to `out_path`, with the check against `baseline_path` and the mapping cost from
/// gmem_bench's JSON at `bench_path` when they are not empty. Returns 0, or 2 when an input is
/// unusable or the page cannot be written (the reason on `err`).
int run_html(const std::string& report_path, const std::string& baseline_path,
             const std::string& bench_path, const std::string& out_path, std::ostream& out,
             std::ostream& err);

/// What `gmemprof predict` is asked: the sample's path, the warm-up's sizes as text (empty: the
/// sample's capture order) and their order ("largest-first" or "as-given"), a JSON file to write.
struct predict_options {
  std::string sample_path;       ///< a sample, or a recording of the sampled captures
  std::string sampled_sizes;     ///< a recording's: the sizes it captured, in its order
  std::string sizes;
  std::string order = "largest-first";
  std::string json_path;
  std::string format = "text";
  std::size_t graphs = 5;  ///< the costliest graphs the text lists
};

/// `gmemprof predict`: the predicted bill of a warm-up (gmem/profiler/predict.hpp) from a sample
/// gmem.predict.sample wrote. Returns 0, or 2 on unusable input (the reason on `err`).
int run_predict(const predict_options& options, std::ostream& out, std::ostream& err);

/// `gmemprof trace`: the report as Chrome trace / Perfetto JSON, written atomically to
/// `out_path`. Returns 0, or 2 when the report is unusable or the file cannot be written.
int run_trace(const std::string& report_path, const std::string& out_path, std::ostream& out,
              std::ostream& err);

/// `gmemprof replay`: replays each skeleton of the report at `path` (only the graph named `graph`
/// when not empty) on `device`, with the candidate changes, and prints the advice whose saving
/// was measured there. Returns 0, or 2 when the report is unusable or has no such skeleton.
int run_replay(const std::string& path, const std::string& graph, int device, std::ostream& out,
               std::ostream& err);

/// `gmemprof replay REPORT --set`: replays a recording's graphs together (profile_set.hpp) and
/// prints the set's footprint against the recorded one and the what-ifs that saved a granule.
/// Returns 0, or 2 for a report without a recording (naming what to do).
int run_replay_set(const std::string& path, int device, std::ostream& out, std::ostream& err);

}  // namespace gmem::profiler
