// gmem_bench's JSON (gmemprof bench-summary, and gmemprof html --bench): a summary or a
// report_error, never a crash; bench-summary exits 0 or 2.
#include <cstddef>
#include <cstdint>
#include <sstream>

#include "gmemprof/commands.hpp"
#include "fuzz_support.hpp"
#include "gmem/profiler/report_io.hpp"
#include "views/bench_summary.hpp"
#include "views/views.hpp"

using namespace gmem::profiler;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::ostringstream out, err;
  const int rc = run_bench_summary(gmem::fuzz::as_file(text, "bench.json"), "", out, err);
  gmem::fuzz::require(rc == 0 || rc == 2, "bench-summary exits 0 or 2");
  html_inputs in;
  in.bench_json = text;
  in.bench_name = "fuzz.json";
  try {
    (void)html_page(report{}, in);
  } catch (const report_error&) {
  }
  return 0;
}
