#pragma once
// A graph's node handles to their places in the driver's node list, as the recording library reads
// a graph at each instantiation (cupti_driver.cpp: each edge's two handles are looked up). An
// open-addressing table, built once per read: a graph of a model's decode step (hundreds of nodes
// and edges) is read at every instantiation, with the caches cold as after a capture, where a
// std::map's or a sorted vector's look-ups cost several times more. Plain C++: host-tested.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace gmem::record {

class node_index {
 public:
  /// Each handle's place in `handles` (pointers: the driver's CUgraphNode); a handle given twice
  /// keeps its first place.
  template <typename Handle>
  explicit node_index(const std::vector<Handle>& handles) {
    std::size_t capacity = 16;
    while (capacity < 2 * handles.size()) capacity <<= 1;
    mask_ = capacity - 1;
    slots_.assign(capacity, slot{nullptr, empty});
    for (std::size_t i = 0; i < handles.size(); ++i) {
      const void* handle = handles[i];
      std::size_t s = first_slot(handle);
      while (slots_[s].place != empty && slots_[s].handle != handle) s = (s + 1) & mask_;
      if (slots_[s].place == empty) slots_[s] = slot{handle, i};
    }
  }

  /// The handle's place, or nothing where it is not one of the handles.
  template <typename Handle>
  [[nodiscard]] std::optional<std::size_t> find(Handle handle_given) const {
    const void* handle = handle_given;
    for (std::size_t s = first_slot(handle);; s = (s + 1) & mask_) {
      if (slots_[s].place == empty) return std::nullopt;
      if (slots_[s].handle == handle) return slots_[s].place;
    }
  }

 private:
  static constexpr std::size_t empty = static_cast<std::size_t>(-1);
  struct slot {
    const void* handle;
    std::size_t place;
  };
  [[nodiscard]] std::size_t first_slot(const void* handle) const {
    // Fibonacci hashing: the handles are heap addresses, alike in their low bits.
    const auto h = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(handle)) * 0x9e3779b97f4a7c15ull;
    return static_cast<std::size_t>(h >> 32) & mask_;
  }
  std::vector<slot> slots_;  // at most half full: every probe ends at an empty slot
  std::size_t mask_ = 0;
};

}  // namespace gmem::record
