// `gmemprof show` of recordings of many graphs (synthetic_recordings.hpp, the shapes of the
// recordings made on an H100 of 9, 1000 and 2000 graphs): the first answer fits 40 lines and
// names the bill, the top graphs by cost with the rest counted, and the causes with their bytes;
// --graph selects by name or glob; --format json carries exact bytes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "gmemprof/commands.hpp"
#include "gmem/profiler/size_text.hpp"
#include "views/show.hpp"
#include "views/text_layout.hpp"
#include "synthetic_recordings.hpp"

namespace gmem::record::test {
namespace {

using profiler::probe::granule;
using profiler::probe::MiB;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

const profiler::report& serving_report(int graphs) {
  static std::map<int, profiler::report> made;
  auto it = made.find(graphs);
  if (it == made.end()) {
    program p(name_source::nvtx);
    serving(p, graphs);
    it = made.emplace(graphs, p.finish()).first;
  }
  return it->second;
}

const profiler::report& back_to_back_report(int graphs) {
  static std::map<int, profiler::report> made;
  auto it = made.find(graphs);
  if (it == made.end()) {
    program p;
    back_to_back(p, graphs);
    it = made.emplace(graphs, p.finish()).first;
  }
  return it->second;
}

class ShowMany : public ::testing::TestWithParam<int> {};

TEST_P(ShowMany, TheFirstAnswerFitsFortyLinesOfAtMostAHundredAndTenCharacters) {
  for (const profiler::report* r : {&serving_report(GetParam()), &back_to_back_report(GetParam())}) {
    profiler::show_options o;
    o.source = "rec.json";
    const std::vector<std::string> overview = profiler::recording_overview(*r, o);
    EXPECT_LE(overview.size(), 40u);
    for (const auto& line : overview) EXPECT_LE(line.size(), 110u) << line;
    // show prints the same answer first; past `top` graphs, nothing more.
    const std::vector<std::string> shown = lines_of(profiler::format_report(*r, o));
    ASSERT_GE(shown.size(), overview.size());
    EXPECT_TRUE(std::equal(overview.begin(), overview.end(), shown.begin()));
    if (r->recorded->graphs.size() > o.top) {
      EXPECT_EQ(shown.size(), overview.size());
    }
    for (const auto& line : shown) EXPECT_LE(line.size(), 110u) << line;
  }
}

TEST_P(ShowMany, TheTopGraphsAreTheCostliestThenNaturalOrderAndTheRestAreCounted) {
  const int graphs = GetParam();
  const profiler::report& r = serving_report(graphs);
  const std::string text = profiler::format_report(r);
  // The names of the table's rows, in the order printed.
  const std::string table = text.substr(text.find("by what they cost the device:"));
  std::vector<std::string> names;
  static const std::regex row("  '([^']+)' .*");
  std::smatch m;
  for (const auto& line : lines_of(table.substr(0, table.find("\n\n")))) {
    if (std::regex_match(line, m, row)) names.push_back(m[1]);
  }
  ASSERT_EQ(names.size(), std::min<std::size_t>(10, static_cast<std::size_t>(graphs))) << table;
  std::map<std::string, std::uint64_t> cost;
  for (const auto& g : r.recorded->graphs) cost[g.name] = profiler::graph_cost(g);
  // No graph left out costs more than the last listed.
  std::uint64_t least = cost.at(names.back());
  for (const auto& [name, c] : cost) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      EXPECT_LE(c, least) << name;
    }
  }
  for (std::size_t k = 1; k < names.size(); ++k) {
    EXPECT_GE(cost.at(names[k - 1]), cost.at(names[k])) << names[k];
    if (cost.at(names[k - 1]) == cost.at(names[k])) {
      EXPECT_TRUE(profiler::natural_less(names[k - 1], names[k])) << names[k];
    }
  }
  // Past 55 batches the largest maps its working set beyond one granule: it leads.
  if (graphs >= 1000) {
    EXPECT_EQ(names.front(), "decode bs=" + std::to_string(graphs));
  }
  if (graphs > 10) {
    EXPECT_NE(text.find("\n  " + std::to_string(graphs - 10) + " others "), std::string::npos) << text;
    EXPECT_NE(text.find("the top 10 of " + std::to_string(graphs) + " graphs"), std::string::npos) << text;
  }
}

