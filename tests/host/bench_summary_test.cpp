#include <gtest/gtest.h>

#include "gmem/profiler/bench_summary.hpp"
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
                  row("floor/map" + g, "median", 1000) + "," +
                  row("pool/malloc_free_warm" + g, "median", 15, 0, 1073741824.0) + "," +
                  row("prealloc/steady_launch" + g, "median", 9, 0, 1073741824.0) + "," +
                  row("overhead/build_instantiate/gmem/nodes:1000/iterations:5/repeats:9/manual_time",
                      "median", 2100) +
                  "," +
                  row("overhead/build_instantiate/raw/nodes:1000/iterations:5/repeats:9/manual_time",
                      "median", 2000) +
                  "," + row("overhead/launch_loop/sampler_ms:0/iterations:20/repeats:9/manual_time",
                            "median", 2000) +
                  "," + row("overhead/launch_loop/sampler_ms:10/iterations:20/repeats:9/manual_time",
                            "median", 2004) +
                  "]";
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
  EXPECT_NE(md.find("1.050x the raw CUDA calls"), std::string::npos) << md;
  EXPECT_NE(md.find("+0.20% against no sampler"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 GiB | 20.0 us | - | 1.40 ms | - |"), std::string::npos) << md;
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

}  // namespace
