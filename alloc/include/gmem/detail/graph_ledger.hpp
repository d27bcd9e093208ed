#pragma once
// Per-graph bookkeeping of the allocations a graph makes and frees, so that gmem can say what
// is wrong before the driver does. Plain C++ (no CUDA): tested on machines without a GPU.
//
// Invariants:
//  - every alloc record names the node that made it; its `free_node` is set at most once;
//  - an address may appear in several alloc records of one graph (the driver reuses a virtual
//    address once its free node is ordered before the next alloc node), but at most one of
//    them is unfreed at any time;
//  - a free of an address this graph did not allocate is a "foreign free": the
//    allocation_registry finds the graph that made it and records the claim there, so that
//    only one graph ever holds the free node of an address;
//  - while a free node is being added, its record holds `pending_free`, so that no other
//    graph can claim the same allocation in the meantime.
//  - `live_execs` counts executable graphs instantiated from this graph, or updated with it,
//    and not yet destroyed (or updated with another graph since).
//  - the index (`latest_`) holds every record but the newest `unindexed_`; a lookup reads the
//    newest `tail_probe` records first and indexes the rest only when it must look further;
//  - `max_address_` is the highest address of any record: an allocation above it is no second
//    allocation of an unfreed address, and needs no lookup.
//  - a free of this graph's allocation outside every graph (free_in_stream, free_now) is kept
//    as a claim too (allocation_registry::claim_outside_free) until an executable graph of
//    this graph launches again: the launch makes the allocation anew.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gmem/detail/address_index.hpp"
#include "gmem/detail/allocation_registry.hpp"

namespace gmem {

/// Opaque identity of a graph node (the value of its cudaGraphNode_t).
using node_handle = std::uintptr_t;

/// One allocation made by an alloc node of this graph (or of a child graph moved into it).
/// Trivially copyable and 48 bytes: the ledger keeps one per alloc node.
struct alloc_record {
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
  node_handle alloc_node = 0;
  std::optional<node_handle> free_node;
  int device = 0;
};

/// A free node of this graph for an allocation another graph made.
struct foreign_free_record {
  std::uintptr_t address = 0;
  node_handle free_node = 0;
};

/// What a free node of this graph would free.
enum class free_target { own_allocation, foreign_allocation };

/// A free node claimed by graph_ledger::claim_free, to be committed or given back.
struct free_claim {
  std::uintptr_t address = 0;
  free_target target = free_target::own_allocation;
  std::size_t record = 0;  ///< for an own allocation: its index in allocations()
};

/// The options of an instantiation that the graph-memory rules constrain.
struct instantiate_request {
  bool auto_free_on_launch = false;
  bool device_launch = false;
};

class alignas(64) graph_ledger {
 public:
  enum class kind : std::uint8_t {
    ordinary,            ///< a graph the user owns
    conditional_body,    ///< a body graph of a conditional node: no memory nodes allowed
    moved_child          ///< a graph moved into a parent: no memory nodes may be added
  };

  /// A ledger for graph `name`, known to `registry` for cross-graph frees until destroyed.
  explicit graph_ledger(std::string name, kind k = kind::ordinary,
                        allocation_registry& registry = allocation_registry::global());
  ~graph_ledger();
  graph_ledger(const graph_ledger&) = delete;
  graph_ledger& operator=(const graph_ledger&) = delete;

  [[nodiscard]] graph_id id() const noexcept { return id_; }
  [[nodiscard]] const std::string& name() const noexcept { return *name_; }
  [[nodiscard]] kind graph_kind() const noexcept { return kind_; }

  /// Throws usage_error if this graph may not hold memory nodes (conditional body, or a child
  /// graph already moved into its parent); `what` says which node was being added.
  void check_can_add_memory_node(const char* what) const;

  /// Records an allocation the driver returned. Throws usage_error if the same address is
  /// still allocated and unfreed in this graph (that would be a driver bug or a misuse).
  void record_alloc(const alloc_record& record);

