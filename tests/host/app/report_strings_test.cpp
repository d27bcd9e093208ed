// Strings in a report are input from elsewhere: graph names, NVTX ranges, stack
// frames, device names and command lines come from other people's programs and files. When a
// report is read, every string (and key) is made printable: C0 controls, DEL and the C1 controls
// become visible escapes (`\x1b`, `\u009b`), so nothing a report holds can move a terminal's
// cursor, clear it or ring it, and the same text reads the same from then on.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gmemprof/commands.hpp"
#include "gmem/profiler/report.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gmemprof/record_command.hpp"
#include "record/recording_summary.hpp"
#include "views/show.hpp"

namespace gmem::profiler {
namespace {

namespace fs = std::filesystem;

// What a hostile or careless program can put in a name: a newline, BEL, and "clear the screen".
const std::string dirty = "a\nb\x07\x1b[2J";
const std::string dirty_read = "a\\x0ab\\x07\\x1b[2J";  // as every view shows it

// The first byte of `text` that would control a terminal (a C0 control, DEL, or the UTF-8 of a
// C1 control), described, or "" when there is none; `newlines` allows '\n' (a view's layout).
std::string control_in(const std::string& text, bool newlines = false) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const bool c1 = c == 0xC2 && i + 1 < text.size() &&
                    static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[i + 1]) <= 0x9F;
    if ((c < 0x20 && !(newlines && c == '\n')) || c == 0x7F || c1) {
      return "byte " + std::to_string(static_cast<int>(c)) + " at " + std::to_string(i) + " in \"" +
             text.substr(i > 40 ? i - 40 : 0, 80) + "\"";
    }
  }
  return "";
}

// Every string and key of a JSON document.
void strings_of(const nlohmann::json& j, std::vector<std::string>& out) {
  if (j.is_string()) out.push_back(j.get<std::string>());
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      out.push_back(k);
      strings_of(v, out);
    }
  }
  if (j.is_array()) {
    for (const auto& v : j) strings_of(v, out);
  }
}

// A recording whose every string field holds control characters.
report dirty_report() {
  report r;
  r.env.device_name = "NVIDIA H100\x1b]0;owned\x07";
  r.env.driver_release = "580\r";
  r.env.granularity_bytes = 2 << 20;
  r.env.granularity_method = "method\t1";
  r.env.tool_version = "gmem\x7f";
  r.env.git_commit = "abc\x1b[1m";
  r.env.command_line = "python3 x.py\n--flag";
  r.env.date = std::string("2026-11-22") + '\0' + "Z";
  r.env.cc_major = 9;

  scenario_result s;
  s.name = dirty;
  s.params = {{"mode\x1b[2J", std::string("fast\x07")}, {"bytes", std::int64_t{1} << 20}};
  s.status_message = "ok\xc2\x9b" "31m";  // CSI as one UTF-8 character (U+009B)
  launch_cost c;
  c.phase = "first_launch\n";
  c.host = {1, 5.0, 5.0, 5.0};
  s.launch_costs = {c};
  s.counters_after_phase = {{"steady\x1b", {0, 0, 0, 0}}};
  s.diagnostics = {{"code\x07", "warning", "message\nline two", 0}};
  r.scenarios = {s};

  recording rec;
  rec.partial = true;
  rec.partial_reason = "killed\x1b[2J";
  rec.command = "python3\nserve.py";
  rec.notes = {"note\x07", "note\x1b[31mred"};
  recorded_graph g;
  g.name = dirty;
  g.identity = "id\x1b";
  g.nvtx = "range\x1b[2J";
  g.stream = "stream\t2";
  g.instantiate_stack = {"frame\x1b[2J", "main\n"};
  g.own_footprint_method = "model\x07";
  recorded_event e;
  e.kind = "launch\x1b";
  e.cls = "first_launch\x07";
  e.stream = "stream\r2";
  e.result = "CUDA_ERROR\x1b";
  g.events = {e};
  rec.graphs = {g};
  recorded_pool p;
  p.process = "proc\x1b";
  p.high_graph = dirty;
  p.high_event = "launch\x1b[2J";
  p.attribution = {{dirty, "held\x07", 1}};
  p.diagnostics = {{"remap\x1b", "warning\x07", "pool\nmessage", 0}};
  p.timeline = {{0, dirty, "capture\x1b", 0, 0}};
  rec.pools = {p};
  recording::point t;
  t.event = "launch\x1b";
  t.graph = dirty;
  rec.timeline = {t};
  sequence_step st;
  st.op = "launch\x07";
  st.graph = 0;
  st.stream = "stream\x1b";
  rec.sequence = {st};
  recorded_process child;
  child.pid = 42;
  child.command = "child\n";
  child.report = "out\x1b.json";
  child.graphs = 1;
  rec.processes = {child};
  r.recorded = rec;
  return r;
}

