// Advice measured on the driver. For each advice kind, a real graph (kernels included)
// where it is printed, the change applied to the real graph as the advice says, and the real
// saving within one reservation granule of the claim; and graphs where a naive suggestion saves
// nothing and no advice is printed.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/environment.hpp"
#include "gmem/profiler/graph_reader.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gmem/profiler/phase_driver.hpp"
#include "gmem/profiler/profile.hpp"
#include "gmem/profiler/reuse_model.hpp"
#include "gmem/profiler/skeleton_replay.hpp"
#include "gmemprof/commands.hpp"
#include "views/show.hpp"
#include "gpu_test_support.cuh"

namespace gmem::test {
namespace {

using namespace gmem::profiler;  // NOLINT(google-build-using-namespace): test file

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t S = 64 * MiB;
constexpr int n_ints = 1024;

#define OK(call) ASSERT_EQ((call), cudaSuccess) << #call

// Spins for `cycles` clock cycles, then writes: a kernel long enough for launches in several
// streams to overlap.
__global__ void spin_then_write(int* p, long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  p[threadIdx.x] = static_cast<int>(threadIdx.x);
}

// A real graph built with the runtime API, destroyed with it.
struct real_graph {
  cudaGraph_t g = nullptr;
  real_graph() { EXPECT_EQ(cudaGraphCreate(&g, 0), cudaSuccess); }
  ~real_graph() { if (g) (void)cudaGraphDestroy(g); }
  real_graph(const real_graph&) = delete;
  real_graph& operator=(const real_graph&) = delete;

