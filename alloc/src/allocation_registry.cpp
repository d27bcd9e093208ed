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

/// Refuses the second free of an allocation: `second` names it ("free node in graph 'x'",
/// "cudaFreeAsync in stream 0x.. (gmem::free_in_stream)"), `first_by` / `first_name` the first.
[[noreturn]] void already_freed(const std::string& second, std::size_t bytes,
                                std::uintptr_t address, const std::string& allocator,
                                graph_id first_by, const std::string& first_name,
                                const char* note = "") {
  throw usage_error(second + ": the allocation of " + format_bytes(bytes) + " at " +
                    format_address(address) + " (made by graph '" + allocator + "') " +
                    detail::first_free_phrase(first_by, first_name) +
                    "; an allocation is freed once" +
                    (is_outside_free(first_by)
                         ? " (a free in a stream or by cudaFree counts until the allocating "
                           "graph launches again)"
                         : "") +
                    ": remove the second free, or order the users of the allocation before "
                    "the first one" + note);
}

std::string free_node_in(const std::string& graph_name) {
  return "free node in graph '" + graph_name + "'";
}

}  // namespace

namespace detail {

std::string first_free_phrase(graph_id by, const std::string& name) {
  if (is_outside_free(by)) return "was already freed by " + name;
  return "already has a free node in graph '" + name + "'";
}

}  // namespace detail

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
    // Oldest first, so that the latest record of an address decides (no index needed).
    for (const alloc_record& r : ledger->allocs_) {
      const std::uintptr_t address = r.address;
      // Whatever is known of this address from older graphs is stale now.
      forget_freed(address);
      if (r.free_node) {
        orphans_.erase(address);
        continue;
      }
      const auto* c = ledger->claim_of(address);
      if (c && c->first == outside_free_done) {  // freed in a stream or by cudaFree: no orphan
        orphans_.erase(address);
        remember_freed(address, {ledger->name_, r.bytes, c->second, 0});
        continue;
      }
      orphan o{ledger->id_, ledger->name_, r.bytes, r.device, std::nullopt, nullptr};
      if (c) {
        o.claimed_by = c->first;
        o.claimed_name = c->second;
      }
      orphans_[address] = std::move(o);
    }
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

bool allocation_registry::claim_foreign(std::uintptr_t address, const graph_ledger& claimer,
                                        bool claim, bool unknown_ok) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (graph_ledger* owner : live_) {
    if (owner == &claimer) continue;
    std::lock_guard<detail::spin_mutex> l(owner->mu_);
    const std::size_t i = owner->find_latest(address);
    if (i == address_index::npos) continue;
    const alloc_record& r = owner->allocs_[i];
    if (r.free_node) {
      already_freed(free_node_in(claimer.name()), r.bytes, address, owner->name(), owner->id(),
                    owner->name());
    }
    if (const auto* c = owner->claim_of(address)) {
      already_freed(free_node_in(claimer.name()), r.bytes, address, owner->name(), c->first,
                    name_of(c->second));
    }
    if (claim) owner->add_claim(address, {claimer.id(), claimer.name_});
    return true;
  }
  const auto o = orphans_.find(address);
  if (o == orphans_.end()) {
    if (const auto f = freed_.find(address); f != freed_.end()) {
      already_freed(free_node_in(claimer.name()), f->second.bytes, address,
                    name_of(f->second.allocating_name), outside_free_done,
                    name_of(f->second.freed_name));
    }
    if (unknown_ok) return false;
    throw usage_error("free node in graph '" + claimer.name() + "': no alloc node returned " +
                      format_address(address) +
                      "; a free node can only free a graph allocation (from an alloc node or "
                      "a captured cudaMallocAsync); free other memory with cudaFree / "
                      "cudaFreeAsync");
  }
  if (o->second.claimed_by) {
    already_freed(free_node_in(claimer.name()), o->second.bytes, address,
                  name_of(o->second.allocating_name), *o->second.claimed_by,
                  o->second.claimed_by == claimer.id() ? claimer.name()
                                                       : name_of(o->second.claimed_name));
  }
  if (claim) {
    o->second.claimed_by = claimer.id();
    o->second.claimed_name = claimer.name_;
  }
  return true;
}