TEST(ReportStrings, EveryStringOfAReadReportIsFreeOfControlCharacters) {
  const std::string written = to_json_string(dirty_report());
  ASSERT_FALSE(control_in(nlohmann::json::parse(written).dump(-1, ' ', false,
                                                              nlohmann::json::error_handler_t::replace))
                   .empty());
  const report back = from_json_string(written, "dirty.json");
  std::vector<std::string> all;
  strings_of(nlohmann::json::parse(to_json_string(back)), all);
  ASSERT_GT(all.size(), 60u);
  for (const auto& s : all) EXPECT_EQ(control_in(s), "") << s;
  EXPECT_EQ(back.scenarios[0].name, dirty_read);
  ASSERT_TRUE(back.recorded);
  EXPECT_EQ(back.recorded->graphs[0].name, dirty_read);
  EXPECT_EQ(back.recorded->graphs[0].instantiate_stack[0], "frame\\x1b[2J");
  EXPECT_EQ(back.recorded->partial_reason, "killed\\x1b[2J");
  EXPECT_EQ(back.recorded->notes[1], "note\\x1b[31mred");
  EXPECT_EQ(back.env.device_name, "NVIDIA H100\\x1b]0;owned\\x07");
  EXPECT_EQ(back.env.date, "2026-11-22\\x00Z");
  EXPECT_EQ(back.env.tool_version, "gmem\\x7f");
  EXPECT_EQ(back.env.granularity_method, "method\\x091");  // tabs too: views do their own layout
  EXPECT_EQ(back.scenarios[0].status_message, "ok\\u009b31m");
  EXPECT_EQ(back.scenarios[0].params[0].first, "mode\\x1b[2J");
  EXPECT_EQ(std::get<std::string>(back.scenarios[0].params[0].second), "fast\\x07");
}

TEST(ReportStrings, PrintableTextIncludingNonAsciiIsReadUnchanged) {
  report r = dirty_report();
  r.recorded.reset();
  r.scenarios[0] = scenario_result{};
  r.scenarios[0].name = "größe_€_\xe2\x80\x94_\xf0\x9f\x9a\x80 [x] {y} \\x1b \"q\"";  // U+00A0 and up are text
  r.env.device_name = "NVIDIA\xc2\xa0H100";  // NO-BREAK SPACE, the first character after C1
  r.env.date = r.env.command_line = r.env.driver_release = r.env.tool_version = r.env.git_commit =
      r.env.granularity_method = "x";
  const std::string text = to_json_string(r);
  EXPECT_EQ(to_json_string(from_json_string(text, "clean.json")), text);
}

// write, read, write, read: the first read escapes, every later one changes nothing.
TEST(ReportStrings, AReadReportWrittenAndReadAgainIsTheSame) {
  const report once = from_json_string(to_json_string(dirty_report()), "dirty.json");
  const std::string text = to_json_string(once);
  const report twice = from_json_string(text, "written.json");
  EXPECT_EQ(to_json_string(twice), text);
  EXPECT_EQ(twice.recorded->graphs[0].name, once.recorded->graphs[0].name);
}

