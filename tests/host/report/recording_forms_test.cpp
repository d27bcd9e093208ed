// A recording's compact forms (a report of 2000 graphs was 12.7 MB): the counter timeline
// rebuilt from the graphs' events where they state it, skeleton shapes several graphs share stored
// once, four equal counters as one number, flags by name, the common footprint method once, arrays
// of one kind of object as rows under their field names. Each
// reads back to exactly what was written, and the writer falls back to the whole form where the
// compact one would not rebuild it.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "gmem/profiler/report_io.hpp"
#include "report/skeleton_json.hpp"

namespace gmem::profiler {
namespace {

counters all(std::uint64_t v) { return counters{v, v, v, v}; }

recorded_event event(double t_us, const std::string& kind, const std::string& cls, counters after) {
  recorded_event e;
  e.t_us = t_us;
  e.kind = kind;
  e.cls = cls;
  e.host_us = 12.5;
  e.before = all(0);
  e.after = after;
  return e;
}

skeleton three_node(const std::string& name, std::size_t a, std::size_t b) {
  skeleton s;
  s.name = name;
  skeleton_node n0;
  n0.kind = skeleton_kind::alloc;
  n0.bytes = a;
  skeleton_node n1;
  n1.kind = skeleton_kind::alloc;
  n1.bytes = b;
  n1.deps = {0};
  skeleton_node n2;
  n2.kind = skeleton_kind::free;
  n2.frees = 0;
  n2.deps = {1};
  // Labels of the recorder's form, which a shared shape gives by their word (each graph reads
  // its own name back in them), and one of the program's, which the shape keeps as it is.
  n0.label = "alloc node #0 in graph '" + name + "'";
  n1.label = "x = torch.empty(n) (model.py:3)";
  n2.label = "free node #2 in graph '" + name + "'";
  s.nodes = {n0, n1, n2};
  return s;
}

// Two graphs launched, a trim between their launches (a point no event states), and a third graph
// of another shape; `rebuilds`: the timeline is the events' points and the trim.
report recording_of_three(bool rebuilds) {
  report r;
  recording rec;
  const char* names[] = {"g1", "g2", "g3"};
  for (int k = 0; k < 3; ++k) {
    recorded_graph g;
    g.name = names[k];
    g.kind = "memory_nodes";
    g.flags_known = true;
    g.flags.auto_free_on_launch = k != 1;
    g.flags.use_node_priority = k == 2;
    g.own_footprint_method = k == 2 ? "measured" : "reuse model";
    g.events.push_back(event(10.0 + k, "instantiate", "", all(0)));
    g.events.push_back(event(100.0 + 100 * k, "launch", "first_launch", counters{1u << 21, 1u << 22, 1u << 23, 1u << 24}));
    rec.graphs.push_back(g);
    scenario_result s;
    s.name = names[k];
    s.params.emplace_back("source", std::string("recorded"));
    s.skeletons.push_back(k < 2 ? three_node(names[k], 1000 + k, 2000 + k) : three_node(names[k], 5, 6));
    if (k == 2) s.skeletons.back().nodes[2].deps.clear();  // another shape
    r.scenarios.push_back(s);
  }
  for (const auto& g : rec.graphs) {
    for (const auto& e : g.events) {
      rec.timeline.push_back({e.t_us, 0, e.kind + (e.cls.empty() ? "" : ":" + e.cls), g.name, *e.after});
    }
  }
  std::stable_sort(rec.timeline.begin(), rec.timeline.end(),
                   [](const recording::point& a, const recording::point& b) { return a.t_us < b.t_us; });
  rec.timeline.insert(rec.timeline.begin() + 4, recording::point{150.0, 0, "trim", "", all(0)});
  if (!rebuilds) rec.timeline[5].event = "launch:remap_contention";  // reclassified after its point
  r.recorded = rec;
  return r;
}

// `bad` is refused with a message that holds `says`; `what`: the edit, named where it is accepted.
void expect_refused(const std::string& bad, const std::string& says, const std::string& what) {
  try {
    (void)from_json_string(bad, "bad.json");
    ADD_FAILURE() << "accepted " << what;
  } catch (const report_error& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

void expect_same_timeline(const recording& a, const recording& b) {
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (std::size_t i = 0; i < a.timeline.size(); ++i) {
    EXPECT_EQ(a.timeline[i].t_us, b.timeline[i].t_us) << i;
    EXPECT_EQ(a.timeline[i].event, b.timeline[i].event) << i;
    EXPECT_EQ(a.timeline[i].graph, b.timeline[i].graph) << i;
    EXPECT_EQ(a.timeline[i].values.reserved_high, b.timeline[i].values.reserved_high) << i;
    EXPECT_EQ(a.timeline[i].values.used_current, b.timeline[i].values.used_current) << i;
  }
}

TEST(RecordingForms, TheTimelineIsRebuiltFromTheEventsAndOnlyTheOtherPointsAreWritten) {
  const report r = recording_of_three(true);
  const std::string text = to_json_string(r);
  EXPECT_TRUE(std::regex_search(text, std::regex(R"("timeline_from_events": ?true)")));
  // Only the trim's point is written, as a row under recorded.row_fields.timeline's names.
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
  const auto& written = j["recorded"]["timeline"];
  ASSERT_EQ(written.size(), 1u) << written.dump();
  const auto fields = j["recorded"]["row_fields"]["timeline"].get<std::vector<std::string>>();
  EXPECT_EQ(fields, (std::vector<std::string>{"t_us", "device", "event", "graph", "counters"}));
  ASSERT_TRUE(written[0].is_array()) << written.dump();
  EXPECT_EQ(written[0][2], "trim");
  EXPECT_EQ(written[0][0], 150.0);
  const report back = from_json_string(text, "r.json");
  expect_same_timeline(*r.recorded, *back.recorded);
  EXPECT_EQ(to_json_string(back), text);
}

TEST(RecordingForms, ATimelineTheEventsWouldNotRebuildIsWrittenWhole) {
  const report r = recording_of_three(false);
  const std::string text = to_json_string(r);
  EXPECT_EQ(text.find("timeline_from_events"), std::string::npos);
  const report back = from_json_string(text, "r.json");
  expect_same_timeline(*r.recorded, *back.recorded);
  EXPECT_EQ(back.recorded->timeline[5].event, "launch:remap_contention");
}

TEST(RecordingForms, SharedSkeletonShapesAreStoredOnceAndReadBackWhole) {
  const report r = recording_of_three(true);
  const std::string text = to_json_string(r);
  EXPECT_TRUE(std::regex_search(text, std::regex(R"("skeleton_shapes": ?\[)")));
  // A skeleton of its scenario's graph does not name it again.
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\{"shape": ?0, ?"bytes": ?\[1001, ?2001\])"))) << text;
  const report back = from_json_string(text, "r.json");
  for (std::size_t k = 0; k < 3; ++k) {
    ASSERT_EQ(back.scenarios[k].skeletons.size(), 1u);
    EXPECT_EQ(skeleton_to_json_text(back.scenarios[k].skeletons[0]), skeleton_to_json_text(r.scenarios[k].skeletons[0]));
  }
  // The second graph of the shape is a copy of the first's skeleton: its own name, sizes and labels.
  const skeleton& g2 = back.scenarios[1].skeletons[0];
  EXPECT_EQ(g2.name, "g2");
  EXPECT_EQ(g2.nodes[0].bytes, 1001u);
  EXPECT_EQ(g2.nodes[1].bytes, 2001u);
  EXPECT_EQ(g2.nodes[0].label, "alloc node #0 in graph 'g2'");
  EXPECT_EQ(g2.nodes[1].label, "x = torch.empty(n) (model.py:3)");
  EXPECT_EQ(g2.nodes[2].label, "free node #2 in graph 'g2'");
  EXPECT_EQ(back.scenarios[0].skeletons[0].nodes[0].label, "alloc node #0 in graph 'g1'");
  // A skeleton of another name than its scenario's states it.
  report renamed = r;
  renamed.scenarios[1].skeletons[0] = three_node("g2 again", 1001, 2001);
  const std::string renamed_text = to_json_string(renamed);
  EXPECT_TRUE(std::regex_search(renamed_text, std::regex(R"(\{"graph": ?"g2 again", ?"shape": ?0)"))) << renamed_text;
  EXPECT_EQ(from_json_string(renamed_text, "r.json").scenarios[1].skeletons[0].name, "g2 again");
  // A report of another version is refused for its version, before its skeletons are read.
  {
    std::string other = std::regex_replace(text, std::regex(R"("schema_version": ?\d+)"), R"("schema_version": 999)",
                                           std::regex_constants::format_first_only);
    other = std::regex_replace(other, std::regex(R"("bytes": ?\[1000, ?2000\])"), R"("bytes": [1000, -1])",
                               std::regex_constants::format_first_only);
    ASSERT_NE(other.find("[1000, -1]"), std::string::npos);
    try {
      (void)from_json_string(other, "other.json");
      ADD_FAILURE() << "accepted a report of schema_version 999";
    } catch (const report_error& e) {
      EXPECT_EQ(e.error_kind(), report_error::kind::wrong_schema_version) << e.what();
    }
  }
  // A reference past the table, or sizes that do not match the shape, name what is wrong.
  for (const auto& [from, to, says] :
       {std::tuple<std::string, std::string, std::string>{R"("shape": ?0)", R"("shape": 7)",
                                                           "scenarios[0].skeletons[0].shape must name one of the 1 skeleton shapes"},
        {R"("bytes": ?\[1001, ?2001\])", R"("bytes": [1001])",
         "scenarios[1].skeletons[0].bytes must give one size per alloc node of its shape (2): "
         "scenarios[1].skeletons[0].bytes holds 1 values, 2 expected"},
        {R"("bytes": ?\[1001, ?2001\])", R"("bytes": [1001, 2001, 3001])",
         "scenarios[1].skeletons[0].bytes holds more than the 2 values expected"},
        {R"("bytes": ?\[1001, ?2001\])", R"("bytes": [1001, -1])",
         "scenarios[1].skeletons[0].bytes[1] must be an unsigned integer or a repeat [[values...], times]"},
        {R"("bytes": ?\[1001, ?2001\])", R"("bytes": [[[1001], 4000000000]])",
         "scenarios[1].skeletons[0].bytes[0] repeats past the 2 values expected"},
        {R"(\{"shape": ?0, ?"bytes": ?\[1001)", R"({"graph": 2, "shape": 0, "bytes": [1001)",
         "scenarios[1].skeletons[0].graph must be a string, is 2"}}) {
    const std::string bad = std::regex_replace(text, std::regex(from), to, std::regex_constants::format_first_only);
    expect_refused(bad, says, to);
  }
}

TEST(RecordingForms, EqualCountersFlagsAndTheCommonMethodAreWrittenOnce) {
  const report r = recording_of_three(true);
  const std::string text = to_json_string(r);
  // An event as a row: t_us, kind, device, host_us, before, after, class (recorded.row_fields).
  EXPECT_TRUE(std::regex_search(text, std::regex(R"re("events": ?\["t_us", ?"kind", ?"device", ?"host_us", ?"before", ?"after", ?"class\?"\])re")))
      << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\[100\.0, ?"launch", ?0, ?12\.5, ?0, ?\[2097152, ?4194304, ?8388608, ?16777216\], ?"first_launch"\])")));
  EXPECT_TRUE(std::regex_search(text, std::regex(R"("flags": ?\["auto_free_on_launch"\])")));
  EXPECT_TRUE(std::regex_search(text, std::regex(R"("flags": ?\[\])")));
  EXPECT_TRUE(std::regex_search(text, std::regex(R"("own_footprint_method": ?"reuse model")")));
  const std::regex method(R"("own_footprint_method")");
  EXPECT_EQ(std::distance(std::sregex_iterator(text.begin(), text.end(), method), std::sregex_iterator()), 2)
      << "once for the recording, once for the graph that differs";
  const report back = from_json_string(text, "r.json");
  for (std::size_t k = 0; k < 3; ++k) {
    const recorded_graph &a = r.recorded->graphs[k], &b = back.recorded->graphs[k];
    EXPECT_EQ(a.flags.auto_free_on_launch, b.flags.auto_free_on_launch);
    EXPECT_EQ(a.flags.use_node_priority, b.flags.use_node_priority);
    EXPECT_EQ(a.flags.upload, b.flags.upload);
    EXPECT_EQ(a.own_footprint_method, b.own_footprint_method);
    EXPECT_EQ(b.events[0].before->reserved_high, 0u);
    EXPECT_EQ(b.events[1].after->used_high, 1u << 22);
  }
}

// Allocations whose sizes and steps the scenario's skeleton states are written as their addresses
// alone (2000 graphs of a model's size: 3 KB of each graph's 7), and read back whole; where the
// skeleton does not state them (here: the analysis did not pair the third graph's free), they are
// written whole.
TEST(RecordingForms, AllocationsTheSkeletonStatesAreWrittenAsTheirAddresses) {
  report r = recording_of_three(true);
  for (std::uint64_t k = 0; k < 3; ++k) {
    const std::uint64_t base = 0x10000 * (k + 1);
    const std::uint64_t bytes = k < 2 ? 1000 + k : 5;
    r.scenarios[k].allocations = {{base, bytes, 0, k < 2 ? 2 : -1}, {base + 0x1000, bytes + 1000 + (k == 2 ? 1 - 1000 : 0), 1, -1}};
  }
  const std::string text = to_json_string(r);
  EXPECT_TRUE(std::regex_search(text, std::regex(R"("allocation_base": ?65536,\s*"allocation_offsets": ?\[0, ?4096\])")))
      << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"("allocation_base": ?131072,\s*"allocation_offsets": ?\[0, ?4096\])")))
      << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"("allocations": ?\[\s*\[196608, ?5, ?0, ?null\])"))) << text;
  const report back = from_json_string(text, "r.json");
  for (std::size_t k = 0; k < 3; ++k) {
    const auto &a = r.scenarios[k].allocations, &b = back.scenarios[k].allocations;
    ASSERT_EQ(a.size(), b.size()) << k;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].address, b[i].address) << k << " " << i;
      EXPECT_EQ(a[i].bytes, b[i].bytes) << k << " " << i;
      EXPECT_EQ(a[i].alloc_step, b[i].alloc_step) << k << " " << i;
      EXPECT_EQ(a[i].free_step, b[i].free_step) << k << " " << i;
    }
  }
  EXPECT_EQ(to_json_string(back), text);
  // The addresses written whole (the form of reports before the offsets) read back the same.
  const std::string whole_addresses =
      std::regex_replace(text, std::regex(R"("allocation_base": ?65536,\s*"allocation_offsets": ?\[0, ?4096\])"),
                         R"("allocation_addresses": [65536, 69632])", std::regex_constants::format_first_only);
  ASSERT_NE(whole_addresses, text);
  EXPECT_EQ(to_json_string(from_json_string(whole_addresses, "r.json")), text);
  // A report written by hand gets any form, and a wrong count, value or pair names what to fix.
  const std::string offsets = R"("allocation_offsets": ?\[0, ?4096\])";
  for (const auto& [from, to, says] :
       {std::tuple<std::string, std::string, std::string>{
            offsets, R"("allocation_offsets": [0])",
            "scenarios[0].allocation_offsets must give one offset per alloc node of the scenario's skeleton (2, in "
            "the skeleton's order): scenarios[0].allocation_offsets holds 1 values, 2 expected"},
        {offsets, R"("allocation_offsets": [0, -1])",
         "scenarios[0].allocation_offsets[1] must be an unsigned integer or a repeat [[values...], times]"},
        {offsets, R"("allocation_offsets": [0, 18446744073709551615])",
         "scenarios[0].allocation_offsets[1] puts the address past 2^64 - 1"},
        {R"("allocation_base": ?65536,\s*)", "", "scenarios[0].allocation_base"},
        {offsets, R"("allocation_offsets": [0, 4096], "allocations": [])",
         "scenarios[0].allocation_offsets is given beside allocations"},
        {offsets, R"("allocation_offsets": [0, 4096], "allocation_addresses": [65536, 69632])",
         "scenarios[0].allocation_offsets is given beside allocation_addresses"}}) {
    const std::string bad = std::regex_replace(text, std::regex(from), to, std::regex_constants::format_first_only);
    ASSERT_NE(bad, text) << from;
    expect_refused(bad, says, to);
  }
  for (const auto& [from, to, says] :
       {std::tuple<std::string, std::string, std::string>{
            R"("allocation_addresses": ?\[65536, ?69632\])", R"("allocation_addresses": [65536])",
            "scenarios[0].allocation_addresses gives 1 addresses, but the scenario's skeleton has 2 alloc nodes"},
        {R"("allocation_addresses": ?\[65536, ?69632\])", R"("allocation_addresses": [65536, -1])",
         "scenarios[0].allocation_addresses[1] must be an integer >= 0, is the negative integer -1"},
        {R"("allocation_addresses": ?\[65536, ?69632\])", R"("allocation_addresses": [65536, 69632], "allocations": [])",
         "scenarios[0].allocation_addresses is given beside allocations"}}) {
    const std::string bad =
        std::regex_replace(whole_addresses, std::regex(from), to, std::regex_constants::format_first_only);
    ASSERT_NE(bad, whole_addresses) << from;
    expect_refused(bad, says, to);
  }
  nlohmann::ordered_json without = nlohmann::ordered_json::parse(whole_addresses);
  without["scenarios"][0].erase("skeletons");
  expect_refused(without.dump(),
                 "scenarios[0].allocation_addresses needs the scenario's one skeleton, which states each "
                 "allocation's size and steps, but the scenario has 0 skeletons",
                 "addresses without a skeleton");
}

