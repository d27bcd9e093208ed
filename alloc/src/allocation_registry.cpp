#include "gmem/allocation_registry.hpp"

#include "gmem/usage_error.hpp"

namespace gmem {

allocation_registry& allocation_registry::global() {
  static allocation_registry registry;
  return registry;
}

namespace {

const std::string& name_of(const shared_name& n) {
  static const std::string unnamed = "?";
  return n ? *n : unnamed;
}

}  // namespace

void allocation_registry::on_alloc(std::uintptr_t address, graph_id graph,
                                   const shared_name& graph_name, std::size_t bytes,
                                   int device) {
  std::lock_guard<spin_mutex> lock(mutex_);
  entries_.insert_or_assign(address, slot{graph, graph_name, bytes, device, std::nullopt, nullptr});
}

const allocation_registry::slot& allocation_registry::check_free_locked(
    std::uintptr_t address, graph_id graph, const shared_name& graph_name) const {
  const auto it = entries_.find(address);
  if (it == entries_.end()) {
    throw usage_error("free node in graph '" + name_of(graph_name) + "': no alloc node returned " +
                      format_address(address) +
                      "; a free node can only free a graph allocation (from an alloc node or "
                      "a captured cudaMallocAsync); free other memory with cudaFree / "
                      "cudaFreeAsync");
  }
  const slot& e = it->second;
  if (e.freed_by) {
    const std::string who =
        *e.freed_by == graph ? "this graph" : "graph '" + name_of(e.freed_by_name) + "'";
    throw usage_error("free node in graph '" + name_of(graph_name) + "': the allocation of " +
                      format_bytes(e.bytes) + " at " + format_address(address) +
                      " (made by graph '" + name_of(e.allocating_name) +
                      "') already has a free node in " + who +
                      "; an allocation is freed once: remove the second free node, or order "
                      "the users of the allocation before the first one");
  }
  return e;
}

void allocation_registry::check_free(std::uintptr_t address, graph_id graph,
                                     const shared_name& graph_name) const {
  std::lock_guard<spin_mutex> lock(mutex_);
  (void)check_free_locked(address, graph, graph_name);
}

void allocation_registry::on_free(std::uintptr_t address, graph_id graph,
                                  const shared_name& graph_name) {
  std::lock_guard<spin_mutex> lock(mutex_);
  // One lookup: the slot check_free_locked found is the one to mark.
  slot& e = const_cast<slot&>(check_free_locked(address, graph, graph_name));
  e.freed_by = graph;
  e.freed_by_name = graph_name;
}

void allocation_registry::on_free_node_gone(std::uintptr_t address, graph_id graph) noexcept {
  std::lock_guard<spin_mutex> lock(mutex_);
  const auto it = entries_.find(address);
  if (it != entries_.end() && it->second.freed_by == graph) {
    it->second.freed_by.reset();
    it->second.freed_by_name.reset();
  }
}

void allocation_registry::reassign(std::uintptr_t address, graph_id from, graph_id to,
                                   const shared_name& to_name) noexcept {
  std::lock_guard<spin_mutex> lock(mutex_);
  const auto it = entries_.find(address);
  if (it == entries_.end()) return;
  slot& e = it->second;
  if (e.allocating_graph == from) {
    e.allocating_graph = to;
    e.allocating_name = to_name;
  }
  if (e.freed_by == from) {
    e.freed_by = to;
    e.freed_by_name = to_name;
  }
}

void allocation_registry::erase_if_owned(std::uintptr_t address, graph_id graph) noexcept {
  std::lock_guard<spin_mutex> lock(mutex_);
  const auto it = entries_.find(address);
  if (it != entries_.end() && it->second.allocating_graph == graph) {
    entries_.erase(it);
  }
}

void allocation_registry::erase_all_owned(const std::vector<std::uintptr_t>& addresses,
                                          graph_id graph) noexcept {
  std::lock_guard<spin_mutex> lock(mutex_);
  for (std::uintptr_t address : addresses) {
    const auto it = entries_.find(address);
    if (it != entries_.end() && it->second.allocating_graph == graph) entries_.erase(it);
  }
}

std::optional<allocation_registry::entry> allocation_registry::find(
    std::uintptr_t address) const {
  std::lock_guard<spin_mutex> lock(mutex_);
  const auto it = entries_.find(address);
  if (it == entries_.end()) return std::nullopt;
  const slot& e = it->second;
  return entry{e.allocating_graph, name_of(e.allocating_name),          e.bytes, e.device,
               e.freed_by,         e.freed_by ? name_of(e.freed_by_name) : ""};
}

}  // namespace gmem
