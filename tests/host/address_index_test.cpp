#include <gtest/gtest.h>

#include <map>
#include <random>

#include "gmem/address_index.hpp"

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

}  // namespace
