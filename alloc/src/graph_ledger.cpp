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
  latest_.reserve(64);
}

graph_ledger::~graph_ledger() {
  // Destroying a graph does not free its allocations: only entries freed inside this graph
  // are forgotten; unfreed ones can still be freed in a stream or by another graph.
  std::vector<std::uintptr_t> freed_inside;
  freed_inside.reserve(latest_.size());
  for (const auto& [address, index] : latest_) {
    if (allocs_[index].free_node) freed_inside.push_back(address);
  }
  registry_->erase_all_owned(freed_inside, id_);
  for (const auto& f : foreign_frees_) registry_->on_free_node_gone(f.address, id_);
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
  const auto it = latest_.find(address);
  return it == latest_.end() ? nullptr : &allocs_[it->second];
}

void graph_ledger::record_alloc(alloc_record record) {
  if (const alloc_record* live = find_unfreed(record.address)) {
    throw usage_error("alloc node in graph '" + name() + "': address " +
                      format_address(record.address) + " is already held by an unfreed " +
                      format_bytes(live->bytes) +
                      " allocation of this graph; an address can only be reused after its "
                      "free node");
  }
  registry_->on_alloc(record.address, id_, name_, record.bytes, record.device);
  latest_.insert_or_assign(record.address, allocs_.size());
  allocs_.push_back(std::move(record));
}

free_target graph_ledger::check_free(std::uintptr_t address) const {
  if (find_unfreed(address) != nullptr) {
    registry_->check_free(address, id_, name_);  // another graph may already free it
    return free_target::own_allocation;
  }
  if (const alloc_record* freed = find_latest(address)) {
    throw usage_error("free node in graph '" + name() + "': the allocation of " +
                      format_bytes(freed->bytes) + " at " + format_address(address) +
                      " already has a free node in this graph; an allocation is freed once: "
                      "remove the second free node");
  }
  registry_->check_free(address, id_, name_);
  return free_target::foreign_allocation;
}

void graph_ledger::record_free(std::uintptr_t address, node_handle free_node) {
  commit_free(address, free_node, claim_free(address));
}

free_target graph_ledger::claim_free(std::uintptr_t address) {
  const alloc_record* latest = find_latest(address);  // one lookup for both questions
  const alloc_record* own = latest && !latest->free_node ? latest : nullptr;
  if (own == nullptr) {
    if (const alloc_record* freed = latest) {
      throw usage_error("free node in graph '" + name() + "': the allocation of " +
                        format_bytes(freed->bytes) + " at " + format_address(address) +
                        " already has a free node in this graph; an allocation is freed once: "
                        "remove the second free node");
    }
  }
  registry_->on_free(address, id_, name_);  // checks (another graph may free it) and claims
  return own ? free_target::own_allocation : free_target::foreign_allocation;
}

void graph_ledger::unclaim_free(std::uintptr_t address) noexcept {
  registry_->on_free_node_gone(address, id_);
}

void graph_ledger::commit_free(std::uintptr_t address, node_handle free_node,
                               free_target target) {
  if (target == free_target::own_allocation) {
    allocs_[latest_.at(address)].free_node = free_node;
  } else {
    foreign_frees_.push_back({address, free_node});
  }
}

void graph_ledger::record_observed_free(std::uintptr_t address, node_handle free_node) {
  try {
    record_free(address, free_node);
  } catch (const usage_error&) {
    foreign_frees_.push_back({address, free_node});  // the driver is the authority here
  }
}

void graph_ledger::check_instantiate(const instantiate_request& request) const {
  const std::string where = "instantiating graph '" + name() + "'";
  if (request.device_launch && request.auto_free_on_launch) {
    throw usage_error(where + ": AutoFreeOnLaunch cannot be combined with device launch; "
                      "drop one of the two flags");
  }
  if (request.device_launch && has_memory_nodes()) {
    throw usage_error(where + " for device launch: the graph holds " +
                      std::to_string(alloc_count()) + " alloc node(s) and " +
                      std::to_string(free_count()) +
                      " free node(s), and graphs with memory nodes cannot be launched from the "
                      "device; instantiate it for host launch, or move the allocations into a "
                      "separate host-launched graph");
  }
  if (live_execs_ > 0 && has_memory_nodes()) {
    throw usage_error(where + ": an executable graph of it already exists, and a graph with "
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
  for (auto& r : child.allocs_) {
    registry_->reassign(r.address, child.id_, id_, name_);
    latest_[r.address] = allocs_.size();
    allocs_.push_back(std::move(r));
  }
  for (auto& f : child.foreign_frees_) {
    registry_->reassign(f.address, child.id_, id_, name_);
    foreign_frees_.push_back(f);
  }
  child.allocs_.clear();
  child.latest_.clear();
  child.foreign_frees_.clear();
  child.mark_moved();
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
