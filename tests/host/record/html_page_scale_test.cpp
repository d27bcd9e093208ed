// `gmemprof html` of a recording grows with the pool's calls, not with its graphs' detail: the
// data it embeds holds the 10 costliest graphs' scenarios and figures, the others counted by
// cause, the attribution as segments and the timeline as columns; the check's rows and notes are
// capped with regressions first. (The page as drawn is checked in Chromium: tools/check_views.py.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "views/views.hpp"
#include "synthetic_recordings.hpp"

namespace gmem::record::test {
namespace {

using json = nlohmann::json;
using profiler::probe::granule;

profiler::report serving_report(int graphs) {
  program p(name_source::nvtx);
  serving(p, graphs);
  return p.finish();
}

// The data object the page's script reads ("const DATA = {...};").
json data_of(const std::string& page) {
  const std::string start = "const DATA = ";
  const auto at = page.find(start);
  const auto end = page.find(";\nconst counts", at);
  EXPECT_NE(at, std::string::npos);
  EXPECT_NE(end, std::string::npos);
  return json::parse(page.substr(at + start.size(), end - at - start.size()));
}

TEST(HtmlPageScale, APageOf2000GraphsStaysUnder2MBAndGrowsByFewBytesPerGraph) {
  const std::size_t thousand = profiler::html_page(serving_report(1000), {}).size();
  const std::size_t two_thousand = profiler::html_page(serving_report(2000), {}).size();
  EXPECT_LT(two_thousand, 2'000'000u);
  // The pool's timeline holds a point per graph's first launch (about 50 bytes); every graph's
  // detail was about 4 KB.
  EXPECT_LT((two_thousand - thousand) / 1000, 100u) << thousand << " -> " << two_thousand;
}

TEST(HtmlPageScale, ARecordingsPageEmbedsTheDetailOfItsTenCostliestGraphsAndCountsTheRest) {
  const profiler::report r = serving_report(2000);
  profiler::html_inputs in;
  in.report_path = "serving.json";
  const json data = data_of(profiler::html_page(r, in));
  const json& scenarios = data["report"]["scenarios"];
  ASSERT_EQ(scenarios.size(), 10u);
  EXPECT_EQ(scenarios[0]["name"], "decode bs=2000");
  EXPECT_EQ(scenarios[1]["name"], "decode bs=1");
  EXPECT_EQ(scenarios[9]["name"], "decode bs=9");
  EXPECT_FALSE(scenarios[0].contains("skeletons"));
  const json& rec = data["report"]["recorded"];
  ASSERT_EQ(rec["graphs"].size(), 10u);
  EXPECT_FALSE(rec["graphs"][0].contains("events"));
  EXPECT_EQ(rec["graphs"][0]["cost"], r.recorded->graphs[0].growth_bytes);
  EXPECT_FALSE(rec.contains("timeline"));
  EXPECT_FALSE(rec.contains("sequence"));
  ASSERT_EQ(rec["others"].size(), 1u);
  EXPECT_EQ(rec["others"][0]["cause"], "held_outputs");
  EXPECT_EQ(rec["others"][0]["graphs"], 1990);
  EXPECT_EQ(rec["others"][0]["growth_bytes"], 1990 * granule);
  const json& pool = rec["pools"][0];
  EXPECT_FALSE(pool.contains("attribution"));
  EXPECT_EQ(pool["attribution_shares"], r.recorded->pools[0].attribution.size());
  std::uint64_t bytes = 0;
  for (const auto& s : pool["segments"]) bytes += s["bytes"].get<std::uint64_t>();
  EXPECT_EQ(bytes, r.recorded->pools[0].model_high_bytes);
  // The timeline in full, as columns: [t_us, graph, event, reserved, growth, concurrent].
  const auto& timeline = r.recorded->pools[0].timeline;
  ASSERT_EQ(pool["timeline"]["points"].size(), timeline.size());
  const json& last = pool["timeline"]["points"].back();
  EXPECT_EQ(last[0].get<double>(), timeline.back().t_us);
  EXPECT_EQ(pool["timeline"]["names"][last[1].get<int>()], timeline.back().graph);
  EXPECT_EQ(pool["timeline"]["events"][last[2].get<int>()], timeline.back().event);
  EXPECT_EQ(last[3], timeline.back().reserved_bytes);
  EXPECT_EQ(data["view"]["graphs"], 2000);
  EXPECT_EQ(data["view"]["shown"], 10);
  EXPECT_EQ(data["view"]["source"], "serving.json");
}

TEST(HtmlPageScale, TheCheckListsAtMost100RowsRegressionsFirstAnd20Notes) {
  profiler::comparison c;
  for (int k = 0; k < 500; ++k) {
    profiler::comparison_row row;
    row.scenario = "g" + std::to_string(k);
    row.metric = "reserved_high_bytes";
    row.verdict = "pass";
    c.rows.push_back(row);
  }
  c.rows[480].verdict = "regression";
  c.rows[499].verdict = "missing";
  for (int k = 0; k < 30; ++k) c.notes.push_back("note " + std::to_string(k));
  profiler::html_inputs in;
  in.check = c;
  in.baseline_name = "base.json";
  const json check = data_of(profiler::html_page(serving_report(9), in))["check"];
  ASSERT_EQ(check["rows"].size(), 100u);
  EXPECT_EQ(check["rows"][0]["scenario"], "g480");
  EXPECT_EQ(check["rows"][1]["scenario"], "g499");
  EXPECT_EQ(check["rows"][2]["scenario"], "g0");
  EXPECT_EQ(check["compared"], 500);
  EXPECT_EQ(check["regressed"], 2);
  EXPECT_EQ(check["notes"].size(), 20u);
  EXPECT_EQ(check["notes_total"], 30);
}

TEST(HtmlPageScale, ThePageChecksItsSizeFormatterAgainstSizeText) {
  const json checks = data_of(profiler::html_page(serving_report(9), {}))["size_checks"];
  ASSERT_GE(checks.size(), 10u);
  // printf rounds the exact quotient, ties to even: 1.125 MiB is "1.12 MiB" (toFixed says 1.13).
  bool tie = false;
  for (const auto& c : checks) tie = tie || (c[0] == 1179648 && c[1] == "1.12 MiB");
  EXPECT_TRUE(tie);
}

}  // namespace
}  // namespace gmem::record::test
