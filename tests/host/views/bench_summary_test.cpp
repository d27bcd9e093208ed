#include <gtest/gtest.h>

#include "views/bench_summary.hpp"
#include "views/views.hpp"
#include "gmem/profiler/report_io.hpp"

namespace {

using gmem::profiler::bench_summary_markdown;

// A hand-made gmem_bench result: medians in microseconds of 1 GiB first launch (1500 us),
// upload (1200), first launch after upload (30), steady (20), floor (1000); overhead rows.
std::string sample() {
  const auto row = [](const std::string& run, const char* agg, double us, double host_us = 0,
                      double footprint = 0) {
    return "{\"name\":\"" + run + "_" + agg + "\",\"run_name\":\"" + run +
           "\",\"run_type\":\"aggregate\",\"aggregate_name\":\"" + agg +
           "\",\"real_time\":" + std::to_string(us) + ",\"time_unit\":\"us\",\"host_us\":" +
           std::to_string(host_us) + ",\"footprint_bytes\":" + std::to_string(footprint) + "}";
  };
  const std::string g = "/bytes:1073741824/allocs:1/iterations:3/repeats:5/manual_time";
  std::string b = "[" + row("graph/first_launch_no_upload" + g, "median", 1500, 1490, 1073741824.0) +
                  "," + row("graph/first_launch_no_upload" + g, "stddev", 12) + "," +
                  row("graph/upload" + g, "median", 1200) + "," +
                  row("graph/first_launch_after_upload" + g, "median", 30) + "," +
                  row("graph/steady_launch" + g, "median", 20) + "," +
                  row("graph/launch_after_trim" + g, "median", 1400) + "," +
                  row("graph/upload_then_launch_other_stream" + g, "median", 25) + "," +
                  row("floor/map" + g, "median", 1000) + "," +
                  row("pool/malloc_free_warm" + g, "median", 15, 0, 1073741824.0) + "," +
                  row("prealloc/steady_launch" + g, "median", 9, 0, 1073741824.0) + "," +
                  "{\"run_name\":\"overhead/build_instantiate/nodes:1000/iterations:21/repeats:5/"
                  "manual_time\",\"run_type\":\"aggregate\",\"aggregate_name\":\"median\","
                  "\"real_time\":2100,\"time_unit\":\"us\",\"gmem_us\":2100,\"raw_us\":2000,"
                  "\"ratio\":1.05}," +
                  "{\"run_name\":\"overhead/launch_loop_with_sampler/iterations:31/repeats:5/"
                  "manual_time\",\"run_type\":\"aggregate\",\"aggregate_name\":\"median\","
                  "\"real_time\":2000,\"time_unit\":\"us\",\"off_us\":2000,"
                  "\"sampler_10ms_us\":2004,\"overhead_10ms_pct\":0.2}]";
  return "{\"context\":{\"device_name\":\"NVIDIA H100 80GB HBM3\",\"granularity_bytes\":\"33554432\","
         "\"date\":\"2026-11-22T03:00:00+00:00\",\"mode\":\"default\"},\"benchmarks\":" + b + "}";
}

TEST(BenchSummary, DerivesMappingPerGibRatioToFloorAndUploadSavings) {
  const std::string md = bench_summary_markdown(sample(), "bench.json");
  // 1500 us for 1 GiB: 1.50 ms per GiB, 1.50x the 1000 us floor; the upload saves 1470 us.
  EXPECT_NE(md.find("| 1 GiB | 1.50 ms | 1.20 ms | 30.0 us | 20.0 us | 1.00 ms | 1.50 ms | 1.50x | 1.47 ms |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(md.find("32 MiB"), std::string::npos);
  EXPECT_NE(md.find("1.050x the same raw CUDA calls"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1000 launches, sampler every 10 ms | 2.00 ms | +0.20% against no sampler |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("+0.20% against no sampler"), std::string::npos) << md;
  // Phases the run lacks show as "-".
  EXPECT_NE(md.find("| 1 GiB | 20.0 us | - | 25.0 us | 1.40 ms | - |"), std::string::npos) << md;
}

TEST(BenchSummary, ReadsGoogleBenchmarksBareNanAsMissing) {
  std::string text = sample();
  const std::string marker = "\"footprint_bytes\":0.000000}";
  text.replace(text.find(marker), marker.size(), "\"footprint_bytes\": NaN}");
  EXPECT_NO_THROW((void)bench_summary_markdown(text, "nan.json"));
}

TEST(BenchSummary, RefusesTextThatIsNotAGmemBenchResult) {
  using gmem::profiler::report_error;
  try {
    (void)bench_summary_markdown("nope", "x.json");
    FAIL();
  } catch (const report_error& e) {
    EXPECT_EQ(e.error_kind(), report_error::kind::not_json);
    EXPECT_NE(std::string(e.what()).find("x.json"), std::string::npos);
  }
  try {
    (void)bench_summary_markdown("{\"context\":{},\"benchmarks\":[]}", "y.json");
    FAIL();
  } catch (const report_error& e) {
    EXPECT_EQ(e.error_kind(), report_error::kind::invalid);
  }
  EXPECT_THROW((void)gmem::profiler::bench_summary_of_file("/nonexistent/bench.json"), report_error);
}

// A number beyond the range of a double (nlohmann's out_of_range) is refused, not a crash
// (found by fuzzing the report reader).
TEST(BenchSummary, RefusesANumberBeyondDouble) {
  std::string text = sample();
  const std::string marker = "\"footprint_bytes\":0.000000}";
  text.replace(text.find(marker), marker.size(), "\"footprint_bytes\": 1e999}");
  EXPECT_THROW((void)bench_summary_markdown(text, "big.json"), gmem::profiler::report_error);
}

// Found by fuzz.bench in CI: a member that should be a string holding a number made
// nlohmann's value() throw type_error out of the page's bench reader. Rows whose names, types
// or aggregates are not strings are skipped by both readers; the rest is still read.
TEST(BenchSummary, SkipsRowsWhoseStringMembersAreNotStrings) {
  std::string text = sample();
  const std::string ok = "\"aggregate_name\":\"median\",\"real_time\":1500.000000";
  ASSERT_NE(text.find(ok), std::string::npos);
  const std::string mangled = text.substr(0, text.find("]}")) +
                              ",{\"run_type\":5,\"aggregate_name\":1,\"name\":[],\"time_unit\":2,"
                              "\"bytes\":1,\"real_time\":3},7,\"x\",null]}";
  const std::string md = bench_summary_markdown(mangled, "mangled.json");
  EXPECT_EQ(md, bench_summary_markdown(text, "mangled.json"));
  gmem::profiler::html_inputs in;
  in.bench_name = "mangled.json";
  in.bench_json = mangled;
  const std::string page = gmem::profiler::html_page(gmem::profiler::report{}, in);
  in.bench_json = text;
  EXPECT_EQ(page, gmem::profiler::html_page(gmem::profiler::report{}, in));
}

TEST(BenchSummary, RefusesABenchmarkNameWhoseCountIsNotANumber) {
  std::string text = sample();
  const std::string marker = "/bytes:1073741824/allocs:1/";
  for (auto at = text.find(marker); at != std::string::npos; at = text.find(marker)) {
    text.replace(at, marker.size(), "/bytes:lots/allocs:1/");
  }
  try {
    (void)bench_summary_markdown(text, "names.json");
    FAIL();
  } catch (const gmem::profiler::report_error& e) {
    EXPECT_EQ(e.error_kind(), gmem::profiler::report_error::kind::invalid);
    EXPECT_NE(std::string(e.what()).find("bytes:lots"), std::string::npos) << e.what();
  }
}

}  // namespace