// The values every graph of a site shares are stated once, in recorded.site_fields (2000 graphs
// captured at one Python site repeat its kind, stream, flags and stack); a value one graph of the
// site does not share stays in each graph, a site of one graph states its own, and the graphs read
// back whole.
TEST(RecordingForms, ValuesTheGraphsOfASiteShareAreWrittenOnce) {
  report r = recording_of_three(true);
  for (int k = 0; k < 3; ++k) {
    recorded_graph& g = r.recorded->graphs[static_cast<std::size_t>(k)];
    g.site = k < 2 ? "python:serve.py:12 in capture" : "python:other.py:3 in f";
    g.identity = g.site + " #" + std::to_string(k + 1);
    g.sequence = k + 1;
    g.stream = "stream 7";
    g.devices = {0};
    g.nodes = 3;
    g.launches = 3;
    g.python_site = g.site.substr(7);
    g.growth_bytes = 32u << 20;
    g.own_footprint_bytes = (32u << 20) * static_cast<std::uint64_t>(k + 1);
  }
  const std::string text = to_json_string(r);
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
  const auto& rec = j["recorded"];
  ASSERT_TRUE(rec.contains("site_fields")) << text;
  ASSERT_EQ(rec["site_fields"].size(), 1u) << "a site of one graph states its own values";
  const auto& shared = rec["site_fields"]["python:serve.py:12 in capture"];
  EXPECT_EQ(shared["stream"], "stream 7");
  EXPECT_EQ(shared["python_site"], "serve.py:12 in capture");
  EXPECT_EQ(shared["growth_bytes"], 32u << 20);
  EXPECT_FALSE(shared.contains("own_footprint_bytes")) << "g1 and g2 differ in it";
  EXPECT_FALSE(shared.contains("flags")) << "g1 and g2 differ in them";
  for (const char* own : {"name", "identity", "site", "sequence", "events"}) EXPECT_FALSE(shared.contains(own)) << own;
  for (int k = 0; k < 2; ++k) {
    const auto& g = rec["graphs"][static_cast<std::size_t>(k)];
    EXPECT_FALSE(g.contains("stream")) << k;
    EXPECT_TRUE(g.contains("own_footprint_bytes")) << k;
    EXPECT_EQ(g["sequence"], k + 1);
  }
  EXPECT_EQ(rec["graphs"][2]["stream"], "stream 7") << "g3's site has one graph";
  const report back = from_json_string(text, "r.json");
  for (std::size_t k = 0; k < 3; ++k) {
    const recorded_graph &a = r.recorded->graphs[k], &b = back.recorded->graphs[k];
    EXPECT_EQ(b.stream, a.stream) << k;
    EXPECT_EQ(b.python_site, a.python_site) << k;
    EXPECT_EQ(b.growth_bytes, a.growth_bytes) << k;
    EXPECT_EQ(b.own_footprint_bytes, a.own_footprint_bytes) << k;
    EXPECT_EQ(b.devices, a.devices) << k;
    EXPECT_EQ(b.flags.auto_free_on_launch, a.flags.auto_free_on_launch) << k;
  }
  EXPECT_EQ(to_json_string(back), text);
  // A graph's own value wins over its site's (a hand-edited report).
  {
    nlohmann::ordered_json edited = j;
    edited["recorded"]["graphs"][1]["stream"] = "stream 9";
    const report e = from_json_string(edited.dump(), "edited.json");
    EXPECT_EQ(e.recorded->graphs[0].stream, "stream 7");
    EXPECT_EQ(e.recorded->graphs[1].stream, "stream 9");
  }
  // A table that is not one names what is wrong.
  for (const auto& [key, value, says] :
       {std::tuple<std::string, nlohmann::ordered_json, std::string>{
            "", nlohmann::ordered_json::array(), "recorded.site_fields must be an object: by site, the values its graphs share"},
        {"python:serve.py:12 in capture", 3, "recorded.site_fields.python:serve.py:12 in capture must be an object"},
        {"python:serve.py:12 in capture", nlohmann::ordered_json{{"sequence", 4}},
         "recorded.site_fields.python:serve.py:12 in capture.sequence is stated by each graph itself, not by its site"}}) {
    nlohmann::ordered_json edited = j;
    if (key.empty()) {
      edited["recorded"]["site_fields"] = value;
    } else {
      edited["recorded"]["site_fields"][key] = value;
    }
    expect_refused(edited.dump(), says, says);
  }
}