TEST_P(ShowMany, TheCausesAreTheAttributionsBytesGroupedAndTheHighGraphsWorkingSet) {
  const profiler::report& r = back_to_back_report(GetParam());
  const profiler::recorded_pool& pool = r.recorded->pools.at(0);
  std::uint64_t held = 0, working = 0;
  std::string working_graph;
  for (const auto& a : pool.attribution) {
    if (a.why == "held_outputs") held += a.bytes;
    if (a.why == "working_set") {
      working += a.bytes;
      working_graph = a.graph;
    }
  }
  EXPECT_EQ(working_graph, pool.high_graph);
  EXPECT_EQ(held, static_cast<std::uint64_t>(GetParam() - 1) * granule);
  const std::string text = std::regex_replace(profiler::format_report(r), std::regex("\n {13}"), " ");
  const std::string why = "why the pool of device 0 reached " + profiler::size_text(pool.high_bytes);
  EXPECT_NE(text.find(why), std::string::npos) << text;
  EXPECT_NE(text.find(profiler::size_text(held) + "  held between launches by " + std::to_string(GetParam() - 1) +
                      " other graph"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(profiler::size_text(working) + "  working set of '" + pool.high_graph + "'"), std::string::npos)
      << text;
  // The per-graph diagnostics of every graph are one line, counted.
  EXPECT_NE(text.find("[info] unfreed_allocation, " + std::to_string(GetParam()) + " graph"), std::string::npos)
      << text;
}

TEST_P(ShowMany, JsonCarriesExactBytesAndCountsTheRest) {
  const profiler::report& r = serving_report(GetParam());
  profiler::show_options o;
  const auto j = nlohmann::json::parse(profiler::show_json(r, o));
  EXPECT_EQ(j["kind"], "recording");
  EXPECT_EQ(j["graphs_total"], r.recorded->graphs.size());
  const std::size_t listed = std::min<std::size_t>(10, r.recorded->graphs.size());
  ASSERT_EQ(j["graphs"].size(), listed);
  EXPECT_EQ(j["others"]["graphs"], r.recorded->graphs.size() - listed);
  std::uint64_t all = 0, listed_cost = 0;
  for (const auto& g : r.recorded->graphs) all += profiler::graph_cost(g);
  for (const auto& g : j["graphs"]) listed_cost += g["cost_bytes"].get<std::uint64_t>();
  EXPECT_EQ(listed_cost + j["others"]["cost_bytes"].get<std::uint64_t>(), all);
  EXPECT_EQ(j["graphs"][0]["name"], r.recorded->graphs[profiler::graphs_by_cost(*r.recorded)[0]].name);
  if (GetParam() >= 1000) {
    EXPECT_EQ(j["graphs"][0]["name"], "decode bs=" + std::to_string(GetParam()));
  }
  EXPECT_EQ(j["pools"][0]["high_bytes"], r.recorded->pools[0].high_bytes);
  o.all = true;
  EXPECT_EQ(nlohmann::json::parse(profiler::show_json(r, o))["graphs"].size(), r.recorded->graphs.size());
}

INSTANTIATE_TEST_SUITE_P(Graphs, ShowMany, ::testing::Values(9, 1000, 2000));

TEST(ShowGraph, AGlobSelectsItsGraphsDetailAndNothingElse) {
  const profiler::report& r = serving_report(1000);
  profiler::show_options o;
  o.graphs = {"decode bs=1?"};  // bs=10 ... bs=19
  const std::string text = profiler::format_report(r, o);
  std::size_t blocks = 0;
  for (const auto& line : lines_of(text)) blocks += std::regex_match(line, std::regex("decode bs=1[0-9]\\[source=recorded\\]  ok"));
  EXPECT_EQ(blocks, 10u) << text;
  EXPECT_EQ(text.find("decode bs=2[source"), std::string::npos) << text;
  EXPECT_EQ(text.find("the top "), std::string::npos) << "no first answer when a graph is asked for";
  EXPECT_NE(text.find("in the pool: cost 32.0 MiB"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(profiler::show_json(r, o));
  EXPECT_EQ(j["graphs"].size(), 10u);
}

TEST(ShowGraph, APatternThatMatchesNothingIsRefusedNamingItAndAFewNames) {
  profiler::show_options o;
  o.graphs = {"prefill*"};
  try {
    (void)profiler::format_report(serving_report(9), o);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("no graph is named 'prefill*'"), std::string::npos) << m;
    EXPECT_NE(m.find("'decode bs=1', 'decode bs=2'"), std::string::npos) << m;  // natural order
  }
}

TEST(ShowGraph, TheCommandExitsTwoForAnUnmatchedGraphAndPrintsJson) {
  const std::string path = std::string(GMEM_BINARY_DIR) + "/show-graph-test.json";
  profiler::write_report(serving_report(9), path);
  profiler::show_options o;
  o.graphs = {"nothing"};
  std::ostringstream out, err;
  EXPECT_EQ(profiler::run_show(path, o, "text", out, err), 2);
  EXPECT_NE(err.str().find("no graph is named 'nothing'"), std::string::npos) << err.str();
  std::ostringstream json, err2;
  EXPECT_EQ(profiler::run_show(path, profiler::show_options{}, "json", json, err2), 0) << err2.str();
  EXPECT_EQ(nlohmann::json::parse(json.str())["graphs_total"], 9);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace gmem::record::test
