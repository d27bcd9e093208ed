// `gmemprof check BASELINE CURRENT` on two mutated reports: exit 0, 1 or 2, every output format
// renders, and a readable report checked against itself never regresses. The input is the
// baseline, a line "--gmem-fuzz-current--", then the current report (without the line: the
// same text for both).
#include <cstddef>
#include <cstdint>
#include <sstream>

#include "gmemprof/commands.hpp"
#include "fuzz_support.hpp"
#include "gmem/profiler/report_io.hpp"

using namespace gmem::profiler;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string separator = "\n--gmem-fuzz-current--\n";
  const auto at = text.find(separator);
  const std::string baseline = at == std::string::npos ? text : text.substr(0, at);
  const std::string current = at == std::string::npos ? text : text.substr(at + separator.size());
  const std::string b = gmem::fuzz::as_file(baseline, "baseline.json");
  const std::string c = gmem::fuzz::as_file(current, "current.json");
  for (const char* format : {"text", "json", "markdown"}) {
    for (bool all : {false, true}) {
      std::ostringstream out, err;
      const int rc = run_check(b, c, tolerances{}, out, err, all, format);
      gmem::fuzz::require(gmem::fuzz::is_exit_code(rc), "check exits 0, 1 or 2");
      gmem::fuzz::require(rc != 2 || !err.str().empty(), "exit 2 comes with a reason");
    }
  }
  std::ostringstream out, err;
  if (run_check(b, b, tolerances{}, out, err) != 2) {
    std::ostringstream out2, err2;
    gmem::fuzz::require(run_check(b, b, tolerances{}, out2, err2) == 0,
                        "a report checked against itself passes");
  }
  return 0;
}