// The writer tells shared shapes apart on the skeletons (same_shape, shape_hash), not on their
// JSON: for random skeletons of a few shapes, names, sizes and labels (the recorder's form, the
// program's, none, and near misses of the recorder's form), same_shape must agree with comparing
// skeleton_to_json without "graph" and the alloc nodes' "bytes", and equal shapes hash alike.
TEST(RecordingForms, SkeletonsHaveOneShapeExactlyWhenTheirJsonDoesButForNameAndSizes) {
  std::mt19937 random(7);
  const auto pick = [&random](std::size_t n) { return static_cast<std::size_t>(random() % n); };
  const auto shape_json = [](const skeleton& s) {
    nlohmann::ordered_json j = skeleton_to_json(s);
    j.erase("graph");
    for (auto& n : j["nodes"]) n.erase("bytes");
    return j.dump();
  };
  std::vector<skeleton> all;
  for (int k = 0; k < 400; ++k) {
    skeleton s;
    s.name = std::vector<std::string>{"g", "g2", "stream 1 #3", "h'"}[pick(4)];
    const std::size_t n = 1 + pick(4);
    std::vector<std::size_t> unfreed;  // alloc nodes a free may name
    for (std::size_t v = 0; v < n; ++v) {
      skeleton_node node;
      node.kind = !unfreed.empty() && pick(3) == 0 ? skeleton_kind::free : (pick(2) ? skeleton_kind::alloc : skeleton_kind::empty);
      if (node.kind == skeleton_kind::free) {
        const std::size_t at = pick(unfreed.size());
        node.frees = unfreed[at];
        unfreed.erase(unfreed.begin() + static_cast<std::ptrdiff_t>(at));
      }
      if (node.kind == skeleton_kind::alloc) unfreed.push_back(v);
      if (node.kind == skeleton_kind::alloc) {
        node.bytes = 512 * (1 + pick(3));
        node.device = static_cast<int>(pick(2));
        if (pick(4) == 0) node.peers = {1};
      }
      if (v > 0 && pick(2)) node.deps = {pick(v)};
      const std::string word = pick(2) ? "alloc" : "kernel";
      switch (pick(7)) {
        case 0: break;  // no label
        case 1: node.label = "x = torch.empty(n) (model.py:3)"; break;
        case 2: node.label = word + " node #" + std::to_string(v + pick(2)) + " in graph '" + s.name + "'"; break;
        case 3: node.label = word + " node #" + std::to_string(v) + " in graph 'g'"; break;
        case 4: node.label = word + " node #" + std::to_string(v) + " in graph '" + s.name + (pick(2) ? "''" : ""); break;
        default: node.label = word + " node #" + std::to_string(v) + " in graph '" + s.name + "'"; break;
      }
      s.nodes.push_back(node);
    }
    if (n > 1 && pick(4) == 0) s.late_edges.emplace_back(0, n - 1);
    const skeleton back = skeleton_from_json(skeleton_to_json(s), "s");
    for (std::size_t v = 0; v < n; ++v) ASSERT_EQ(back.nodes[v].label, s.nodes[v].label) << "a label read back otherwise";
    all.push_back(s);
  }
  std::size_t same = 0, different_names = 0;
  for (std::size_t a = 0; a < all.size(); ++a) {
    for (std::size_t b = a; b < all.size(); ++b) {
      const bool by_json = shape_json(all[a]) == shape_json(all[b]);
      ASSERT_EQ(same_shape(all[a], all[b]), by_json) << skeleton_to_json_text(all[a]) << "\n" << skeleton_to_json_text(all[b]);
      if (by_json) {
        EXPECT_EQ(shape_hash(all[a]), shape_hash(all[b]));
        same += a != b;
        different_names += all[a].name != all[b].name;
      }
    }
  }
  EXPECT_GT(same, 100u) << "too few pairs of one shape: the test would not see a wrong same_shape";
  EXPECT_GT(different_names, 10u);
}

