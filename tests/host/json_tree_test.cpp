// parse_json_tree (profiler/report/json_tree.hpp) reads reports in place of json::parse, whose
// objects copy every member they hold each time they grow (issue 35): it must give the same tree,
// member order and all, and refuse what json::parse refuses with the same exception and message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

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
