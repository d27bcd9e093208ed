#include "gmem/allocation_registry.hpp"

#include "gmem/usage_error.hpp"

namespace gmem {

allocation_registry& allocation_registry::global() {
  static allocation_registry registry;
  return registry;
}

void allocation_registry::on_alloc(std::uintptr_t address, graph_id graph,
                                   const std::string& graph_name, std::size_t bytes,
                                   int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[address] = entry{graph, graph_name, bytes, device, std::nullopt, {}};
}

void allocation_registry::check_free_locked(std::uintptr_t address, graph_id graph,
                                            const std::string& graph_name) const {
  const auto it = entries_.find(address);
  if (it == entries_.end()) {
    throw usage_error("free node in graph '" + graph_name + "': no alloc node returned " +
                      format_address(address) +
                      "; a free node can only free a graph allocation (from an alloc node or "
                      "a captured cudaMallocAsync); free other memory with cudaFree / "
                      "cudaFreeAsync");
  }
  const entry& e = it->second;
  if (e.freed_by) {
    const std::string who = *e.freed_by == graph ? "this graph" : "graph '" + e.freed_by_name + "'";
    throw usage_error("free node in graph '" + graph_name + "': the allocation of " +
                      format_bytes(e.bytes) + " at " + format_address(address) +
                      " (made by graph '" + e.allocating_graph_name +
                      "') already has a free node in " + who +
                      "; an allocation is freed once: remove the second free node, or order "
                      "the users of the allocation before the first one");
  }
}

void allocation_registry::check_free(std::uintptr_t address, graph_id graph,
                                     const std::string& graph_name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  check_free_locked(address, graph, graph_name);
}

void allocation_registry::on_free(std::uintptr_t address, graph_id graph,
                                  const std::string& graph_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_free_locked(address, graph, graph_name);
  entry& e = entries_.at(address);
  e.freed_by = graph;
  e.freed_by_name = graph_name;
}

void allocation_registry::on_free_node_gone(std::uintptr_t address, graph_id graph) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(address);
  if (it != entries_.end() && it->second.freed_by == graph) {
    it->second.freed_by.reset();
    it->second.freed_by_name.clear();
  }
}

void allocation_registry::reassign(std::uintptr_t address, graph_id from, graph_id to,
                                   const std::string& to_name) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(address);
  if (it == entries_.end()) return;
  entry& e = it->second;
  if (e.allocating_graph == from) {
    e.allocating_graph = to;
    e.allocating_graph_name = to_name;
  }
  if (e.freed_by == from) {
    e.freed_by = to;
    e.freed_by_name = to_name;
  }
}

void allocation_registry::erase_if_owned(std::uintptr_t address, graph_id graph) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(address);
  if (it != entries_.end() && it->second.allocating_graph == graph) {
    entries_.erase(it);
  }
}

std::optional<allocation_registry::entry> allocation_registry::find(
    std::uintptr_t address) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(address);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gmem
