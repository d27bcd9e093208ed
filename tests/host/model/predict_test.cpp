// The warm-up prediction on synthetic samples whose answers are worked out by hand.
#include <gtest/gtest.h>

#include <stdexcept>

#include "gmem/profiler/predict.hpp"

namespace gmem::profiler {
namespace {

constexpr std::uint64_t KiB = 1ull << 10;
constexpr std::uint64_t MiB = 1ull << 20;

sampled_call alloc_call(std::uint64_t address, std::uint64_t bytes) {
  return {sampled_call::kind::alloc, address, bytes};
}
sampled_call free_call(std::uint64_t address) { return {sampled_call::kind::free, address, 0}; }

// Each batch size b: a temporary of 4b MiB, an output of 2b MiB it keeps, the temporary freed.
sampled_size temp_and_output(std::int64_t b, std::uint64_t base, std::uint64_t pool_after, std::int64_t used_change) {
  sampled_size s;
  s.size = b;
  s.graphs = 2;
  s.calls = {alloc_call(base, 4 * MiB * b), alloc_call(base + 1, 2 * MiB * b), free_call(base)};
  s.pool_bytes_after = pool_after;
  s.used_change = used_change;
  s.exec_state_bytes = 200.0 * KiB;  // 100 KiB a graph
  return s;
}

predict_sample eight_four_two() {
  predict_sample s;
  s.allocator = "native";
  s.copies = 64;
  // Pools after each sampled size, as the caching allocator makes them in this order (8, 4, 2):
  // 8: segments of 32 and 16 MiB; 4: T16 and O8 from the free 32 MiB block; 2: T8 and O4 from
  // the free blocks. The device memory in use: the pool, 200 KiB of graph state, and 8 MiB the
  // first capture took besides.
  s.sizes.push_back(temp_and_output(8, 0x1000, 48 * MiB, 48 * MiB + 200 * KiB + 8 * MiB));
  s.sizes.push_back(temp_and_output(4, 0x2000, 48 * MiB, 200 * KiB));
  s.sizes.push_back(temp_and_output(2, 0x3000, 48 * MiB, 200 * KiB));
  return s;
}

TEST(PredictWarmup, FitsEverySizeAndReplaysTheCachingAllocatorInCaptureOrder) {
  const predict_sample s = eight_four_two();
  const warmup_prediction p = predict_warmup(s, {8, 7, 6, 5, 4, 3, 2, 1});
  // Worked out by hand (sizes in MiB; T temporary, O output; best fit; large blocks split when
  // more than 1 MiB is left; an 8 MiB request under 10 MiB makes a 20 MiB segment):
  // 8: T32 new, O16 new -> 48. 7: T28 from 32 (4 left), O14 new -> 62. 6: T24 from 32, O12 new
  // -> 74. 5: T20 from 32, O10 from the free 12 -> 74. 4: T16 from 20, O8: nothing fits, a 20
  // MiB segment -> 94. 3, 2, 1: from free blocks -> 94.
  const std::vector<std::uint64_t> after = {48, 62, 74, 74, 94, 94, 94, 94};
  ASSERT_EQ(p.sizes.size(), after.size());
  for (std::size_t k = 0; k < after.size(); ++k) {
    EXPECT_EQ(p.sizes[k].pool_bytes_after, after[k] * MiB) << "after size " << p.sizes[k].size;
  }
  EXPECT_EQ(p.kinds[0].kind, "framework_pool");
  EXPECT_EQ(p.kinds[0].bytes, static_cast<std::int64_t>(94 * MiB));
  // 16 graphs of 100 KiB.
  EXPECT_EQ(p.kinds[1].kind, "exec_state");
  EXPECT_EQ(p.kinds[1].bytes, static_cast<std::int64_t>(1600 * KiB));
  // Outside the pools: the first size's 8 MiB, nothing for later sizes.
  EXPECT_EQ(p.kinds[2].kind, "outside");
  EXPECT_EQ(p.kinds[2].bytes, static_cast<std::int64_t>(8 * MiB));
  EXPECT_EQ(p.total.bytes, static_cast<std::int64_t>(94 * MiB + 1600 * KiB + 8 * MiB));
  // Sizes 7, 6 and 5 take size 4's calls (the nearest after the first); 8 its own.
  EXPECT_EQ(p.sizes[0].calls_from, 8);
  EXPECT_TRUE(p.sizes[0].sampled);
  EXPECT_EQ(p.sizes[1].calls_from, 4);
  EXPECT_FALSE(p.sizes[1].sampled);
  EXPECT_EQ(p.sizes[7].calls_from, 2);
}

TEST(PredictWarmup, ChecksTheAllocatorModelOnTheSampleItself) {
  predict_sample s = eight_four_two();
  const warmup_prediction p = predict_warmup(s, {8, 4, 2});
  ASSERT_EQ(p.checks.size(), 3u);
  for (const model_check& c : p.checks) EXPECT_EQ(c.simulated_bytes, c.measured_bytes) << "size " << c.size;
  EXPECT_EQ(p.kinds[0].uncertainty_bytes, 0u);  // the model agrees, and no sampled size moves the fit
  s.sizes[1].pool_bytes_after = 50 * MiB;      // PyTorch listing 2 MiB more than the model
  const warmup_prediction q = predict_warmup(s, {8, 4, 2});
  EXPECT_EQ(q.checks[1].simulated_bytes, 48 * MiB);
  EXPECT_GE(q.kinds[0].uncertainty_bytes, 2 * MiB);
}

TEST(PredictWarmup, LinearExtrapolationSumsALineThroughTheLargestAndSmallestSize) {
  const predict_sample s = eight_four_two();
  const warmup_prediction p = predict_warmup(s, {8, 6, 4, 2});
  // Size 8 took 56 MiB + 200 KiB, size 2 200 KiB: the line gives 8: 56, 6: 56*2/3, 4: 56/3, 2: 0
  // (MiB, plus 200 KiB each).
  const double mib = static_cast<double>(MiB);
  const double expected = 56 * mib * (1 + 2.0 / 3 + 1.0 / 3) + 4 * 200.0 * KiB;
  EXPECT_NEAR(static_cast<double>(p.linear_bytes), expected, 4);
  EXPECT_EQ(p.linear_from_large, 8);
  EXPECT_EQ(p.linear_from_small, 2);
}

TEST(PredictWarmup, FreesOfAnEarlierSizesBlocksFollowTheCaptureOrder) {
  // Each size frees the output the size before it kept (a runner replacing its static output).
  predict_sample s;
  s.allocator = "native";
  std::uint64_t address = 0x10;
  std::uint64_t previous = 0;
  for (std::int64_t b : {6, 4, 2}) {
    sampled_size z;
    z.size = b;
    z.calls.push_back(alloc_call(address, 4 * MiB * b));
    if (previous) z.calls.push_back(free_call(previous));
    previous = address++;
    s.sizes.push_back(z);
  }
  // 6: O24 -> 24. 5: O20, nothing free -> 44, then O24 freed. 4: O16 from 24 (8 left split) ->
  // 44, O20 freed. 3: O12 from 20 (8 left) -> 44 ... every later size fits in what was freed.
  const warmup_prediction p = predict_warmup(s, {6, 5, 4, 3, 2, 1});
  EXPECT_EQ(p.sizes[1].pool_bytes_after, 44 * MiB);
  EXPECT_EQ(p.sizes.back().pool_bytes_after, 44 * MiB);
  // Without the frees, every output would stay: 24 + 20 + 16 + 12 + 20 (8 under 10 MiB) = 92.
  predict_sample held = s;
  for (sampled_size& z : held.sizes) z.calls.resize(1);
  EXPECT_EQ(predict_warmup(held, {6, 5, 4, 3, 2, 1}).sizes.back().pool_bytes_after, 92 * MiB);
}

TEST(PredictWarmup, OutsideThePoolsIsTheSamplesNetAndWhatEveryCaptureTakes) {
  predict_sample s = eight_four_two();
  // Size 4's capture released 4 MiB of the first size's cache and took 2 MiB as every capture
  // does; size 2 took its 2 MiB.
  s.sizes[1].used_change = 200 * KiB - 2 * MiB;
  s.sizes[2].used_change = 200 * KiB + 2 * MiB;
  const warmup_prediction p = predict_warmup(s, {8, 7, 6, 5, 4, 3, 2, 1});
  // Net 8 - 2 + 2 = 8 MiB on size 8, and 2 MiB for each of the five sizes not sampled.
  EXPECT_EQ(p.sizes[0].outside_bytes, static_cast<std::int64_t>(8 * MiB));
  EXPECT_EQ(p.sizes[1].outside_bytes, static_cast<std::int64_t>(2 * MiB));
  EXPECT_EQ(p.sizes[4].outside_bytes, 0);  // size 4, sampled: in the net
  EXPECT_EQ(p.kinds[2].bytes, static_cast<std::int64_t>(18 * MiB));
  // 2 MiB a reading of each sampled size, and the per-capture term as uncertain as it is large
  // for each of the five sizes not sampled.
  EXPECT_EQ(p.kinds[2].uncertainty_bytes, 6 * MiB + 5 * 2 * MiB);
}

TEST(PredictWarmup, EachGraphGetsThePoolGrowthOfItsOwnCallsAndItsShareOfTheRest) {
  predict_sample s = eight_four_two();
  // Graph 0 of each size allocates the temporary; graph 1 the output, and frees the temporary.
  // Their state as read: 60 and 140 KiB. The first size's capture reserved 6 MiB in the
  // memory-node pool, 2 MiB in graph 0 and 4 MiB in graph 1.
  for (sampled_size& z : s.sizes) {
    z.each_graph = {{1, 0, 60.0 * KiB}, {3, 0, 140.0 * KiB}};
  }
  s.sizes[0].node_pool_change = static_cast<std::int64_t>(6 * MiB);
  s.sizes[0].used_change += static_cast<std::int64_t>(6 * MiB);
  s.sizes[0].each_graph[0].node_pool_change = static_cast<std::int64_t>(2 * MiB);
  s.sizes[0].each_graph[1].node_pool_change = static_cast<std::int64_t>(4 * MiB);
  // Size 4's graph 1 reserved 2 MiB more: its own, not the first size's.
  s.sizes[1].node_pool_change = static_cast<std::int64_t>(2 * MiB);
  s.sizes[1].used_change += static_cast<std::int64_t>(2 * MiB);
  s.sizes[1].each_graph[1].node_pool_change = static_cast<std::int64_t>(2 * MiB);
  const warmup_prediction p = predict_warmup(s, {8, 7, 6, 5, 4, 3, 2, 1});
  ASSERT_EQ(p.graphs.size(), 16u);
  // The replay worked out by hand in FitsEverySize...: 8: T32 new (graph 0), O16 new (graph 1);
  // 7: O14 new; 6: O12 new; 5: both from free blocks; 4: O8 makes a 20 MiB segment; then none.
  const std::vector<std::uint64_t> growth = {32, 16, 0, 14, 0, 12, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0};
  std::uint64_t sum = 0;
  for (std::size_t k = 0; k < growth.size(); ++k) {
    EXPECT_EQ(p.graphs[k].size, p.order[k / 2]);
    EXPECT_EQ(p.graphs[k].index, k % 2);
    EXPECT_EQ(p.graphs[k].pool_growth, growth[k] * MiB) << "graph " << k % 2 << " of size " << p.graphs[k].size;
    EXPECT_DOUBLE_EQ(p.graphs[k].exec_state_bytes, (k % 2 ? 140.0 : 60.0) * KiB);
    sum += p.graphs[k].pool_growth;
  }
  EXPECT_EQ(sum, static_cast<std::uint64_t>(p.kinds[0].bytes));
  EXPECT_EQ(p.graphs[0].node_pool_bytes, static_cast<std::int64_t>(2 * MiB));
  EXPECT_EQ(p.graphs[1].node_pool_bytes, static_cast<std::int64_t>(4 * MiB));
  EXPECT_EQ(p.graphs[2].node_pool_bytes, 0);
  EXPECT_EQ(p.graphs[8].node_pool_bytes, 0);
  EXPECT_EQ(p.graphs[9].node_pool_bytes, static_cast<std::int64_t>(2 * MiB));
  EXPECT_EQ(p.kinds[3].bytes, static_cast<std::int64_t>(8 * MiB));

  // A sample that did not read each graph: the bill is per size, and says so.
  const warmup_prediction per_size = predict_warmup(eight_four_two(), {8, 4, 2});
  EXPECT_TRUE(per_size.graphs.empty());
  EXPECT_FALSE(per_size.notes.empty());
}

TEST(PredictWarmup, AOneOffInOneReadingIsNotACostOfEveryCapture) {
  predict_sample s = eight_four_two();
  s.sizes.push_back(temp_and_output(1, 0x4000, 48 * MiB, 200 * KiB));
  // Size 4 took 4 MiB outside the pools once (a workspace its shapes needed); sizes 2 and 1
  // took nothing: the mean of the readings after the second is 2 MiB, shown by one of them.
  s.sizes[1].used_change = 200 * KiB + 4 * MiB;
  s.sizes[2].used_change = 200 * KiB + 4 * MiB;
  const warmup_prediction p = predict_warmup(s, {8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_EQ(p.sizes[1].outside_bytes, 0);  // size 7, not sampled
  EXPECT_EQ(p.kinds[2].bytes, static_cast<std::int64_t>(16 * MiB));  // the net: 8 + 4 + 4 + 0
  // The mean stays in the uncertainty for each of the four sizes not sampled.
  EXPECT_EQ(p.kinds[2].uncertainty_bytes, 4 * 2 * MiB + 4 * 2 * MiB);
  // Shown by both readings after the second, it is every capture's.
  s.sizes[3].used_change = 200 * KiB + 4 * MiB;
  EXPECT_EQ(predict_warmup(s, {8, 7, 6, 5, 4, 3, 2, 1}).sizes[1].outside_bytes, static_cast<std::int64_t>(4 * MiB));
}

TEST(PredictWarmup, WithoutCallsOrCopiesTheStateIsWhatLaterCapturesTook) {
  // cudaMallocAsync: no graph pool of PyTorch's, no calls, no copies. Five graphs a size; the
  // first capture took 40 MiB besides and reserved 64 MiB in the memory-node pool, each later
  // capture 1 MiB of graph state (200 KiB a graph), nothing in the node pool.
  predict_sample s;
  s.allocator = "cudaMallocAsync";
  for (std::int64_t b : {64, 16, 4}) {
    sampled_size z;
    z.size = b;
    z.graphs = 5;
    z.used_change = b == 64 ? static_cast<std::int64_t>(105 * MiB) : static_cast<std::int64_t>(MiB);
    z.node_pool_change = b == 64 ? static_cast<std::int64_t>(64 * MiB) : 0;
    s.sizes.push_back(z);
  }
  // The second capture also released 6 MiB of the first one's cache: the median rate ignores it.
  sampled_size released = s.sizes[1];
  released.size = 32;
  released.used_change -= static_cast<std::int64_t>(6 * MiB);
  s.sizes.insert(s.sizes.begin() + 1, released);
  const warmup_prediction p = predict_warmup(s, {64, 32, 16, 8, 4, 2, 1});
  EXPECT_EQ(p.kinds[0].bytes, 0);                                         // no PyTorch graph pool
  EXPECT_EQ(p.kinds[1].bytes, static_cast<std::int64_t>(7 * MiB));        // 35 graphs of 200 KiB
  EXPECT_EQ(p.kinds[2].bytes, static_cast<std::int64_t>(34 * MiB));       // 105 - 64 - 1, less 6 released
  EXPECT_EQ(p.kinds[3].kind, "node_pool");
  EXPECT_EQ(p.kinds[3].bytes, static_cast<std::int64_t>(64 * MiB));
  EXPECT_EQ(p.total.bytes, static_cast<std::int64_t>(105 * MiB));
  EXPECT_FALSE(p.notes.empty());
}

TEST(PredictWarmup, ASideStreamsAllocationsTakeItsOwnBlocks) {
  // Each size: the main stream's temporary of 4b MiB, freed, then the side stream's output of
  // 4b MiB (a shared expert's). PyTorch keeps each stream's blocks apart: the output makes its
  // own segment where one stream would have reused the temporary's.
  predict_sample s;
  s.allocator = "native";
  for (std::int64_t b : {2, 1}) {
    sampled_size z;
    z.size = b;
    z.graphs = 1;
    const std::uint64_t base = 0x1000 * static_cast<std::uint64_t>(b);
    z.calls = {{sampled_call::kind::alloc, base, 4 * MiB * b, 7}, {sampled_call::kind::free, base, 0, 0},
               {sampled_call::kind::alloc, base + 1, 4 * MiB * b, 9}};
    z.pool_bytes_after = 40 * MiB;
    s.sizes.push_back(z);
  }
  const warmup_prediction p = predict_warmup(s, {2, 1});
  // 2: 20 MiB for stream 7's temporary, 20 MiB for stream 9's output. 1: the temporary from
  // stream 7's free block, the output (4 MiB) from stream 9's 12 MiB left: no growth.
  EXPECT_EQ(p.kinds[0].bytes, static_cast<std::int64_t>(40 * MiB));
  EXPECT_EQ(p.checks[0].simulated_bytes, p.checks[0].measured_bytes);
  for (sampled_size& z : s.sizes) {
    for (sampled_call& c : z.calls) c.stream = 0;  // one stream: the output reuses the temporary
  }
  EXPECT_EQ(predict_warmup(s, {2, 1}).kinds[0].bytes, static_cast<std::int64_t>(20 * MiB));
}

TEST(PredictWarmup, RefusesWhatItCannotPredict) {
  EXPECT_THROW(predict_warmup(predict_sample{}, {1}), std::invalid_argument);
  EXPECT_THROW(predict_warmup(eight_four_two(), {}), std::invalid_argument);
  EXPECT_THROW(predict_warmup(eight_four_two(), {8, 0}), std::invalid_argument);
}

}  // namespace
}  // namespace gmem::profiler
