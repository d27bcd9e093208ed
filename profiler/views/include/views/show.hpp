#pragma once
// The human view of a report, for `gmemprof show` and record's summary. Plain C++ (no CUDA; the
// JSON form lives in show_json.cpp).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

/// What `gmemprof show` prints of a report.
struct show_options {
  /// Graphs of a recording listed by what they cost in the first answer (--top).
  std::size_t top = 10;
  /// --graph: names or shell globs ("decode bs=1*"); when given, only these graphs' (or
  /// scenarios') detail is printed.
  std::vector<std::string> graphs;
  /// --all: after the first answer, every graph's detail and the pools' (mapping events).
  bool all = false;
  /// The report's path, for the commands the view suggests ("" leaves them out).
  std::string source;
};

/// The report as text. A suite report: its environment, then one block per scenario (key,
/// status, memory, ratios, launch costs in microseconds, diagnostics). A recording: first the
/// answer (the bill, the top graphs by what they cost the pool, why the pool reached its high
/// watermark, the diagnostics by kind), in at most 40 lines whatever the number of graphs; then,
/// for a recording of at most `top` graphs or with `all`, the environment, every graph's block
/// and each pool's detail. With `graphs`, only the selected graphs' blocks. No line is longer
/// than text_width (views/text_layout.hpp) save a table row of long figures. Throws
/// std::invalid_argument naming a --graph pattern that matches nothing.
[[nodiscard]] std::string format_report(const report& r, const show_options& o = {});

/// The same as JSON, for scripts (`--format json`): exact bytes and microseconds, the graphs
/// ranked (top `o.top`, or every one with `o.all`, or those `o.graphs` selects), the rest
/// counted. Throws std::invalid_argument as format_report does.
[[nodiscard]] std::string show_json(const report& r, const show_options& o = {});

/// What a recorded graph costs the device: the pool growth its calls caused (a private-pool
/// graph: what its capture took from the device; a graph made again and again: its costliest
/// instance's growth), plus its executable-graph state where that was measured.
[[nodiscard]] std::uint64_t graph_cost(const recorded_graph& g);

/// A recording's graphs by cost, highest first, ties in natural name order: indexes into
/// rec.graphs.
[[nodiscard]] std::vector<std::size_t> graphs_by_cost(const recording& rec);

/// The indexes of the items whose name (or key) matches one of `patterns` (exact, or a shell
/// glob), in their order. Throws std::invalid_argument naming the first pattern that matches
/// none, with a few of the names there are.
[[nodiscard]] std::vector<std::size_t> select_names(const std::vector<std::string>& names,
                                                    const std::vector<std::string>& patterns,
                                                    const char* what);

/// What recording cost the program, in one line: the library's time in the program's CUDA calls
/// (all processes), its largest parts per call, the Python companion's time; "" when the
/// recording says nothing of it.
[[nodiscard]] std::string cost_line(const recording& rec);

/// The first answer for a recording, as lines (record's summary prints them on stderr).
[[nodiscard]] std::vector<std::string> recording_overview(const report& r, const show_options& o);

}  // namespace gmem::profiler
