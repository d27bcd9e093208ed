// `gmemprof show` of the committed recordings of real engines (reports/record/engines-h100-*:
// GPT-2 under torch.compile's reduce-overhead at four batch sizes, a Llama generate() with a
// static cache at two; recorded on an H100): the first screen answers, within 40 lines of 100
// columns, what each graph and the whole set cost, with names a user knows, and nothing of how
// the recording was made.

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "gmem/profiler/report_io.hpp"
#include "views/show.hpp"

namespace gmem::profiler {
namespace {

namespace fs = std::filesystem;

std::string first_screen(const char* name, bool all = false) {
  const report r = read_report((fs::path(GMEM_SOURCE_DIR) / "reports" / "record" / "engines-h100-fa4450a" / name).string());
  show_options o;
  o.all = all;
  o.source = name;
  return format_report(r, o);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(ShowRecordings, TheFirstScreenOfEachCommittedEngineRecordingAnswers) {
  struct expected {
    const char* file;
    const char* command;
    const char* site;
    std::vector<std::string> rows;  // the cost table's rows, in order (name, cost, growth, ...)
    const char* total;
  };
  const std::vector<expected> cases = {
      {"gpt2_compile.json", "recording of `python3 gpt2_compile.py gpt2_compile-self.json`",
       "the graphs by what they cost the device, all made at gpt2_compile.py:26 in <module>:",
       {"  'GPT2LMHeadModel.forward, batch 16, sequence 256'   460 MiB     +460 MiB         2    128.5 us",
        "  'GPT2LMHeadModel.forward, batch 1, sequence 256'   4.00 MiB    +4.00 MiB         2     84.8 us",
        "  'GPT2LMHeadModel.forward, batch 8, sequence 256'   2.00 MiB    +2.00 MiB         2     93.3 us",
        "  'GPT2LMHeadModel.forward, batch 4, sequence 256'        0 B          0 B         2     82.7 us",
        "  'GPT2LMHeadModel.forward'                               0 B          0 B         0       never"},
       "  graph memory in all      530 MiB at the end and at each kind's peak"},
      {"hf_generate.json", "recording of `python3 hf_generate.py hf_generate-self.json`",
       "the graphs by what they cost the device, all made at hf_generate.py:26 in <module>:",
       {"  'LlamaForCausalLM.forward, batch 1, sequence 1'  84.0 MiB    +84.0 MiB        10     73.3 us",
        "  'LlamaForCausalLM.forward, batch 2, sequence 1'       0 B          0 B        10     75.7 us",
        "  'LlamaForCausalLM.forward'                            0 B          0 B         0       never"},
       "  graph memory in all"},
  };
  for (const expected& e : cases) {
    const std::string text = first_screen(e.file);
    const std::vector<std::string> lines = lines_of(text);
    EXPECT_LE(lines.size(), 40u) << text;
    for (const std::string& l : lines) EXPECT_LE(l.size(), 100u) << l;
    EXPECT_EQ(lines.at(0).rfind(e.command, 0), 0u) << text;
    EXPECT_NE(lines.at(1).find("(1 never launched)"), std::string::npos) << text;
    // How the recording was made is --all's: the hook, the merge.
    EXPECT_EQ(text.find("note:"), std::string::npos) << text;
    EXPECT_NE(text.find(e.total), std::string::npos) << text;
    const std::size_t site = text.find(e.site);
    ASSERT_NE(site, std::string::npos) << text;
    std::size_t at = text.find('\n', text.find('\n', site) + 1) + 1;  // past the heading and the columns
    for (const std::string& row : e.rows) {
      EXPECT_EQ(text.compare(at, row.size(), row), 0) << "expected " << row << "\n" << text;
      at = text.find('\n', at) + 1;
    }
    EXPECT_EQ(text.compare(at, 7, "  cost:"), 0) << text;
    // --all has the rest: the notes, each graph, the environment.
    const std::string all = first_screen(e.file, true);
    EXPECT_NE(all.find("note: p1: driver calls were taken by gmem's own interception"), std::string::npos);
    EXPECT_NE(all.find("driver              13.0 (13000), release 580.159.04"), std::string::npos);
    EXPECT_GT(lines_of(all).size(), lines.size() + 20);
  }
}

// The recordings made through a pip install on an H100 (and two ranks on two H200s): each first
// screen answers within 40 lines of 100 columns, the bill's total and the graphs by cost, names
// as the user gave them, nothing of how the recording was made.
TEST(ShowRecordings, EachFirstScreenOfThePipInstalledRecordingsAnswers) {
  struct expected {
    const char* file;
    const char* total;
    const char* first_graph;  // the costliest graph's row
  };
  const std::vector<expected> cases = {
      {"gpt2_compile.json", "  graph memory in all      530 MiB",
       "  'GPT2LMHeadModel.forward, batch 16, sequence 256'   460 MiB     +460 MiB"},
      {"serving-native.json", "  graph memory in all      806 MiB at the end and at each kind's peak",
       "  'batch 256'   800 MiB     +800 MiB           -        27     35.0 us"},
      {"serving-async.json", "  graph memory in all      1.16 GiB", "  'batch 256'"},
      {"tp-native.json", "  rank 0   0              34.0 MiB   2.00 MiB          0 B      36.0 MiB", "  '[rank 0] tp_worker.py:85 in <module>'"},
  };
  for (const expected& e : cases) {
    const report r = read_report((fs::path(GMEM_SOURCE_DIR) / "reports" / "views" / "first-screen-pip-h100" / e.file).string());
    show_options o;
    o.source = e.file;
    const std::string text = format_report(r, o);
    const std::vector<std::string> lines = lines_of(text);
    EXPECT_LE(lines.size(), 40u) << text;
    for (const std::string& l : lines) EXPECT_LE(l.size(), 100u) << l;
    EXPECT_NE(text.find(e.total), std::string::npos) << e.file << "\n" << text;
    const std::size_t table = text.find("the graphs by what they cost the device");
    ASSERT_NE(table, std::string::npos) << text;
    const std::size_t row = text.find('\n', text.find('\n', table) + 1) + 1;  // past the heading and columns
    EXPECT_EQ(text.compare(row, std::string(e.first_graph).size(), e.first_graph), 0) << e.file << "\n" << text;
    EXPECT_EQ(text.find("note:"), std::string::npos) << text;
    EXPECT_EQ(text.find(" 0 B retained"), std::string::npos) << text;  // no kind of zeros
  }
}

// A merged recording's side file of a process that made no CUDA call on a device (torch.compile's
// compile workers): said so, not "an unknown device" with a granularity of 0 B.
TEST(ShowRecordings, AProcessThatUsedNoDeviceSaysSo) {
  report r;
  r.recorded = recording{};
  r.recorded->command = "python3 gpt2_compile.py";
  r.recorded->pid = 2670;
  const std::string text = format_report(r, show_options{});
  EXPECT_EQ(lines_of(text).at(0), "recording of `python3 gpt2_compile.py` (pid 2670), a process that used no CUDA device") << text;
  EXPECT_EQ(text.find("unknown device"), std::string::npos) << text;
  show_options all;
  all.all = true;
  EXPECT_EQ(format_report(r, all).find("granularity         0 B"), std::string::npos) << format_report(r, all);
}

}  // namespace
}  // namespace gmem::profiler
