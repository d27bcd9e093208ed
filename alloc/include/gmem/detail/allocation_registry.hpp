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
//  - an allocation has at most one free across all graphs and streams: its own graph's free
//    node, or one claim (kept with the allocating ledger, or with its orphan) by another graph's
//    free node (add_free, capture::free_async) or by a free outside every graph
//    (free_in_stream, free_now). Every free is claimed before its driver call and committed or
//    given back after it;
//  - a free outside every graph lasts until the allocating graph launches again (the launch
//    makes the allocation anew); an orphan freed so is no orphan any more: it is forgotten, and
//    only a bounded memory of the last frees (`remembered_frees_max`) names the first free of a
//    second one;
//  - when a ledger is destroyed, its allocations it did not free become orphans (destroying a
//    graph does not free its allocations: they can still be freed in a stream or by another
//    graph), and the claims it made on other graphs' allocations are given back;
//  - lock order: the registry's mutex, then one ledger's lock at a time.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
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

/// Claimer ids of a free outside every graph (free_in_stream, free_now), its driver call in
/// flight or done. Graph ids count up from 1 and never reach them.
inline constexpr graph_id outside_free_in_flight = ~graph_id{0};
inline constexpr graph_id outside_free_done = ~graph_id{0} - 1;
[[nodiscard]] inline bool is_outside_free(graph_id by) noexcept {
  return by >= outside_free_done;
}

namespace detail {

/// How a second free's refusal names the first one: "already has a free node in graph 'x'", or
/// for a free outside every graph (`name` says which) "was already freed by cudaFreeAsync in
/// stream 0x.. (gmem::free_in_stream)".
[[nodiscard]] std::string first_free_phrase(graph_id by, const std::string& name);


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
    /// Who frees it: a graph's id, or outside_free_done / outside_free_in_flight for a free
    /// in a stream or by cudaFree (is_outside_free).
    std::optional<graph_id> freed_by;
    /// The freeing graph's name, or the free outside every graph ("cudaFree (gmem::free_now)").
    std::string freed_by_name;
  };

  /// A free outside every graph, between claim_outside_free and its commit or give-back.
  struct outside_claim {
    std::uintptr_t address = 0;
    bool known = false;  ///< false: gmem knows no allocation there (the driver decides alone)
  };

  /// What the registry holds: every figure stays bounded as graphs come and go.
  struct counts {
    std::size_t live_graphs = 0;
    std::size_t orphans = 0;           ///< allocations destroyed graphs left unfreed
    std::size_t remembered_frees = 0;  ///< freed orphans remembered to name a second free
  };
  static constexpr std::size_t remembered_frees_max = 4096;

  allocation_registry() = default;
  allocation_registry(const allocation_registry&) = delete;
  allocation_registry& operator=(const allocation_registry&) = delete;

  /// The registry gmem graphs use unless told otherwise.
  static allocation_registry& global();

  /// What is known of `address`: a live graph's allocation, or one a destroyed graph left
  /// unfreed; nothing otherwise.
  [[nodiscard]] std::optional<entry> find(std::uintptr_t address) const;

  /// free_in_stream / free_now in two steps around the driver call. claim_outside_free claims
  /// the free of the allocation at `address` for `how` (e.g. "cudaFree (gmem::free_now)"), or
  /// throws usage_error naming the allocation and its first free when it already has one (a
  /// free node in any graph, a capture's cudaFreeAsync, an earlier free outside the graphs
  /// since the allocating graph last launched). An address gmem knows nothing of is left to
  /// the driver (known = false). Then commit_outside_free records the free (an orphan is
  /// forgotten), or unclaim_outside_free gives it back when the driver refused.
  [[nodiscard]] outside_claim claim_outside_free(std::uintptr_t address, const std::string& how);
  void commit_outside_free(const outside_claim& claim) noexcept;
  void unclaim_outside_free(const outside_claim& claim) noexcept;

  [[nodiscard]] counts size() const;

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
  /// An orphan freed outside every graph, or an allocation freed so when its graph went away.
  struct freed_orphan {
    shared_name allocating_name;
    std::size_t bytes = 0;
    shared_name freed_name;  ///< the free outside every graph
    std::uint64_t serial = 0;
  };

  /// A ledger comes to life / goes away (its unfreed allocations become orphans, its claims
  /// on other graphs' allocations are given back).
  void enter(graph_ledger* ledger);
  void leave(graph_ledger* ledger) noexcept;

  /// Checks that `claimer` may add a free node for `address`, which another graph (live or
  /// destroyed) allocated; with `claim`, records that `claimer` now holds that free node.
  /// Throws usage_error when the allocation already has a free, or when no graph allocated
  /// `address` unless `unknown_ok` (then returns false).
  bool claim_foreign(std::uintptr_t address, const graph_ledger& claimer, bool claim,
                     bool unknown_ok = false);
  /// Gives back `claimer`'s claim on `address` (its free node is gone).
  void unclaim_foreign(std::uintptr_t address, graph_id claimer) noexcept;
  /// Claims made by `from` on `addresses` now belong to `to` (a child moved into its parent).
  void transfer_claims(const std::vector<std::uintptr_t>& addresses, graph_id from, graph_id to,
                       const shared_name& to_name) noexcept;

  /// The freed orphans remembered, oldest first (with their serials: an address forgotten and
  /// remembered again appears twice, the older entry stale).
  void remember_freed(std::uintptr_t address, freed_orphan f);
  void forget_freed(std::uintptr_t address) { freed_.erase(address); }

  mutable std::mutex mutex_;
  std::vector<graph_ledger*> live_;
  std::unordered_map<std::uintptr_t, orphan> orphans_;
  std::unordered_map<std::uintptr_t, freed_orphan> freed_;
  std::deque<std::pair<std::uintptr_t, std::uint64_t>> freed_order_;
  std::uint64_t freed_serial_ = 0;
};

}  // namespace gmem
