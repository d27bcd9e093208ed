// Reports to JSON and back, and to files: exact round trips, clear errors naming the file, and
// writes that never leave a half-written or stray file.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "gmem/profiler/report.hpp"
#include "gmem/profiler/report_io.hpp"
#include "sample_report.hpp"

namespace gmem::profiler {
namespace {

namespace fs = std::filesystem;
using test::big_bytes;
using test::sample_report;

void expect_same_stats(const stats& a, const stats& b, const std::string& where) {
  EXPECT_EQ(a.count, b.count) << where;
  EXPECT_EQ(a.median_us, b.median_us) << where;
  EXPECT_EQ(a.min_us, b.min_us) << where;
  EXPECT_EQ(a.max_us, b.max_us) << where;
}

void expect_same_report(const report& a, const report& b) {
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.env.device_name, b.env.device_name);
  EXPECT_EQ(a.env.device_index, b.env.device_index);
  EXPECT_EQ(a.env.cc_major, b.env.cc_major);
  EXPECT_EQ(a.env.cc_minor, b.env.cc_minor);
  EXPECT_EQ(a.env.total_memory_bytes, b.env.total_memory_bytes);
  EXPECT_EQ(a.env.driver_version, b.env.driver_version);
  EXPECT_EQ(a.env.driver_release, b.env.driver_release);
  EXPECT_EQ(a.env.runtime_version, b.env.runtime_version);
  EXPECT_EQ(a.env.device_count, b.env.device_count);
  EXPECT_EQ(a.env.granularity_bytes, b.env.granularity_bytes);
  EXPECT_EQ(a.env.granularity_method, b.env.granularity_method);
  EXPECT_EQ(a.env.tool_version, b.env.tool_version);
  EXPECT_EQ(a.env.git_commit, b.env.git_commit);
  EXPECT_EQ(a.env.command_line, b.env.command_line);
  EXPECT_EQ(a.env.date, b.env.date);