  /// Says what a free node for `address` would free. Throws usage_error if no alloc node (of
  /// this graph or any other) returned `address`, or if the allocation already has a free node
  /// in this graph or another.
  [[nodiscard]] free_target check_free(std::uintptr_t address) const;

  /// Records a free node for `address` (after check_free and the driver both accepted it).
  /// Throws usage_error as check_free does.
  void record_free(std::uintptr_t address, node_handle free_node);

  /// graph::add_free in two steps around the driver call: claim_free checks like check_free
  /// and claims the free at once (in this ledger, or for a foreign allocation in its owner's;
  /// throws usage_error as check_free does); then either commit_free records the node the
  /// driver made, or unclaim_free gives the claim back when the driver refused.
  /// claim_free, add the node, commit_free in one step: `add()` (the driver call, noexcept)
  /// returns the new free node, or nullopt when the driver refused (nothing is recorded then).
  /// For the graph's own allocation the call runs inside the ledger's critical section, so that
  /// a free node costs one lock, not two (the ledger was most of gmem's overhead).
  template <typename Add>
  std::optional<node_handle> free_in_one_step(std::uintptr_t address, Add&& add);

  [[nodiscard]] free_claim claim_free(std::uintptr_t address);
  void commit_free(const free_claim& claim, node_handle free_node);
  void unclaim_free(const free_claim& claim) noexcept;

  /// capture::free_async around its driver call: claims the free of an allocation gmem knows
  /// (throws usage_error as claim_free does when it already has a free); nothing for an
  /// address gmem does not know (an allocation of the same capture, for one). Then
  /// commit_captured_free records it (its node is named when the capture ends and
  /// record_observed_free sees it), or unclaim_free gives it back.
  [[nodiscard]] std::optional<free_claim> claim_captured_free(std::uintptr_t address);
  void commit_captured_free(const free_claim& claim);

  /// Records a free node found in a graph the driver already built (a capture): like
  /// record_free, but a free of an address gmem does not know is kept as a foreign free
  /// instead of refused, and a free this ledger claimed while capturing gets its node.
  void record_observed_free(std::uintptr_t address, node_handle free_node);

  /// An executable graph of this graph launched: its allocations are made anew, so the frees
  /// outside every graph recorded since the last launch are forgotten. One relaxed atomic load
  /// when there are none.
  void launched() noexcept {
    if (outside_frees_.load(std::memory_order_relaxed) != 0) forget_outside_frees();
  }

  /// Throws usage_error when the graph-memory rules forbid instantiating with `request`:
  /// device launch of a graph with memory nodes, AutoFreeOnLaunch with device launch, or a
  /// second executable graph while one exists for a graph with memory nodes.
  void check_instantiate(const instantiate_request& request) const;

  /// Throws usage_error if the graph holds memory nodes (the driver cannot clone those).
  void check_clone() const;

  /// Counts an executable graph in and out of existence.
  void exec_created() noexcept { ++live_execs_; }
  void exec_destroyed() noexcept { --live_execs_; }
  [[nodiscard]] int live_execs() const noexcept { return live_execs_; }

  /// Whether the driver's graph of this ledger still exists (gmem::graph sets it while it owns
  /// the graph): an executable graph reads the graph it came from at its first update, and
  /// only while it exists.
  void set_graph_alive(bool alive) noexcept { graph_alive_ = alive; }
  [[nodiscard]] bool graph_alive() const noexcept { return graph_alive_; }

  /// Takes over the records of a child graph moved into this one (its alloc and free nodes now
  /// belong to this graph's executions). The child becomes a moved_child.
  void absorb_child(graph_ledger& child);

  /// Becomes a moved child: no memory nodes may be added any more.
  void mark_moved() noexcept { kind_ = kind::moved_child; }