// A label that opens with a space (" node #2 in graph 'g'", found by the skeleton fuzzer) has no
// kind word to stand for it: it is written whole and reads back the same.
TEST(RecordingForms, ALabelWithoutAWordBeforeItsNodeNumberIsWrittenWhole) {
  const std::string text =
      R"({"graph": "g", "late_edges": [], "nodes": [{"bytes": 1024, "device": 0, "kind": "alloc", "label": "alloc node #0 in graph 'g'"},)"
      R"({"deps": [0], "frees": 0, "kind": "free", "label": " node #1 in graph 'g'"}]})";
  const skeleton s = skeleton_from_json_text(text, "skeleton");
  const std::string once = skeleton_to_json_text(s);
  const skeleton back = skeleton_from_json_text(once, "written");
  EXPECT_EQ(back.nodes.at(1).label, " node #1 in graph 'g'");
  EXPECT_EQ(back.nodes.at(0).label, "alloc node #0 in graph 'g'");
  EXPECT_EQ(skeleton_to_json_text(back), once);
}

// Scenarios whose allocations sit at the same offsets from their bases (six graphs of one
// allocation each) still state their offsets beside their bases: the schema asks for both where
// either is, and the shared table never takes a scenario's addresses.
TEST(RecordingForms, AScenariosAllocationOffsetsStayBesideItsBaseWhenEveryScenarioSharesThem) {
  report r = recording_of_three(true);
  r.scenarios.resize(2);
  r.recorded->graphs.resize(2);
  r.recorded->timeline.clear();
  for (std::uint64_t k = 0; k < 2; ++k) {
    const std::uint64_t base = 0x10000 * (k + 1);
    r.scenarios[k].skeletons[0] = three_node(r.scenarios[k].name, 1000, 2000);
    r.scenarios[k].allocations = {{base, 1000, 0, 2}, {base + 0x1000, 2000, 1, -1}};
  }
  const std::string text = to_json_string(r);
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_TRUE(j["scenarios"][k].contains("allocation_base")) << k << text;
    EXPECT_TRUE(j["scenarios"][k].contains("allocation_offsets")) << k << text;
  }
  EXPECT_FALSE(j["recorded"]["scenario_fields"].contains("allocation_offsets")) << text;
  EXPECT_TRUE(j["recorded"]["scenario_fields"].contains("skeletons")) << text;  // the rest still shared
  const report back = from_json_string(text, "r.json");
  for (std::size_t k = 0; k < 2; ++k) {
    ASSERT_EQ(back.scenarios[k].allocations.size(), 2u) << k;
    EXPECT_EQ(back.scenarios[k].allocations[1].address, 0x10000 * (k + 1) + 0x1000) << k;
  }
  EXPECT_EQ(to_json_string(back), text);
}

