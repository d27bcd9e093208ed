#pragma once
// The report as pictures: a self-contained HTML page (`gmemprof html`) and a Chrome trace /
// Perfetto JSON file (`gmemprof trace`). Plain C++ (no CUDA); JSON stays in the .cpp files.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gmem/profiler/compare.hpp"
#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

/// One segment of the bar of what was mapped at a pool's high watermark: one graph's share, or
/// the shares of several graphs of one cause grouped ("1999 others: outputs held").
struct attribution_segment {
  std::string graph;            ///< the graph's name; empty for a group and for a share of no graph
  std::string why;              ///< the attribution's cause ("working_set", "held_outputs", ...)
  std::uint64_t bytes = 0;
  std::size_t shares = 1;       ///< how many of the attribution's shares it stands for
  bool reached_high = false;    ///< the working set of the graph whose call reached the high
};

/// `p`'s attribution as a bar a reader can read: the largest shares (ties in natural name order)
/// of at least `min_fraction` of the whole each, `top` at most, and the working set of the graph
/// that reached the high watermark (p.high_graph) however small, each a segment of its own,
/// largest first; then the other shares, one segment per cause, the largest first. Shares of 0
/// bytes are left out; the segments' bytes sum to the attribution's. Throws nothing but
/// std::bad_alloc.
[[nodiscard]] std::vector<attribution_segment> attribution_segments(const recorded_pool& p, std::size_t top,
                                                                    double min_fraction);

/// Recorded graphs past the top ones, counted by what their pool growth was for.
struct graph_group {
  std::string cause;  ///< growth_cause() of its graphs
  std::size_t graphs = 0;
  std::uint64_t cost = 0;                 ///< graph_cost() summed
  std::uint64_t growth_bytes = 0;         ///< pool growth summed (a private pool's: its captures')
  std::uint64_t largest_alone_bytes = 0;  ///< the largest own_footprint_bytes among them
};

/// What a recorded graph's pool growth was for: "capture" (a private-pool graph: what its capture
/// took), "none" (it fitted in what others had mapped), "held_outputs" (no more than the granules
/// its held outputs pin between launches), else "working_set".
[[nodiscard]] std::string growth_cause(const recorded_graph& g);

/// Which graphs of a recording a view draws, and the rest counted.
struct graph_selection {
  std::vector<std::size_t> top;     ///< indexes into recording::graphs, costliest first
  std::vector<graph_group> others;  ///< the rest by cause, the costliest group first
};

/// The `top` costliest graphs of a recording (graphs_by_cost, as `gmemprof show` lists them) and
/// the rest in groups by growth_cause(). Throws nothing but std::bad_alloc.
[[nodiscard]] graph_selection select_graphs(const recording& rec, std::size_t top);

/// The report as Chrome trace event JSON ({"traceEvents": [...]}), for ui.perfetto.dev or
/// chrome://tracing: one track ("thread") per scenario under one "process" per device, the four
/// counters as counter tracks.
/// A recording has one clock, its own: per graph a slice per recorded call at the time the
/// program made it (as long as its host time; concurrent calls say so in name and args), the
/// counters after each call that read them, and the medians of its calls as the args of a
/// "launch medians" instant at its first call (annotations, not times); per pool a process
/// (pid 1000 + device) with the reservation as a counter track ("pool reserved"), an instant per
/// mapping event and one at the high watermark. A suite report holds medians, not timestamps:
/// its scenarios are laid out one after another, each phase as long as its wall median (1 us
/// when not timed), its launch (host median) inside it, counters at each phase's end. Throws
/// nothing but std::bad_alloc.
[[nodiscard]] std::string trace_json(const report& r);

/// Inputs of the HTML view besides the report.
struct html_inputs {
  std::optional<comparison> check;  ///< the check against a baseline, when one was given
  std::string baseline_name;        ///< what the baseline is called on the page
  std::string bench_json;           ///< gmem_bench's JSON text, empty when none
  std::string bench_name;           ///< the bench file's name
  std::string report_path;          ///< the report as the user named it, for the commands the page suggests
};

/// One self-contained HTML page (inline CSS, JS and SVG; nothing loaded from the network):
/// per scenario requested vs lower bound vs reserved (linear), the counters across phases,
/// launch costs, mapping cost against size from the bench JSON, the check's verdicts coloured
/// (regressions first, at most 100 rows); for a recording, per device the pool's reservation over
/// time with its high watermark, concurrent calls marked, and the attribution at it as a bar of
/// attribution_segments() with a table naming each; the growth each graph caused; per-graph
/// detail for the 10 costliest graphs only, the others counted by growth_cause(), so that the
/// page grows with the pool's timeline, not with the graphs' detail (2000 graphs: under 2 MB).
/// Labels are placed by their measured width and dropped where they would overlap. The page
/// counts what it drew, the overlapping and clipped labels it measured, and its formatter's
/// agreement with size_text into <pre id="gmem-selfcheck"> (JSON) for the browser test.
/// Throws report_error(not_json, invalid) when bench_json is given and is not gmem_bench JSON.
[[nodiscard]] std::string html_page(const report& r, const html_inputs& in);

}  // namespace gmem::profiler
