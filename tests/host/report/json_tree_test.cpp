// parse_json_tree (profiler/report/json_tree.hpp) reads reports in place of json::parse, whose
// objects copy every member they hold each time they grow: it must give the same tree,
// member order and all, and refuse what json::parse refuses with the same exception and message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "gmem/profiler/parallel_for.hpp"
#include "report/json_tree.hpp"

namespace gmem::profiler {
namespace {

using json = nlohmann::ordered_json;

void expect_same_tree(const std::string& text) {
  const json want = json::parse(text);
  const json got = parse_json_tree(text);
  EXPECT_EQ(got, want) << text;
  EXPECT_EQ(got.dump(), want.dump()) << "member order: " << text;
}

TEST(JsonTree, GivesTheTreeJsonParseGivesMemberOrderIncluded) {
  for (const char* text : {
           "null", "true", "0", "-7", "18446744073709551615", "1.5e300", "\"\\u00e9\\ud83d\\ude00\"", "[]", "{}",
           R"({"z": 1, "a": [1, {"y": null, "b": false}], "m": {"k": [[], {}, [[{}]]]}})",
           R"([{"t_us": 71.065, "device": 0, "event": "trim", "graph": "", "counters": [0, 0, 0, 67108864]}])",
           // A key said twice keeps its first place and takes its last value, as json::parse does.
           R"({"a": 1, "b": 2, "a": {"c": 3}, "d": 4})",
       }) {
    expect_same_tree(text);
  }
}

TEST(JsonTree, GivesTheTreeJsonParseGivesForObjectsOfManyMembersAndDeepNesting) {
  // Objects of 1 to 40 members (each growth of json::parse's vector), holding arrays and objects.
  std::mt19937 rng(7);
  for (int n = 1; n <= 40; ++n) {
    json o = json::object();
    for (int k = 0; k < n; ++k) {
      const std::string key = "k" + std::to_string((k * 7919 + n) % 97);
      o[key] = k % 3 == 0 ? json::array({k, std::to_string(k), json::object({{"x", k}})}) : json(rng() % 1000);
    }
    expect_same_tree(o.dump());
  }
  std::string deep;
  for (int d = 0; d < 2000; ++d) deep += d % 2 ? "[" : "{\"k\":";
  deep += "1";
  for (int d = 2000; d-- > 0;) deep += d % 2 ? "]" : "}";
  expect_same_tree(deep);
}

TEST(JsonTree, RefusesWhatJsonParseRefusesWithItsExceptionAndMessage) {
  for (const char* text : {"", "{", "[1,]", "{\"a\" 1}", "{\"a\": 1} x", "nul", "\"\\x\"", "1e999", "-1e999",
                           "[1e400]", "{\"a\": [1, 2}"}) {
    std::string want, got;
    int want_id = 0, got_id = 0;
    try {
      (void)json::parse(text);
    } catch (const json::exception& e) {
      want = e.what();
      want_id = e.id;
    }
    try {
      (void)parse_json_tree(text);
    } catch (const json::exception& e) {
      got = e.what();
      got_id = e.id;
    }
    ASSERT_FALSE(want.empty()) << "json::parse accepted " << text;
    EXPECT_EQ(got, want) << text;
    EXPECT_EQ(got_id, want_id) << text;
  }
}

// A recording's shape: scenarios, graphs with events, calls as rows; strings that hold what the
// split looks for (brackets, commas, quotes, backslashes).
json recording_like(std::mt19937& rng, int graphs) {
  const char* odd[] = {"a]b", "c,d", "e\"f", "g\\", "[h", "{i}", "\u00e9", "j\\\"k,]"};
  json scenarios = json::array(), recorded_graphs = json::array(), rows = json::array();
  for (int g = 0; g < graphs; ++g) {
    scenarios.push_back({{"name", std::string("graph ") + odd[rng() % 8] + std::to_string(g)},
                         {"params", {{"nodes", rng() % 500}, {"tags", json::array({odd[rng() % 8], g})}}}});
    json events = json::array();
    for (int e = 0; e < 1 + static_cast<int>(rng() % 6); ++e) events.push_back(json::array({e * 1.5, "launch", rng() % 3, nullptr}));
    recorded_graphs.push_back({{"name", std::to_string(g)}, {"events", std::move(events)}, {"empty", json::array()}});
    rows.push_back(json::array({g, odd[rng() % 8], rng() % 1000, true}));
  }
  return {{"schema_version", 9},
          {"scenarios", std::move(scenarios)},
          {"recorded", {{"graphs", std::move(recorded_graphs)}, {"sequence", {{"rows", std::move(rows)}}}, {"tail", "]"}}}};
}

// parse_json_tree(text, each) against json::parse(text): the same tree or the same error.
void expect_same_in_pieces(const std::string& text, std::size_t split_from, std::size_t* pieces) {
  std::string want_error, got_error;
  json want, got;
  try {
    want = json::parse(text);
  } catch (const json::exception& e) {
    want_error = e.what();
  }
  try {
    got = parse_json_tree(text, on_threads(4), split_from, pieces);
  } catch (const json::exception& e) {
    got_error = e.what();
  }
  EXPECT_EQ(got_error, want_error);
  if (want_error.empty()) {
    EXPECT_EQ(got.dump(), want.dump());
  }
}

TEST(JsonTree, GivesTheTreeJsonParseGivesWhenItsLargeArraysAreParsedInPieces) {
  std::mt19937 rng(11);
  for (const int graphs : {16, 40, 300}) {
    for (const int indent : {-1, 2}) {
      const std::string text = recording_like(rng, graphs).dump(indent);
      std::size_t pieces = 0;
      expect_same_in_pieces(text, 512, &pieces);
      EXPECT_GT(pieces, 2u) << "the large arrays were not split: " << graphs << " graphs";
    }
  }
  // Smaller than the threshold, or with no array of 16 elements: parsed whole.
  std::size_t pieces = 7;
  expect_same_in_pieces(recording_like(rng, 300).dump(), std::size_t{1} << 30, &pieces);
  EXPECT_EQ(pieces, 0u);
  expect_same_in_pieces(json{{"a", std::string(5000, 'x')}, {"b", json::array({1, 2, 3})}}.dump(), 64, &pieces);
  EXPECT_EQ(pieces, 0u);
  // An escaped NUL anywhere (it could pose as the split's own marker): parsed whole.
  json with_nul = recording_like(rng, 100);
  with_nul["scenarios"][3]["name"] = std::string("a\0gmem-split-0", 15);
  with_nul["scenarios"][4]["params"]["tags"] = json::array({std::string("\0gmem-split-1", 13)});
  expect_same_in_pieces(with_nul.dump(), 512, &pieces);
  EXPECT_EQ(pieces, 0u);
}

TEST(JsonTree, PiecesGiveJsonParsesTreeWhereAKeyIsSaidTwice) {
  std::mt19937 rng(5);
  const std::string big = recording_like(rng, 60)["scenarios"].dump();
  for (const std::string& text : {"{\"a\": " + big + ", \"b\": 1, \"a\": " + big + "}",
                                  "{\"a\": " + big + ", \"a\": 2}", "{\"a\": 2, \"a\": " + big + "}",
                                  "[{\"k\": " + big + ", \"k\": {\"x\": " + big + "}}]"}) {
    std::size_t pieces = 0;
    expect_same_in_pieces(text, 512, &pieces);
  }
}

TEST(JsonTree, PiecesRefuseWhatJsonParseRefusesWithItsMessage) {
  // Each mutation of a split text: an element emptied, a separator dropped or doubled, a bracket
  // or quote removed, a byte changed; json::parse's error (byte offset included) or its tree.
  std::mt19937 rng(23);
  const std::string text = recording_like(rng, 120).dump();
  std::size_t pieces = 0;
  expect_same_in_pieces(text, 512, &pieces);
  ASSERT_GT(pieces, 2u);
  const char bytes[] = {',', ']', '[', '}', '{', '"', '\\', ' ', 'x', '1', ':'};
  int refused = 0;
  for (int m = 0; m < 400; ++m) {
    std::string t = text;
    const std::size_t at = rng() % t.size();
    switch (m % 3) {
      case 0: t.erase(at, 1); break;
      case 1: t.insert(at, 1, bytes[rng() % sizeof bytes]); break;
      default: t[at] = bytes[rng() % sizeof bytes]; break;
    }
    try {
      const json parsed = json::parse(t);
      (void)parsed;
    } catch (const json::exception&) {
      ++refused;
    }
    expect_same_in_pieces(t, 512, &pieces);
  }
  EXPECT_GT(refused, 200) << "the mutations should mostly break the text";
  // At a run's edge: "[a,,b]" and "[a,]" where a run would begin or end.
  for (const std::string& bad : {std::string("[1,,") + text + "]", "{\"s\": [" + std::string(40, '1') + ",,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}"}) {
    expect_same_in_pieces(bad, 16, &pieces);
  }
}

TEST(JsonTree, AnObjectWithRoomTakesThatManyMembersWithoutGrowing) {
  json o = object_with_room(24);
  const auto* first = &o.get_ref<json::object_t&>();
  const std::size_t capacity = o.get_ref<json::object_t&>().capacity();
  EXPECT_GE(capacity, 24u);
  for (int k = 0; k < 24; ++k) o["m" + std::to_string(k)] = k;
  EXPECT_EQ(&o.get_ref<json::object_t&>(), first);
  EXPECT_EQ(o.get_ref<json::object_t&>().capacity(), capacity) << "the members' vector grew";
  EXPECT_EQ(o.size(), 24u);
}

}  // namespace
}  // namespace gmem::profiler