  ASSERT_EQ(a.scenarios.size(), b.scenarios.size());
  for (std::size_t i = 0; i < a.scenarios.size(); ++i) {
    const scenario_result& x = a.scenarios[i];
    const scenario_result& y = b.scenarios[i];
    const std::string where = "scenario " + x.key();
    EXPECT_EQ(x.name, y.name) << where;
    EXPECT_EQ(x.params, y.params) << where;  // variant equality: the type must match too
    EXPECT_EQ(x.status, y.status) << where;
    EXPECT_EQ(x.status_message, y.status_message) << where;
    ASSERT_EQ(x.counters_after_phase.size(), y.counters_after_phase.size()) << where;
    for (std::size_t k = 0; k < x.counters_after_phase.size(); ++k) {
      const auto& p = x.counters_after_phase[k];
      const auto& q = y.counters_after_phase[k];
      EXPECT_EQ(p.phase, q.phase) << where;
      EXPECT_EQ(p.values.used_current, q.values.used_current) << where;
      EXPECT_EQ(p.values.used_high, q.values.used_high) << where;
      EXPECT_EQ(p.values.reserved_current, q.values.reserved_current) << where;
      EXPECT_EQ(p.values.reserved_high, q.values.reserved_high) << where;
    }
    ASSERT_EQ(x.launch_costs.size(), y.launch_costs.size()) << where;
    for (std::size_t k = 0; k < x.launch_costs.size(); ++k) {
      const auto& p = x.launch_costs[k];
      const auto& q = y.launch_costs[k];
      EXPECT_EQ(p.phase, q.phase) << where;
      EXPECT_EQ(p.warmups, q.warmups) << where;
      expect_same_stats(p.host, q.host, where + " host " + p.phase);
      expect_same_stats(p.wall, q.wall, where + " wall " + p.phase);
    }
    const analysis_summary& s = x.analysis;
    const analysis_summary& t = y.analysis;
    EXPECT_EQ(s.alloc_nodes, t.alloc_nodes) << where;
    EXPECT_EQ(s.free_nodes, t.free_nodes) << where;
    EXPECT_EQ(s.unfreed_allocations, t.unfreed_allocations) << where;
    EXPECT_EQ(s.requested_bytes, t.requested_bytes) << where;
    EXPECT_EQ(s.distinct_addresses, t.distinct_addresses) << where;
    EXPECT_EQ(s.va_reuse_ratio, t.va_reuse_ratio) << where;  // exact: no rounding on the way
    EXPECT_EQ(s.lower_bound_bytes, t.lower_bound_bytes) << where;
    EXPECT_EQ(s.lower_bound_rounded_bytes, t.lower_bound_rounded_bytes) << where;
    EXPECT_EQ(s.used_high_bytes, t.used_high_bytes) << where;
    EXPECT_EQ(s.reserved_high_bytes, t.reserved_high_bytes) << where;
    EXPECT_EQ(s.physical_reuse_ratio, t.physical_reuse_ratio) << where;
    EXPECT_EQ(s.bound_ratio, t.bound_ratio) << where;
    ASSERT_EQ(x.diagnostics.size(), y.diagnostics.size()) << where;
    for (std::size_t k = 0; k < x.diagnostics.size(); ++k) {
      EXPECT_EQ(x.diagnostics[k].code, y.diagnostics[k].code) << where;
      EXPECT_EQ(x.diagnostics[k].severity, y.diagnostics[k].severity) << where;
      EXPECT_EQ(x.diagnostics[k].message, y.diagnostics[k].message) << where;
      EXPECT_EQ(x.diagnostics[k].bytes, y.diagnostics[k].bytes) << where;
    }
  }
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void spit(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Returns the report_error thrown by `f`, failing the test when none is.
template <typename F>
report_error::kind error_kind_of(F&& f, std::string* message) {
  try {
    f();
  } catch (const report_error& e) {
    if (message) *message = e.what();
    return e.error_kind();
  }
  ADD_FAILURE() << "no report_error thrown";
  return report_error::kind::invalid;
}

// A fresh directory per test, removed afterwards.
class ReportFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("gmem-report-test-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST(ReportKey, IsTheNameAloneWithoutParameters) {
  scenario_result s;
  s.name = "single_alloc";
  EXPECT_EQ(s.key(), "single_alloc");
}

TEST(ReportKey, ListsParametersInTheirOrderWithTheirTypesSpelledOut) {
  scenario_result s;
  s.name = "single_alloc";
  s.params = {{"upload", true},
              {"bytes", std::int64_t{2097152}},
              {"fraction", 0.25},
              {"pool", std::string("mine")},
              {"shrink", false}};
  EXPECT_EQ(s.key(),
            "single_alloc[upload=true,bytes=2097152,fraction=0.25,pool=mine,shrink=false]");
}

TEST(ReportKey, StatusNames) {
  EXPECT_STREQ(to_string(scenario_status::ok), "ok");
  EXPECT_STREQ(to_string(scenario_status::skipped), "skipped");
  EXPECT_STREQ(to_string(scenario_status::error), "error");
}

TEST(ReportJson, RoundTripKeepsEveryFieldExactly) {
  const report r = sample_report();
  const report back = from_json_string(to_json_string(r), "memory");
  expect_same_report(r, back);
}

TEST(ReportJson, ParametersKeepTheirTypeAndOrder) {
  report r = sample_report();
  r.scenarios[0].params = {{"z", 3.0}, {"a", big_bytes}, {"m", std::string("12")}, {"b", false}};
  const report back = from_json_string(to_json_string(r), "memory");
  const parameters& p = back.scenarios[0].params;
  ASSERT_EQ(p.size(), 4U);
  EXPECT_EQ(p[0].first, "z");
  ASSERT_TRUE(std::holds_alternative<double>(p[0].second));  // 3.0 does not become the int 3
  EXPECT_EQ(std::get<double>(p[0].second), 3.0);
  EXPECT_EQ(p[1].first, "a");
  ASSERT_TRUE(std::holds_alternative<std::int64_t>(p[1].second));
  EXPECT_EQ(std::get<std::int64_t>(p[1].second), big_bytes);
  EXPECT_EQ(p[2].first, "m");
  ASSERT_TRUE(std::holds_alternative<std::string>(p[2].second));
  EXPECT_EQ(std::get<std::string>(p[2].second), "12");
  EXPECT_EQ(p[3].first, "b");
  ASSERT_TRUE(std::holds_alternative<bool>(p[3].second));
  EXPECT_FALSE(std::get<bool>(p[3].second));
}

// The text writes each value as nlohmann writes it alone (the writer makes plain strings and
// integers itself, without a temporary each): strings that need escapes, text beyond ASCII,
// invalid UTF-8 (replaced), the extremes of both integer kinds and doubles.
TEST(ReportJson, EachValueIsWrittenAsNlohmannWritesIt) {
  report r = sample_report();
  const std::string hard = "q\"uote \\back\tslash \x7f ünïcödé \xff end";
  r.scenarios[0].name = hard;
  r.scenarios[0].params = {{"min", std::numeric_limits<std::int64_t>::min()},
                           {"max", std::numeric_limits<std::int64_t>::max()},
                           {"minus", std::int64_t{-1}},
                           {"tenth", 0.1},
                           {"tiny", 1e-7},
                           {hard, std::string("plain")}};
  const std::string text = to_json_string(r);
  const auto nl = [](const nlohmann::json& v) { return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); };
  for (const std::string& piece :
       {nl(hard), nl(std::numeric_limits<std::int64_t>::min()), nl(std::numeric_limits<std::int64_t>::max()),
        ": " + nl(-1), nl(0.1), nl(1e-7), nl(hard) + ": \"plain\""}) {
    EXPECT_NE(text.find(piece), std::string::npos) << piece;
  }
  // Every value reads back as nlohmann reads it (the invalid byte as U+FFFD).
  const nlohmann::json parsed = nlohmann::json::parse(text);
  EXPECT_EQ(parsed["scenarios"][0]["name"], nlohmann::json::parse(nl(hard)));
  EXPECT_EQ(parsed["scenarios"][0]["parameters"]["min"].get<std::int64_t>(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(parsed["scenarios"][0]["parameters"]["max"].get<std::int64_t>(), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parsed["environment"]["total_memory_bytes"].get<std::uint64_t>(), 150'754'820'096ULL);
}

TEST(ReportJson, WritesTheDocumentedLayoutInOrder) {
  const std::string text = to_json_string(sample_report());
  const auto pos = [&](const std::string& needle) {
    const auto p = text.find(needle);
    EXPECT_NE(p, std::string::npos) << needle;
    return p;
  };
  EXPECT_EQ(text.rfind("{\n  \"schema_version\": 1,\n  \"environment\": {\n    \"device_name\"", 0),
            0U);
  EXPECT_LT(pos("\"environment\""), pos("\"scenarios\""));
  EXPECT_NE(text.find("\"compute_capability\": \"9.0\""), std::string::npos);
  EXPECT_NE(text.find("\"bytes\": 2199023267897"), std::string::npos);
  EXPECT_LT(pos("\"name\": \"alloc_free_chain\""), pos("\"parameters\""));
  EXPECT_LT(pos("\"parameters\""), pos("\"status\": \"ok\""));
  EXPECT_LT(pos("\"counters_after_phase\""), pos("\"launch_costs\""));
  EXPECT_LT(pos("\"launch_costs\""), pos("\"analysis\""));
  EXPECT_LT(pos("\"analysis\""), pos("\"diagnostics\""));
}

TEST(ReportJson, NonFiniteRatioIsWrittenAsNullAndReadBackAsNaN) {
  report r = sample_report();
  r.scenarios[0].analysis.bound_ratio = std::nan("");
  r.scenarios[0].analysis.va_reuse_ratio = INFINITY;
  const std::string text = to_json_string(r);
  EXPECT_NE(text.find("\"bound_ratio\": null"), std::string::npos);
  const report back = from_json_string(text, "memory");
  EXPECT_TRUE(std::isnan(back.scenarios[0].analysis.bound_ratio));
  EXPECT_TRUE(std::isnan(back.scenarios[0].analysis.va_reuse_ratio));
}

TEST(ReportJson, IllTypedFieldIsInvalidAndNamesItsPath) {
  std::string text = to_json_string(sample_report());
  const std::string from = "\"used_high_bytes\": 6291456";
  text.replace(text.find(from), from.size(), "\"used_high_bytes\": \"6291456\"");
  std::string message;
  EXPECT_EQ(error_kind_of([&] { (void)from_json_string(text, "base.json"); }, &message),
            report_error::kind::invalid);
  EXPECT_NE(message.find("base.json"), std::string::npos) << message;
  EXPECT_NE(message.find("scenarios[0].analysis.used_high_bytes"), std::string::npos) << message;
}

TEST(ReportJson, UnknownStatusIsInvalid) {
  std::string text = to_json_string(sample_report());
  const std::string from = "\"status\": \"skipped\"";
  text.replace(text.find(from), from.size(), "\"status\": \"maybe\"");
  std::string message;
  EXPECT_EQ(error_kind_of([&] { (void)from_json_string(text, "x.json"); }, &message),
            report_error::kind::invalid);
  EXPECT_NE(message.find("scenarios[1].status"), std::string::npos) << message;
}

// The advice measured on the driver travels in the report and reads back exactly; a
// scenario without it has none (an optional section).
TEST(ReportJson, MeasuredAdviceRoundTrips) {
  const report r = sample_report();
  const report back = from_json_string(to_json_string(r), "advice.json");
  ASSERT_TRUE(back.scenarios[0].advice.has_value());
  const advice_measurement& a = *back.scenarios[0].advice;
  EXPECT_EQ(a.baseline_bytes, 67'108'864u);
  ASSERT_EQ(a.changes.size(), 2u);
  EXPECT_EQ(a.changes[0].kind, "plan");
  EXPECT_EQ(a.changes[0].added_dependencies, 1u);
  EXPECT_EQ(a.changes[0].predicted_launch_us, 412.5);
  EXPECT_EQ(a.changes[0].predicted_price_us, 206.25);
  EXPECT_EQ(a.critical_path_us, 206.25);
  EXPECT_EQ(a.changes[1].kind, "creation_order");
  EXPECT_EQ(a.changes[1].measured_bytes, 33'554'432u);
  EXPECT_EQ(a.changes[1].saving_bytes, 33'554'432u);
  EXPECT_FALSE(a.changes[1].predicted_price_us.has_value());
  EXPECT_EQ(a.combined.kind, "combined");
  EXPECT_TRUE(a.combined_reaches_order_free_bound);
  ASSERT_EQ(a.tried.size(), 1u);
  EXPECT_EQ(a.tried[0].kind, "auto_free_on_launch");
  EXPECT_EQ(a.tried[0].measured_bytes, 67'108'864u);
  EXPECT_EQ(a.tried[0].saving_bytes, 0u);
  EXPECT_FALSE(back.scenarios[1].advice.has_value());
  // "tried" is optional: a report written before it reads back with none.
  nlohmann::json without = nlohmann::json::parse(to_json_string(r));
  ASSERT_EQ(without["scenarios"][0]["advice"].erase("tried"), 1u);
  const report old = from_json_string(without.dump(), "advice-without-tried.json");
  ASSERT_TRUE(old.scenarios[0].advice.has_value());
  EXPECT_TRUE(old.scenarios[0].advice->tried.empty());

  std::string text = to_json_string(r);
  const std::string from = "\"combined_reaches_order_free_bound\": true";
  text.replace(text.find(from), from.size(), "\"combined_reaches_order_free_bound\": 1");
  std::string message;
  EXPECT_EQ(error_kind_of([&] { (void)from_json_string(text, "advice.json"); }, &message),
            report_error::kind::invalid);
  EXPECT_NE(message.find("scenarios[0].advice.combined_reaches_order_free_bound"), std::string::npos)
      << message;
}

TEST(ReportJson, ComputeCapabilityIsParsedIntoMajorAndMinor) {
  report r = sample_report();
  r.env.cc_major = 12;
  r.env.cc_minor = 1;
  const report back = from_json_string(to_json_string(r), "memory");
  EXPECT_EQ(back.env.cc_major, 12);
  EXPECT_EQ(back.env.cc_minor, 1);
}

TEST_F(ReportFiles, ReadingAMissingFileIsMissingAndNamesIt) {
  const std::string path = (dir_ / "nope.json").string();
  std::string message;
  EXPECT_EQ(error_kind_of([&] { (void)read_report(path); }, &message), report_error::kind::missing);
  EXPECT_NE(message.find(path), std::string::npos) << message;
}

TEST_F(ReportFiles, ReadingADirectoryIsUnreadable) {
  std::string message;
  EXPECT_EQ(error_kind_of([&] { (void)read_report(dir_.string()); }, &message),
            report_error::kind::unreadable);
  EXPECT_NE(message.find(dir_.string()), std::string::npos) << message;
}

TEST_F(ReportFiles, ReadingTextThatIsNotJsonIsNotJson) {
  const fs::path path = dir_ / "log.json";
  spit(path, "[  PASSED  ] 36 tests\n");
  std::string message;
  EXPECT_EQ(error_kind_of([&] { (void)read_report(path.string()); }, &message),
            report_error::kind::not_json);
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
}

TEST_F(ReportFiles, ReadingAnotherSchemaVersionIsWrongSchemaVersion) {
  std::string text = to_json_string(sample_report());
  text.replace(text.find("\"schema_version\": 1"), 19, "\"schema_version\": 2");
  const fs::path path = dir_ / "future.json";
  spit(path, text);
  std::string message;
  EXPECT_EQ(error_kind_of([&] { (void)read_report(path.string()); }, &message),
            report_error::kind::wrong_schema_version);
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("2"), std::string::npos) << message;
}

TEST_F(ReportFiles, ReadingAReportWithoutARequiredFieldIsInvalidAndNamesTheField) {
  std::string text = to_json_string(sample_report());
  const std::string from = "\"granularity_bytes\": 2097152,\n";
  ASSERT_NE(text.find(from), std::string::npos);
  text.erase(text.find(from), from.size());
  const fs::path path = dir_ / "cut.json";
  spit(path, text);
  std::string message;
  EXPECT_EQ(error_kind_of([&] { (void)read_report(path.string()); }, &message),
            report_error::kind::invalid);
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("environment.granularity_bytes is missing"), std::string::npos) << message;
}

TEST_F(ReportFiles, WriteThenReadGivesTheSameReport) {
  const fs::path path = dir_ / "r.json";
  write_report(sample_report(), path.string());
  expect_same_report(sample_report(), read_report(path.string()));
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{"r.json"});  // no temp file left
}

TEST_F(ReportFiles, WriteReplacesAnExistingReportAndLeavesNoTempFile) {
  const fs::path path = dir_ / "r.json";
  spit(path, "old contents");
  report r = sample_report();
  r.env.git_commit = "new";
  write_report(r, path.string());
  EXPECT_EQ(read_report(path.string()).env.git_commit, "new");
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{"r.json"});
}

TEST_F(ReportFiles, WriteWorksForANameNearTheFileNameLimit) {
  const fs::path path = dir_ / (std::string(250, 'r') + ".json");  // 255 bytes
  write_report(sample_report(), path.string());
  EXPECT_EQ(read_report(path.string()).scenarios.size(), 3U);
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{path.filename().string()});
}

