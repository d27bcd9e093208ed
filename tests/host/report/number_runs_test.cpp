// Lists of sizes and offsets written with their repeats folded (a model's layers repeat
// their allocations' sizes layer after layer): what is written reads back exactly, folds only
// where the text gets shorter, and a hand-edited list that would expand past what the reader
// expects is refused before it is expanded.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "report/number_runs.hpp"

namespace gmem::profiler {
namespace {

using json = nlohmann::ordered_json;

std::vector<std::uint64_t> repeat(const std::vector<std::uint64_t>& block, std::size_t times) {
  std::vector<std::uint64_t> out;
  for (std::size_t t = 0; t < times; ++t) out.insert(out.end(), block.begin(), block.end());
  return out;
}

TEST(NumberRuns, FourEqualLayersAreOneLayerWrittenFourTimes) {
  // One decoder layer's 27 allocation sizes, as an H100 recording of tests/record/scale/warmup.py
  // --layers 4 gave them for batch 1000 (sizes of one layer repeat inside it too).
  const std::vector<std::uint64_t> layer = {1945600, 7600,    7600,    7600,    1945600, 1945600, 5836800,
                                            1945600, 1945600, 3891200, 3891200, 3891200, 1945600, 1945600,
                                            1945600, 1945600, 1945600, 7600,    7600,    7600,    1945600,
                                            1945600, 10457600, 5228800, 5228800, 1945600, 1945600};
  const std::vector<std::uint64_t> sizes = repeat(layer, 4);
  const json folded = runs_of(sizes);
  ASSERT_EQ(folded.size(), 1u) << folded.dump();
  ASSERT_TRUE(folded[0].is_array());
  EXPECT_EQ(folded[0][1], 4);
  EXPECT_LT(folded.dump().size() * 3, json(sizes).dump().size()) << folded.dump();
  EXPECT_EQ(values_of_runs(folded, sizes.size(), "bytes"), sizes);
}

TEST(NumberRuns, AListWithoutRepeatsIsWrittenPlainAndShortRepeatsAreLeftPlain) {
  const std::vector<std::uint64_t> distinct = {0, 1024, 4096, 512, 7680, 9728};
  EXPECT_EQ(runs_of(distinct), json(distinct));
  // [[4], 3] is longer than 4, 4, 4: folding must shorten the text.
  const std::vector<std::uint64_t> small = {4, 4, 4, 9};
  EXPECT_EQ(runs_of(small), json(small));
  const std::vector<std::uint64_t> none;
  EXPECT_EQ(runs_of(none), json::array());
  EXPECT_TRUE(values_of_runs(json::array(), 0, "x").empty());
}

TEST(NumberRuns, RandomListsWithRepeatsReadBackExactly) {
  std::mt19937_64 random(35);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::uint64_t> values;
    const std::size_t parts = 1 + random() % 8;
    for (std::size_t p = 0; p < parts; ++p) {
      std::vector<std::uint64_t> block(1 + random() % 12);
      for (auto& v : block) v = (random() % 4 == 0) ? random() : 512 * (1 + random() % 6);
      const std::vector<std::uint64_t> run = repeat(block, 1 + random() % 5);
      values.insert(values.end(), run.begin(), run.end());
    }
    const json folded = runs_of(values);
    EXPECT_LE(folded.dump().size(), json(values).dump().size());
    ASSERT_EQ(values_of_runs(folded, values.size(), "x"), values) << folded.dump();
    // Read back from its text, as a report is.
    ASSERT_EQ(values_of_runs(json::parse(folded.dump()), values.size(), "x"), values);
  }
}

TEST(NumberRuns, LongListsWithAndWithoutRepeatsReadBack) {
  // 200,000 values of one repeating block, and as many with no repeat (where the search for
  // repeats stops at its bound on work): both read back.
  std::vector<std::uint64_t> periodic = repeat({1, 22, 333, 4444, 55555}, 40000);
  EXPECT_EQ(values_of_runs(runs_of(periodic), periodic.size(), "x"), periodic);
  std::mt19937_64 random(1);
  std::vector<std::uint64_t> noise(200000);
  for (auto& v : noise) v = random() % 64;
  EXPECT_EQ(values_of_runs(runs_of(noise), noise.size(), "x"), noise);
}

TEST(NumberRuns, AListThatIsNotOneIsRefusedWithWhatIsWrong) {
  const auto refused = [](const std::string& text, std::size_t expected, const std::string& says) {
    try {
      (void)values_of_runs(json::parse(text), expected, "sizes");
      ADD_FAILURE() << "accepted " << text;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused(R"({"a": 1})", 1, "sizes must be an array of unsigned integers and [[...], times] repeats");
  refused(R"([1, "2"])", 2, "sizes[1] must be an unsigned integer or a repeat [[values...], times]");
  refused(R"([[[1], 1]])", 1, "sizes[0][1] must be 2 or more");
  refused(R"([[[], 3]])", 0, "sizes[0] must be an unsigned integer or a repeat");
  refused(R"([[[1, 2], 3]])", 5, "sizes[0] repeats past the 5 values expected");
  refused(R"([[[[[1], 1000000], 1000000], 1000000]])", 100, "repeats past the 100 values expected");
  refused(R"([1, 2])", 3, "sizes holds 2 values, 3 expected");
  refused(R"([1, 2, 3])", 2, "sizes holds more than the 2 values expected");
}

}  // namespace
}  // namespace gmem::profiler
