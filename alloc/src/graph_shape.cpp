#include "gmem/detail/graph_shape.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>

namespace gmem {
namespace {

std::string quoted(const std::string& name) { return "'" + name + "'"; }

std::string prefix(const std::string& exec_name, const std::string& graph_name) {
  return "updating executable graph " + quoted(exec_name) + " with graph " + quoted(graph_name);
}

std::string instead(const std::string& graph_name) {
  return "; instantiate a new executable graph from " + quoted(graph_name) + " instead";
}

/// "the kernel node 0x.. (the 3rd node created in graph 'B')".
std::string describe(const shape_node& n, std::size_t index, const std::string& where) {
  return std::string("the ") + graph_node_kind_name(n.kind) + " node " + format_address(n.handle) +
         " (the " + ordinal(index + 1) + " node created in " + where + ")";
}

std::string list_positions(const std::vector<std::size_t>& deps) {
  if (deps.empty()) return "no node";
  std::string out = "its ";
  for (std::size_t i = 0; i < deps.size(); ++i) {
    if (i) out += i + 1 == deps.size() ? " and " : ", ";
    out += ordinal(deps[i] + 1);
  }
  return out + " node" + (deps.size() > 1 ? "s" : "");
}

std::string placement(std::size_t bytes, int device, const std::optional<std::vector<int>>& peers) {
  std::string out = format_bytes(bytes) + " on device " + std::to_string(device);
  if (peers && !peers->empty()) {
    out += " with read-write access for device";
    if (peers->size() > 1) out += "s";
    for (std::size_t i = 0; i < peers->size(); ++i) {
      out += (i ? ", " : " ") + std::to_string((*peers)[i]);
    }
  }
  return out;
}

/// Visits the nodes of `shape` in the ledger's order: topological, the earliest created ready
/// node first, a child graph's nodes right after its node.
void visit_in_read_order(const graph_shape& shape,
                         const std::function<void(const shape_node&)>& visit) {
  const std::size_t n = shape.nodes.size();
  std::vector<std::vector<std::size_t>> dependents(n);
  std::vector<std::size_t> waiting(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t d : shape.nodes[i].deps) {
      if (d < n) {
        dependents[d].push_back(i);
        ++waiting[i];
      }
    }
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    const shape_node& node = shape.nodes[i];
    visit(node);
    if (node.kind == graph_node_kind::child_graph && node.child < shape.children.size()) {
      visit_in_read_order(shape.children[node.child], visit);
    }
    for (std::size_t j : dependents[i]) {
      if (--waiting[j] == 0) ready.push(j);
    }
  }
}

struct level_names {
  std::string where;       ///< "graph 'B'", or "the child graph of the 3rd node of graph 'B'"
  std::string exec_where;  ///< "the executable graph", or "its paired child graph"
};

std::optional<update_mismatch> compare_level(const graph_shape& cur, const graph_shape& next,
                                             const level_names& names, const std::string& head,
                                             const std::string& tail) {
  if (cur.nodes.size() != next.nodes.size()) {
    return update_mismatch{
        update_refusal::topology_changed, 0, 0,
        head + ": " + names.where + " has " + std::to_string(next.nodes.size()) +
            " nodes where " + names.exec_where + " has " + std::to_string(cur.nodes.size()) +
            "; an update keeps the topology (node count, node types, dependencies)" + tail};
  }
  for (std::size_t i = 0; i < next.nodes.size(); ++i) {
    const shape_node& c = cur.nodes[i];
    const shape_node& x = next.nodes[i];
    if (c.kind != x.kind) {
      return update_mismatch{update_refusal::node_type_changed, x.handle, 0,
                             head + ": " + describe(x, i, names.where) + " pairs with a " +
                                 graph_node_kind_name(c.kind) + " node of " + names.exec_where +
                                 " (its " + ordinal(i + 1) +
                                 " node); node types cannot change in an update" + tail};
    }
    if (c.deps.size() != x.deps.size()) {
      return update_mismatch{
          update_refusal::topology_changed, x.handle, 0,
          head + ": " + describe(x, i, names.where) + " has " + std::to_string(x.deps.size()) +
              " dependencies where its pair in " + names.exec_where + " has " +
              std::to_string(c.deps.size()) + "; an update keeps the topology" + tail};
    }
    for (std::size_t d : x.deps) {
      if (!std::binary_search(c.deps.begin(), c.deps.end(), d)) {
        const shape_node& from = next.nodes[d];
        return update_mismatch{
            update_refusal::topology_changed, x.handle, from.handle,
            head + ": " + describe(x, i, names.where) + " depends on " +
                describe(from, d, names.where) + ", and its pair in " + names.exec_where +
                " does not (it depends on " + list_positions(c.deps) +
                "); an update keeps the topology" + tail};
      }
    }
    if (x.kind == graph_node_kind::child_graph && c.child < cur.children.size() &&
        x.child < next.children.size()) {
      const level_names inner{
          "the child graph of the " + ordinal(i + 1) + " node of " + names.where,
          "its paired child graph in " + names.exec_where};
      if (auto m = compare_level(cur.children[c.child], next.children[x.child], inner, head,
                                 tail)) {
        return m;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

const char* graph_node_kind_name(graph_node_kind kind) noexcept {
  switch (kind) {
    case graph_node_kind::kernel: return "kernel";
    case graph_node_kind::memcpy: return "memcpy";
    case graph_node_kind::memset: return "memset";
    case graph_node_kind::host: return "host";
    case graph_node_kind::child_graph: return "child graph";
    case graph_node_kind::empty: return "empty";
    case graph_node_kind::event_wait: return "event wait";
    case graph_node_kind::event_record: return "event record";
    case graph_node_kind::semaphore_signal: return "external semaphore signal";
    case graph_node_kind::semaphore_wait: return "external semaphore wait";
    case graph_node_kind::mem_alloc: return "alloc";
    case graph_node_kind::mem_free: return "free";
    case graph_node_kind::conditional: return "conditional";
    case graph_node_kind::other: break;
  }
  return "unknown";
}

std::string ordinal(std::size_t n) {
  const std::size_t tens = n % 100;
  const char* suffix = "th";
  if (tens < 11 || tens > 13) {
    switch (n % 10) {
      case 1: suffix = "st"; break;
      case 2: suffix = "nd"; break;
      case 3: suffix = "rd"; break;
      default: break;
    }
  }
  return std::to_string(n) + suffix;
}

bool graph_shape::has_memory_nodes() const noexcept {
  for (const shape_node& n : nodes) {
    if (n.kind == graph_node_kind::mem_alloc || n.kind == graph_node_kind::mem_free) return true;
  }
  return std::any_of(children.begin(), children.end(),
                     [](const graph_shape& c) { return c.has_memory_nodes(); });
}

memory_signature signature_of(const graph_shape& shape) {
  memory_signature sig;
  std::unordered_map<std::uintptr_t, std::size_t> unfreed;  // address -> its allocation
  std::size_t frees = 0;
  visit_in_read_order(shape, [&](const shape_node& n) {
    if (n.kind == graph_node_kind::mem_alloc) {
      unfreed[n.address] = sig.allocations.size();
      sig.allocations.push_back({n.handle, n.bytes, n.device, n.peers, false, 0, std::nullopt});
    } else if (n.kind == graph_node_kind::mem_free) {
      if (const auto a = unfreed.find(n.address); a != unfreed.end()) {
        memory_signature::allocation& freed = sig.allocations[a->second];
        freed.freed_here = true;
        freed.free_node = n.handle;
        freed.free_position = frees;
        unfreed.erase(a);
      } else {
        sig.foreign_frees.push_back({n.handle, n.address});
      }
      ++frees;
    }
  });
  return sig;
}

memory_signature signature_of(const graph_ledger& ledger) {
  memory_signature sig;
  sig.allocations.reserve(ledger.allocations().size());
  for (const alloc_record& r : ledger.allocations()) {
    sig.allocations.push_back({r.alloc_node, r.bytes, r.device, std::nullopt,
                               r.free_node.has_value(), r.free_node.value_or(0), std::nullopt});
  }
  for (const foreign_free_record& f : ledger.foreign_frees()) {
    sig.foreign_frees.push_back({f.free_node, f.address});
  }
  return sig;
}

void throw_update_error(const update_mismatch& m) {
  throw update_error(m.reason, m.node, m.from_node, m.message);
}

std::optional<update_mismatch> check_update_source(const graph_ledger& current,
                                                   const graph_ledger& next,
                                                   const std::string& exec_name) {
  if (&current == &next || !next.has_memory_nodes() || next.live_execs() == 0) {
    return std::nullopt;
  }
  return update_mismatch{
      update_refusal::instantiated_elsewhere, 0, 0,
      prefix(exec_name, next.name()) + ": " + quoted(next.name()) +
          " holds memory nodes and is already instantiated as another executable graph; a "
          "graph with memory nodes backs one executable graph at a time, and the driver refuses "
          "to update with a graph instantiated elsewhere: destroy that executable graph first, "
          "or update with a graph that has none"};
}

std::optional<update_mismatch> compare_topology(const graph_shape& current,
                                                const graph_shape& next,
                                                const std::string& exec_name,
                                                const std::string& graph_name) {
  return compare_level(current, next, {"graph " + quoted(graph_name), "the executable graph"},
                       prefix(exec_name, graph_name), instead(graph_name));
}

std::optional<update_mismatch> compare_memory(const memory_signature& current,
                                              const memory_signature& next,
                                              const std::string& exec_name,
                                              const std::string& graph_name) {
  const std::string head = prefix(exec_name, graph_name) + ": ";
  const std::string tail = instead(graph_name);
  const std::string in_next = " of graph " + quoted(graph_name);
  const auto& ca = current.allocations;
  const auto& na = next.allocations;
  if (ca.size() != na.size()) {
    const node_handle extra = na.size() > ca.size() ? na[ca.size()].node : 0;
    return update_mismatch{update_refusal::topology_changed, extra, 0,
                           head + "graph " + quoted(graph_name) + " has " +
                               std::to_string(na.size()) + " alloc nodes where the executable "
                               "graph has " + std::to_string(ca.size()) +
                               "; an update cannot add or remove memory nodes" + tail};
  }
  for (std::size_t i = 0; i < na.size(); ++i) {
    const memory_signature::allocation& c = ca[i];
    const memory_signature::allocation& x = na[i];
    const std::string which = "the " + ordinal(i + 1) + " alloc node" + in_next + " (" +
                              format_address(x.node) + ")";
    const std::string pair = "its pair in the executable graph (" + format_address(c.node) + ")";
    const bool peers_differ = c.peers && x.peers && *c.peers != *x.peers;
    if (c.bytes != x.bytes || c.device != x.device || peers_differ) {
      return update_mismatch{
          update_refusal::parameters_changed, x.node, 0,
          head + which + " asks for " + placement(x.bytes, x.device, x.peers) + " where " + pair +
              " asks for " + placement(c.bytes, c.device, c.peers) +
              "; an alloc node's parameters are fixed once it is made (the driver sets no "
              "memory node's parameters)" + tail};
    }
    if (c.freed_here != x.freed_here) {
      const std::string how = x.freed_here
                                  ? " is freed in the graph (by free node " +
                                        format_address(x.free_node) + ") where " + pair + " is not"
                                  : " is not freed in the graph where " + pair +
                                        " is (by free node " + format_address(c.free_node) + ")";
      return update_mismatch{update_refusal::parameters_changed,
                             x.freed_here ? x.free_node : x.node, 0,
                             head + which + how +
                                 "; an update cannot move an allocation's free into or out of "
                                 "the graph" + tail};
    }
    if (c.free_position && x.free_position && *c.free_position != *x.free_position) {
      return update_mismatch{
          update_refusal::parameters_changed, x.free_node, 0,
          head + which + " is freed by the " + ordinal(*x.free_position + 1) + " free node" +
              in_next + " (" + format_address(x.free_node) + ") where " + pair +
              " is freed by the executable graph's " + ordinal(*c.free_position + 1) +
              " free node; a free node's address is fixed once it is made" + tail};
    }
  }
  const auto& cf = current.foreign_frees;
  const auto& nf = next.foreign_frees;
  if (cf.size() != nf.size()) {
    const node_handle extra = nf.size() > cf.size() ? nf[cf.size()].node : 0;
    return update_mismatch{update_refusal::topology_changed, extra, 0,
                           head + "graph " + quoted(graph_name) + " has " +
                               std::to_string(nf.size()) +
                               " free nodes of other graphs' allocations where the executable "
                               "graph has " + std::to_string(cf.size()) +
                               "; an update cannot add or remove memory nodes" + tail};
  }
  for (std::size_t i = 0; i < nf.size(); ++i) {
    if (cf[i].address != nf[i].address) {
      return update_mismatch{
          update_refusal::parameters_changed, nf[i].node, 0,
          head + "the free node " + format_address(nf[i].node) + in_next + " frees " +
              format_address(nf[i].address) +
              " (an allocation of another graph) where its pair in the executable graph (" +
              format_address(cf[i].node) + ") frees " + format_address(cf[i].address) +
              "; a free node's address is fixed once it is made" + tail};
    }
  }
  return std::nullopt;
}

std::optional<update_mismatch> check_node_update(graph_node_kind actual, graph_node_kind given,
                                                 node_handle node, const std::string& where) {
  // The message is made only for a refusal: a node's parameters are set at every step.
  if (actual != graph_node_kind::mem_alloc && actual != graph_node_kind::mem_free && actual == given) {
    return std::nullopt;
  }
  const std::string head = std::string("setting the parameters of the ") +
                           graph_node_kind_name(actual) + " node " + format_address(node) + " in " +
                           where + ": ";
  if (actual == graph_node_kind::mem_alloc || actual == graph_node_kind::mem_free) {
    return update_mismatch{update_refusal::not_supported, node, 0,
                           head + "the parameters of alloc and free nodes are fixed once they "
                                  "are made (the driver changes them neither in a graph nor in "
                                  "an executable graph); build a graph with the memory nodes "
                                  "you need and instantiate it"};
  }
  if (actual != given) {
    return update_mismatch{update_refusal::node_type_changed, node, 0,
                           head + "the parameters given are a " + graph_node_kind_name(given) +
                               " node's; give the node parameters of its own kind"};
  }
  return std::nullopt;
}

}  // namespace gmem