// What every scenario of a recording states alike (its source, its status...) is stated once, in
// recorded.scenario_fields; a value one scenario does not share stays in each, and the scenarios
// read back whole. A report of the suite (no recording) states each scenario whole.
TEST(RecordingForms, ValuesEveryScenarioStatesAlikeAreWrittenOnce) {
  report r = recording_of_three(true);
  for (std::size_t k = 0; k < 3; ++k) r.scenarios[k].analysis.lower_bound_bytes = 1000 * (k + 1);
  r.scenarios[2].status = scenario_status::error;
  r.scenarios[2].status_message = "cudaErrorMemoryAllocation";
  const std::string text = to_json_string(r);
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
  ASSERT_TRUE(j["recorded"].contains("scenario_fields")) << text;
  const auto& shared = j["recorded"]["scenario_fields"];
  EXPECT_EQ(shared["parameters"], (nlohmann::ordered_json{{"source", "recorded"}}));
  EXPECT_FALSE(shared.contains("status")) << "g3 ended in error";
  EXPECT_FALSE(shared.contains("analysis")) << "their lower bounds differ";
  EXPECT_FALSE(shared.contains("name"));
  for (std::size_t k = 0; k < 3; ++k) {
    const auto& s = j["scenarios"][k];
    EXPECT_FALSE(s.contains("parameters")) << k;
    EXPECT_TRUE(s.contains("status")) << k;
    EXPECT_EQ(s["analysis"]["lower_bound_bytes"], 1000 * (k + 1)) << k;
  }
  const report back = from_json_string(text, "r.json");
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(back.scenarios[k].key(), r.scenarios[k].key()) << k;
    EXPECT_EQ(back.scenarios[k].status, r.scenarios[k].status) << k;
    EXPECT_EQ(back.scenarios[k].analysis.lower_bound_bytes, r.scenarios[k].analysis.lower_bound_bytes) << k;
  }
  EXPECT_EQ(to_json_string(back), text);
  // A scenario's own value wins (a hand-edited report), and a table that is not one names what is wrong.
  {
    nlohmann::ordered_json edited = j;
    edited["scenarios"][1]["parameters"] = {{"source", "by hand"}};
    const report e = from_json_string(edited.dump(), "edited.json");
    EXPECT_EQ(e.scenarios[0].key(), r.scenarios[0].key());
    EXPECT_NE(e.scenarios[1].key(), r.scenarios[1].key());
  }
  for (const auto& [value, says] : {std::pair<nlohmann::ordered_json, std::string>{
                                        nlohmann::ordered_json::array(),
                                        "recorded.scenario_fields must be an object: the values every scenario states alike"},
                                    {nlohmann::ordered_json{{"name", "g"}}, "recorded.scenario_fields.name is stated by each scenario itself"}}) {
    nlohmann::ordered_json edited = j;
    edited["recorded"]["scenario_fields"] = value;
    expect_refused(edited.dump(), says, says);
  }
  // Identical graphs (a model's equal layers captured apart): their scenarios differ only in
  // name, so their skeletons and allocations are stated once too, and each reads back its own name.
  report twins = recording_of_three(true);
  twins.scenarios.resize(2);
  twins.recorded->graphs.resize(2);
  twins.recorded->timeline.clear();
  for (std::size_t k = 0; k < 2; ++k) {
    twins.scenarios[k].skeletons[0] = three_node(twins.scenarios[k].name, 1000, 2000);
    twins.scenarios[k].allocations = {{0x10000, 1000, 0, 2}, {0x11000, 2000, 1, -1}};
  }
  const std::string twins_text = to_json_string(twins);
  const nlohmann::ordered_json tj = nlohmann::ordered_json::parse(twins_text);
  EXPECT_TRUE(tj["recorded"]["scenario_fields"].contains("skeletons")) << twins_text;
  EXPECT_TRUE(tj["recorded"]["scenario_fields"].contains("allocation_offsets")) << twins_text;
  const report twins_back = from_json_string(twins_text, "twins.json");
  for (std::size_t k = 0; k < 2; ++k) {
    ASSERT_EQ(twins_back.scenarios[k].skeletons.size(), 1u) << k;
    EXPECT_EQ(skeleton_to_json_text(twins_back.scenarios[k].skeletons[0]),
              skeleton_to_json_text(twins.scenarios[k].skeletons[0]))
        << k;
    ASSERT_EQ(twins_back.scenarios[k].allocations.size(), 2u) << k;
    EXPECT_EQ(twins_back.scenarios[k].allocations[1].address, 0x11000u) << k;
  }
  EXPECT_EQ(twins_back.scenarios[1].skeletons[0].nodes[0].label, "alloc node #0 in graph 'g2'");
  EXPECT_EQ(to_json_string(twins_back), twins_text);
  report suite = r;
  suite.recorded.reset();
  const nlohmann::ordered_json plain = nlohmann::ordered_json::parse(to_json_string(suite));
  for (const auto& s : plain["scenarios"]) EXPECT_TRUE(s.contains("parameters") && s.contains("status")) << s.dump();
}

