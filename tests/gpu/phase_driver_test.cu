// The profiler's phase driver on a real device: each phase's untimed reset leaves the graph in
// the state the phase is named for, read back from the graph memory counters.
#include <string>
#include <vector>

#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/phase_driver.hpp"
#include "gpu_test_support.cuh"

namespace gmem::test {
namespace {

using namespace gmem::profiler;
using PhaseDriver = GpuTest;

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::uint64_t bytes = 64 * MiB;

graph alloc_memset_free() {
  graph g("phase driver");
  const auto a = g.add_alloc({bytes, 0});
  const auto m = g.add_memset({a.node}, a.ptr, 1, 4096);
  (void)g.add_free(a.ptr, {m});
  return g;
}

std::uint64_t reserved() { return read_counters(0).reserved_current; }

void run(const phase_step& step) {
  step.call();
  GMEM_CUDA_TRY(cudaStreamSynchronize(step.stream));
}

TEST_F(PhaseDriver, ColdStepsStartUnmappedAndOnlyUploadOrLaunchMaps) {
  const graph g = alloc_memset_free();
  phase_driver drive(g.get(), g.name(), 0, {false, {}, bytes});
  for (const char* p : {phase::instantiate, phase::upload, phase::first_launch_no_upload,
                        phase::launch_after_trim}) {
    const phase_step step = drive.step(p);
    step.reset();
    EXPECT_EQ(reserved(), 0u) << p << ": the reset leaves the pool trimmed";
    run(step);
    if (p == std::string(phase::instantiate)) {
      EXPECT_EQ(reserved(), 0u) << "instantiating maps nothing";
    } else {
      EXPECT_GE(reserved(), bytes) << p << " maps the allocation";
    }
    if (step.cleanup) step.cleanup();
  }
  drive.finish();
}

std::vector<std::string> named_steps(const phase_chain& c) {
  std::vector<std::string> names;
  for (const auto& st : c.steps) names.push_back(st.phase.empty() ? std::string("(untimed)") : st.phase);
  return names;
}

// The cold phases share resets. Each chain's reset leaves the pool trimmed and no
// executable graph; the instantiation maps nothing; the upload (or the launch after a bare
// instantiation) maps; each step is what its phase's own step() is after its own reset.
TEST_F(PhaseDriver, ColdChainsShareOneResetAndEachStepStartsWhereTheLastEnded) {
  const graph g = alloc_memset_free();
  phase_driver drive(g.get(), g.name(), 0, {false, {}, bytes});
  const std::vector<phase_chain> chains = drive.cold_chains(all_phases());
  ASSERT_EQ(chains.size(), 3u) << "five cold phases, three resets";
  using names = std::vector<std::string>;
  EXPECT_EQ(named_steps(chains[0]), (names{"instantiate", "first_launch_no_upload"}));
  EXPECT_EQ(named_steps(chains[1]), (names{"instantiate", "upload", "first_launch_after_upload"}));
  EXPECT_EQ(named_steps(chains[2]), (names{"instantiate", "upload", "upload_then_launch_other_stream"}));
  EXPECT_EQ(chains[2].steps[2].stream, drive.step(phase::upload_then_launch_other_stream).stream);
  EXPECT_NE(chains[2].steps[2].stream, chains[1].steps[2].stream);
  for (const phase_chain& c : chains) {
    c.reset();
    EXPECT_EQ(reserved(), 0u) << "the reset leaves the pool trimmed";
    for (std::size_t i = 0; i < c.steps.size(); ++i) {
      c.steps[i].call();
      GMEM_CUDA_TRY(cudaStreamSynchronize(c.steps[i].stream));
      if (i == 0) {
        EXPECT_EQ(reserved(), 0u) << "instantiating maps nothing";
      } else {
        EXPECT_GE(reserved(), bytes) << c.steps[i].phase << " maps the allocation";
      }
    }
    c.cleanup();
  }
  // Only what was asked for is named; the steps a named one needs run unnamed.
  const std::vector<phase_chain> upload = drive.cold_chains({phase::upload, phase::steady_launch});
  ASSERT_EQ(upload.size(), 1u);
  EXPECT_EQ(named_steps(upload[0]), (names{"(untimed)", "upload"}));
  const std::vector<phase_chain> launch = drive.cold_chains({phase::first_launch_after_upload});
  ASSERT_EQ(launch.size(), 1u);
  EXPECT_EQ(named_steps(launch[0]), (names{"(untimed)", "(untimed)", "first_launch_after_upload"}));
  const std::vector<phase_chain> inst = drive.cold_chains({phase::instantiate});
  ASSERT_EQ(inst.size(), 1u);
  EXPECT_EQ(named_steps(inst[0]), (names{"instantiate"}));
  EXPECT_TRUE(drive.cold_chains({phase::steady_launch, phase::launch_after_trim}).empty());
  EXPECT_THROW((void)drive.cold_chains({"warm_launch"}), usage_error);
  drive.finish();
}

TEST_F(PhaseDriver, SteadyAndStreamSwitchStepsFindTheGraphMapped) {
  const graph g = alloc_memset_free();
  phase_driver drive(g.get(), g.name(), 0, {false, {}, bytes});
  const phase_step steady = drive.step(phase::steady_launch);
  const phase_step other = drive.step(phase::launch_after_stream_switch);
  EXPECT_NE(steady.stream, other.stream);
  EXPECT_EQ(drive.step(phase::upload_then_launch_other_stream).stream, other.stream);
  steady.reset();
  run(steady);  // the first launch maps
  const std::uint64_t mapped = reserved();
  EXPECT_GE(mapped, bytes);
  for (const phase_step* step : {&steady, &other}) {
    step->reset();
    EXPECT_EQ(reserved(), mapped);
    run(*step);
    EXPECT_EQ(reserved(), mapped) << "a steady launch or a stream switch maps nothing new";
  }
  drive.finish();
}

TEST_F(PhaseDriver, ContentionStepMakesTheRelaunchMapMemoryBesideTheOtherGraphs) {
  const graph g = alloc_memset_free();
  phase_driver drive(g.get(), g.name(), 0, {false, {}, bytes});
  const phase_step step = drive.step(phase::launch_with_unfreed_contention);
  step.reset();
  EXPECT_GE(reserved(), bytes) << "the other graph holds its unfreed allocation";
  run(step);
  // Both allocations were live at once: the relaunch could not use the other graph's memory.
  EXPECT_GE(reserved(), 2 * bytes);
  step.cleanup();
  drive.finish();
  (void)trim(0);
  EXPECT_EQ(reserved(), 0u) << "finish() leaves nothing live";
}

TEST_F(PhaseDriver, RefusesANullGraphAndAnUnknownPhase) {
  EXPECT_THROW(phase_driver(nullptr, "none", 0, {}), usage_error);
  const graph g = alloc_memset_free();
  phase_driver drive(g.get(), g.name(), 0, {});
  try {
    (void)drive.step("warm_launch");
    FAIL() << "an unknown phase was accepted";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("valid phases: instantiate"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gmem::test
