// `gmemprof trace` of a recording has one clock, the recording's: every call of every graph at
// the time the program made it (a first launch and the pool growth it caused at one time), the
// medians as annotations, never as a second clock; calls of overlapping threads are marked
// concurrent. Writes views-four-threads.json, the recording the page's browser test reads for
// its concurrency marks.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "gmem/profiler/report_io.hpp"
#include "record/recording_report.hpp"
#include "views/views.hpp"
#include "synthetic_recordings.hpp"

namespace gmem::record::test {
namespace {

using json = nlohmann::json;
using profiler::probe::granule;
using profiler::probe::MiB;

std::vector<json> events_where(const json& trace, const std::string& cat, const std::string& ph = "") {
  std::vector<json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") == cat && (ph.empty() || e["ph"] == ph)) out.push_back(e);
  }
  return out;
}

// The thread id of the track named `name` in process `pid`.
int track_of(const json& trace, int pid, const std::string& name) {
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == pid && e["args"]["name"] == name) return e["tid"];
  }
  return -1;
}

TEST(TraceClock, EveryCallOfEveryGraphIsAtTheTimeTheProgramMadeIt) {
  program p(name_source::nvtx);
  serving(p, 9);
  const profiler::report r = p.finish();
  const json trace = json::parse(profiler::trace_json(r));
  const int pid = r.env.device_index;
  for (const auto& g : r.recorded->graphs) {
    const int tid = track_of(trace, pid, g.name + "[source=recorded]");
    ASSERT_GE(tid, 0) << g.name;
    std::vector<double> want, got;
    for (const auto& e : g.events) want.push_back(e.t_us);
    for (const auto& e : events_where(trace, "call", "X")) {
      if (e["tid"] == tid) got.push_back(e["ts"].get<double>());
    }
    EXPECT_EQ(got, want) << g.name;
  }
  // The warm-up instantiated all nine graphs before it launched any: on one clock every first
  // launch comes after every instantiation (tracks laid out from medians put the first graph's
  // launch before the second graph's instantiation).
  const auto calls = events_where(trace, "call", "X");
  double last_instantiate = -1, first_launch = 1e300;
  int launches = 0;
  for (const auto& e : calls) {
    const double ts = e["ts"];
    if (e["name"] == "instantiate") last_instantiate = std::max(last_instantiate, ts);
    if (e["name"] == "first_launch") {
      first_launch = std::min(first_launch, ts);
      ++launches;
    }
  }
  EXPECT_EQ(launches, 9);
  EXPECT_GT(first_launch, last_instantiate);
}

TEST(TraceClock, AFirstLaunchAndThePoolGrowthItCausedAreAtOneTime) {
  program p(name_source::nvtx);
  serving(p, 9);
  const profiler::report r = p.finish();
  const json trace = json::parse(profiler::trace_json(r));
  const auto mapping = events_where(trace, "mapping", "i");
  ASSERT_EQ(mapping.size(), r.recorded->pools.at(0).timeline.size());
  std::size_t matched = 0;
  for (const auto& m : mapping) {
    if (m["args"]["event"] != "launch:first_launch") continue;
    const int tid = track_of(trace, r.env.device_index, m["args"]["graph"].get<std::string>() + "[source=recorded]");
    for (const auto& c : events_where(trace, "call", "X")) {
      if (c["tid"] != tid || c["name"] != "first_launch") continue;
      const double start = c["ts"], end = start + c["dur"].get<double>();
      EXPECT_LE(start, m["ts"].get<double>() + 1.0) << m.dump();
      EXPECT_GE(end + 1.0, m["ts"].get<double>()) << m.dump();
      ++matched;
    }
  }
  EXPECT_EQ(matched, 9u);
}

TEST(TraceClock, MediansAreAnnotationsAtTheGraphsFirstCallNotSlices) {
  program p(name_source::nvtx);
  serving(p, 9);
  const profiler::report r = p.finish();
  const json trace = json::parse(profiler::trace_json(r));
  // No slice is laid out from a median (the suite report's "launch" slices).
  EXPECT_TRUE(events_where(trace, "launch").empty());
  const auto medians = events_where(trace, "medians", "i");
  ASSERT_EQ(medians.size(), r.scenarios.size());
  for (std::size_t k = 0; k < r.scenarios.size(); ++k) {
    const auto& s = r.scenarios[k];
    const json& m = medians[k];
    EXPECT_EQ(m["ts"].get<double>(), r.recorded->graphs[k].events.front().t_us) << s.name;
    for (const auto& c : s.launch_costs) {
      ASSERT_TRUE(m["args"].contains(c.phase)) << s.name << " " << c.phase;
      EXPECT_EQ(m["args"][c.phase]["host_median_us"].get<double>(), c.host.median_us);
    }
  }
  EXPECT_NE(trace["otherData"]["note"].get<std::string>().find("one clock"), std::string::npos);
}

// Four graphs launched from four threads at once (record_pool_test's case): each call's window
// holds the others' mappings.
profiler::report four_threads() {
  recorder r;
  const std::vector<std::string> defs = {"g0!=w256,o1", "g1!=w192,o1", "g2!=w128,o1", "g3!=w64,o1"};
  profiler::instantiate_flags afol;
  afol.auto_free_on_launch = true;
  for (std::size_t k = 0; k < defs.size(); ++k) {
    r.on_instantiate(0x100 + k, 0x10 + k, profiler::probe::model_of_spec(defs[k], (k + 1) << 40), "", 0, 10,
                     counters{}, counters{}, afol);
  }
  counters zero{}, all{};
  all.reserved_current = all.reserved_high = 768 * MiB;
  for (std::size_t k = 0; k < defs.size(); ++k) {
    r.on_launch(0x100 + k, r.stream_label(0xA0 + k), 10.0 * static_cast<double>(k), 300, zero, all, "", true);
  }
  profiler::environment env;
  env.device_name = "four threads (fed to the recorder)";
  env.granularity_bytes = granule;
  return assemble(r, env, granule);
}

TEST(TraceClock, CallsOfOverlappingThreadsAndTheirHighAreMarkedConcurrent) {
  const profiler::report r = four_threads();
  ASSERT_TRUE(r.recorded->pools.at(0).high_concurrent);
  const json trace = json::parse(profiler::trace_json(r));
  const auto mapping = events_where(trace, "mapping", "i");
  ASSERT_FALSE(mapping.empty());
  for (const auto& m : mapping) {
    EXPECT_EQ(m["args"].value("concurrent", false), true) << m.dump();
    EXPECT_NE(m["name"].get<std::string>().find("(concurrent)"), std::string::npos) << m.dump();
  }
  std::size_t launches = 0;
  for (const auto& c : events_where(trace, "call", "X")) {
    if (c["args"]["kind"] != "launch") continue;
    ++launches;
    EXPECT_EQ(c["args"].value("concurrent", false), true) << c.dump();
  }
  EXPECT_EQ(launches, 4u);
  const auto high = events_where(trace, "pool_high", "i");
  ASSERT_EQ(high.size(), 1u);
  EXPECT_EQ(high[0]["args"].value("concurrent", false), true);
  EXPECT_EQ(high[0]["args"]["graph"], r.recorded->pools[0].high_graph);
  // The page's browser test reads this recording for its concurrency marks (tests/CMakeLists.txt).
  profiler::write_report(r, std::string(GMEM_BINARY_DIR) + "/views-four-threads.json");
}

}  // namespace
}  // namespace gmem::record::test
