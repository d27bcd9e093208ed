// The lines `gmemprof record` prints about a report it wrote: where, then show's first answer;
// and the copy of them the recording library leaves beside its report.
#include "record/recording_summary.hpp"

#include <cstdio>
#include <fstream>

#include "gmem/profiler/report_io.hpp"
#include "gmem/profiler/size_text.hpp"
#include "views/show.hpp"

namespace gmem::record {
namespace {

constexpr const char* summary_tag = "gmem summary of a report of bytes: ";

}  // namespace

std::string end_line(const end_times& end) {
  const auto s = [](double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f s", seconds);
    return seconds >= 1 ? std::string(buf) : profiler::duration_text(seconds * 1e6);
  };
  return "the report took " + s(end.total_s()) + " at the program's exit: the last readings " + s(end.finish_s) +
         ", analysis " + s(end.analysis_s) + " on " + std::to_string(end.threads) +
         (end.threads == 1 ? " thread" : " threads") + ", its text " + s(end.text_s) + ", read back " +
         s(end.read_back_s) + ", written " + s(end.write_s) + ", this summary " + s(end.summary_s);
}

std::vector<std::string> summary_lines(const profiler::report& rep, const std::string& path, const end_times* end) {
  std::string head = "wrote " + path;
  if (rep.recorded && rep.recorded->partial) head += " (PARTIAL: " + rep.recorded->partial_reason + ")";
  std::vector<std::string> lines{head};
  if (!rep.recorded) return lines;
  if (const std::string cost = profiler::cost_line(*rep.recorded); !cost.empty()) lines.push_back(cost);
  if (end) lines.push_back(end_line(*end));
  profiler::show_options o;
  o.source = path;
  for (std::string& line : profiler::recording_overview(rep, o)) lines.push_back(std::move(line));
  return lines;
}

std::vector<std::string> summarize_recording(const std::string& path) {
  return summary_lines(profiler::read_report(path), path);
}

void write_summary(const std::vector<std::string>& lines, std::uint64_t report_bytes, const std::string& path) {
  std::string text = summary_tag + std::to_string(report_bytes) + "\n";
  for (const std::string& line : lines) {
    for (const char c : line) text += c == '\n' ? ' ' : c;  // one line each
    text += '\n';
  }
  profiler::write_text_atomically(text, path);
}

std::optional<std::vector<std::string>> read_summary(const std::string& path, std::uint64_t report_bytes) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line) || line != summary_tag + std::to_string(report_bytes)) return std::nullopt;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  if (lines.empty()) return std::nullopt;
  return lines;
}

}  // namespace gmem::record
