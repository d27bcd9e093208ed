#pragma once
// The lines `gmemprof record` prints about a report it recorded, and the copy of them the
// recording library leaves beside the report it wrote.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gmem/profiler/report.hpp"
#include "record/recording_report.hpp"

namespace gmem::record {

/// The lines `gmemprof record` prints about a report it recorded: where it wrote it, then
/// `gmemprof show`'s first answer (the bill, the top graphs by cost, why the pool reached its
/// high watermark, the diagnostics by kind, the notes).
/// Throws profiler::report_error when the report cannot be read.
[[nodiscard]] std::vector<std::string> summarize_recording(const std::string& path);

/// The same lines about `rep`, a report at `path` (what summarize_recording reads there); with
/// `end`, the recording library's own: what its end took at the program's exit follows the
/// cost line.
[[nodiscard]] std::vector<std::string> summary_lines(const profiler::report& rep, const std::string& path,
                                                     const end_times* end = nullptr);

/// "the report took 1.48 s at the program's exit: the last readings 2.0 ms, analysis 730.4 ms on
/// 2 threads, its text 290.0 ms, read back 360.0 ms, written 4.2 ms, this summary 95.0 ms".
[[nodiscard]] std::string end_line(const end_times& end);

/// The recording library writes the summary of the report it wrote (`report_bytes` long) beside
/// it, at REPORT.summary, so that `gmemprof record` prints it without reading the report again
/// (a model's 2000 graphs: 0.4 s). Written atomically; throws profiler::report_error.
void write_summary(const std::vector<std::string>& lines, std::uint64_t report_bytes, const std::string& path);

/// The lines of a summary write_summary wrote at `path`, where it is the summary of a report of
/// `report_bytes` bytes; nullopt where there is none, or it is of another report. Throws nothing.
[[nodiscard]] std::optional<std::vector<std::string>> read_summary(const std::string& path, std::uint64_t report_bytes);

}  // namespace gmem::record