// The messages of one diagnostic code end alike (the advice); that ending is stated once, by
// code, in recorded.message_tails, from a sentence's or clause's start, and each diagnostic keeps
// its own words (message_head). A code whose messages share too short an ending keeps them whole.
TEST(RecordingForms, TheEndingTheMessagesOfACodeShareIsWrittenOnce) {
  report r = recording_of_three(true);
  const std::string advice =
      ". Free it in the graph, or free it in a stream after the launch (cudaFreeAsync), or instantiate with "
      "AutoFreeOnLaunch.";
  for (std::size_t k = 0; k < 3; ++k) {
    const std::string name = r.scenarios[k].name;
    r.scenarios[k].diagnostics.push_back(
        {"unfreed_allocation", "warning", "alloc node #0 in graph '" + name + "' has no free node" + advice, 1000 + k});
    r.scenarios[k].diagnostics.push_back({"missed_reuse", "info", "graph '" + name + "' could reuse " + std::to_string(k) + " bytes.", k});
    r.scenarios[k].diagnostics.push_back({"private_pool", "info",
                                          "graph '" + name + "' took " + std::to_string(k) +
                                              " B (its pool grew by that much; PyTorch works so). A later capture adds only "
                                              "what the pool lacked.",
                                          k});
  }
  r.scenarios[2].diagnostics.push_back({"unfreed_allocation", "warning", "alloc node #1 in graph 'g3' was freed" + advice, 7});
  const std::string text = to_json_string(r);
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
  ASSERT_TRUE(j["recorded"].contains("message_tails")) << text;
  const auto& tails = j["recorded"]["message_tails"];
  // The clause inside the parentheses does not start an ending: the head keeps them whole.
  EXPECT_EQ(tails, (nlohmann::ordered_json{{"private_pool", ". A later capture adds only what the pool lacked."},
                                           {"unfreed_allocation", advice}}))
      << "missed_reuse shares ' bytes.' alone";
  EXPECT_EQ(j["scenarios"][2]["diagnostics"][2]["message_head"], "graph 'g3' took 2 B (its pool grew by that much; PyTorch works so)");
  EXPECT_EQ(j["scenarios"][1]["diagnostics"][0]["message_head"], "alloc node #0 in graph 'g2' has no free node");
  EXPECT_FALSE(j["scenarios"][1]["diagnostics"][0].contains("message"));
  EXPECT_EQ(j["scenarios"][2]["diagnostics"][3]["message_head"], "alloc node #1 in graph 'g3' was freed");
  EXPECT_EQ(j["scenarios"][1]["diagnostics"][1]["message"], "graph 'g2' could reuse 1 bytes.");
  const report back = from_json_string(text, "r.json");
  for (std::size_t k = 0; k < 3; ++k) {
    ASSERT_EQ(back.scenarios[k].diagnostics.size(), r.scenarios[k].diagnostics.size()) << k;
    for (std::size_t d = 0; d < r.scenarios[k].diagnostics.size(); ++d) {
      EXPECT_EQ(back.scenarios[k].diagnostics[d].message, r.scenarios[k].diagnostics[d].message) << k << " " << d;
      EXPECT_EQ(back.scenarios[k].diagnostics[d].bytes, r.scenarios[k].diagnostics[d].bytes) << k << " " << d;
    }
  }
  EXPECT_EQ(to_json_string(back), text);
  // A message in both forms, a head without its code's ending, or a table that is not one, names what is wrong.
  nlohmann::ordered_json both = j;
  both["scenarios"][0]["diagnostics"][0]["message"] = "x";
  expect_refused(both.dump(), "scenarios[0].diagnostics[0].message_head is given beside message", "both forms");
  nlohmann::ordered_json unknown = j;
  unknown["scenarios"][0]["diagnostics"][0]["code"] = "other_code";
  expect_refused(unknown.dump(),
                 "scenarios[0].diagnostics[0].message_head needs its code's ending in recorded.message_tails, which has "
                 "none for it",
                 "an unknown code");
  nlohmann::ordered_json not_table = j;
  not_table["recorded"]["message_tails"] = 3;
  expect_refused(not_table.dump(), "recorded.message_tails must be an object", "a number");
}

