// `gmemprof show` of a suite report (format_report): the environment, each scenario's status,
// memory, ratios and launch costs, its diagnostics, and the advice measured on the driver.

#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "gmem/profiler/report.hpp"
#include "gmem/profiler/report_io.hpp"
#include "sample_report.hpp"
#include "views/show.hpp"

namespace gmem::profiler {
namespace {

using test::sample_report;

TEST(ShowReport, PrintsEnvironmentScenarioMemoryLaunchCostsAndDiagnostics) {
  // Lines are wrapped at 100 characters: read the text with each line break and its indent as
  // one space.
  const std::string text = std::regex_replace(format_report(sample_report()), std::regex("\n +"), " ");
  const auto has = [&](const std::string& needle) {
    EXPECT_NE(text.find(needle), std::string::npos) << "missing '" << needle << "' in:\n" << text;
  };
  has("NVIDIA H200 (device 1 of 2)");
  has("compute capability  9.0");
  has("140 GiB");
  has("13.0 (13000), release 580.159.04");
  has("12.8 (12080)");
  has("2.00 MiB, cuMemGetAllocationGranularity(RECOMMENDED)");
  has("commit ff7070d1a2b3-dirty");
  has("alloc_free_chain[bytes=2199023267897,fraction=0.375,pool=default,upload=true,depth=-3]  ok");
  has("requested 14.0 MiB, lower bound 4.00 MiB (rounded), used high 6.00 MiB, reserved high "
      "32.0 MiB");
  has("va reuse 2.333, physical reuse 0.438, reserved / lower bound 8.000");
  has("steady_launch");
  has("20.50");  // wall median of steady_launch
  has("44.12");
  has("[warning] allocation of 2.0 MiB at node 7 is never freed in the graph (2.00 MiB)");
  has("peer_access[peer=1]  skipped: needs 2 GPUs with peer access; this machine has 1");
  has("child_graph  error: cudaGraphInstantiate: cudaErrorInvalidValue");
}

// The advice as read back from a report: what each change saves, measured, and what was tried
// and saved less than a granule.
TEST(ShowReport, PrintsTheMeasuredAdviceAndWhatWasTriedAsReadBack) {
  const report back = from_json_string(to_json_string(sample_report()), "advice.json");
  const std::string shown = format_report(back);
  EXPECT_NE(shown.find("saves 32.0 MiB measured"), std::string::npos) << shown;
  EXPECT_NE(shown.find("tried, saves less than a granule: auto_free_on_launch (reserved 64.0 MiB)"),
            std::string::npos) << shown;
}

}  // namespace
}  // namespace gmem::profiler
