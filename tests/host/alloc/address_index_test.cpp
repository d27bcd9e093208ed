#include <gtest/gtest.h>

#include <map>
#include <random>

#include "gmem/detail/address_index.hpp"

namespace {

using gmem::address_index;

TEST(AddressIndex, FindsWhatWasStoredAndReplacesOnReinsert) {
  address_index idx(4);
  EXPECT_EQ(idx.find(0x200000), address_index::npos);
  idx.insert_or_assign(0x200000, 7);
  idx.insert_or_assign(0x400000, 8);
  EXPECT_EQ(idx.find(0x200000), 7u);
  EXPECT_EQ(idx.find(0x400000), 8u);
  idx.insert_or_assign(0x200000, 9);  // the address was allocated again after its free
  EXPECT_EQ(idx.find(0x200000), 9u);
  EXPECT_EQ(idx.size(), 2u);
  idx.clear();
  EXPECT_EQ(idx.size(), 0u);
  EXPECT_EQ(idx.find(0x400000), address_index::npos);
}

TEST(AddressIndex, AgreesWithStdMapThroughGrowthAndCollidingAddresses) {
  // Aligned addresses (the low bits carry nothing) and random ones, well past the initial room.
  address_index idx(2);
  std::map<std::uintptr_t, std::size_t> ref;
  std::mt19937_64 rng(42);
  for (std::size_t i = 0; i < 5000; ++i) {
    const std::uintptr_t a = (i % 3 == 0) ? (0x7f0000000000ull + (rng() % 4096) * 0x200000ull)
                                          : (rng() | 1) & 0x7fffffffffffull;
    idx.insert_or_assign(a, i);
    ref[a] = i;
  }
  EXPECT_EQ(idx.size(), ref.size());
  for (const auto& [a, v] : ref) ASSERT_EQ(idx.find(a), v) << a;
  std::size_t seen = 0;
  idx.for_each([&](std::uintptr_t a, std::size_t v) {
    ++seen;
    EXPECT_EQ(ref.at(a), v);
  });
  EXPECT_EQ(seen, ref.size());
  EXPECT_EQ(idx.find(0x12345), address_index::npos);
}

TEST(AddressIndex, EmptyIndexTakesNoRoomAndFindsNothing) {
  address_index idx;
  EXPECT_EQ(idx.size(), 0u);
  EXPECT_EQ(idx.find(0x200000), address_index::npos);
  idx.clear();
  std::size_t seen = 0;
  idx.for_each([&](std::uintptr_t, std::size_t) { ++seen; });
  EXPECT_EQ(seen, 0u);
}

TEST(AddressIndex, FindOrInsertAddsOnceAndHandsBackTheStoredSlot) {
  address_index idx;
  auto [first, added] = idx.find_or_insert(0x600000, 3);
  EXPECT_TRUE(added);
  EXPECT_EQ(first, 3u);
  auto [again, added_again] = idx.find_or_insert(0x600000, 4);
  EXPECT_FALSE(added_again);
  EXPECT_EQ(again, 3u);  // the stored index, not the offered one
  again = 5;             // the slot itself: the ledger overwrites it on address reuse
  EXPECT_EQ(idx.find(0x600000), 5u);
  EXPECT_EQ(idx.size(), 1u);
  EXPECT_THROW((void)idx.find_or_insert(~std::uintptr_t{0}, 1), std::invalid_argument);
}

TEST(AddressIndex, ReserveKeepsEntriesAndRoomForWhatWasAsked) {
  address_index idx;
  for (std::uintptr_t i = 0; i < 10; ++i) idx.insert_or_assign(0x200000 * (i + 1), i);
  idx.reserve(1000);
  for (std::uintptr_t i = 0; i < 10; ++i) EXPECT_EQ(idx.find(0x200000 * (i + 1)), i);
  EXPECT_EQ(idx.size(), 10u);
  idx.reserve(1);  // never shrinks
  EXPECT_EQ(idx.find(0x200000 * 10), 9u);
}

}  // namespace