  // The queries below are for the thread that builds the graph (other threads reach a ledger
  // only through the registry, under its lock).
  [[nodiscard]] const std::vector<alloc_record>& allocations() const noexcept { return allocs_; }
  [[nodiscard]] const std::vector<foreign_free_record>& foreign_frees() const noexcept {
    return foreign_frees_;
  }
  /// Allocations this graph makes and does not free: they outlive each launch. (An allocation
  /// another graph frees is among them.)
  [[nodiscard]] std::vector<alloc_record> unfreed() const;
  [[nodiscard]] bool has_memory_nodes() const noexcept {
    return !allocs_.empty() || !foreign_frees_.empty();
  }
  [[nodiscard]] std::size_t alloc_count() const noexcept { return allocs_.size(); }
  [[nodiscard]] std::size_t free_count() const noexcept;

 private:
  friend class allocation_registry;
  /// A free node is being added for this record (between claim_free and commit_free).
  static constexpr node_handle pending_free = ~node_handle{0};
  /// Who frees an allocation of this graph that another graph frees.
  using claimer = std::pair<graph_id, shared_name>;
  using claim_map = std::unordered_map<std::uintptr_t, claimer>;

  /// The index of the record of `address` if this graph allocated it, or npos; throws
  /// usage_error when it did and the allocation already has a free node (here or, by claim,
  /// in another graph). Call with mu_.
  [[nodiscard]] std::size_t own_unfreed_or_throw(std::uintptr_t address) const;
  /// The index in allocs_ of the latest record of `address`, or npos. Indexes the unindexed
  /// records when the address is not among the newest `tail_probe`. Call with mu_.
  [[nodiscard]] std::size_t find_latest(std::uintptr_t address) const;
  /// Moves the unindexed records into the index (the newest of an address wins). Call with mu_.
  void index_records() const;

  // The slow paths of the inline functions below, out of line so that what runs for every
  // node stays small (the driver's calls in between evict the instruction cache too).
  [[noreturn]] void refuse_memory_node(const char* what) const;
  void make_room();
  /// Throws usage_error: the unfreed allocation allocs_[held] holds `address` already.
  [[noreturn]] void refuse_held_address(std::uintptr_t address, std::size_t held) const;
  /// Throws usage_error if the allocation at `index` has a free node here or a claim from
  /// another graph.
  void check_not_freed(std::uintptr_t address, std::size_t index) const;
  [[nodiscard]] free_claim claim_foreign_free(std::uintptr_t address);

  // Claims on this graph's allocations by other graphs (under mu_; for the registry).
  [[nodiscard]] const claimer* claim_of(std::uintptr_t address) const;
  void add_claim(std::uintptr_t address, claimer by);
  /// Drops the claim on `address` if `by` holds it; says whether it did.
  bool drop_claim(std::uintptr_t address, graph_id by);
  void move_claim(std::uintptr_t address, graph_id from, const claimer& to);
  /// A free outside every graph of `address` in flight is done; says whether there was one.
  bool settle_outside_claim(std::uintptr_t address);
  void forget_outside_frees() noexcept;

  // What every alloc and free node reads or writes, first and in one cache line (the driver's
  // calls in between evict the cache): the lock, the kind, the counts, the index, the highest
  // address, the records and the (usually absent) claims.
  /// Guards what other threads reach through the registry (allocs_' free nodes, claims_, and
  /// latest_ with unindexed_, which their lookups may bring up to date); the owner's own calls
  /// take it too, uncontended.
  mutable detail::spin_mutex mu_;
  kind kind_;
  /// The newest records, allocs_[size - unindexed_, size), are not in latest_ yet.
  mutable std::uint16_t unindexed_ = 0;
  /// Records without a free node: unfreed() is free when it is 0.
  std::uint32_t unfreed_count_ = 0;
  /// Address -> index in allocs_ of its latest record (the unfreed one, if any: an address is
  /// allocated again only after its free), but for the unindexed ones. Keeps add_free O(1).
  /// Written after every alloc node, its random cache line was much of gmem's cost per node:
  /// a graph whose frees follow their allocations and whose addresses grow (the
  /// driver hands them out one after another) never needs it.
  mutable address_index latest_;
  /// The highest address of any record: an alloc node above it needs no lookup.
  std::uintptr_t max_address_ = 0;
  std::vector<alloc_record> allocs_;
  /// Allocations of this graph that another graph frees: address -> that graph. Made on the
  /// first such claim.
  std::unique_ptr<claim_map> claims_;

