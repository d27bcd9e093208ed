// The caching allocator's graph-pool model against answers worked out by hand from PyTorch's
// rules: rounding, which segment a request makes, best fit, splitting, merging, streams.
#include <gtest/gtest.h>

#include <stdexcept>

#include "gmem/profiler/caching_pool.hpp"

namespace gmem::profiler {
namespace {

constexpr std::uint64_t KiB = 1ull << 10;
constexpr std::uint64_t MiB = 1ull << 20;

TEST(CachingPoolModel, SmallRequestsRoundTo512AndShareOneTwoMiBSegment) {
  caching_pool_model m;
  EXPECT_EQ(m.block_size(100), 512u);
  EXPECT_EQ(m.block_size(513), 1024u);
  m.allocate(100);
  m.allocate(600);
  EXPECT_EQ(m.reserved_bytes(), 2 * MiB);
  EXPECT_EQ(m.allocated_bytes(), 512u + 1024u);
  ASSERT_EQ(m.segments().size(), 1u);
}

TEST(CachingPoolModel, SegmentSizesFollowTheRequest) {
  caching_pool_model m;
  EXPECT_EQ(m.segment_size(1 * MiB), 2 * MiB);           // small
  EXPECT_EQ(m.segment_size(1 * MiB + 512), 20 * MiB);    // large under 10 MiB
  EXPECT_EQ(m.segment_size(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(m.segment_size(10 * MiB), 10 * MiB);         // from 10 MiB: rounded up to 2 MiB
  EXPECT_EQ(m.segment_size(12 * MiB + 512), 14 * MiB);
}

TEST(CachingPoolModel, LargeBlocksSplitOnlyWhenMoreThanOneMiBIsLeft) {
  caching_pool_model m;
  m.allocate(3 * MiB);  // a 20 MiB segment, 17 MiB left free
  m.allocate(3 * MiB);  // from it
  EXPECT_EQ(m.reserved_bytes(), 20 * MiB);
  caching_pool_model n;
  n.allocate(19 * MiB + 512 * KiB);  // a 20 MiB segment; 0.5 MiB left is not split off
  EXPECT_EQ(n.allocated_bytes(), 20 * MiB);
  n.allocate(256 * KiB);  // a small request never takes from a large segment
  EXPECT_EQ(n.reserved_bytes(), 22 * MiB);
}

TEST(CachingPoolModel, FreedNeighboursMergeAndTheMergedBlockIsReused) {
  caching_pool_model m;
  const auto a = m.allocate(5 * MiB);
  const auto b = m.allocate(5 * MiB);
  m.free(a);
  m.free(b);
  m.allocate(18 * MiB);  // fits only in the merged 20 MiB
  EXPECT_EQ(m.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(m.segments().size(), 1u);
}

TEST(CachingPoolModel, ABlockServesRequestsOfItsOwnStreamOnly) {
  caching_pool_model m;
  const auto a = m.allocate(5 * MiB, 1);  // a 20 MiB segment for stream 1
  m.allocate(5 * MiB, 2);                 // stream 2 cannot take the 15 MiB left: its own segment
  EXPECT_EQ(m.reserved_bytes(), 40 * MiB);
  m.free(a);
  m.allocate(18 * MiB, 2);                // nor stream 1's merged 20 MiB block
  EXPECT_EQ(m.reserved_bytes(), 58 * MiB);
  m.allocate(18 * MiB, 1);                // stream 1 takes it
  EXPECT_EQ(m.reserved_bytes(), 58 * MiB);
  caching_pool_model small;
  small.allocate(100, 1);
  small.allocate(100, 2);
  EXPECT_EQ(small.reserved_bytes(), 4 * MiB);  // a 2 MiB segment each
}

TEST(CachingPoolModel, TheSmallestFreeBlockThatFitsIsTaken) {
  caching_pool_model m;
  const auto a = m.allocate(6 * MiB);
  m.allocate(3 * MiB / 2);
  const auto b = m.allocate(4 * MiB);
  m.allocate(8 * MiB + 512 * KiB);  // fills the 20 MiB segment
  EXPECT_EQ(m.reserved_bytes(), 20 * MiB);
  m.free(a);  // free: 6 MiB and 4 MiB, apart
  m.free(b);
  m.allocate(7 * MiB / 2);  // best fit: the 4 MiB block (first fit would split the 6 MiB one)
  m.allocate(5 * MiB);      // the 6 MiB block
  EXPECT_EQ(m.reserved_bytes(), 20 * MiB);
}

TEST(CachingPoolModel, BlocksOfTwoSegmentsNeverMerge) {
  caching_pool_model m;
  const auto a = m.allocate(12 * MiB);  // a 12 MiB segment
  const auto b = m.allocate(12 * MiB);  // another
  m.free(a);
  m.free(b);
  m.allocate(20 * MiB);  // neither holds it: a third segment
  EXPECT_EQ(m.reserved_bytes(), 44 * MiB);
  m.free(12345);
  EXPECT_EQ(m.unknown_frees(), 1u);
}

TEST(CachingPoolModel, EmptyRequestsMakeNoBlockAndFreesOfFreedBlocksAreCounted) {
  caching_pool_model m;
  EXPECT_EQ(m.allocate(0), 0u);
  m.free(0);
  EXPECT_EQ(m.reserved_bytes(), 0u);
  const auto a = m.allocate(4 * MiB);
  m.free(a);
  m.free(a);
  EXPECT_EQ(m.unknown_frees(), 1u);
  EXPECT_EQ(m.allocated_bytes(), 0u);
  EXPECT_THROW(m.allocate((std::uint64_t{1} << 48) + 1), std::invalid_argument);
}

}  // namespace
}  // namespace gmem::profiler
