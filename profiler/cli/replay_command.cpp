// `gmemprof replay`: re-measures the skeletons a report carries on this machine's GPU, and the
// candidate changes, printing advice only with the saving measured here.
#include <ostream>
#include <stdexcept>
#include <string>

#include "cli/commands.hpp"
#include "gmem/error.hpp"
#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/environment.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gmem/profiler/reuse_model.hpp"
#include "gmem/profiler/skeleton_replay.hpp"

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
  const std::uint64_t granularity = measure_granularity(device).bytes;
  out << "replaying on device " << device << " (reservation granularity "
      << describe_bytes(granularity) << "), report '" << path << "' measured on "
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

}  // namespace gmem::profiler