TEST(ReportStrings, TwoKeysThatReadTheSameOnceEscapedAreRefused) {
  std::string text = to_json_string(dirty_report());
  const std::string key = "\"mode\\u001b[2J\"";
  ASSERT_NE(text.find(key), std::string::npos);
  text.insert(text.find(key), "\"mode\\\\x1b[2J\": 1, ");
  try {
    (void)from_json_string(text, "twice.json");
    ADD_FAILURE() << "accepted";
  } catch (const report_error& e) {
    EXPECT_EQ(e.error_kind(), report_error::kind::invalid);
    const std::string m = e.what();
    EXPECT_NE(m.find("scenarios[0].parameters has two keys that read \"mode\\x1b[2J\""), std::string::npos) << m;
    EXPECT_EQ(control_in(m), "") << m;
  }
}

// nlohmann's own message quotes what it read last: raw there, escaped in ours.
TEST(ReportStrings, TextThatIsNotJsonIsRefusedWithoutEchoingItsControlCharacters) {
  for (const std::string& text : {std::string("{\"a\": \"\xc2\x9b" "2J"),  // CSI, then the end
                                 std::string("{\"a\": \x1b[2J}"), std::string("{\"a\": \"\xff\x1b\"}")}) {
    try {
      (void)from_json_string(text, "broken.json");
      ADD_FAILURE() << "accepted";
    } catch (const report_error& e) {
      EXPECT_EQ(e.error_kind(), report_error::kind::not_json);
      EXPECT_EQ(control_in(e.what()), "") << e.what();
    }
  }
}

// The commands print what they read: no control character reaches the terminal.
class ReportStringsOnTheCommandLine : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gmem-strings-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const report& r, const char* name) {
    const std::string path = (dir_ / name).string();
    write_report(r, path);
    return path;
  }

  fs::path dir_;
};

TEST_F(ReportStringsOnTheCommandLine, ShowPrintsNoControlCharacters) {
  const std::string path = write(dirty_report(), "dirty.json");
  std::ostringstream out, err;
  ASSERT_EQ(run_show(path, show_options{}, "text", out, err), 0) << err.str();
  EXPECT_EQ(control_in(out.str(), true), "");
  EXPECT_NE(out.str().find(dirty_read), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("PARTIAL: killed\\x1b[2J"), std::string::npos) << out.str();
}

TEST_F(ReportStringsOnTheCommandLine, RecordsSummaryPrintsNoControlCharacters) {
  const std::string path = write(dirty_report(), "dirty.json");
  const std::vector<std::string> lines = record::summarize_recording(path);
  ASSERT_GT(lines.size(), 2u);
  for (const auto& line : lines) EXPECT_EQ(control_in(line), "") << line;
}

// Both reports are read the same way, so names still match: the scenario is compared, not lost.
TEST_F(ReportStringsOnTheCommandLine, CheckMatchesEscapedNamesAndPrintsNoControlCharacters) {
  report r = dirty_report();
  r.recorded.reset();
  const std::string base = write(r, "base.json");
  const std::string current = write(r, "current.json");
  std::ostringstream out, err;
  EXPECT_EQ(run_check(base, current, tolerances{}, out, err, /*all=*/true), 0) << out.str() << err.str();
  EXPECT_EQ(control_in(out.str(), true), "");
  EXPECT_NE(out.str().find(dirty_read), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("6 pass, 0 regression, 0 improvement, 0 unstable, 0 missing"), std::string::npos)
      << out.str();

  r.env.device_name = "Other GPU\x1b[2J";
  const std::string other = write(r, "other.json");
  std::ostringstream out2, err2;
  EXPECT_EQ(run_check(base, other, tolerances{}, out2, err2), 2);
  EXPECT_EQ(control_in(out2.str() + err2.str(), true), "");
  EXPECT_NE(err2.str().find("Other GPU\\x1b[2J"), std::string::npos) << err2.str();
}

}  // namespace
}  // namespace gmem::profiler
