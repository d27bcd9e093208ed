// The report reader (gmemprof show/check/html/trace, Python's gmem.read_report): any bytes give
// a report or a report_error, never a crash; what it accepts writes back to text it reads
// again to the same text; `gmemprof show` exits 0 or 2; the views render what was accepted.
#include <cstddef>
#include <cstdint>
#include <sstream>

#include "gmemprof/commands.hpp"
#include "fuzz_support.hpp"
#include "gmem/profiler/report_io.hpp"
#include "views/show.hpp"
#include "views/views.hpp"

using namespace gmem::profiler;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  report r;
  try {
    r = from_json_string(text, "fuzz.json");
  } catch (const report_error&) {
    std::ostringstream out, err;
    const int rc = run_show(gmem::fuzz::as_file(text, "show.json"), gmem::profiler::show_options{}, "text", out, err);
    gmem::fuzz::require(rc == 2 && !err.str().empty(), "show of a refused report exits 2 with a reason");
    return 0;
  }
  const std::string once = to_json_string(r);
  const std::string twice = to_json_string(from_json_string(once, "written"));
  gmem::fuzz::require(once == twice, "a report written and read back writes the same text");
  (void)format_report(r);
  (void)trace_json(r);
  (void)html_page(r, html_inputs{});
  return 0;
}
