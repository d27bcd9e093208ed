// A recorded report (gmemprof record's output: a report plus its "recorded" section), read as
// `gmemprof record` reads it back for its summary lines: lines or a report_error naming the
// file, never a crash.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gmemprof/record_command.hpp"
#include "record/recording_summary.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto lines = gmem::record::summarize_recording(gmem::fuzz::as_file(text, "recorded.json"));
    gmem::fuzz::require(!lines.empty(), "a summary has at least its first line");
  } catch (const gmem::profiler::report_error&) {
  }
  return 0;
}