allocation_registry::outside_claim allocation_registry::claim_outside_free(
    std::uintptr_t address, const std::string& how) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (graph_ledger* owner : live_) {
    std::lock_guard<detail::spin_mutex> l(owner->mu_);
    const std::size_t i = owner->find_latest(address);
    if (i == address_index::npos) continue;
    const alloc_record& r = owner->allocs_[i];
    if (r.free_node) already_freed(how, r.bytes, address, owner->name(), owner->id(), owner->name());
    if (const auto* c = owner->claim_of(address)) {
      already_freed(how, r.bytes, address, owner->name(), c->first, name_of(c->second));
    }
    owner->add_claim(address, {outside_free_in_flight, std::make_shared<const std::string>(how)});
    return {address, true};
  }
  if (const auto o = orphans_.find(address); o != orphans_.end()) {
    if (o->second.claimed_by) {
      already_freed(how, o->second.bytes, address, name_of(o->second.allocating_name),
                    *o->second.claimed_by, name_of(o->second.claimed_name));
    }
    o->second.claimed_by = outside_free_in_flight;
    o->second.claimed_name = std::make_shared<const std::string>(how);
    return {address, true};
  }
  if (const auto f = freed_.find(address); f != freed_.end()) {
    already_freed(how, f->second.bytes, address, name_of(f->second.allocating_name),
                  outside_free_done, name_of(f->second.freed_name),
                  "; if memory gmem did not allocate (cudaMalloc, a graph built without gmem) "
                  "now lives at this address, free it with cudaFree / cudaFreeAsync directly");
  }
  return {address, false};
}

void allocation_registry::commit_outside_free(const outside_claim& claim) noexcept {
  if (!claim.known) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (graph_ledger* owner : live_) {
    std::lock_guard<detail::spin_mutex> l(owner->mu_);
    if (owner->settle_outside_claim(claim.address)) return;
  }
  // The allocating graph is gone (before or during the driver call): the orphan is freed.
  if (const auto o = orphans_.find(claim.address);
      o != orphans_.end() && o->second.claimed_by == outside_free_in_flight) {
    remember_freed(claim.address,
                   {o->second.allocating_name, o->second.bytes, o->second.claimed_name, 0});
    orphans_.erase(o);
  }
}

void allocation_registry::unclaim_outside_free(const outside_claim& claim) noexcept {
  if (claim.known) unclaim_foreign(claim.address, outside_free_in_flight);
}

void allocation_registry::remember_freed(std::uintptr_t address, freed_orphan f) {
  f.serial = ++freed_serial_;
  freed_order_.emplace_back(address, f.serial);
  freed_[address] = std::move(f);
  // Oldest first out; entries of addresses forgotten or remembered again since are stale.
  while (freed_.size() > remembered_frees_max || freed_order_.size() > 2 * remembered_frees_max) {
    const auto [old, serial] = freed_order_.front();
    freed_order_.pop_front();
    if (const auto x = freed_.find(old); x != freed_.end() && x->second.serial == serial) {
      freed_.erase(x);
    }
  }
}

allocation_registry::counts allocation_registry::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {live_.size(), orphans_.size(), freed_.size()};
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
    const std::size_t i = owner->find_latest(address);
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
  if (o == orphans_.end()) {
    const auto f = freed_.find(address);
    if (f == freed_.end()) return std::nullopt;
    return entry{0, name_of(f->second.allocating_name), f->second.bytes, 0, outside_free_done,
                 name_of(f->second.freed_name)};
  }
  const orphan& x = o->second;
  return entry{x.allocating_graph, name_of(x.allocating_name), x.bytes, x.device, x.claimed_by,
               x.claimed_by ? name_of(x.claimed_name) : std::string()};
}

}  // namespace gmem
