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
