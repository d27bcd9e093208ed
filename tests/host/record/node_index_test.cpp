// The recording library's node index (record/node_index.hpp): each handle of a graph's node list
// to its place, as the library reads a graph's edges; nothing for a handle not in the list.
#include "record/node_index.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace {

using gmem::record::node_index;

const void* handle(std::uintptr_t v) { return reinterpret_cast<const void*>(v); }

TEST(NodeIndex, EachHandleFindsItsPlaceAndOthersFindNothing) {
  // Heap-like handles: alike in their low bits, many sharing a slot's first choice.
  std::vector<const void*> handles;
  for (std::uintptr_t k = 0; k < 5000; ++k) handles.push_back(handle(0x7f0000001000 + 0x40 * (k * 7919 % 5000)));
  const node_index index(handles);
  for (std::size_t i = 0; i < handles.size(); ++i) ASSERT_EQ(index.find(handles[i]), i) << i;
  EXPECT_FALSE(index.find(handle(0x7f0000001000 + 0x40 * 5000)));
  EXPECT_FALSE(index.find(handle(0x7f0000001008)));
  EXPECT_FALSE(index.find(nullptr));
}

TEST(NodeIndex, AnEmptyListAndANullHandleAndARepeatedHandle) {
  const node_index none{std::vector<const void*>{}};
  EXPECT_FALSE(none.find(handle(0x1000)));
  const node_index index(std::vector<const void*>{handle(0x2000), nullptr, handle(0x3000), handle(0x2000)});
  EXPECT_EQ(index.find(handle(0x2000)), 0u);  // its first place
  EXPECT_EQ(index.find(nullptr), 1u);
  EXPECT_EQ(index.find(handle(0x3000)), 2u);
  EXPECT_FALSE(index.find(handle(0x4000)));
}

TEST(NodeIndex, RealHeapAddresses) {
  std::vector<std::unique_ptr<int>> owned;
  std::vector<const void*> handles;
  for (int k = 0; k < 331; ++k) {
    owned.push_back(std::make_unique<int>(k));
    handles.push_back(owned.back().get());
  }
  const node_index index(handles);
  for (std::size_t i = 0; i < handles.size(); ++i) EXPECT_EQ(index.find(handles[i]), i);
  int other = 0;
  EXPECT_FALSE(index.find(&other));
}

}  // namespace