  allocation_registry* registry_;
  graph_id id_;
  shared_name name_;
  std::vector<foreign_free_record> foreign_frees_;
  int live_execs_ = 0;
  bool graph_alive_ = false;
  /// Captured frees whose node is not named yet (free_node == captured_free_node).
  std::uint32_t captured_frees_ = 0;
  static constexpr node_handle captured_free_node = 0;
  /// Claims in claims_ by frees outside every graph (written under mu_, read by launched()).
  std::atomic<std::uint32_t> outside_frees_{0};
  /// How many of the newest records a lookup reads before it indexes them all, and how many
  /// wait for the index at most.
  static constexpr std::size_t tail_probe = 4;
  static constexpr std::size_t unindexed_max = 4096;
};

inline void graph_ledger::check_can_add_memory_node(const char* what) const {
  if (kind_ != kind::ordinary) refuse_memory_node(what);
}

inline std::size_t graph_ledger::find_latest(std::uintptr_t address) const {
  const std::size_t n = allocs_.size();
  const std::size_t probe = unindexed_ < tail_probe ? unindexed_ : tail_probe;
  for (std::size_t i = n; i-- > n - probe;) {
    if (allocs_[i].address == address) return i;
  }
  if (unindexed_ > probe) index_records();
  return latest_.find(address);
}

inline std::size_t graph_ledger::own_unfreed_or_throw(std::uintptr_t address) const {
  const std::size_t i = find_latest(address);
  if (i != address_index::npos && (allocs_[i].free_node || claims_)) check_not_freed(address, i);
  return i;
}

inline void graph_ledger::record_alloc(const alloc_record& record) {
  std::lock_guard<detail::spin_mutex> lock(mu_);
  if (record.address <= max_address_) {  // may be a second allocation of an unfreed address
    const std::size_t held = find_latest(record.address);
    if (held != address_index::npos && !allocs_[held].free_node) {
      refuse_held_address(record.address, held);
    }  // else the driver reused the address after that allocation's free
  } else {
    max_address_ = record.address;
  }
  if (allocs_.size() == allocs_.capacity()) make_room();
  allocs_.push_back(record);
  if (!record.free_node) ++unfreed_count_;
  if (++unindexed_ == unindexed_max) index_records();
}

inline free_claim graph_ledger::claim_free(std::uintptr_t address) {
  {
    std::lock_guard<detail::spin_mutex> lock(mu_);
    if (const std::size_t i = own_unfreed_or_throw(address); i != address_index::npos) {
      allocs_[i].free_node = pending_free;  // no other graph may claim it meanwhile
      --unfreed_count_;
      return {address, free_target::own_allocation, i};
    }
  }
  return claim_foreign_free(address);
}

template <typename Add>
std::optional<node_handle> graph_ledger::free_in_one_step(std::uintptr_t address, Add&& add) {
  {
    std::lock_guard<detail::spin_mutex> lock(mu_);
    if (const std::size_t i = own_unfreed_or_throw(address); i != address_index::npos) {
      const std::optional<node_handle> node = add();
      if (node) {
        allocs_[i].free_node = *node;
        --unfreed_count_;
      }
      return node;
    }
  }
  const free_claim claim = claim_foreign_free(address);
  const std::optional<node_handle> node = add();
  if (node) {
    commit_free(claim, *node);
  } else {
    unclaim_free(claim);
  }
  return node;
}

inline void graph_ledger::commit_free(const free_claim& claim, node_handle free_node) {
  std::lock_guard<detail::spin_mutex> lock(mu_);
  if (claim.target == free_target::own_allocation) {
    allocs_[claim.record].free_node = free_node;
  } else {
    foreign_frees_.push_back({claim.address, free_node});
  }
}

/// Describes allocation records for an error message: "4096 B at 0x7f.. (node 0x..)", ...
[[nodiscard]] std::string describe_allocations(const std::vector<alloc_record>& records);

}  // namespace gmem
