// Cold phases sampled from shared resets (measure_chains): the chains run in turn,
// each step starts where the one before ended, a phase named in two chains takes its samples
// from both, and a phase that is done stops recording while its chain runs on for the others.
// Without a GPU the reference launch cannot be built and the samples carry none.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gmem/profiler/timing.hpp"
#include "gmem/usage_error.hpp"

namespace gmem::profiler {
namespace {

/// Steps that log their names and return the values given, in turn.
struct script {
  std::vector<std::string> log;
  std::function<void()> note(const std::string& what) {
    return [this, what] { log.push_back(what); };
  }
  chain_plan::step step(const std::string& phase, const std::string& what, std::vector<double> values) {
    auto next = std::make_shared<std::size_t>(0);
    return {phase, [this, what, values, next] {
              log.push_back(what);
              const double v = values[(*next)++ % values.size()];
              return timed{v, 2 * v};
            }};
  }
};

const launch_cost& cost_of(const std::vector<launch_cost>& costs, const std::string& phase) {
  for (const launch_cost& c : costs) {
    if (c.phase == phase) return c;
  }
  throw std::runtime_error("no phase " + phase);
}

void expect_references_beside_samples(const std::vector<launch_cost>& costs) {
  for (const launch_cost& c : costs) {
    EXPECT_TRUE(c.reference_host.count == 0 || c.reference_host.count == c.host.count) << c.phase;
  }
}

TEST(SampleChains, ChainsRunInTurnEachStepAfterTheOneBeforeAndUnnamedStepsAreNotRecorded) {
  script s;
  const std::vector<chain_plan> chains{
      {s.note("reset A"), {s.step("instantiate", "i", {100, 110, 120, 130}), s.step("first_launch_no_upload", "l", {7})},
       s.note("cleanup A")},
      {s.note("reset B"), {s.step("", "i (untimed)", {999}), s.step("upload", "u", {50}),
                           s.step("first_launch_after_upload", "L", {5})},
       s.note("cleanup B")}};
  const std::vector<launch_cost> costs = measure_chains(chains, 1, 3);
  const std::vector<std::string> round_a{"reset A", "i", "l", "cleanup A"};
  const std::vector<std::string> round_b{"reset B", "i (untimed)", "u", "L", "cleanup B"};
  std::vector<std::string> expected;
  for (int r = 0; r < 4; ++r) {  // one warm-up round of each, then three recorded of each
    expected.insert(expected.end(), round_a.begin(), round_a.end());
    expected.insert(expected.end(), round_b.begin(), round_b.end());
  }
  EXPECT_EQ(s.log, expected);
  ASSERT_EQ(costs.size(), 4u);  // in the order the chains first name them; the unnamed step is none
  EXPECT_EQ(costs[0].phase, "instantiate");
  EXPECT_EQ(costs[1].phase, "first_launch_no_upload");
  EXPECT_EQ(costs[2].phase, "upload");
  EXPECT_EQ(costs[3].phase, "first_launch_after_upload");
  for (const launch_cost& c : costs) {
    EXPECT_EQ(c.host.count, 3u) << c.phase;
    EXPECT_EQ(c.warmups, 1u) << c.phase;
  }
  // The warm-up's 100 is not recorded: 110, 120, 130.
  EXPECT_DOUBLE_EQ(cost_of(costs, "instantiate").host.min_us, 110);
  EXPECT_DOUBLE_EQ(cost_of(costs, "instantiate").host.max_us, 130);
  EXPECT_DOUBLE_EQ(cost_of(costs, "instantiate").wall.median_us, 240);
  expect_references_beside_samples(costs);
}

TEST(SampleChains, APhaseInTwoChainsTakesItsSamplesFromBothAndStopsAtReps) {
  script s;
  const std::vector<chain_plan> chains{
      {{}, {s.step("instantiate", "iA", {1, 2, 3, 4, 5, 6}), s.step("first_launch_no_upload", "l", {7})}, {}},
      {{}, {s.step("instantiate", "iB", {10, 20, 30, 40, 50, 60}), s.step("upload", "u", {8})}, {}}};
  const std::vector<launch_cost> costs = measure_chains(chains, 2, 4);
  // Warm-ups: iA 1, 2 and iB 10, 20. Recorded, in turn: iA 3, iB 30, iA 4, iB 40: done at 4.
  const launch_cost& inst = cost_of(costs, "instantiate");
  EXPECT_EQ(inst.host.count, 4u);
  EXPECT_EQ(inst.warmups, 4u);  // two unrecorded rounds of each chain that samples it
  EXPECT_DOUBLE_EQ(inst.host.min_us, 3);
  EXPECT_DOUBLE_EQ(inst.host.max_us, 40);
  // Both chains ran on for their launch and upload: eight recorded rounds, ten in all.
  EXPECT_EQ(cost_of(costs, "first_launch_no_upload").host.count, 4u);
  EXPECT_EQ(cost_of(costs, "upload").host.count, 4u);
  EXPECT_EQ(std::count(s.log.begin(), s.log.end(), "iA"), 6);
  EXPECT_EQ(std::count(s.log.begin(), s.log.end(), "iB"), 6);
  expect_references_beside_samples(costs);
}

TEST(SampleChains, ASettledPhaseStopsRecordingWhileItsChainRunsOnForTheOthers) {
  script s;
  const std::vector<chain_plan> chains{
      {{}, {s.step("steady", "x", {10}), s.step("noisy", "y", {10, 30})}, {}}};
  const std::vector<launch_cost> costs = measure_chains(chains, 0, 6, {3, 0.10});
  EXPECT_EQ(cost_of(costs, "steady").host.count, 3u);  // 10, 10, 10: settled
  EXPECT_EQ(cost_of(costs, "noisy").host.count, 6u);   // never within 10%: all six
  EXPECT_EQ(std::count(s.log.begin(), s.log.end(), "x"), 6);  // it ran for the noisy one
  // A chain whose every phase settled is not run again.
  script t;
  const std::vector<launch_cost> quiet =
      measure_chains({{{}, {t.step("steady", "x", {10})}, {}}, {{}, {t.step("noisy", "y", {10, 30})}, {}}}, 0, 6, {3, 0.10});
  EXPECT_EQ(std::count(t.log.begin(), t.log.end(), "x"), 3);
  EXPECT_EQ(std::count(t.log.begin(), t.log.end(), "y"), 6);
  EXPECT_EQ(cost_of(quiet, "noisy").host.count, 6u);
}

TEST(SampleChains, MeasurePhaseIsOneChainOfOneStep) {
  script s;
  const launch_cost c = measure_phase({"steady_launch", s.note("reset"), [&] {
                                         s.log.push_back("sample");
                                         return timed{3, 4};
                                       },
                                       s.note("cleanup")},
                                      1, 2);
  EXPECT_EQ(s.log, (std::vector<std::string>{"reset", "sample", "cleanup", "reset", "sample", "cleanup", "reset",
                                             "sample", "cleanup"}));
  EXPECT_EQ(c.phase, "steady_launch");
  EXPECT_EQ(c.host.count, 2u);
  EXPECT_EQ(c.warmups, 1u);
}

TEST(SampleChains, APhaseNamedTwiceInOneChainOrNoNameIsRefused) {
  script s;
  try {
    (void)measure_chains({{{}, {s.step("upload", "u", {1}), s.step("upload", "u", {1})}, {}}}, 0, 1);
    FAIL() << "a phase named twice in one chain was accepted";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("'upload'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(s.log.empty());  // refused before anything ran
  EXPECT_THROW((void)measure_phase({"", {}, [] { return timed{}; }, {}}, 0, 1), usage_error);
}

}  // namespace
}  // namespace gmem::profiler
