// The pool model against the driver, case by case: every step of every case that
// tools/pool_cases.sh ran on an H100 (reports/gpu-runs/2026-11-23-H100-pool-probe.txt)
// is replayed through the model, which must give the reservation the driver had after it, the
// used memory, and whether each launch or upload mapped memory (its host time says so). The cases are read from the committed output itself (each case line holds its
// graphs and its program), so a new case there is tested without touching this file.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmem/profiler/pool_model.hpp"
#include "probe_cases.hpp"

namespace gmem::profiler {
namespace {

using probe::MiB;
using probe::granule;
using probe::probe_case;
using probe::read_cases;
using probe::probe_output;

pool_graph probe_graph(const std::string& def) {
  return pool_graph_of(probe::skeleton_of_spec(def), granule, probe::auto_free(def));
}

// A probe output and the host time that separates, on its machine, calls that mapped memory
// from steady ones: on the H100 steady launches took 0.7 to 14.4 us and mappings 18.9 us and
// up; on the H200 steady launches up to 22.1 us (a kernel graph's launch after a 30 ms
// synchronize) and mappings 27.9 us and up.
struct probe_file {
  const char* path;
  double mapping_floor_us;
};

class PoolModelOn : public ::testing::TestWithParam<probe_file> {};

TEST_P(PoolModelOn, EveryStepOfTheProbeCasesMeasuredOnTheDriver) {
  const std::vector<probe_case> cases = read_cases(GetParam().path);
  ASSERT_EQ(cases.size(), 18u) << "the committed probe output " << GetParam().path;
  std::size_t steps = 0, calls = 0;
  for (const probe_case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_EQ(c.steps.size(), c.program.size());
    pool_model m(granule);
    for (const std::string& def : c.graphs) m.add(probe_graph(def));
    for (std::size_t i = 0; i < c.program.size(); ++i) {
      const std::string& t = c.program[i];
      ASSERT_EQ(t, c.steps[i].token);
      const std::size_t at = t.find('@');
      const std::uint64_t stream = at == std::string::npos ? 0 : std::stoull(t.substr(at + 1));
      const std::size_t g = t.size() > 1 ? std::stoul(t.substr(1)) : 0;
      switch (t[0]) {
        case 'L':
        case 'U': {
          const pool_step r = t[0] == 'L' ? m.launch(g, stream) : m.upload(g, stream);
          EXPECT_FALSE(r.refused) << t;
          // Whether the call mapped memory, from its host time (see probe_file).
          const bool mapped = c.steps[i].host_us >= GetParam().mapping_floor_us;
          EXPECT_EQ(r.mapped_slots > 0, mapped)
              << "step " << i + 1 << " " << t << ": the model maps " << r.mapped_slots
              << " slot(s), the driver took " << c.steps[i].host_us << " us";
          ++calls;
          break;
        }
        case 'F': m.free_held(g); break;
        case 'D': m.synchronize(); m.destroy(g); break;
        case 'S': m.synchronize(); break;
        case 'T': m.synchronize(); m.trim(0); break;
        default: FAIL() << "unknown step " << t;
      }
      EXPECT_EQ(m.reserved(0) / MiB, c.steps[i].reserved / MiB) << "after step " << i + 1 << " " << t;
      EXPECT_EQ(m.used(0) / MiB, c.steps[i].used / MiB) << "used, after step " << i + 1 << " " << t;
      ++steps;
    }
  }
  EXPECT_GT(steps, 200u);
  EXPECT_GT(calls, 150u);
}

// Completions the program makes without a device synchronize, and launches back to back
// (tools/completion_cases.sh on an H100): the model takes an event synchronize or a query that
// reported done as the work before the event complete, a synchronous copy as the blocking
// streams' work complete, a stream wait as nothing (C4: the driver did not share), and, where
// the recorder reads the counters around a launch (a graph's first launch, a slow one), the
// driver's measured growth: work that completed unseen (C6, a host sleep) is then complete. A
// launch that waited for room in the launch queue took 15 us or more and mapped nothing.
TEST(PoolModel, EveryStepOfTheCompletionCasesMeasuredOnTheDriver) {
  const std::vector<probe_case> cases = read_cases(probe::completion_output);
  ASSERT_EQ(cases.size(), 11u) << "the committed probe output " << probe::completion_output;
  constexpr std::uint64_t blocking_stream = 4;  // the probe's stream 4; 0..3 are non-blocking
  std::size_t steps = 0;
  for (const probe_case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_EQ(c.steps.size(), c.program.size());
    pool_model m(granule);
    for (const std::string& def : c.graphs) m.add(probe_graph(def));
    std::map<std::uint64_t, std::uint64_t> ordinal;         // launches per stream
    std::map<std::uint64_t, std::uint64_t> event_at;        // the stream's event: its ordinal
    std::set<std::size_t> launched;
    std::uint64_t reserved = 0;
    for (std::size_t i = 0; i < c.program.size(); ++i) {
      const std::string& t = c.program[i];
      ASSERT_EQ(t, c.steps[i].token);
      const std::size_t at = t.find('@');
      const std::uint64_t stream = at == std::string::npos ? 0 : std::stoull(t.substr(at + 1));
      const std::size_t k = t.size() > 1 && std::isdigit(static_cast<unsigned char>(t[1])) ? std::stoul(t.substr(1)) : 0;
      const std::uint64_t measured = c.steps[i].reserved - reserved;
      switch (t[0]) {
        case 'L': {
          const std::size_t star = t.find('*');
          const std::uint64_t n = star == std::string::npos ? 1 : std::stoull(t.substr(star + 1));
          // Counters are read around a first launch and a slow one (a loop's slowest stands
          // for its slow launches: none of them grew the pool).
          const bool read = !launched.count(k) || c.steps[i].host_us >= 15.0;
          launched.insert(k);
          const std::uint64_t first = ordinal[stream] + 1;
          ordinal[stream] += n;
          const pool_step r = m.launch(k, stream, first, read ? std::optional<std::uint64_t>(measured) : std::nullopt);
          if (n > 1) {
            const pool_step again = m.launch(k, stream, ordinal[stream]);
            EXPECT_EQ(r.mapped_slots + again.mapped_slots, 0u)
                << t << ": " << n << " launches back to back, the slowest " << c.steps[i].host_us
                << " us, mapped nothing on the driver";
          }
          break;
        }
        case 'R': event_at[stream] = ordinal[stream]; break;
        case 'E':
        case 'Q': m.synchronize(k, event_at[k]); break;
        case 'Y': m.synchronize(k); break;
        case 'W': break;  // ordered, not complete: the driver does not share (C4)
        case 'C': m.synchronize(blocking_stream); break;
        case 'Z': break;  // completed unseen: only a measured growth says so (C6)
        case 'S': m.synchronize(); break;
        default: FAIL() << "unknown step " << t;
      }
      reserved = c.steps[i].reserved;
      EXPECT_EQ(m.reserved(0) / MiB, c.steps[i].reserved / MiB) << "after step " << i + 1 << " " << t;
      EXPECT_EQ(m.used(0) / MiB, c.steps[i].used / MiB) << "used, after step " << i + 1 << " " << t;
      ++steps;
    }
  }
  EXPECT_GT(steps, 50u);
}

// An executable graph updated in place runs a graph whose allocations have addresses of their
// own: its next launch maps them again, from the pool's free granules (no growth), and an output
// the graph before the update left live keeps its granule until it is freed.
TEST(PoolModel, AnUpdatedGraphMapsAgainFromThePoolAndItsLiveOutputStaysUntilFreed) {
  pool_model m(granule);
  const std::size_t g = m.add(probe_graph("g=w64"));
  EXPECT_EQ(m.launch(g, 1).grown_bytes, 2 * granule);
  EXPECT_EQ(m.launch(g, 1).mapped_slots, 0u);  // mapped: nothing to do
  m.synchronize();
  m.update(g);
  const pool_step again = m.launch(g, 1);
  EXPECT_EQ(again.mapped_slots, 2u);
  EXPECT_EQ(again.grown_bytes, 0u);
  EXPECT_EQ(m.reserved(0), 2 * granule);

  pool_model o(granule);
  const std::size_t h = o.add(probe_graph("g=o8"));
  o.launch(h, 1);
  o.synchronize();
  o.update(h);
  EXPECT_TRUE(o.launch(h, 1).refused);  // its output is still live, without AutoFreeOnLaunch
  o.free_held(h);
  const pool_step after_free = o.launch(h, 1);  // the freed output's granule, mapped again
  EXPECT_FALSE(after_free.refused);
  EXPECT_EQ(after_free.grown_bytes, 0u);
  EXPECT_EQ(o.reserved(0), granule);
}

INSTANTIATE_TEST_SUITE_P(H100AndH200, PoolModelOn,
                         ::testing::Values(probe_file{probe::probe_output, 15.0},
                                           probe_file{probe::probe_output_h200, 25.0}));

}  // namespace
}  // namespace gmem::profiler
