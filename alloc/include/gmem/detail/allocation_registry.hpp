#pragma once
// Process-wide knowledge of graph allocations across graphs, so that a free node in *another*
// graph can be checked before the driver sees it. Plain C++ (no CUDA), thread-safe.
//
// A graph's own alloc and free nodes never touch the registry: each graph_ledger keeps its own
// allocations (under its own lock), and the registry only knows which ledgers are alive. Only
// the rare cross-graph free looks through them. This keeps building graphs cheap: a global
// table on every node cost gmem 15% over the raw CUDA calls (measured on an H100).
//
// Invariants:
//  - every live ledger is in `live_` exactly once;
//  - an allocation has at most one free node across all graphs: its own graph's, or one claim
//    by another graph (kept with the allocating ledger, or with its orphan);
//  - when a ledger is destroyed, its allocations it did not free become orphans (destroying a
//    graph does not free its allocations: they can still be freed in a stream or by another
//    graph), and the claims it made on other graphs' allocations are given back;
//  - lock order: the registry's mutex, then one ledger's lock at a time.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace gmem {

/// Identifies a gmem graph (its ledger) for the lifetime of the process.
using graph_id = std::uint64_t;

/// A graph's name, shared by everything that names the graph (no copies on the hot path).
using shared_name = std::shared_ptr<const std::string>;

class graph_ledger;

namespace detail {

/// A lock for a few instructions of bookkeeping that is almost never contended: cheaper than
/// an uncontended std::mutex on the path of every node; yields when it must wait.
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

}  // namespace detail

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

  allocation_registry() = default;
  allocation_registry(const allocation_registry&) = delete;
  allocation_registry& operator=(const allocation_registry&) = delete;

  /// The registry gmem graphs use unless told otherwise.
  static allocation_registry& global();

  /// What is known of `address`: a live graph's allocation, or one a destroyed graph left
  /// unfreed; nothing otherwise.
  [[nodiscard]] std::optional<entry> find(std::uintptr_t address) const;

 private:
  friend class graph_ledger;

  struct orphan {
    graph_id allocating_graph = 0;
    shared_name allocating_name;
    std::size_t bytes = 0;
    int device = 0;
    std::optional<graph_id> claimed_by;
    shared_name claimed_name;
  };

  /// A ledger comes to life / goes away (its unfreed allocations become orphans, its claims
  /// on other graphs' allocations are given back).
  void enter(graph_ledger* ledger);
  void leave(graph_ledger* ledger) noexcept;

  /// Checks that `claimer` may add a free node for `address`, which another graph (live or
  /// destroyed) allocated; with `claim`, records that `claimer` now holds that free node.
  /// Throws usage_error when no graph allocated `address` or it already has a free node.
  void claim_foreign(std::uintptr_t address, const graph_ledger& claimer, bool claim);
  /// Gives back `claimer`'s claim on `address` (its free node is gone).
  void unclaim_foreign(std::uintptr_t address, graph_id claimer) noexcept;
  /// Claims made by `from` on `addresses` now belong to `to` (a child moved into its parent).
  void transfer_claims(const std::vector<std::uintptr_t>& addresses, graph_id from, graph_id to,
                       const shared_name& to_name) noexcept;

  mutable std::mutex mutex_;
  std::vector<graph_ledger*> live_;
  std::unordered_map<std::uintptr_t, orphan> orphans_;
};

}  // namespace gmem
