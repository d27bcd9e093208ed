#pragma once
// Process-wide record of which graph allocated each graph-allocation address and which graph
// holds its free node, so that a free node in *another* graph can be checked before the driver
// sees it. Plain C++ (no CUDA), thread-safe.
//
// Invariants:
//  - an address has at most one entry; a new alloc node that returns an address replaces the
//    entry (the driver only reuses a virtual address once the old one is gone);
//  - an entry's `freed_by` is the one graph holding a free node for it, or empty;
//  - an entry whose allocation was freed inside its own graph is erased when that graph is
//    destroyed; one left unfreed stays, because destroying a graph does not free its
//    allocations (they can still be freed in a stream or by another graph).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <thread>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace gmem {

/// Identifies a gmem graph (its ledger) for the lifetime of the process.
using graph_id = std::uint64_t;

/// A graph's name, shared by every record of the graph: recording an allocation copies no
/// string (the registry is on the path of every alloc and free node).
using shared_name = std::shared_ptr<const std::string>;

class allocation_registry {
 public:
  struct entry {
    graph_id allocating_graph = 0;
    std::string allocating_graph_name;
    std::size_t bytes = 0;
    int device = 0;
    std::optional<graph_id> freed_by;
    std::string freed_by_name;
  };

  /// An empty registry, with room for a few thousand live allocations before it rehashes.
  allocation_registry() { entries_.reserve(4096); }

  /// The registry gmem graphs use unless told otherwise.
  static allocation_registry& global();

  /// Records that `graph` made an allocation at `address` (replacing any stale entry).
  void on_alloc(std::uintptr_t address, graph_id graph, const shared_name& graph_name,
                std::size_t bytes, int device);

  /// Records that `graph` holds the free node of `address`. Throws usage_error if no graph
  /// allocation is known at `address` or if another free node already frees it.
  void on_free(std::uintptr_t address, graph_id graph, const shared_name& graph_name);

  /// Like on_free, but only checks; changes nothing.
  void check_free(std::uintptr_t address, graph_id graph, const shared_name& graph_name) const;

  /// Forgets the free node `graph` held for `address` (its graph is gone). No-op otherwise.
  void on_free_node_gone(std::uintptr_t address, graph_id graph) noexcept;

  /// Moves the entry of `address` (allocation and free node) from graph `from` to graph `to`:
  /// a child graph moved into its parent hands its records over.
  void reassign(std::uintptr_t address, graph_id from, graph_id to,
                const shared_name& to_name) noexcept;

  /// Erases the entry of `address` if `graph` still owns it.
  void erase_if_owned(std::uintptr_t address, graph_id graph) noexcept;

  /// erase_if_owned for each of `addresses`, under one lock.
  void erase_all_owned(const std::vector<std::uintptr_t>& addresses, graph_id graph) noexcept;

  /// The entry of `address`, if any.
  [[nodiscard]] std::optional<entry> find(std::uintptr_t address) const;

 private:
  struct slot {
    graph_id allocating_graph = 0;
    shared_name allocating_name;
    std::size_t bytes = 0;
    int device = 0;
    std::optional<graph_id> freed_by;
    shared_name freed_by_name;
  };
  const slot& check_free_locked(std::uintptr_t address, graph_id graph,
                                const shared_name& graph_name) const;

  /// Every alloc and free node takes this lock once, around a few hash operations: a spin
  /// lock (yielding when contended) costs half of an uncontended std::mutex there.
  class spin_mutex {
   public:
    void lock() noexcept {
      for (int spins = 0; flag_.test_and_set(std::memory_order_acquire); ++spins) {
        if (spins > 64) std::this_thread::yield();
      }
    }
    void unlock() noexcept { flag_.clear(std::memory_order_release); }

   private:
    std::atomic_flag flag_ = ATOMIC_FLAG_INIT;
  };
  mutable spin_mutex mutex_;
  // Entries come and go with every alloc node; a pool (guarded by mutex_) keeps that off malloc.
  std::pmr::unsynchronized_pool_resource pool_;
  std::pmr::unordered_map<std::uintptr_t, slot> entries_{&pool_};
};

}  // namespace gmem
