#include "gmem/detail/allocation_registry.hpp"

#include <algorithm>

#include "gmem/detail/graph_ledger.hpp"
#include "gmem/usage_error.hpp"

namespace gmem {
namespace {

const std::string& name_of(const shared_name& n) {
  static const std::string unnamed = "?";
  return n ? *n : unnamed;
}

[[noreturn]] void already_freed(const std::string& claimer, std::size_t bytes,
                                std::uintptr_t address, const std::string& allocator,
                                const std::string& freer) {
  throw usage_error("free node in graph '" + claimer + "': the allocation of " +
                    format_bytes(bytes) + " at " + format_address(address) + " (made by graph '" +
                    allocator + "') already has a free node in graph '" + freer +
                    "'; an allocation is freed once: remove the second free node, or order the "
                    "users of the allocation before the first one");
}

}  // namespace

allocation_registry& allocation_registry::global() {
  static allocation_registry registry;
  return registry;
}

void allocation_registry::enter(graph_ledger* ledger) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_.push_back(ledger);
}

void allocation_registry::leave(graph_ledger* ledger) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  live_.erase(std::remove(live_.begin(), live_.end(), ledger), live_.end());
  std::vector<std::uintptr_t> claims_made;
  {
    std::lock_guard<detail::spin_mutex> own(ledger->mu_);
    ledger->latest_.for_each([&](std::uintptr_t address, std::size_t index) {
      const alloc_record& r = ledger->allocs_[index];
      if (r.free_node) {
        orphans_.erase(address);  // freed inside: any older orphan at this address is stale
        return;
      }
      orphan o{ledger->id_, ledger->name_, r.bytes, r.device, std::nullopt, nullptr};
      if (const auto* c = ledger->claim_of(address)) {
        o.claimed_by = c->first;
        o.claimed_name = c->second;
      }
      orphans_[address] = std::move(o);
    });
    for (const auto& f : ledger->foreign_frees_) claims_made.push_back(f.address);
  }
  for (std::uintptr_t address : claims_made) {  // one ledger lock at a time
    for (graph_ledger* other : live_) {
      std::lock_guard<detail::spin_mutex> l(other->mu_);
      other->drop_claim(address, ledger->id_);
    }
    if (const auto o = orphans_.find(address);
        o != orphans_.end() && o->second.claimed_by == ledger->id_) {
      o->second.claimed_by.reset();
      o->second.claimed_name.reset();
    }
  }
}

void allocation_registry::claim_foreign(std::uintptr_t address, const graph_ledger& claimer,
                                        bool claim) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (graph_ledger* owner : live_) {
    if (owner == &claimer) continue;
    std::lock_guard<detail::spin_mutex> l(owner->mu_);
    const std::size_t i = owner->latest_.find(address);
    if (i == address_index::npos) continue;
    const alloc_record& r = owner->allocs_[i];
    if (r.free_node) already_freed(claimer.name(), r.bytes, address, owner->name(), owner->name());
    if (const auto* c = owner->claim_of(address)) {
      already_freed(claimer.name(), r.bytes, address, owner->name(), name_of(c->second));
    }
    if (claim) owner->add_claim(address, {claimer.id(), claimer.name_});
    return;
  }
  const auto o = orphans_.find(address);
  if (o == orphans_.end()) {
    throw usage_error("free node in graph '" + claimer.name() + "': no alloc node returned " +
                      format_address(address) +
                      "; a free node can only free a graph allocation (from an alloc node or "
                      "a captured cudaMallocAsync); free other memory with cudaFree / "
                      "cudaFreeAsync");
  }
  if (o->second.claimed_by) {
    already_freed(claimer.name(), o->second.bytes, address, name_of(o->second.allocating_name),
                  o->second.claimed_by == claimer.id() ? claimer.name()
                                                       : name_of(o->second.claimed_name));
  }
  if (claim) {
    o->second.claimed_by = claimer.id();
    o->second.claimed_name = claimer.name_;
  }
}

void allocation_registry::unclaim_foreign(std::uintptr_t address, graph_id claimer) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  for (graph_ledger* owner : live_) {
    std::lock_guard<detail::spin_mutex> l(owner->mu_);
    if (owner->drop_claim(address, claimer)) return;
  }
  if (const auto o = orphans_.find(address);
      o != orphans_.end() && o->second.claimed_by == claimer) {
    o->second.claimed_by.reset();
    o->second.claimed_name.reset();
  }
}

void allocation_registry::transfer_claims(const std::vector<std::uintptr_t>& addresses,
                                          graph_id from, graph_id to,
                                          const shared_name& to_name) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::uintptr_t address : addresses) {
    for (graph_ledger* owner : live_) {
      std::lock_guard<detail::spin_mutex> l(owner->mu_);
      owner->move_claim(address, from, {to, to_name});
    }
    if (const auto o = orphans_.find(address);
        o != orphans_.end() && o->second.claimed_by == from) {
      o->second.claimed_by = to;
      o->second.claimed_name = to_name;
    }
  }
}

std::optional<allocation_registry::entry> allocation_registry::find(
    std::uintptr_t address) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const graph_ledger* owner : live_) {
    std::lock_guard<detail::spin_mutex> l(owner->mu_);
    const std::size_t i = owner->latest_.find(address);
    if (i == address_index::npos) continue;
    const alloc_record& r = owner->allocs_[i];
    entry e{owner->id(), owner->name(), r.bytes, r.device, std::nullopt, {}};
    if (r.free_node) {
      e.freed_by = owner->id();
      e.freed_by_name = owner->name();
    } else if (const auto* c = owner->claim_of(address)) {
      e.freed_by = c->first;
      e.freed_by_name = name_of(c->second);
    }
    return e;
  }
  const auto o = orphans_.find(address);
  if (o == orphans_.end()) return std::nullopt;
  const orphan& x = o->second;
  return entry{x.allocating_graph, name_of(x.allocating_name), x.bytes, x.device, x.claimed_by,
               x.claimed_by ? name_of(x.claimed_name) : std::string()};
}

}  // namespace gmem