  cudaGraphNode_t alloc(std::vector<cudaGraphNode_t> deps, std::size_t bytes, void** ptr) {
    cudaMemAllocNodeParams p{};
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.poolProps.location.id = 0;
    p.bytesize = bytes;
    cudaGraphNode_t node = nullptr;
    EXPECT_EQ(cudaGraphAddMemAllocNode(&node, g, deps.data(), deps.size(), &p), cudaSuccess);
    *ptr = p.dptr;
    return node;
  }
  cudaGraphNode_t kernel(std::vector<cudaGraphNode_t> deps, void* buf) {
    int* ints = static_cast<int*>(buf);
    int n = n_ints, base = 7;
    void* args[] = {&ints, &n, &base};
    cudaKernelNodeParams k{};
    k.func = reinterpret_cast<void*>(fill_iota);
    k.gridDim = blocks_for(n_ints);
    k.blockDim = threads();
    k.kernelParams = args;
    cudaGraphNode_t node = nullptr;
    EXPECT_EQ(cudaGraphAddKernelNode(&node, g, deps.data(), deps.size(), &k), cudaSuccess);
    return node;
  }
  cudaGraphNode_t spin(std::vector<cudaGraphNode_t> deps, void* buf, long long cycles) {
    int* ints = static_cast<int*>(buf);
    void* args[] = {&ints, &cycles};
    cudaKernelNodeParams k{};
    k.func = reinterpret_cast<void*>(spin_then_write);
    k.gridDim = dim3(1);
    k.blockDim = dim3(32);
    k.kernelParams = args;
    cudaGraphNode_t node = nullptr;
    EXPECT_EQ(cudaGraphAddKernelNode(&node, g, deps.data(), deps.size(), &k), cudaSuccess);
    return node;
  }
  cudaGraphNode_t free(std::vector<cudaGraphNode_t> deps, void* ptr) {
    cudaGraphNode_t node = nullptr;
    EXPECT_EQ(cudaGraphAddMemFreeNode(&node, g, deps.data(), deps.size(), ptr), cudaSuccess);
    return node;
  }
  void edge(cudaGraphNode_t from, cudaGraphNode_t to) {
    EXPECT_EQ(cudaGraphAddDependencies(g, &from, &to, nullptr, 1), cudaSuccess);
  }
};

enum class order { independent, at_creation, added_later, allocs_first_added_later };

// Chains alloc -> kernel -> free of the given sizes, ordered as `o` says.
void build_chains(real_graph& r, const std::vector<std::size_t>& sizes, order o) {
  const std::size_t n = sizes.size();
  std::vector<cudaGraphNode_t> a(n), k(n), f(n);
  std::vector<void*> p(n);
  if (o == order::allocs_first_added_later) {
    for (std::size_t i = 0; i < n; ++i) a[i] = r.alloc({}, sizes[i], &p[i]);
    for (std::size_t i = 0; i < n; ++i) k[i] = r.kernel({a[i]}, p[i]);
    for (std::size_t i = 0; i < n; ++i) f[i] = r.free({k[i]}, p[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<cudaGraphNode_t> deps;
      if (i > 0 && o == order::at_creation) deps.push_back(f[i - 1]);
      a[i] = r.alloc(deps, sizes[i], &p[i]);
      k[i] = r.kernel({a[i]}, p[i]);
      f[i] = r.free({k[i]}, p[i]);
    }
  }
  if (o == order::added_later || o == order::allocs_first_added_later) {
    for (std::size_t i = 1; i < n; ++i) r.edge(f[i - 1], a[i]);
  }
}

struct launched {
  std::uint64_t reserved = 0;        // reserved high during the launch, above what was there
  std::uint64_t kept_after_destroy = 0;
  std::uint64_t after_trim = 0;
};

// Instantiates and launches the real graph once, as a user's program would.
launched launch_real(cudaGraph_t g) {
  launched out;
  (void)trim(0);
  const std::uint64_t before = read_counters(0).reserved_current;
  reset_high_watermarks(0);
  cudaGraphExec_t e = nullptr;
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_EQ(cudaGraphInstantiateWithFlags(&e, g, 0), cudaSuccess);
  EXPECT_EQ(cudaGraphLaunch(e, s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  out.reserved = read_counters(0).reserved_high - before;
  EXPECT_EQ(cudaGraphExecDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  out.kept_after_destroy = read_counters(0).reserved_current - before;
  out.after_trim = trim(0).reserved_after - before;
  return out;
}

std::uint64_t granule() {
  static const std::uint64_t g = measure_granularity(0).bytes;
  return g;
}

std::int64_t diff(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::int64_t>(a) - static_cast<std::int64_t>(b);
}

// Reads the real graph, replays its skeleton and measures the advice.
advice_report advice_for(cudaGraph_t g, const std::string& name, bool untrimmed = false) {
  const graph_model m = read_graph(g, name);
  const flat_graph flat = flatten(m);
  const graph_analysis a = analyse(flat, granule());
  const skeleton s = skeleton_of(flat, a, name);
  advice_report r = measure_advice(s, a, granule(), granule(), 0, untrimmed);
  std::cout << describe(r);
  return r;
}

// The skeleton of a real graph, as profiling records it.
skeleton skeleton_for(cudaGraph_t g, const std::string& name) {
  const flat_graph flat = flatten(read_graph(g, name));
  return skeleton_of(flat, analyse(flat, granule()), name);
}

// The advice of `kind` in r (the plan is listed beside the single changes).
const measured_advice& advice_of(const advice_report& r, const std::string& kind) {
  for (const auto& m : r.advice) {
    if (m.kind == kind) return m;
  }
  static const measured_advice none{};
  ADD_FAILURE() << "no advice of kind " << kind << ":\n" << describe(r);
  return none;
}

using Advice = GpuTest;

TEST_F(Advice, GetNodesReturnsNodesInCreationOrder) {
  real_graph r;
  std::vector<cudaGraphNode_t> made;
  void* p = nullptr;
  made.push_back(r.alloc({}, MiB, &p));
  for (int i = 0; i < 4; ++i) {
    cudaGraphNode_t e = nullptr;
    OK(cudaGraphAddEmptyNode(&e, r.g, nullptr, 0));
    made.push_back(e);
  }
  made.push_back(r.free({}, p));
  for (int i = 4; i >= 1; --i) r.edge(made[i], made[i - 1]);  // edges against creation order
  r.edge(made[0], made[5]);
  std::size_t n = 0;
  OK(cudaGraphGetNodes(r.g, nullptr, &n));
  std::vector<cudaGraphNode_t> got(n);
  OK(cudaGraphGetNodes(r.g, got.data(), &n));
  EXPECT_EQ(got, made);
}

TEST_F(Advice, DependencyAtCreationIsAdvisedAndSavesWhatItClaims) {
  real_graph late;
  build_chains(late, {S, S, S, S}, order::added_later);
  const launched before = launch_real(late.g);
  const advice_report r = advice_for(late.g, "edges added later");
  EXPECT_EQ(r.bounds.binding, "late_dependencies");
  EXPECT_LE(std::llabs(diff(r.baseline_bytes, before.reserved)), static_cast<long long>(granule()))
      << "the skeleton replays the real graph's reservation";
  const measured_advice& dep = advice_of(r, "dependency_at_creation");
  EXPECT_NE(dep.where.find("when the alloc nodes are created"), std::string::npos);
  // The change applied to the real graph, as the advice says.
  real_graph fixed;
  build_chains(fixed, {S, S, S, S}, order::at_creation);
  const launched after = launch_real(fixed.g);
  const std::int64_t real_saving = diff(before.reserved, after.reserved);
  EXPECT_LE(std::llabs(real_saving - static_cast<std::int64_t>(dep.saving_bytes)),
            static_cast<long long>(granule()));
  EXPECT_GE(real_saving, static_cast<std::int64_t>(2 * S));
  EXPECT_TRUE(r.combined_reaches_order_free_bound);
}

TEST_F(Advice, TheNaiveEdgeAddedLaterSavesNothing) {
  real_graph independent, late;
  build_chains(independent, {S, S, S, S}, order::independent);
  build_chains(late, {S, S, S, S}, order::added_later);
  const launched a = launch_real(independent.g);
  const launched b = launch_real(late.g);
  EXPECT_LT(std::llabs(diff(a.reserved, b.reserved)), static_cast<long long>(granule()))
      << "cudaGraphAddDependencies after creation shares no memory";
  EXPECT_GE(b.reserved, 4 * S);
}

TEST_F(Advice, CreationOrderIsAdvisedAndSavesWhatItClaims) {
  real_graph first;
  build_chains(first, {S, S, S}, order::allocs_first_added_later);
  const launched before = launch_real(first.g);
  const advice_report r = advice_for(first.g, "allocs created first");
  EXPECT_EQ(r.bounds.binding, "creation_order");
  EXPECT_LE(std::llabs(diff(r.baseline_bytes, before.reserved)), static_cast<long long>(granule()));
  const measured_advice& order_change = advice_of(r, "creation_order");
  real_graph fixed;  // each free created before the next alloc, given as its dependency
  build_chains(fixed, {S, S, S}, order::at_creation);
  const launched after = launch_real(fixed.g);
  const std::int64_t real_saving = diff(before.reserved, after.reserved);
  EXPECT_LE(std::llabs(real_saving - static_cast<std::int64_t>(order_change.saving_bytes)),
            static_cast<long long>(granule()));
  EXPECT_GE(real_saving, static_cast<std::int64_t>(S));
}

TEST_F(Advice, AddedDependencyIsAdvisedAndSavesWhatItClaims) {
  real_graph independent;
  build_chains(independent, {S, 2 * S}, order::independent);
  const launched before = launch_real(independent.g);
  const advice_report r = advice_for(independent.g, "independent chains");
  EXPECT_LE(std::llabs(diff(r.baseline_bytes, before.reserved)), static_cast<long long>(granule()));
  const measured_advice& add = advice_of(r, "add_dependency");
  EXPECT_NE(add.where.find("depend on free node"), std::string::npos) << add.where;
  // The 2 S chain depends on the S chain's free? A block of S does not hold 2 S: the advice must
  // be the other way round (the S allocation after the 2 S free), as the driver measured.
  real_graph fixed;
  build_chains(fixed, {2 * S, S}, order::at_creation);
  const launched after = launch_real(fixed.g);
  const std::int64_t real_saving = diff(before.reserved, after.reserved);
  EXPECT_LE(std::llabs(real_saving - static_cast<std::int64_t>(add.saving_bytes)),
            static_cast<long long>(granule()));
  EXPECT_GE(real_saving, static_cast<std::int64_t>(S) - static_cast<std::int64_t>(granule()));
}

// GPU time of one launch of g (median of `n`, events around each launch, after a warm-up).
double launch_us(cudaGraph_t g, int n = 7) {
  cudaGraphExec_t e = nullptr;
  cudaStream_t s = nullptr;
  cudaEvent_t a = nullptr, b = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_EQ(cudaEventCreate(&a), cudaSuccess);
  EXPECT_EQ(cudaEventCreate(&b), cudaSuccess);
  EXPECT_EQ(cudaGraphInstantiateWithFlags(&e, g, 0), cudaSuccess);
  EXPECT_EQ(cudaGraphLaunch(e, s), cudaSuccess);
  std::vector<double> us;
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(cudaEventRecord(a, s), cudaSuccess);
    EXPECT_EQ(cudaGraphLaunch(e, s), cudaSuccess);
    EXPECT_EQ(cudaEventRecord(b, s), cudaSuccess);
    EXPECT_EQ(cudaEventSynchronize(b), cudaSuccess);
    float ms = 0;
    EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    us.push_back(1e3 * ms);
  }
  EXPECT_EQ(cudaGraphExecDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(a), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(b), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  (void)trim(0);
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

// k independent chains alloc -> spin kernel -> free of `bytes`, each kernel `cycles` long; with
// `chained`, each alloc node created with the previous chain's free as a dependency (the plan).
void spin_chains(real_graph& r, int k, std::size_t bytes, long long cycles, bool chained) {
  cudaGraphNode_t prev = nullptr;
  for (int i = 0; i < k; ++i) {
    void* p = nullptr;
    std::vector<cudaGraphNode_t> deps;
    if (chained && prev) deps.push_back(prev);
    const cudaGraphNode_t a = r.alloc(deps, bytes, &p);
    prev = r.free({r.spin({a}, p, cycles)}, p);
  }
}

TEST_F(Advice, ThePlanChainsIndependentAllocationsAndItsPriceIsPredictedFromTheCriticalPath) {
  // Four independent 128 MiB chains reserve 512 MiB. The plan: three dependencies,
  // one allocation's memory, measured; its price: the four kernels in series instead of side by
  // side, predicted from the kernels' durations on the real graph.
  const long long cycles = 400000;  // ~200 us at H100 clocks: the launch's own overhead is ~10 us
  real_graph independent;
  spin_chains(independent, 4, 2 * S, cycles, false);
  profile_options o;
  o.reps = 3;
  o.phases = {phase::steady_launch};
  const scenario_result r = profile_graph(independent.g, "four chains", o);
  ASSERT_TRUE(r.advice.has_value());
  std::cout << format_report(make_report({r}, 0, "test")) << "\n";
  const measured_change* plan = nullptr;
  for (const auto& c : r.advice->changes) {
    if (c.kind == "plan") plan = &c;
  }
  ASSERT_NE(plan, nullptr) << "no plan advised";
  EXPECT_EQ(plan->added_dependencies, 3u);
  EXPECT_LE(plan->measured_bytes, round_up(2 * S, granule()));
  EXPECT_GE(plan->saving_bytes, 6 * S - granule());
  ASSERT_TRUE(r.advice->critical_path_us.has_value()) << r.advice->durations_note;
  ASSERT_TRUE(plan->predicted_launch_us.has_value());
  ASSERT_TRUE(plan->predicted_price_us.has_value());
  // The price is predicted from the critical path: the changed graph's predicted launch less
  // the graph's own, both from the kernels' durations on the real graph; four ~200 us kernels in
  // series instead of side by side cost about three kernels more.
  EXPECT_NEAR(*plan->predicted_price_us, *plan->predicted_launch_us - *r.advice->critical_path_us, 1e-6);
  EXPECT_GT(*plan->predicted_price_us, 2 * *r.advice->critical_path_us);
  EXPECT_GT(*plan->predicted_launch_us, 3 * *r.advice->critical_path_us);
  // The changed graph, built with its kernels as the plan says, reserves what the plan measured.
  // How long it launches is the benchmark's (advice/plan_price/four_chains in gmem_bench): the
  // launched time moves with the host and clocks (a fresh H100 host: 203 us predicted, 247 us
  // launched), which a test bound would report as a failure.
  real_graph planned;
  spin_chains(planned, 4, 2 * S, cycles, true);
  const launched after = launch_real(planned.g);
  EXPECT_LE(after.reserved, round_up(2 * S, granule()));
  std::printf("critical path %.1f us predicted, %.1f us launched; plan %.1f us predicted, %.1f us launched\n",
              *r.advice->critical_path_us, launch_us(independent.g), *plan->predicted_launch_us,
              launch_us(planned.g));
}

TEST_F(Advice, TrimIsAdvisedOnlyForAProgramThatDoesNotTrimAndSavesWhatItClaims) {
  real_graph g;
  build_chains(g, {S, S}, order::at_creation);
  const advice_report quiet = advice_for(g.g, "trimmed program");
  for (const auto& m : quiet.advice) EXPECT_NE(m.kind, "trim");
  const advice_report r = advice_for(g.g, "untrimmed program", true);
  ASSERT_FALSE(r.advice.empty());
  EXPECT_EQ(r.advice.back().kind, "trim");
  const launched real = launch_real(g.g);
  const std::int64_t real_saving = diff(real.kept_after_destroy, real.after_trim);
  EXPECT_LE(std::llabs(real_saving - static_cast<std::int64_t>(r.advice.back().saving_bytes)),
            static_cast<long long>(granule()));
}

TEST_F(Advice, NoAdviceWhereNothingSaves) {
  {  // Already ordered at creation: at the bound.
    real_graph g;
    build_chains(g, {S, S, S}, order::at_creation);
    const advice_report r = advice_for(g.g, "ordered");
    EXPECT_TRUE(r.advice.empty());
    EXPECT_EQ(r.bounds.binding, "order_free");
  }
  {  // A small allocation before a larger one: the bound says 4 S, the driver reserves 5 S, and
     // no change of this graph's order or dependencies fits the 4 S into the freed S block.
    real_graph g;
    build_chains(g, {S, 4 * S}, order::at_creation);
    const launched real = launch_real(g.g);
    EXPECT_GE(real.reserved, 5 * S);
    const advice_report r = advice_for(g.g, "small then large");
    EXPECT_TRUE(r.advice.empty());
    EXPECT_FALSE(r.combined_reaches_order_free_bound);
  }
}

TEST_F(Advice, TwoGraphsInTwoStreamsShareAsInOne) {
  // A naive suggestion ("launch them into one stream") that saves nothing when the launches do
  // not overlap in time.
  real_graph g1, g2;
  build_chains(g1, {S}, order::independent);
  build_chains(g2, {S}, order::independent);
  std::uint64_t reserved[2] = {0, 0};
  for (int two_streams = 0; two_streams < 2; ++two_streams) {
    (void)trim(0);
    const std::uint64_t before = read_counters(0).reserved_current;
    reset_high_watermarks(0);
    cudaGraphExec_t e1 = nullptr, e2 = nullptr;
    cudaStream_t s1 = nullptr, s2 = nullptr;
    OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    OK(cudaGraphInstantiateWithFlags(&e1, g1.g, 0));
    OK(cudaGraphInstantiateWithFlags(&e2, g2.g, 0));
    for (int rep = 0; rep < 2; ++rep) {
      OK(cudaGraphLaunch(e1, s1));
      OK(cudaStreamSynchronize(s1));
      OK(cudaGraphLaunch(e2, two_streams ? s2 : s1));
      OK(cudaDeviceSynchronize());
    }
    reserved[two_streams] = read_counters(0).reserved_high - before;
    OK(cudaGraphExecDestroy(e1));
    OK(cudaGraphExecDestroy(e2));
    OK(cudaStreamDestroy(s1));
    OK(cudaStreamDestroy(s2));
  }
  std::cout << "two graphs: one stream " << reserved[0] << " B, two streams " << reserved[1] << " B\n";
  EXPECT_LT(std::llabs(diff(reserved[0], reserved[1])), static_cast<long long>(granule()));
  // And gmem measures the same: one stream would save less than a granule, so it is no advice.
  const measured_advice m = measure_one_stream({skeleton_for(g1.g, "g1"), skeleton_for(g2.g, "g2")},
                                               {"stream 1", "stream 2"}, reserved[1], granule(), 0);
  EXPECT_LT(m.saving_bytes, granule()) << m.where;
}

TEST_F(Advice, AutoFreeOnLaunchIsMeasuredAndNotAdvisedWhereItSavesNothing) {
  // A graph that leaves its allocation allocated. AutoFreeOnLaunch frees it at the next launch,
  // no earlier than the program must: it is measured, and saves nothing on the driver.
  real_graph g;
  void* p = nullptr;
  const auto a = g.alloc({}, S, &p);
  g.kernel({a}, p);
  const advice_report r = advice_for(g.g, "leaves its allocation");
  for (const auto& m : r.advice) EXPECT_NE(m.kind, "auto_free_on_launch") << describe(r);
  const measured_advice* tried = nullptr;
  for (const auto& m : r.tried) {
    if (m.kind == "auto_free_on_launch") tried = &m;
  }
  ASSERT_NE(tried, nullptr) << "AutoFreeOnLaunch was not measured:\n" << describe(r);
  EXPECT_LT(tried->saving_bytes, granule());
  // The real graph, as a program would run it: launched, freed outside, launched again; and
  // instantiated with AutoFreeOnLaunch, launched twice. The same reservation.
  std::uint64_t reserved[2] = {0, 0};
  for (int auto_free = 0; auto_free < 2; ++auto_free) {
    (void)trim(0);
    const std::uint64_t before = read_counters(0).reserved_current;
    reset_high_watermarks(0);
    cudaGraphExec_t e = nullptr;
    cudaStream_t s = nullptr;
    OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    OK(cudaGraphInstantiateWithFlags(&e, g.g, auto_free ? cudaGraphInstantiateFlagAutoFreeOnLaunch : 0));
    for (int launch = 0; launch < 2; ++launch) {
      OK(cudaGraphLaunch(e, s));
      if (!auto_free) OK(cudaFreeAsync(p, s));
    }
    OK(cudaStreamSynchronize(s));
    reserved[auto_free] = read_counters(0).reserved_high - before;
    if (auto_free) OK(cudaFree(p));
    OK(cudaGraphExecDestroy(e));
    OK(cudaStreamDestroy(s));
  }
  std::cout << "freed outside: " << reserved[0] << " B, AutoFreeOnLaunch: " << reserved[1] << " B\n";
  EXPECT_LT(std::llabs(diff(reserved[0], reserved[1])), static_cast<long long>(granule()));
  EXPECT_LE(std::llabs(diff(reserved[1], tried->measured_bytes)), static_cast<long long>(granule()));
}

TEST_F(Advice, OneStreamIsAdvisedForOverlappingLaunchesAndSavesWhatItClaims) {
  // Four graphs of alloc(4 S) -> a kernel of some milliseconds -> free, launched into four
  // streams: their launches overlap, so the driver cannot share their memory.
  constexpr int n = 4;
  constexpr long long cycles = 40'000'000;  // about 20 ms at 2 GHz
  real_graph graphs[n];
  std::vector<skeleton> skeletons;
  std::vector<std::string> streams;
  for (int i = 0; i < n; ++i) {
    void* p = nullptr;
    const auto a = graphs[i].alloc({}, 4 * S, &p);
    graphs[i].free({graphs[i].spin({a}, p, cycles)}, p);
    skeletons.push_back(skeleton_for(graphs[i].g, "graph " + std::to_string(i)));
    streams.push_back("stream " + std::to_string(i));
  }
  const auto run = [&](bool separate) {
    (void)trim(0);
    const std::uint64_t before = read_counters(0).reserved_current;
    reset_high_watermarks(0);
    cudaGraphExec_t e[n] = {};
    cudaStream_t s[n] = {};
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking), cudaSuccess);
      EXPECT_EQ(cudaGraphInstantiateWithFlags(&e[i], graphs[i].g, 0), cudaSuccess);
    }
    for (int i = 0; i < n; ++i) EXPECT_EQ(cudaGraphLaunch(e[i], s[separate ? i : 0]), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::uint64_t reserved = read_counters(0).reserved_high - before;
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(cudaGraphExecDestroy(e[i]), cudaSuccess);
      EXPECT_EQ(cudaStreamDestroy(s[i]), cudaSuccess);
    }
    return reserved;
  };
  const std::uint64_t as_launched = run(true);
  std::cout << "four overlapping graphs in four streams reserved " << as_launched << " B\n";
  ASSERT_GE(as_launched, 2 * 4 * S) << "the launches did not overlap: the premise of this test";
  const measured_advice m = measure_one_stream(skeletons, streams, as_launched, granule(), 0);
  std::cout << "one_stream: reserved " << m.measured_bytes << " B, saves " << m.saving_bytes
            << " B: " << m.where << "\n";
  ASSERT_GE(m.saving_bytes, granule());
  EXPECT_NE(m.where.find("into one stream"), std::string::npos) << m.where;
  EXPECT_EQ(m.predicted_bytes, 4 * S);
  // The change applied to the real graphs: launched into one stream, kernels and all.
  const std::uint64_t one_stream = run(false);
  const std::int64_t real_saving = diff(as_launched, one_stream);
  EXPECT_LE(std::llabs(real_saving - static_cast<std::int64_t>(m.saving_bytes)),
            static_cast<long long>(granule()));
}

// Two child graphs alloc(S) -> kernel -> free, moved into a parent; the second after the first
// when `ordered`.
void build_children(real_graph& parent, bool ordered) {
  cudaGraphNode_t prev = nullptr;
  for (int i = 0; i < 2; ++i) {
    real_graph child;
    build_chains(child, {S}, order::independent);
    cudaGraphNodeParams np{};
    np.type = cudaGraphNodeTypeGraph;
    np.graph.graph = child.g;
    np.graph.ownership = cudaGraphChildGraphOwnershipMove;
    cudaGraphNode_t node = nullptr;
    std::vector<cudaGraphNode_t> deps;
    if (ordered && prev) deps.push_back(prev);
    ASSERT_EQ(cudaGraphAddNode(&node, parent.g, deps.data(), nullptr, deps.size(), &np), cudaSuccess);
    child.g = nullptr;  // the parent owns it now
    prev = node;
  }
}

TEST_F(Advice, ProfilingAdvisesOnlyWhereTheSkeletonReservesWhatTheGraphReserves) {
  profile_options o;
  o.granularity = granule();
  o.warmups = 0;
  o.reps = 1;
  {  // Ordered children: the driver shares their memory (one granule more than the model
     // says); the skeleton keeps the edge as given at creation and reserves within a granule.
    real_graph parent;
    build_children(parent, true);
    const scenario_result r = profile_graph(parent.g, "ordered children", o);
    std::string why;
    for (const auto& d : r.diagnostics) why += d.code + ": " + d.message + "\n";
    ASSERT_TRUE(r.advice.has_value()) << why;
    EXPECT_LE(std::llabs(diff(r.advice->baseline_bytes, r.analysis.reserved_high_bytes)),
              static_cast<long long>(granule()));
  }
  {  // Unordered children: the driver reserves more than their memory nodes; the skeleton does
     // not reproduce that, so no advice is made, and the report says why.
    real_graph parent;
    build_children(parent, false);
    const scenario_result r = profile_graph(parent.g, "unordered children", o);
    bool explained = false;
    for (const auto& d : r.diagnostics) explained = explained || d.code == "advice_not_measured";
    std::cout << "unordered children reserved " << r.analysis.reserved_high_bytes << " B\n";
    if (r.analysis.reserved_high_bytes > 2 * S + granule()) {
      EXPECT_FALSE(r.advice.has_value());
      EXPECT_TRUE(explained);
    } else {
      EXPECT_TRUE(r.advice.has_value());
    }
  }
}

TEST_F(Advice, ReplayCommandReMeasuresTheSkeletonAReportCarries) {
  real_graph late;
  build_chains(late, {S, S, S, S}, order::added_later);
  const graph_model m = read_graph(late.g, "from a report");
  const flat_graph flat = flatten(m);
  report rep;
  scenario_result sc;
  sc.name = "user graph";
  sc.skeletons.push_back(skeleton_of(flat, analyse(flat, granule()), "from a report"));
  rep.scenarios.push_back(sc);
  const std::string path = ::testing::TempDir() + "gmem-replay-test.json";
  write_report(rep, path);
  std::ostringstream out, err;
  EXPECT_EQ(run_replay(path, "", 0, out, err), 0) << err.str();
  std::cout << out.str();
  EXPECT_NE(out.str().find("[dependency_at_creation] saves"), std::string::npos) << out.str();
  std::ostringstream out2, err2;
  EXPECT_EQ(run_replay(path, "no such graph", 0, out2, err2), 2);
  EXPECT_NE(err2.str().find("no such graph"), std::string::npos) << err2.str();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gmem::test