// Allocation offsets that are all multiples of a power of two (the driver places a model's
// allocations 512 bytes apart or more) are written in that unit where the text is shorter for it.
TEST(RecordingForms, AllocationOffsetsAreWrittenInTheirCommonPowerOfTwo) {
  report r = recording_of_three(true);
  const auto with_offsets = [&r](std::uint64_t second, std::size_t repeat) {
    report out = r;
    for (std::size_t k = 0; k < 2; ++k) {
      const std::uint64_t base = 0x7f0000000000 + (k << 32);
      const std::uint64_t bytes = 1000 + k;
      out.scenarios[k].skeletons[0] = three_node(out.scenarios[k].name, bytes, 2000 + k);
      out.scenarios[k].allocations = {{base, bytes, 0, 2}, {base + second, 2000 + k, 1, -1}};
      // More alloc nodes after the first two, each at its own offset.
      skeleton& sk = out.scenarios[k].skeletons[0];
      for (std::size_t i = 0; i < repeat; ++i) {
        skeleton_node n;
        n.kind = skeleton_kind::alloc;
        n.bytes = 512;
        n.deps = {sk.nodes.size() - 1};
        n.label = "alloc node #" + std::to_string(sk.nodes.size()) + " in graph '" + sk.name + "'";
        sk.nodes.push_back(n);
        out.scenarios[k].allocations.push_back({base + second * (i + 2), 512, sk.nodes.size() - 1, -1});
      }
    }
    return out;
  };
  const report aligned = with_offsets(2042368, 20);  // 3989 units of 512
  const std::string text = to_json_string(aligned);
  EXPECT_TRUE(std::regex_search(text, std::regex(R"("allocation_offset_unit": ?512,\s*"allocation_offsets": ?\[0, ?3989, ?7978,)")))
      << text;
  const report back = from_json_string(text, "r.json");
  for (std::size_t k = 0; k < 2; ++k) {
    ASSERT_EQ(back.scenarios[k].allocations.size(), aligned.scenarios[k].allocations.size());
    for (std::size_t i = 0; i < back.scenarios[k].allocations.size(); ++i) {
      EXPECT_EQ(back.scenarios[k].allocations[i].address, aligned.scenarios[k].allocations[i].address) << k << " " << i;
    }
  }
  EXPECT_EQ(to_json_string(back), text);
  // An odd offset, or a short list whose unit would cost more than it saves, has no unit.
  EXPECT_EQ(to_json_string(with_offsets(2042369, 20)).find("allocation_offset_unit"), std::string::npos);
  EXPECT_EQ(to_json_string(with_offsets(2042368, 0)).find("allocation_offset_unit"), std::string::npos);
  // A unit of 0, or one that puts an address past 2^64 - 1, names what is wrong.
  for (const auto& [to, says] :
       {std::pair<std::string, std::string>{R"("allocation_offset_unit": 0,)",
                                            "scenarios[0].allocation_offset_unit must be 1 or more"},
        {R"("allocation_offset_unit": 1152921504606846976,)", "scenarios[0].allocation_offsets[1] puts the address past 2^64 - 1"}}) {
    const std::string bad = std::regex_replace(text, std::regex(R"("allocation_offset_unit": ?512,)"), to,
                                               std::regex_constants::format_first_only);
    ASSERT_NE(bad, text);
    expect_refused(bad, says, to);
  }
}

// N graphs of two shapes (every third one of the second), each with its own sizes, events and
// allocations: a recording's scenarios to share among threads.
report recording_of(std::size_t n) {
  report r;
  recording rec;
  for (std::size_t k = 0; k < n; ++k) {
    const std::string name = "g" + std::to_string(k);
    recorded_graph g;
    g.name = name;
    g.kind = "memory_nodes";
    g.flags_known = true;
    g.events.push_back(event(10.0 + k, "instantiate", "", all(0)));
    g.events.push_back(event(1000.0 + k, "launch", "first_launch", all((k + 1) << 21)));
    rec.graphs.push_back(g);
    scenario_result s;
    s.name = name;
    s.params.emplace_back("source", std::string("recorded"));
    s.skeletons.push_back(k % 3 == 2 ? three_node(name, 5 + k, 6 + k) : three_node(name, 1000 + k, 2000 + k));
    if (k % 3 == 2) s.skeletons.back().nodes[2].deps.clear();  // the second shape
    r.scenarios.push_back(s);
  }
  r.recorded = rec;
  return r;
}

// Runs every index on four threads, or on this thread from the last to the first: the order a
// reading in order would never take.
void on_four_threads(std::size_t n, const std::function<void(std::size_t)>& work) {
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (std::size_t i = next++; i < n; i = next++) work(i);
    });
  }
  for (std::thread& t : threads) t.join();
}

void last_first(std::size_t n, const std::function<void(std::size_t)>& work) {
  for (std::size_t i = n; i-- > 0;) work(i);
}

// The recording library writes and reads its report's scenarios on several threads (the end of a
// 2000-graph recording): the text, what is read back and the error a bad report gets are the same
// as on one thread, in any order.
TEST(RecordingForms, TheTextAndWhatIsReadBackAreTheSameOnSeveralThreads) {
  const report r = recording_of(60);
  const std::string text = to_json_string(r);
  ASSERT_TRUE(std::regex_search(text, std::regex(R"("skeleton_shapes": ?\[)")));
  for (const for_each_index& each : {for_each_index(on_four_threads), for_each_index(last_first)}) {
    EXPECT_EQ(to_json_string(r, each), text);
    const report back = from_json_string(text, "r.json", each);
    ASSERT_EQ(back.scenarios.size(), 60u);
    EXPECT_EQ(back.scenarios[7].skeletons.at(0).nodes[1].bytes, 2007u);
    EXPECT_EQ(back.scenarios[8].skeletons.at(0).nodes[0].label, "alloc node #0 in graph 'g8'");
    EXPECT_EQ(to_json_string(back), text);
  }
  // Two errors: the one a reading in order meets first is the one told, however the work ran.
  const auto edit = [](std::string t, const std::string& from, const std::string& to) {
    const std::string out = std::regex_replace(t, std::regex(from), to, std::regex_constants::format_first_only);
    EXPECT_NE(out, t) << from;
    return out;
  };
  struct bad_case {
    std::string text, says;
  };
  const std::vector<bad_case> cases = {
      // A later graph of the first shape, and the second shape's first graph after it.
      {edit(edit(text, R"("bytes": ?\[1004, ?2004\])", R"("bytes": [1004])"), R"("bytes": ?\[19, ?20\])", R"("bytes": [19])"),
       "scenarios[4].skeletons[0].bytes must give one size per alloc node"},
      // The second shape's first graph, before a later graph of the first shape.
      {edit(edit(text, R"("bytes": ?\[7, ?8\])", R"("bytes": [7])"), R"("bytes": ?\[1030, ?2030\])", R"("bytes": [1030])"),
       "scenarios[2].skeletons[0].bytes must give one size per alloc node"},
      // A skeleton after a scenario's own error: the skeletons are read first, in order or not.
      {edit(edit(text, R"("name": ?"g5")", R"("name": "g5", "diagnostics": 5)"), R"("bytes": ?\[1051, ?2051\])",
            R"("bytes": [-1, 2051])"),
       "scenarios[51].skeletons[0].bytes[0] must be an unsigned integer"},
      // Two scenarios' own errors.
      {edit(edit(text, R"("name": ?"g40")", R"("name": "g40", "diagnostics": 40)"), R"("name": ?"g9")",
            R"("name": "g9", "diagnostics": 9)"),
       "scenarios[9].diagnostics"},
  };
  for (const bad_case& c : cases) {
    std::string in_order;
    try {
      (void)from_json_string(c.text, "bad.json");
      ADD_FAILURE() << "accepted: " << c.says;
    } catch (const report_error& e) {
      in_order = e.what();
    }
    EXPECT_NE(in_order.find(c.says), std::string::npos) << in_order;
    for (const for_each_index& each : {for_each_index(on_four_threads), for_each_index(last_first)}) {
      try {
        (void)from_json_string(c.text, "bad.json", each);
        ADD_FAILURE() << "accepted on threads: " << c.says;
      } catch (const report_error& e) {
        EXPECT_EQ(std::string(e.what()), in_order);
      }
    }
  }
}

