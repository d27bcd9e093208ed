#include "gmem/detail/graph_ledger.hpp"

#include <algorithm>
#include <atomic>
#include <sstream>
#include <type_traits>

#include "gmem/usage_error.hpp"

namespace gmem {

// The hot fields of graph_ledger fit one cache line only at these sizes.
static_assert(sizeof(address_index) == 16, "address_index grew past 16 bytes");
static_assert(sizeof(alloc_record) == 48 && std::is_trivially_copyable_v<alloc_record>,
              "alloc_record is no longer a 48-byte trivially copyable record");

namespace {

graph_id next_graph_id() {
  static std::atomic<graph_id> counter{1};
  return counter.fetch_add(1);
}

}  // namespace

graph_ledger::graph_ledger(std::string name, kind k, allocation_registry& registry)
    : kind_(k),
      registry_(&registry),
      id_(next_graph_id()),
      name_(std::make_shared<const std::string>(std::move(name))) {
  registry_->enter(this);
}

graph_ledger::~graph_ledger() {
  // Destroying a graph does not free its allocations: the registry keeps the unfreed ones
  // (they can still be freed in a stream or by another graph) and takes back this graph's
  // claims on other graphs' allocations.
  registry_->leave(this);
}

void graph_ledger::refuse_memory_node(const char* what) const {
  if (kind_ == kind::conditional_body) {
    throw usage_error(std::string(what) + " in graph '" + name() +
                      "': this graph is the body of a conditional node, and conditional bodies "
                      "may not hold memory alloc or free nodes; allocate before the conditional "
                      "node in the parent graph and free after it");
  }
  throw usage_error(std::string(what) + " in graph '" + name() +
                    "': this graph was moved into a parent as a child graph and can no longer "
                    "take memory nodes; add them to the child before moving it, or to the "
                    "parent");
}

void graph_ledger::make_room() {
  // Graphs without memory nodes keep nothing; a graph's first alloc node makes room for 256
  // records (12 KiB). The index is made when a lookup first needs it.
  allocs_.reserve(std::max<std::size_t>(256, 2 * allocs_.size()));
}

void graph_ledger::index_records() const {
  latest_.reserve(allocs_.size());
  for (std::size_t i = allocs_.size() - unindexed_; i < allocs_.size(); ++i) {
    latest_.insert_or_assign(allocs_[i].address, i);
  }
  unindexed_ = 0;
}

void graph_ledger::refuse_held_address(std::uintptr_t address, std::size_t held) const {
  throw usage_error("alloc node in graph '" + name() + "': address " + format_address(address) +
                    " is already held by an unfreed " + format_bytes(allocs_[held].bytes) +
                    " allocation of this graph; an address can only be reused after its free "
                    "node");
}

void graph_ledger::check_not_freed(std::uintptr_t address, std::size_t index) const {
  const alloc_record& r = allocs_[index];
  if (r.free_node) {
    throw usage_error("free node in graph '" + name() + "': the allocation of " +
                      format_bytes(r.bytes) + " at " + format_address(address) +
                      " already has a free node in this graph; an allocation is freed once: "
                      "remove the second free node");
  }
  if (const claimer* c = claim_of(address)) {
    throw usage_error("free node in graph '" + name() + "': the allocation of " +
                      format_bytes(r.bytes) + " at " + format_address(address) +
                      " (made by graph '" + name() + "') " +
                      detail::first_free_phrase(c->first, *c->second) +
                      "; an allocation is freed once: remove the second free, or order the "
                      "users of the allocation before the first one");
  }
}

free_target graph_ledger::check_free(std::uintptr_t address) const {
  {
    std::lock_guard<detail::spin_mutex> lock(mu_);
    if (own_unfreed_or_throw(address) != address_index::npos) {
      return free_target::own_allocation;
    }
  }
  registry_->claim_foreign(address, *this, /*claim=*/false);
  return free_target::foreign_allocation;
}

void graph_ledger::record_free(std::uintptr_t address, node_handle free_node) {
  commit_free(claim_free(address), free_node);
}

free_claim graph_ledger::claim_foreign_free(std::uintptr_t address) {
  registry_->claim_foreign(address, *this, /*claim=*/true);
  return {address, free_target::foreign_allocation, 0};
}

void graph_ledger::unclaim_free(const free_claim& claim) noexcept {
  if (claim.target == free_target::foreign_allocation) {
    registry_->unclaim_foreign(claim.address, id_);
    return;
  }
  std::lock_guard<detail::spin_mutex> lock(mu_);
  allocs_[claim.record].free_node.reset();
  ++unfreed_count_;
}

const graph_ledger::claimer* graph_ledger::claim_of(std::uintptr_t address) const {
  if (!claims_) return nullptr;
  const auto c = claims_->find(address);
  return c == claims_->end() ? nullptr : &c->second;
}

void graph_ledger::add_claim(std::uintptr_t address, claimer by) {
  if (!claims_) claims_ = std::make_unique<claim_map>();
  const bool outside = is_outside_free(by.first);
  if (claims_->emplace(address, std::move(by)).second && outside) {
    outside_frees_.fetch_add(1, std::memory_order_relaxed);
  }
}

bool graph_ledger::drop_claim(std::uintptr_t address, graph_id by) {
  if (!claims_) return false;
  const auto c = claims_->find(address);
  if (c == claims_->end() || c->second.first != by) return false;
  if (is_outside_free(by)) outside_frees_.fetch_sub(1, std::memory_order_relaxed);
  claims_->erase(c);
  return true;
}

void graph_ledger::move_claim(std::uintptr_t address, graph_id from, const claimer& to) {
  if (!claims_) return;
  if (const auto c = claims_->find(address); c != claims_->end() && c->second.first == from) {
    c->second = to;
  }
}

bool graph_ledger::settle_outside_claim(std::uintptr_t address) {
  if (!claims_) return false;
  const auto c = claims_->find(address);
  if (c == claims_->end() || c->second.first != outside_free_in_flight) return false;
  c->second.first = outside_free_done;
  return true;
}

void graph_ledger::forget_outside_frees() noexcept {
  std::lock_guard<detail::spin_mutex> lock(mu_);
  if (!claims_) return;
  for (auto c = claims_->begin(); c != claims_->end();) {
    if (c->second.first == outside_free_done) {
      c = claims_->erase(c);
      outside_frees_.fetch_sub(1, std::memory_order_relaxed);
    } else {
      ++c;
    }
  }
}

std::optional<free_claim> graph_ledger::claim_captured_free(std::uintptr_t address) {
  {
    std::lock_guard<detail::spin_mutex> lock(mu_);
    if (const std::size_t i = own_unfreed_or_throw(address); i != address_index::npos) {
      allocs_[i].free_node = pending_free;
      --unfreed_count_;
      return free_claim{address, free_target::own_allocation, i};
    }
  }
  if (!registry_->claim_foreign(address, *this, /*claim=*/true, /*unknown_ok=*/true)) {
    return std::nullopt;
  }
  return free_claim{address, free_target::foreign_allocation, 0};
}

void graph_ledger::commit_captured_free(const free_claim& claim) {
  std::lock_guard<detail::spin_mutex> lock(mu_);
  if (claim.target == free_target::own_allocation) {
    allocs_[claim.record].free_node = captured_free_node;
  } else {
    foreign_frees_.push_back({claim.address, captured_free_node});
  }
  ++captured_frees_;
}

void graph_ledger::record_observed_free(std::uintptr_t address, node_handle free_node) {
  if (captured_frees_ != 0) {  // claimed while capturing: the node has a name now
    std::lock_guard<detail::spin_mutex> lock(mu_);
    for (auto& f : foreign_frees_) {
      if (f.address == address && f.free_node == captured_free_node) {
        f.free_node = free_node;
        --captured_frees_;
        return;
      }
    }
    const std::size_t i = find_latest(address);
    if (i != address_index::npos && allocs_[i].free_node == captured_free_node) {
      allocs_[i].free_node = free_node;
      --captured_frees_;
      return;
    }
  }
  try {
    record_free(address, free_node);
  } catch (const usage_error&) {
    std::lock_guard<detail::spin_mutex> lock(mu_);
    foreign_frees_.push_back({address, free_node});  // the driver is the authority here
  }
}

void graph_ledger::check_instantiate(const instantiate_request& request) const {
  const auto where = [this] { return "instantiating graph '" + name() + "'"; };
  if (request.device_launch && request.auto_free_on_launch) {
    throw usage_error(where() + ": AutoFreeOnLaunch cannot be combined with device launch; "
                      "drop one of the two flags");
  }
  if (request.device_launch && has_memory_nodes()) {
    throw usage_error(where() + " for device launch: the graph holds " +
                      std::to_string(alloc_count()) + " alloc node(s) and " +
                      std::to_string(free_count()) +
                      " free node(s), and graphs with memory nodes cannot be launched from the "
                      "device; instantiate it for host launch, or move the allocations into a "
                      "separate host-launched graph");
  }
  if (live_execs_ > 0 && has_memory_nodes()) {
    throw usage_error(where() + ": an executable graph of it already exists (instantiated "
                      "from it, or updated with it), and a graph with memory nodes may have only "
                      "one at a time; destroy the first executable graph before instantiating "
                      "again");
  }
}

void graph_ledger::check_clone() const {
  if (has_memory_nodes()) {
    throw usage_error("cloning graph '" + name() + "': it holds " +
                      std::to_string(alloc_count()) + " alloc node(s) and " +
                      std::to_string(free_count()) +
                      " free node(s), and graphs with memory nodes cannot be cloned; build a "
                      "second graph instead");
  }
}

void graph_ledger::absorb_child(graph_ledger& child) {
  std::vector<alloc_record> records;
  std::vector<foreign_free_record> frees;
  std::unique_ptr<claim_map> claims;
  std::uint32_t unfreed = 0;
  {
    std::lock_guard<detail::spin_mutex> lock(child.mu_);
    records.swap(child.allocs_);
    frees.swap(child.foreign_frees_);
    claims.swap(child.claims_);
    child.outside_frees_.store(0, std::memory_order_relaxed);
    std::swap(unfreed, child.unfreed_count_);
    child.latest_.clear();
    child.unindexed_ = 0;
    child.max_address_ = 0;
    child.mark_moved();
  }
  std::vector<std::uintptr_t> claimed;
  for (const auto& f : frees) claimed.push_back(f.address);
  registry_->transfer_claims(claimed, child.id_, id_, name_);
  std::lock_guard<detail::spin_mutex> lock(mu_);
  index_records();
  for (const auto& r : records) {
    latest_.insert_or_assign(r.address, allocs_.size());
    allocs_.push_back(r);
    if (r.address > max_address_) max_address_ = r.address;
  }
  unfreed_count_ += unfreed;
  foreign_frees_.insert(foreign_frees_.end(), frees.begin(), frees.end());
  if (claims) {
    for (auto& [address, by] : *claims) add_claim(address, std::move(by));
  }
}

std::vector<alloc_record> graph_ledger::unfreed() const {
  std::vector<alloc_record> out;
  if (unfreed_count_ == 0) return out;
  out.reserve(unfreed_count_);
  std::copy_if(allocs_.begin(), allocs_.end(), std::back_inserter(out),
               [](const alloc_record& r) { return !r.free_node; });
  return out;
}

std::size_t graph_ledger::free_count() const noexcept {
  const auto own = std::count_if(allocs_.begin(), allocs_.end(),
                                 [](const alloc_record& r) { return r.free_node.has_value(); });
  return static_cast<std::size_t>(own) + foreign_frees_.size();
}

std::string describe_allocations(const std::vector<alloc_record>& records) {
  std::ostringstream out;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (i) out << ", ";
    out << format_bytes(records[i].bytes) << " at " << format_address(records[i].address)
        << " on device " << records[i].device;
  }
  return out.str();
}

}  // namespace gmem
