// The text layout of the terminal views (views/text_layout.hpp) on its own: natural name order,
// wrapping within a width with names kept whole, "a, b and N more" lists, clipping.

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "views/text_layout.hpp"

namespace gmem::profiler {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(TextLayout, NaturalOrderComparesDigitRunsAsNumbers) {
  std::vector<std::string> names = {"#10", "#1", "#100", "#2", "#1000", "#101", "b", "a10", "a9", "a09"};
  std::sort(names.begin(), names.end(), natural_less);
  EXPECT_EQ(names, (std::vector<std::string>{"#1", "#2", "#10", "#100", "#101", "#1000", "a9", "a09", "a10", "b"}));
  EXPECT_FALSE(natural_less("x1", "x1"));
  EXPECT_TRUE(natural_less("x", "x1"));
  EXPECT_FALSE(natural_less("x1", "x"));
}

TEST(TextLayout, WrapKeepsLinesWithinTheWidthAndNamesWhole) {
  const std::string text = "one two three " + listed({"decode bs=1", "decode bs=2", "c"}, 2, true) +
                           " and a word " + std::string(30, 'x');
  const std::string wrapped = wrap(text, "> ", "  ", 24);
  for (const auto& line : lines_of(wrapped)) {
    EXPECT_TRUE(line.size() <= 24 || line.find(' ', 2) == std::string::npos) << line;
    EXPECT_EQ(line.find('\x1f'), std::string::npos);
  }
  EXPECT_NE(wrapped.find("'decode bs=1',"), std::string::npos) << wrapped;
  EXPECT_NE(wrapped.find("'decode bs=2'"), std::string::npos) << wrapped;
  EXPECT_EQ(wrapped.rfind("> one two three", 0), 0u) << wrapped;
  // Spaces as written stay where no break falls.
  EXPECT_EQ(wrap("key  ok", "", ""), "key  ok\n");
  EXPECT_EQ(listed({"a", "b", "c", "d"}, 2), "'a', 'b' and 2 more");
  EXPECT_EQ(listed({"a", "b"}, 5), "'a' and 'b'");
  EXPECT_EQ(clip("abcdefgh", 6), "abc...");
}

}  // namespace
}  // namespace gmem::profiler

namespace gmem::profiler {
namespace {

// Names of one site differ at their ends ("(2)", "batch 8"): a cut keeps the start and the end.
TEST(TextLayout, ANameCutInTheMiddleKeepsWhatTellsGraphsOfOneSiteApart) {
  const std::string a = "'[rank 0] tp_worker.py:85 in <module> (2)'", b = "'[rank 0] tp_worker.py:85 in <module> (3)'";
  EXPECT_EQ(clip_middle(a, a.size()), a);
  const std::string ca = clip_middle(a, 24), cb = clip_middle(b, 24);
  EXPECT_EQ(ca.size(), 24u);
  const std::size_t cut = ca.find("...");
  ASSERT_NE(cut, std::string::npos);
  EXPECT_EQ(ca.substr(0, cut), a.substr(0, cut));  // the start, then the longer end
  EXPECT_GT(ca.size() - cut - 3, cut);
  EXPECT_EQ(ca.substr(ca.size() - 13), "<module> (2)'");
  EXPECT_NE(ca, cb);
  EXPECT_NE(ca.find("..."), std::string::npos);
}

// The name column takes what the other columns leave of the width, and no more cut than that.
TEST(TextLayout, TheFirstColumnIsCutOnlyAsFarAsTheTableNeeds) {
  std::vector<std::vector<std::string>> rows = {{"graph", "cost"}, {std::string(150, 'x') + "end", "1.00 MiB"}};
  fit_first_column(rows, 2, 100);
  EXPECT_EQ(rows[1][0].size(), 100u - 2 - (8 + 2));
  EXPECT_EQ(rows[1][0].substr(rows[1][0].size() - 3), "end");
  std::istringstream lines(table(rows, "  ", "lr"));
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
  std::vector<std::vector<std::string>> short_rows = {{"graph", "cost"}, {"'g'", "1.00 MiB"}};
  fit_first_column(short_rows, 2, 100);
  EXPECT_EQ(short_rows[1][0], "'g'");
}

// A merged recording's pid is left out of a table where no other process carries the label.
TEST(TextLayout, APidIsShownOnlyWhereTwoProcessesShareALabel) {
  const std::vector<std::string> names = {"[rank 0 pid 7] a.py:1 in f", "[rank 1 pid 8] a.py:1 in f",
                                          "[p1 pid 9] b.py:2 in g", "[p1 pid 10] b.py:2 in g", "plain"};
  const std::set<std::string> shared = labels_of_several_processes(names);
  EXPECT_EQ(shared, (std::set<std::string>{"p1"}));
  EXPECT_EQ(without_lone_pid(names[0], shared), "[rank 0] a.py:1 in f");
  EXPECT_EQ(without_lone_pid(names[2], shared), names[2]);
  EXPECT_EQ(without_lone_pid("plain", shared), "plain");
}

}  // namespace
}  // namespace gmem::profiler
