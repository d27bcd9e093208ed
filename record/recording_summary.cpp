// The lines `gmemprof record` prints about a report it wrote: where, then show's first answer.
#include "gmem/profiler/report_io.hpp"
#include "record/record_command.hpp"
#include "report/show.hpp"

namespace gmem::record {

std::vector<std::string> summarize_recording(const std::string& path) {
  const profiler::report rep = profiler::read_report(path);
  std::string head = "wrote " + path;
  if (rep.recorded && rep.recorded->partial) head += " (PARTIAL: " + rep.recorded->partial_reason + ")";
  std::vector<std::string> lines{head};
  if (!rep.recorded) return lines;
  if (const std::string cost = profiler::cost_line(*rep.recorded); !cost.empty()) lines.push_back(cost);
  profiler::show_options o;
  o.source = path;
  for (std::string& line : profiler::recording_overview(rep, o)) lines.push_back(std::move(line));
  return lines;
}

}  // namespace gmem::record
