#pragma once
// A flat, open-addressing map from a graph allocation's address to an index (of its ledger
// record). The ledger only ever adds or overwrites entries, so there is no erase, and a lookup
// touches one cache line instead of a bucket and a node: on the path of every alloc and free
// node, between driver calls that evict the cache, that is most of gmem's cost. Plain C++.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace gmem {

class address_index {
 public:
  static constexpr std::size_t npos = ~std::size_t{0};

  /// An empty index with room for `expected` entries before it grows.
  explicit address_index(std::size_t expected = 64) { rehash(capacity_for(expected)); }

  /// The index stored for `address`, or npos.
  [[nodiscard]] std::size_t find(std::uintptr_t address) const noexcept {
    if (address == empty) return npos;
    for (std::size_t i = slot_of(address);; i = (i + 1) & mask_) {
      const entry& e = slots_[i];
      if (e.key == address) return e.value;
      if (e.key == empty) return npos;
    }
  }

  /// Stores `value` for `address` (replacing an earlier one). `address` may not be all ones.
  void insert_or_assign(std::uintptr_t address, std::size_t value) {
    if (address == empty) throw std::invalid_argument("address_index: the all-ones address");
    if (2 * (size_ + 1) > slots_.size()) rehash(slots_.size() * 2);
    place(address, value);
  }

  /// Removes every entry (keeps the room).
  void clear() noexcept {
    for (auto& e : slots_) e = entry{};
    size_ = 0;
  }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// Calls f(address, index) for every entry, in no particular order.
  template <typename F>
  void for_each(F&& f) const {
    for (const entry& e : slots_) {
      if (e.key != empty) f(e.key, e.value);
    }
  }

 private:
  static constexpr std::uintptr_t empty = ~std::uintptr_t{0};
  struct entry {
    std::uintptr_t key = empty;
    std::size_t value = 0;
  };

  static std::size_t capacity_for(std::size_t expected) {
    std::size_t c = 16;
    while (c < 2 * expected) c *= 2;
    return c;
  }

  [[nodiscard]] std::size_t slot_of(std::uintptr_t address) const noexcept {
    // Fibonacci hashing of the address above its page offset: graph allocations are aligned,
    // so their low bits carry nothing.
    return static_cast<std::size_t>(((address >> 12) * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  void place(std::uintptr_t address, std::size_t value) {
    for (std::size_t i = slot_of(address);; i = (i + 1) & mask_) {
      entry& e = slots_[i];
      if (e.key == address) {
        e.value = value;
        return;
      }
      if (e.key == empty) {
        e = {address, value};
        ++size_;
        return;
      }
    }
  }

  void rehash(std::size_t capacity) {
    std::vector<entry> old = std::move(slots_);
    slots_.assign(capacity, entry{});
    mask_ = capacity - 1;
    shift_ = 64;
    for (std::size_t c = capacity; c > 1; c >>= 1) --shift_;
    size_ = 0;
    for (const entry& e : old) {
      if (e.key != empty) place(e.key, e.value);
    }
  }

  std::vector<entry> slots_;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
  std::size_t size_ = 0;
};

}  // namespace gmem