TEST_F(ReportFiles, WriteIntoAMissingDirectoryFailsAndLeavesNothing) {
  const fs::path missing = dir_ / "no-such-dir";
  std::string message;
  EXPECT_EQ(error_kind_of([&] { write_report(sample_report(), (missing / "r.json").string()); },
                          &message),
            report_error::kind::unwritable);
  EXPECT_NE(message.find("no-such-dir"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(missing));
  EXPECT_TRUE(names_in(dir_).empty());
}

TEST_F(ReportFiles, FailedWriteLeavesAnExistingReportByteIdentical) {
  const fs::path good = dir_ / "good.json";
  write_report(sample_report(), good.string());
  const std::string before = slurp(good);
  const fs::path target_dir = dir_ / "target.json";  // a directory where the report should go
  fs::create_directory(target_dir);

  report other = sample_report();
  other.env.device_name = "something else";
  EXPECT_EQ(error_kind_of([&] { write_report(other, target_dir.string()); }, nullptr),
            report_error::kind::unwritable);
  // A path that names no file, though it spells the good report's name.
  EXPECT_EQ(error_kind_of([&] { write_report(other, good.string() + "/"); }, nullptr),
            report_error::kind::unwritable);

  EXPECT_EQ(slurp(good), before);
  EXPECT_TRUE(fs::is_directory(target_dir));
  EXPECT_TRUE(fs::is_empty(target_dir));
  EXPECT_EQ(names_in(dir_), (std::vector<std::string>{"good.json", "target.json"}));
}

TEST_F(ReportFiles, CheckWritableAcceptsAWritableDirectoryAndLeavesNoFile) {
  const fs::path path = dir_ / "later.json";
  EXPECT_NO_THROW(check_writable(path.string()));
  EXPECT_TRUE(names_in(dir_).empty());
}

TEST_F(ReportFiles, CheckWritableDoesNotTouchAnExistingReport) {
  const fs::path path = dir_ / "r.json";
  spit(path, "keep me");
  EXPECT_NO_THROW(check_writable(path.string()));
  EXPECT_EQ(slurp(path), "keep me");
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{"r.json"});
}

