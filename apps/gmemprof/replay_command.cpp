// `gmemprof replay`: re-measures the skeletons a report carries on this machine's GPU, and the
// candidate changes, printing advice only with the saving measured here.
#include <ostream>
#include <stdexcept>
#include <string>

#include "gmemprof/commands.hpp"
#include "gmem/capability.hpp"
#include "gmem/error.hpp"
#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/environment.hpp"
#include "gmem/profiler/profile_set.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gmem/profiler/reuse_model.hpp"
#include "gmem/profiler/skeleton_replay.hpp"
#include "gmem/profiler/size_text.hpp"

namespace gmem::profiler {

int run_replay(const std::string& path, const std::string& graph, int device, std::ostream& out,
               std::ostream& err) {
  report r;
  try {
    r = read_report(path);
  } catch (const report_error& e) {
    err << "gmemprof replay: " << e.what() << "\n";
    return 2;
  }
  std::size_t found = 0;
  for (const auto& sc : r.scenarios) {
    for (const auto& sk : sc.skeletons) {
      if (!graph.empty() && sk.name != graph) continue;
      ++found;
    }
  }
  if (found == 0) {
    err << "gmemprof replay: report '" << path << "' has "
        << (graph.empty() ? std::string("no skeletons (reports written by gmem::profiler::profile_graph carry them)")
                          : "no skeleton of a graph named '" + graph + "'; `gmemprof show` lists its scenarios")
        << "\n";
    return 2;
  }
  if (const auto why = gpu_unavailable_reason()) {
    err << "gmemprof replay: " << *why << "; replay measures on a GPU\n";
    return 3;
  }
  const std::uint64_t granularity = measure_granularity(device).bytes;
  out << "replaying on device " << device << " (reservation granularity "
      << size_text(granularity) << "), report '" << path << "' measured on "
      << r.env.device_name << "\n";
  for (const auto& sc : r.scenarios) {
    for (const auto& sk : sc.skeletons) {
      if (!graph.empty() && sk.name != graph) continue;
      const graph_analysis a = analyse(flat_of(sk), granularity);
      const advice_report adv = measure_advice(sk, a, granularity, granularity, device);
      out << "scenario '" << sc.name << "' " << describe(adv);
    }
  }
  return 0;
}

int run_replay_set(const std::string& path, int device, std::ostream& out, std::ostream& err) {
  report r;
  try {
    r = read_report(path);
  } catch (const report_error& e) {
    err << "gmemprof replay: " << e.what() << "\n";
    return 2;
  }
  if (const auto why = gpu_unavailable_reason()) {  // before replay_set, which measures on it
    err << "gmemprof replay: " << *why << "; replay measures on a GPU\n";
    return 3;
  }
  set_replay_result s;
  try {
    s = replay_set(r, device);
  } catch (const std::invalid_argument& e) {
    err << "gmemprof replay: report '" << path << "': " << e.what() << "\n";
    return 2;
  }
  const recording& rec = *r.recorded;
  const std::uint64_t granule = measure_granularity(device).bytes;
  const std::uint64_t diff = s.high_bytes > s.recorded_high_bytes ? s.high_bytes - s.recorded_high_bytes
                                                                   : s.recorded_high_bytes - s.high_bytes;
  out << "replayed the set of " << s.growth_bytes.size() << " graph(s) of '" << path << "' (recorded on "
      << r.env.device_name << ") on device " << device << ", " << s.calls << " call(s), each complete "
      << "before the next\n";
  out << "  high watermark: " << size_text(s.high_bytes) << " replayed, "
      << size_text(s.recorded_high_bytes) << " recorded ("
      << (diff < granule ? "within a granule" : "differs by " + size_text(diff)) << ")\n";
  std::size_t k = 0;
  for (std::size_t i = 0; i < rec.graphs.size() && k < s.growth_bytes.size(); ++i) {
    if (rec.graphs[i].kind != "memory_nodes" || i >= r.scenarios.size() || r.scenarios[i].skeletons.empty()) continue;
    out << "  '" << rec.graphs[i].name << "': alone " << size_text(s.alone_bytes[k]) << " replayed ("
        << size_text(rec.graphs[i].own_footprint_bytes) << " predicted), grew the pool by "
        << size_text(s.growth_bytes[k]) << " (recorded " << size_text(rec.graphs[i].growth_bytes)
        << ")\n";
    ++k;
  }
  for (const auto& c : s.changes) {
    out << "  " << c.kind << ": saves " << size_text(c.saving_bytes) << " measured (set "
        << size_text(c.measured_bytes) << ", predicted " << size_text(c.predicted_bytes) << "): "
        << c.where << "\n";
  }
  for (const auto& c : s.tried) {
    out << "  tried " << c.kind << ": " << size_text(c.measured_bytes) << " measured (predicted "
        << size_text(c.predicted_bytes) << "), saves less than a granule: " << c.where << "\n";
  }
  return 0;
}

}  // namespace gmem::profiler