// The error a reading in order gives `text`; the same on four threads and in reverse order.
std::string refused_alike_on_threads(const std::string& text) {
  std::string in_order;
  try {
    (void)from_json_string(text, "bad.json");
  } catch (const report_error& e) {
    in_order = e.what();
  }
  EXPECT_FALSE(in_order.empty()) << "accepted";
  for (const for_each_index& each : {for_each_index(on_four_threads), for_each_index(last_first)}) {
    try {
      (void)from_json_string(text, "bad.json", each);
      ADD_FAILURE() << "accepted on threads";
    } catch (const report_error& e) {
      EXPECT_EQ(std::string(e.what()), in_order);
    }
  }
  return in_order;
}

// A recording of 1200 graphs: its long arrays' text is made in runs, its tables' rows made and
// read in runs, on threads; the text, what is read back, and the first error in order are the
// same as on one thread.
TEST(RecordingForms, LongArraysAndTablesInRunsGiveTheSameTextReportAndError) {
  report r = recording_of(1200);
  for (std::uint64_t k = 0; k < 3000; ++k) {  // counter points and calls beyond the graphs' events
    r.recorded->timeline.push_back({5000.0 + static_cast<double>(k), 0, k % 2 ? "trim" : "sync", "", all(k << 21)});
    sequence_step st;
    st.op = k % 3 ? "launch" : "trim";
    st.graph = k % 3 ? static_cast<std::int64_t>(k % 1200) : -1;
    st.stream = k % 3 ? "stream " + std::to_string(k % 5) : "";
    st.device = k % 3 ? -1 : 0;
    r.recorded->sequence.push_back(st);
  }
  const std::string text = to_json_string(r);
  const report serial = from_json_string(text, "r.json");
  for (const for_each_index& each : {for_each_index(on_four_threads), for_each_index(last_first)}) {
    kept_trees kept;
    EXPECT_EQ(to_json_string(r, each, &kept), text);
    EXPECT_EQ(kept.trees.size(), 1u) << "the text's tree is handed over";
    const report back = from_json_string(text, "r.json", each, &kept);
    EXPECT_EQ(kept.trees.size(), 2u) << "the read-back's tree is handed over";
    ASSERT_EQ(back.recorded->graphs.size(), 1200u);
    EXPECT_EQ(back.recorded->graphs[1100].events.at(1).kind, "launch");
    ASSERT_EQ(back.recorded->sequence.size(), 3000u);
    EXPECT_EQ(back.recorded->sequence[2998].stream, "stream 3");
    EXPECT_EQ(back.recorded->timeline.size(), serial.recorded->timeline.size());
    EXPECT_EQ(to_json_string(back), to_json_string(serial));
  }
  // Control characters in late scenarios are escaped alike; two keys that read the same once
  // escaped, in scenarios 1150 and 900, are refused for scenario 900's.
  std::string odd = text;
  for (const std::string g : {"1150", "900", "1000"}) {
    const std::string name = "{\"name\": \"g" + g + "\"";
    const std::size_t at = odd.find(name);
    ASSERT_NE(at, std::string::npos) << name;
    odd.replace(at, name.size(), g == "1000" ? "{\"name\": \"g1000\\u0007\""
                                             : name + ", \"k\\u0007\": 1, \"k\\\\x07\": 2");
  }
  const std::string refused = refused_alike_on_threads(odd);
  ASSERT_NE(refused.find("scenarios[900] has two keys"), std::string::npos) << refused;
  const std::string escaped = std::regex_replace(odd, std::regex(R"(, "k\\u0007": 1, "k\\\\x07": 2)"), "");
  const std::string read_alone = to_json_string(from_json_string(escaped, "odd.json"));
  ASSERT_NE(read_alone.find(R"("g1000\\x07")"), std::string::npos);
  for (const for_each_index& each : {for_each_index(on_four_threads), for_each_index(last_first)}) {
    EXPECT_EQ(to_json_string(from_json_string(escaped, "odd.json", each)), read_alone);
  }
  // Rows of graphs 700 and 1100 (in the table's third and fifth runs) too long: graph 700's told.
  std::string bad = text;
  for (const std::string t : {"1110", "710"}) {  // their instantiations' times
    const std::string row = "[" + t + ".0,\"instantiate\",0,12.5,0,0]";
    const std::size_t at = bad.find(row);
    ASSERT_NE(at, std::string::npos) << row;
    bad.replace(at, row.size(), "[" + t + ".0,\"instantiate\",0,12.5,0,0,1,2,3,4,5]");
  }
  const std::string in_order = refused_alike_on_threads(bad);
  EXPECT_NE(in_order.find("has 11 values"), std::string::npos) << in_order;
}

// A row longer than its fields, or missing a field every object had, is refused naming the fields.
TEST(RecordingForms, RowsThatDoNotFitTheirFieldsAreRefusedNamingThem) {
  const std::string text = to_json_string(recording_of_three(true));
  for (const auto& [from, to, says] :
       {std::tuple<std::string, std::string, std::string>{
            R"(\[100\.0, ?"launch", ?0, ?12\.5)", R"([100.0,"launch",0,12.5,0,0,"first_launch",1,2,3,4,5,6,7)",
            "recorded.row_fields.events names 7 fields, but a row of events has 17 values"},
        {R"(\[10\.0, ?"instantiate", ?0, ?12\.5, ?0, ?0\])", R"([10.0,"instantiate"])",
         "recorded.row_fields.events names device, which a row of events lacks"}}) {
    const std::string bad = std::regex_replace(text, std::regex(from), to, std::regex_constants::format_first_only);
    ASSERT_NE(bad, text) << from;
    expect_refused(bad, says, to);
  }
}

}  // namespace
}  // namespace gmem::profiler
