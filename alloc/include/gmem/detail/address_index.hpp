#pragma once
// A flat, open-addressing map from a graph allocation's address to an index (of its ledger
// record). The ledger only ever adds or overwrites entries, so there is no erase, and a lookup
// touches one cache line instead of a bucket and a node (between driver calls that evict the
// cache, each line counts). The ledger makes it only when a lookup must look past its newest
// records. Plain C++.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>

namespace gmem {

class address_index {
 public:
  static constexpr std::size_t npos = ~std::size_t{0};

  /// An index with room for `expected` entries before it grows; with 0 it takes no memory
  /// until the first insert.
  explicit address_index(std::size_t expected = 0) {
    if (expected > 0) rehash(capacity_for(expected));
  }

  /// The index stored for `address`, or npos.
  [[nodiscard]] std::size_t find(std::uintptr_t address) const noexcept {
    if (address == empty || !slots_) return npos;
    for (std::size_t i = slot_of(address);; i = (i + 1) & mask_) {
      const entry& e = slots_[i];
      if (e.key == address) return e.value;
      if (e.key == empty) return npos;
    }
  }

  /// The stored index of `address` and false if there is one; otherwise stores `value` for
  /// it and returns that and true. One probe for "look up, else add". The reference stays
  /// valid until the next insert. `address` may not be all ones.
  std::pair<std::size_t&, bool> find_or_insert(std::uintptr_t address, std::size_t value) {
    if (address == empty) throw std::invalid_argument("address_index: the all-ones address");
    if (2 * (size_ + 1) > capacity()) rehash(slots_ ? 2 * capacity() : capacity_for(1));
    for (std::size_t i = slot_of(address);; i = (i + 1) & mask_) {
      entry& e = slots_[i];
      if (e.key == address) return {e.value, false};
      if (e.key == empty) {
        e = {address, value};
        ++size_;
        return {e.value, true};
      }
    }
  }

  /// Makes room for `expected` entries before the next growth.
  void reserve(std::size_t expected) {
    if (2 * expected > capacity()) rehash(capacity_for(expected));
  }

  /// Stores `value` for `address` (replacing an earlier one). `address` may not be all ones.
  void insert_or_assign(std::uintptr_t address, std::size_t value) {
    find_or_insert(address, value).first = value;
  }

  /// Removes every entry (keeps the room).
  void clear() noexcept {
    for (std::size_t i = 0; i < capacity(); ++i) slots_[i] = entry{};
    size_ = 0;
  }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// Calls f(address, index) for every entry, in no particular order.
  template <typename F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < capacity(); ++i) {
      if (slots_[i].key != empty) f(slots_[i].key, slots_[i].value);
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

  [[nodiscard]] std::size_t capacity() const noexcept {
    return slots_ ? std::size_t{mask_} + 1 : 0;
  }

  [[nodiscard]] std::size_t slot_of(std::uintptr_t address) const noexcept {
    // Fibonacci hashing of the address above its page offset: graph allocations are aligned,
    // so their low bits carry nothing.
    const unsigned shift = 64u - static_cast<unsigned>(__builtin_ctzll(std::uint64_t{mask_} + 1));
    return static_cast<std::size_t>(((address >> 12) * 0x9E3779B97F4A7C15ull) >> shift);
  }

  [[gnu::noinline]] void rehash(std::size_t capacity) {
    std::unique_ptr<entry[]> old = std::move(slots_);
    const std::size_t old_capacity = old ? std::size_t{mask_} + 1 : 0;
    slots_ = std::make_unique<entry[]>(capacity);
    mask_ = static_cast<std::uint32_t>(capacity - 1);
    size_ = 0;
    for (std::size_t i = 0; i < old_capacity; ++i) {
      if (old[i].key != empty) find_or_insert(old[i].key, old[i].value);
    }
  }

  // 16 bytes, so that the ledger keeps its hot fields in one cache line (the hash's shift is
  // the capacity's: 64 - log2).
  std::unique_ptr<entry[]> slots_;
  std::uint32_t mask_ = 0;
  std::uint32_t size_ = 0;
};

}  // namespace gmem
