#include "gmem/graph_ledger.hpp"

#include <algorithm>
#include <atomic>
#include <sstream>

#include "gmem/usage_error.hpp"

namespace gmem {
namespace {

graph_id next_graph_id() {
  static std::atomic<graph_id> counter{1};
  return counter.fetch_add(1);
}

}  // namespace

graph_ledger::graph_ledger(std::string name, kind k, allocation_registry& registry)
    : registry_(&registry),
      id_(next_graph_id()),
      name_(std::make_shared<const std::string>(std::move(name))),
      kind_(k) {
  allocs_.reserve(64);
  registry_->enter(this);
}

graph_ledger::~graph_ledger() {
  // Destroying a graph does not free its allocations: the registry keeps the unfreed ones
  // (they can still be freed in a stream or by another graph) and takes back this graph's
  // claims on other graphs' allocations.
  registry_->leave(this);
}

void graph_ledger::check_can_add_memory_node(const char* what) const {
  if (kind_ == kind::conditional_body) {
    throw usage_error(std::string(what) + " in graph '" + name() +
                      "': this graph is the body of a conditional node, and conditional bodies "
                      "may not hold memory alloc or free nodes; allocate before the conditional "
                      "node in the parent graph and free after it");
  }
  if (kind_ == kind::moved_child) {
    throw usage_error(std::string(what) + " in graph '" + name() +
                      "': this graph was moved into a parent as a child graph and can no longer "
                      "take memory nodes; add them to the child before moving it, or to the "
                      "parent");
  }
}

const alloc_record* graph_ledger::find_unfreed(std::uintptr_t address) const {
  const alloc_record* latest = find_latest(address);
  return latest && !latest->free_node ? latest : nullptr;
}

const alloc_record* graph_ledger::find_latest(std::uintptr_t address) const {
  const std::size_t i = latest_.find(address);
  return i == address_index::npos ? nullptr : &allocs_[i];
}

void graph_ledger::record_alloc(alloc_record record) {
  std::lock_guard<detail::spin_mutex> lock(mu_);
  if (const alloc_record* live = find_unfreed(record.address)) {
    throw usage_error("alloc node in graph '" + name() + "': address " +
                      format_address(record.address) + " is already held by an unfreed " +
                      format_bytes(live->bytes) +
                      " allocation of this graph; an address can only be reused after its "
                      "free node");
  }
  latest_.insert_or_assign(record.address, allocs_.size());
  allocs_.push_back(std::move(record));
}

const alloc_record* graph_ledger::own_unfreed_or_throw(std::uintptr_t address) const {
  const alloc_record* latest = find_latest(address);
  if (latest == nullptr) return nullptr;
  const alloc_record& r = *latest;
  if (r.free_node) {
    throw usage_error("free node in graph '" + name() + "': the allocation of " +
                      format_bytes(r.bytes) + " at " + format_address(address) +
                      " already has a free node in this graph; an allocation is freed once: "
                      "remove the second free node");
  }
  if (const auto c = claims_.find(address); c != claims_.end()) {
    throw usage_error("free node in graph '" + name() + "': the allocation of " +
                      format_bytes(r.bytes) + " at " + format_address(address) +
                      " (made by graph '" + name() + "') already has a free node in graph '" +
                      *c->second.second +
                      "'; an allocation is freed once: remove the second free node, or order "
                      "the users of the allocation before the first one");
  }
  return &r;
}

free_target graph_ledger::check_free(std::uintptr_t address) const {
  {
    std::lock_guard<detail::spin_mutex> lock(mu_);
    if (own_unfreed_or_throw(address)) {
      return free_target::own_allocation;
    }
  }
  registry_->claim_foreign(address, *this, /*claim=*/false);
  return free_target::foreign_allocation;
}

void graph_ledger::record_free(std::uintptr_t address, node_handle free_node) {
  commit_free(address, free_node, claim_free(address));
}

free_target graph_ledger::claim_free(std::uintptr_t address) {
  {
    std::lock_guard<detail::spin_mutex> lock(mu_);
    if (const alloc_record* own = own_unfreed_or_throw(address)) {
      // No other graph may claim it while the driver adds our node.
      const_cast<alloc_record*>(own)->free_node = pending_free;
      return free_target::own_allocation;
    }
  }
  registry_->claim_foreign(address, *this, /*claim=*/true);
  return free_target::foreign_allocation;
}

void graph_ledger::unclaim_free(std::uintptr_t address, free_target target) noexcept {
  if (target == free_target::foreign_allocation) {
    registry_->unclaim_foreign(address, id_);
    return;
  }
  std::lock_guard<detail::spin_mutex> lock(mu_);
  if (const std::size_t i = latest_.find(address); i != address_index::npos) {
    allocs_[i].free_node.reset();
  }
}

void graph_ledger::commit_free(std::uintptr_t address, node_handle free_node,
                               free_target target) {
  std::lock_guard<detail::spin_mutex> lock(mu_);
  if (target == free_target::own_allocation) {
    allocs_[latest_.find(address)].free_node = free_node;
  } else {
    foreign_frees_.push_back({address, free_node});
  }
}

void graph_ledger::record_observed_free(std::uintptr_t address, node_handle free_node) {
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
    throw usage_error(where() + ": an executable graph of it already exists, and a graph with "
                      "memory nodes may have only one at a time; destroy the first "
                      "executable graph before instantiating again");
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
  std::unordered_map<std::uintptr_t, std::pair<graph_id, shared_name>> claims;
  {
    std::lock_guard<detail::spin_mutex> lock(child.mu_);
    records.swap(child.allocs_);
    frees.swap(child.foreign_frees_);
    claims.swap(child.claims_);
    child.latest_.clear();
    child.mark_moved();
  }
  std::vector<std::uintptr_t> claimed;
  for (const auto& f : frees) claimed.push_back(f.address);
  registry_->transfer_claims(claimed, child.id_, id_, name_);
  std::lock_guard<detail::spin_mutex> lock(mu_);
  for (auto& r : records) {
    latest_.insert_or_assign(r.address, allocs_.size());
    allocs_.push_back(std::move(r));
  }
  foreign_frees_.insert(foreign_frees_.end(), frees.begin(), frees.end());
  claims_.insert(claims.begin(), claims.end());
}

std::vector<alloc_record> graph_ledger::unfreed() const {
  std::vector<alloc_record> out;
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