TEST_F(ReportFiles, CheckWritableRefusesAMissingDirectoryAndADirectoryPath) {
  std::string message;
  EXPECT_EQ(
      error_kind_of([&] { check_writable((dir_ / "missing" / "r.json").string()); }, &message),
      report_error::kind::unwritable);
  EXPECT_NE(message.find("missing"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dir_ / "missing"));
  EXPECT_EQ(error_kind_of([&] { check_writable(dir_.string()); }, nullptr),
            report_error::kind::unwritable);
}

// The report_schema ctest validates this file (and the committed reports) with
// tools/validate_report.py against reports/schema/report.schema.json.
TEST(ReportJson, WritesTheSampleReportForTheSchemaTest) {
  const std::string path = GMEM_BINARY_DIR "/sample-report.json";
  report r = sample_report();
  // One ratio with no value, so that the schema is checked against a null as well.
  r.scenarios[2].analysis.physical_reuse_ratio = std::nan("");
  // The optional section: a skeleton (alloc, free, a late edge) checked against the schema.
  skeleton sk;
  sk.name = "g";
  sk.nodes.resize(3);
  sk.nodes[0].kind = skeleton_kind::alloc;
  sk.nodes[0].bytes = 1 << 20;
  sk.nodes[1].kind = skeleton_kind::free;
  sk.nodes[1].frees = 0;
  sk.nodes[1].deps = {0};
  sk.late_edges = {{1, 2}};
  r.scenarios[0].skeletons.push_back(sk);
  write_report(r, path);
  const report back = read_report(path);
  ASSERT_EQ(back.scenarios.size(), 3U);
  EXPECT_EQ(back.scenarios[0].status, scenario_status::ok);
  EXPECT_EQ(back.scenarios[1].status, scenario_status::skipped);
  EXPECT_EQ(back.scenarios[2].status, scenario_status::error);
  EXPECT_EQ(back.scenarios[0].launch_costs.size(), 2U);
  EXPECT_EQ(back.scenarios[0].diagnostics.size(), 2U);
  ASSERT_EQ(back.scenarios[0].skeletons.size(), 1U);
  EXPECT_EQ(back.scenarios[0].skeletons[0].late_edges, sk.late_edges);
  EXPECT_EQ(back.scenarios[0].skeletons[0].nodes[1].frees, 0U);
}

}  // namespace
}  // namespace gmem::profiler
