// Reports that cannot mean one thing are refused: a scenario twice, counters that
// contradict each other, times that are negative or not finite, and, in the check, a report of
// another schema version. Each refusal is an `invalid` (or `wrong_schema_version`) report_error
// whose message names the file, the field and the problem; `gmemprof check` exits 2 on it.
// Every committed report is still accepted.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gmemprof/commands.hpp"
#include "gmem/profiler/report.hpp"
#include "gmem/profiler/report_io.hpp"
#include "report/report_json.hpp"

namespace gmem::profiler {
namespace {

namespace fs = std::filesystem;

report base_report() {
  report r;
  r.env.device_name = "NVIDIA H100 80GB HBM3";
  r.env.cc_major = 9;
  r.env.driver_release = "580.159.04";
  r.env.granularity_bytes = 2 << 20;
  r.env.date = "2026-11-22T12:00:00Z";
  scenario_result s;
  s.name = "single_alloc";
  s.params = {{"bytes", std::int64_t{64 << 20}}};
  s.counters_after_phase = {{"first_launch", {64u << 20, 64u << 20, 96u << 20, 96u << 20}},
                            {"steady_launch", {0, 64u << 20, 96u << 20, 96u << 20}}};
  launch_cost c;
  c.phase = "first_launch";
  c.host = {5, 40.0, 35.5, 61.0};
  c.wall = {5, 120.0, 110.0, 150.25};
  s.launch_costs = {c};
  s.analysis.alloc_nodes = 1;
  s.analysis.requested_bytes = 64 << 20;
  s.analysis.used_high_bytes = 64 << 20;
  s.analysis.reserved_high_bytes = 96 << 20;
  trial_sample t;
  t.used_high_bytes = 64 << 20;
  t.reserved_high_bytes = 96 << 20;
  t.launches = {{"first_launch", 40.0, 120.0}};
  s.trials = {t, t};
  r.scenarios = {s};
  return r;
}

// The refusal's message, or a test failure when the text was accepted or refused otherwise.
std::string refusal(const std::string& text, report_error::kind expected = report_error::kind::invalid) {
  try {
    (void)from_json_string(text, "current.json");
  } catch (const report_error& e) {
    EXPECT_EQ(e.error_kind(), expected) << e.what();
    EXPECT_NE(std::string(e.what()).find("current.json"), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted:\n" << text.substr(0, 400);
  return {};
}

std::string refusal(const report& r) { return refusal(to_json_string(r)); }

bool has(const std::string& message, const std::string& part) {
  return message.find(part) != std::string::npos;
}

TEST(ReportRefusals, TheBaseReportIsAccepted) {
  EXPECT_NO_THROW((void)from_json_string(to_json_string(base_report()), "current.json"));
}

TEST(ReportRefusals, ASecondScenarioWithTheSameKeyIsRefusedNamingBoth) {
  report r = base_report();
  r.scenarios.push_back(r.scenarios[0]);
  r.scenarios[1].analysis.reserved_high_bytes = 128 << 20;  // differs: which would a check use?
  const std::string m = refusal(r);
  EXPECT_TRUE(has(m, "scenarios[1]")) << m;
  EXPECT_TRUE(has(m, "scenarios[0]")) << m;
  EXPECT_TRUE(has(m, "single_alloc[bytes=67108864]")) << m;
}

TEST(ReportRefusals, TheSameNameWithOtherParametersIsAnotherScenario) {
  report r = base_report();
  r.scenarios.push_back(r.scenarios[0]);
  r.scenarios[1].params = {{"bytes", std::int64_t{128 << 20}}};
  EXPECT_EQ(from_json_string(to_json_string(r), "current.json").scenarios.size(), 2u);
}

struct counter_case {
  const char* what;
  counters values;
  const char* first;
  const char* second;
};

TEST(ReportRefusals, CountersThatContradictEachOtherAreRefused) {
  const std::uint64_t M = 1 << 20;
  const counter_case cases[] = {
      {"used above reserved (current)", {96 * M, 96 * M, 64 * M, 96 * M}, "used_current",
       "reserved_current"},
      {"used above reserved (high)", {0, 128 * M, 0, 96 * M}, "used_high", "reserved_high"},
      {"used current above its high", {64 * M, 32 * M, 96 * M, 96 * M}, "used_current",
       "used_high"},
      {"reserved current above its high", {0, 0, 128 * M, 96 * M}, "reserved_current",
       "reserved_high"},
  };
  for (const auto& c : cases) {
    report r = base_report();
    r.scenarios[0].counters_after_phase[1].values = c.values;
    const std::string m = refusal(r);
    EXPECT_TRUE(has(m, "scenarios[0].counters_after_phase[1]")) << c.what << ": " << m;
    EXPECT_TRUE(has(m, std::string(c.first) + " ")) << c.what << ": " << m;
    EXPECT_TRUE(has(m, std::string("above ") + c.second)) << c.what << ": " << m;
  }
}

TEST(ReportRefusals, AnAnalysisOrTrialUsingMoreThanItReservedIsRefused) {
  report r = base_report();
  r.scenarios[0].analysis.used_high_bytes = r.scenarios[0].analysis.reserved_high_bytes + 1;
  std::string m = refusal(r);
  EXPECT_TRUE(has(m, "scenarios[0].analysis has used_high_bytes")) << m;

  r = base_report();
  r.scenarios[0].trials[1].used_high_bytes = 200 << 20;
  m = refusal(r);
  EXPECT_TRUE(has(m, "scenarios[0].trials[1] has used_high_bytes")) << m;
}

TEST(ReportRefusals, NegativeOrNonFiniteTimesAreRefusedNamingTheField) {
  const std::string text = to_json_string(base_report());
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
    return t;
  };
  std::string m = refusal(with("\"min_us\": 35.5", "\"min_us\": -1.0"));
  EXPECT_TRUE(has(m, "scenarios[0].launch_costs[0].host.min_us is -1.0")) << m;
  m = refusal(with("\"median_us\": 120.0", "\"median_us\": null"));
  EXPECT_TRUE(has(m, "launch_costs[0].wall.median_us is null (not finite)")) << m;
  m = refusal(with("\"host_median_us\": 40.0", "\"host_median_us\": -0.5"));
  EXPECT_TRUE(has(m, "scenarios[0].trials[0].launches[0].host_median_us")) << m;
  m = refusal(with("\"wall_median_us\": 120.0", "\"wall_median_us\": null"));
  EXPECT_TRUE(has(m, "trials[0].launches[0].wall_median_us is null")) << m;
}

TEST(ReportRefusals, AnEmptySampleMayHoldZeros) {
  report r = base_report();
  r.scenarios[0].launch_costs[0].wall = {};  // not timed (record mode has no wall time)
  EXPECT_NO_THROW((void)from_json_string(to_json_string(r), "current.json"));
}

// Found by fuzz.report (tests/fuzz/regressions/report/): a number beyond the range of a double
// is JSON's grammar but not a double; nlohmann throws out_of_range for it, which escaped the
// reader (gmemprof terminated). Now it is a report_error like any text that is not a report.
TEST(ReportRefusals, ANumberBeyondDoubleIsARefusalNotACrash) {
  std::string text = to_json_string(base_report());
  const std::string from = "\"min_us\": 35.5";
  text.replace(text.find(from), from.size(), "\"min_us\": 3355e432");
  const std::string m = refusal(text, report_error::kind::not_json);
  EXPECT_TRUE(has(m, "number overflow")) << m;
}

// ---- Deep nesting ------------------------------------------------------------------
// A fuzzed report nested ~120,000 levels deep and followed by another key overflowed the stack
// (exit 139): nlohmann parses without recursion but copies the document recursively. Text
// nested deeper than report_max_depth is refused before it is parsed.

// The base report with one more top-level member, "extra", of `levels` nested arrays: the
// document nests 1 + levels deep. The reader ignores members it does not know.
std::string with_nested_extra(std::size_t levels, const std::string& after = "") {
  std::string text = to_json_string(base_report());
  const std::string nested = std::string(levels, '[') + std::string(levels, ']');
  text.insert(text.rfind('}'), ",\n  \"extra\": " + nested + after);
  return text;
}

// `{"a": [[...]], "b": 1}`: the shape the fuzzer found; level L (2..) opens at byte 5 + L - 2.
std::string deep_then_key(std::size_t levels) {
  return "{\"a\":" + std::string(levels, '[') + std::string(levels, ']') + ",\"b\":1}";
}

TEST(ReportRefusals, NestingOf120000LevelsThenAKeyIsRefusedNamingTheLimitAndTheByte) {
  const std::string m = refusal(deep_then_key(120000));
  EXPECT_TRUE(has(m, "deeper than 256 levels")) << m;
  EXPECT_TRUE(has(m, "level 257 opens at byte 260")) << m;
}

TEST(ReportRefusals, NestingOf100000LevelsIsRefused) {
  const std::string m = refusal(deep_then_key(100000));
  EXPECT_TRUE(has(m, "deeper than 256 levels")) << m;
}

TEST(ReportRefusals, NestingExactlyAtTheLimitIsReadAndOneMoreLevelIsRefused) {
  static_assert(report_max_depth == 256, "the messages and docs/checks.md say 256");
  const report back = from_json_string(with_nested_extra(report_max_depth - 1), "current.json");
  EXPECT_EQ(back.scenarios.size(), 1u);
  const std::string text = with_nested_extra(report_max_depth);
  const std::string m = refusal(text);
  const std::size_t deepest = text.find(std::string(report_max_depth, '['));
  EXPECT_TRUE(has(m, "opens at byte " + std::to_string(deepest + report_max_depth - 1))) << m;
}

// The scan counts brackets outside strings only, and an escaped quote does not end a string.
TEST(ReportRefusals, BracketsInsideStringsDoNotCountAsNesting) {
  report r = base_report();
  r.env.command_line = "run \"" + std::string(1000, '[') + "\\\" {{{";
  r.scenarios[0].params.emplace_back("label", std::string(600, '{') + "\\");
  const report back = from_json_string(to_json_string(r), "current.json");
  EXPECT_EQ(back.env.command_line, r.env.command_line);
  EXPECT_EQ(std::get<std::string>(back.scenarios[0].params[1].second), std::string(600, '{') + "\\");
}

TEST(ReportRefusals, ShowOfA120000LevelDeepFileExits2WithTheReason) {
  const fs::path path = fs::temp_directory_path() / ("gmem-deep-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << deep_then_key(120000);
  std::ostringstream out, err;
  EXPECT_EQ(run_show(path.string(), show_options{}, "text", out, err), 2);
  EXPECT_TRUE(has(err.str(), path.string())) << err.str();
  EXPECT_TRUE(has(err.str(), "deeper than 256 levels")) << err.str();
  fs::remove(path);
}

// ---- Range errors say the range -----------------------------------------------------

using ojson = nlohmann::ordered_json;

// The base report with a recording of `graphs` graphs (three events each) and one launch of
// graph 0 in its sequence, as JSON to edit.
ojson recorded_json(std::size_t graphs) {
  report r = base_report();
  recording rec;
  for (std::size_t i = 0; i < graphs; ++i) {
    recorded_graph g;
    g.name = "g" + std::to_string(i);
    g.devices = {0};
    g.events.resize(3);
    for (auto& e : g.events) e.kind = "launch";
    rec.graphs.push_back(g);
  }
  sequence_step st;
  st.op = "launch";
  st.graph = graphs ? 0 : -1;
  rec.sequence = {st};
  r.recorded = rec;
  return report_to_json(r, false);  // the plain forms, without rows or shared shapes
}

std::string refusal(const ojson& j) { return refusal(j.dump(1)); }

TEST(ReportRefusals, ASequenceStepNamingAGraphBeyondTheListSaysHowManyThereAre) {
  ojson j = recorded_json(7);
  j["recorded"]["sequence"][0]["graph"] = 7;
  std::string m = refusal(j);
  EXPECT_TRUE(has(m, "recorded.sequence[0].graph names graph 7; recorded.graphs has 7 graphs (0 to 6)"))
      << m;
  j["recorded"]["sequence"][0]["graph"] = -2;
  m = refusal(j);
  EXPECT_TRUE(has(m, "names graph -2; recorded.graphs has 7 graphs (0 to 6)")) << m;

  j = recorded_json(1);
  j["recorded"]["sequence"][0]["graph"] = 1;
  EXPECT_TRUE(has(refusal(j), "names graph 1; recorded.graphs has 1 graph (index 0)"));
  j = recorded_json(0);
  j["recorded"]["sequence"][0]["graph"] = 0;
  EXPECT_TRUE(has(refusal(j), "names graph 0; recorded.graphs has no graphs"));
}

TEST(ReportRefusals, ASequenceStepNamingAnEventBeyondItsGraphsSaysHowManyItHas) {
  ojson j = recorded_json(2);
  j["recorded"]["sequence"][0]["event"] = 3;
  std::string m = refusal(j);
  EXPECT_TRUE(has(m, "recorded.sequence[0].event names event 3 of graph 0, which has 3 events (0 to 2)"))
      << m;
  j["recorded"]["graphs"][0]["events"] = ojson::array();
  m = refusal(j);
  EXPECT_TRUE(has(m, "names event 3 of graph 0, which has no events")) << m;
  j["recorded"]["sequence"][0].erase("graph");
  m = refusal(j);
  EXPECT_TRUE(has(m, "names event 3, but the step names no graph")) << m;
}

TEST(ReportRefusals, DeviceIndexesAndSmallIntegersOutOfRangeSayTheRange) {
  ojson j = recorded_json(1);
  j["recorded"]["graphs"][0]["devices"] = {0, 1025};
  std::string m = refusal(j);
  EXPECT_TRUE(has(m, "recorded.graphs[0].devices[1] must be a device index from 0 to 1024, is 1025"))
      << m;
  j["recorded"]["graphs"][0]["devices"] = {-1};
  EXPECT_TRUE(has(refusal(j), "devices[0] must be a device index from 0 to 1024, is the negative integer -1"));
  j["recorded"]["graphs"][0]["devices"] = {"0"};
  EXPECT_TRUE(has(refusal(j), "devices[0] must be a device index from 0 to 1024, is a string"));

  j = recorded_json(1);
  j["recorded"]["graphs"][0]["events"][0]["device"] = 3000000000u;
  m = refusal(j);
  EXPECT_TRUE(has(m, "recorded.graphs[0].events[0].device is out of range: 3000000000 (0 to 2147483647)"))
      << m;
  j = recorded_json(1);
  j["recorded"]["pid"] = 18446744073709551615u;
  m = refusal(j);
  EXPECT_TRUE(has(m, "recorded.pid is out of range: 18446744073709551615 (at most 9223372036854775807)"))
      << m;

  j = recorded_json(0);
  j["environment"]["device_index"] = 3000000000u;
  m = refusal(j);
  EXPECT_TRUE(has(m, "environment.device_index is out of range: 3000000000 (0 to 2147483647)")) << m;
}

TEST(ReportRefusals, AFreeStepBeforeItsAllocStepSaysBoth) {
  ojson j = recorded_json(0);
  j["scenarios"][0]["allocations"] = {{{"address", 4096}, {"bytes", 64}, {"alloc_step", 5}, {"free_step", 3}}};
  const std::string m = refusal(j);
  EXPECT_TRUE(has(m, "scenarios[0].allocations[0].free_step is 3, but must come after alloc_step 5")) << m;
}

// ---- The advice fits the report's kind ---------------------------------------------
// A recording is made again by recording the program, not by running the suite.

constexpr const char* run_hint = "write it again with `gmemprof run --out FILE`";
constexpr const char* record_hint = "record it again with `gmemprof record --out FILE -- COMMAND`";

TEST(ReportRefusals, AnInvalidRecordingSaysToRecordItAgainNotToRunTheSuite) {
  ojson j = recorded_json(7);
  j["recorded"]["sequence"][0]["graph"] = 7;  // a defect met in vLLM's recordings
  std::string m = refusal(j);
  EXPECT_TRUE(has(m, record_hint)) << m;
  EXPECT_FALSE(has(m, "gmemprof run")) << m;

  j = recorded_json(1);  // a field outside the recorded section, in a recording
  j["environment"]["device_index"] = -1;
  m = refusal(j);
  EXPECT_TRUE(has(m, "environment.device_index")) << m;
  EXPECT_TRUE(has(m, record_hint)) << m;
  EXPECT_FALSE(has(m, "gmemprof run")) << m;
}

TEST(ReportRefusals, AnInvalidSuiteReportSaysToRunTheSuiteAgain) {
  report r = base_report();
  r.scenarios.push_back(r.scenarios[0]);
  const std::string m = refusal(r);
  EXPECT_TRUE(has(m, run_hint)) << m;
  EXPECT_FALSE(has(m, "gmemprof record")) << m;
}

// Before a file is parsed its kind is unknown: both ways to write one are named.
TEST(ReportRefusals, AMissingFileTextThatIsNotJsonAndDeepTextNameBothRunAndRecord) {
  std::vector<std::string> messages = {refusal("{\"recorded\": ", report_error::kind::not_json),
                                       refusal(deep_then_key(300))};
  try {
    (void)read_report("/nonexistent/gmem-report.json");
    ADD_FAILURE() << "read a missing file";
  } catch (const report_error& e) {
    EXPECT_EQ(e.error_kind(), report_error::kind::missing);
    messages.push_back(e.what());
  }
  for (const auto& m : messages) {
    EXPECT_TRUE(has(m, "`gmemprof run --out ")) << m;
    EXPECT_TRUE(has(m, "`gmemprof record --out ")) << m;
  }
}

// The check: each refusal is exit 2 with the message on stderr, never a pass or a regression.
class CheckRefusals : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gmem-refusals-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    baseline_ = (dir_ / "baseline.json").string();
    write_report(base_report(), baseline_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  int check(const std::string& current_text, std::string* err_text) {
    const std::string current = (dir_ / "current.json").string();
    std::ofstream(current) << current_text;
    std::ostringstream out, err;
    const int rc = run_check(baseline_, current, tolerances{}, out, err);
    *err_text = err.str();
    return rc;
  }

  fs::path dir_;
  std::string baseline_;
};

TEST_F(CheckRefusals, IdenticalReportsPass) {
  std::string err;
  EXPECT_EQ(check(to_json_string(base_report()), &err), 0) << err;
}

TEST_F(CheckRefusals, ACurrentReportOfAnotherSchemaVersionIsExit2NamingBothVersions) {
  std::string text = to_json_string(base_report());
  text.replace(text.find("\"schema_version\": 1"), 19, "\"schema_version\": 2");
  std::string err;
  EXPECT_EQ(check(text, &err), 2);
  EXPECT_TRUE(has(err, "current.json")) << err;
  EXPECT_TRUE(has(err, "schema_version 2")) << err;
  EXPECT_TRUE(has(err, "reads schema_version 1")) << err;
}

TEST_F(CheckRefusals, DuplicateScenarioContradictingCountersAndNegativeTimesAreExit2) {
  report dup = base_report();
  dup.scenarios.push_back(dup.scenarios[0]);
  report counters_bad = base_report();
  counters_bad.scenarios[0].counters_after_phase[0].values.used_current = 1ull << 40;
  report time_bad = base_report();
  time_bad.scenarios[0].launch_costs[0].host.min_us = -3;
  for (const auto& [what, r] : {std::pair<const char*, report>{"repeats the scenario", dup},
                                {"contradict each other", counters_bad},
                                {"a time must be a finite number", time_bad}}) {
    std::string err;
    EXPECT_EQ(check(to_json_string(r), &err), 2) << what;
    EXPECT_TRUE(has(err, what)) << err;
    EXPECT_TRUE(has(err, "current.json")) << err;
  }
}

// No refusal turns away what gmem itself measured: every committed report reads.
TEST(ReportRefusals, EveryCommittedReportIsAccepted) {
  int reports = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(GMEM_SOURCE_DIR) / "reports")) {
    if (e.path().extension() != ".json") continue;
    std::ifstream f(e.path());
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (text.find("\"schema_version\"") == std::string::npos ||
        text.find("\"scenarios\"") == std::string::npos || has(e.path().string(), "/schema/")) {
      continue;  // benchmark JSON, GPU-run summaries, the schema itself
    }
    ++reports;
    EXPECT_NO_THROW((void)read_report(e.path().string())) << e.path();
  }
  EXPECT_GE(reports, 4) << "the committed baselines and recordings were not found";
}

}  // namespace
}  // namespace gmem::profiler
