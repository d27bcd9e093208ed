// Executable graphs updated in place (cuGraphExecUpdate) and their nodes given other parameters.
// A successful update makes the executable graph the new graph's instantiation (as gmem's
// allocator layer takes it: the old graph may be instantiated again and the new one not, which
// tests/gpu/update_test.cu asks the driver), so its record takes the new graph's memory nodes
// and, where names come from the graph, its name: its figures are its last graph's. The new
// graph's allocations have addresses of their own, which this executable graph never mapped, so
// it starts with no mapping (the sequence's "update", which the pool model follows as a graph
// with no mapping whose live allocations stay). The driver pairs the two graphs' nodes by one
// topology and no call changes an alloc node's parameters, so the sizes are expected to stay;
// the pool model lays a record out once, from its last graph, so where an update did change
// them (gmem's allocator refuses that; the driver documents no rule) the launches before it are
// judged against the last graph's layout.
#include <algorithm>

#include "gmem/profiler/analysis.hpp"
#include "record/recorder.hpp"

namespace gmem::record {

void recorder::on_exec_update(std::uint64_t exec, std::uint64_t graph, std::optional<profiler::graph_model> model,
                              const std::string& nvtx, double t_us, double host_us,
                              const std::optional<counters>& before, const std::optional<counters>& after,
                              const std::string& failure, bool concurrent) {
  const auto origin = graph_origin_.find(graph);
  const auto it = execs_.find(exec);
  if (it == execs_.end()) {
    // An executable graph without memory nodes (or left out): the graph it runs now was used.
    // Those without memory nodes are counted, so that a recording of a program whose graphs
    // have none (XLA's command buffers) says whether it updated them.
    if (no_memory_execs_.count(exec) != 0) ++(failure.empty() ? no_memory_calls_.updates : no_memory_calls_.refused_updates);
    if (failure.empty() && origin != graph_origin_.end()) origin->second.instantiated = true;
    return;
  }
  const std::size_t gi = it->second;
  graph_record& g = graphs_[gi];
  graph_event e{t_us, "update", "", g.devices.front(), host_us, before, after, 0, failure, concurrent, 0};
  if (!failure.empty()) {  // refused: the executable graph is the one it was
    ++g.failed_calls;
    push_event(g, e);
    return;
  }
  ++g.updates;
  std::uint64_t stream_sequence = 0;
  std::string graph_nvtx = nvtx;  // the range active at the update, unless the capture had one
  if (origin != graph_origin_.end()) {
    capture_origin& o = origin->second;
    o.instantiated = true;
    if (!o.nvtx.empty()) graph_nvtx = o.nvtx;
    g.python_site = o.python_site;
    g.framework_label = o.framework_label;
    g.framework_detail = o.framework_detail;
    g.stream = "stream " + std::to_string(o.stream_label);
    g.library_bytes += o.library_bytes;
    stream_sequence = o.stream_sequence;
    if (g.kind == "private_pool") {
      g.capture_bytes += o.capture_bytes;
      g.capture_allocations += o.capture_allocations;
      for (auto& [handle, m] : capture_memory_) {
        if (m.graph == graph && m.record == static_cast<std::size_t>(-1)) m.record = gi;
      }
      if (o.pool < pools_.size() &&
          std::find(pools_[o.pool].graphs.begin(), pools_[o.pool].graphs.end(), gi) == pools_[o.pool].graphs.end()) {
        pools_[o.pool].graphs.push_back(gi);
      }
    }
  } else {
    // Built, not captured: no capturing stream names it.
    g.stream.clear();
    g.python_site.clear();
    g.framework_label.clear();
    g.framework_detail.clear();
  }
  g.nvtx = graph_nvtx;
  const std::string plain =
      make_name(names_, g.nvtx, g.stream, stream_sequence, g.sequence, g.python_site, g.framework_label);
  if (plain != g.plain_name) {
    const int uses = ++name_uses_[plain];
    g.plain_name = plain;
    g.name = uses > 1 ? plain + " (" + std::to_string(uses) + ")" : plain;
  }
  if (model) {
    std::vector<int> devices;
    profiler::for_each_node(*model, [&devices](const profiler::model_node& n) {
      if (n.kind == profiler::node_kind::mem_alloc) devices.push_back(n.device);
    });
    std::sort(devices.begin(), devices.end());
    devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
    if (!devices.empty()) g.devices = devices;
    g.model = std::move(*model);
    // Held allocations still live stay the program's to free, at the addresses they were made
    // at: the graph before's (its launch since the last update, else an earlier one's); the new
    // graph's are made at its own addresses by its launches.
    std::vector<std::uint64_t> replaced(g.held_addresses.size(), 0);
    for (std::size_t k = 0; k < replaced.size(); ++k) {
      if (k >= g.held_live.size() || !g.held_live[k]) continue;
      const bool earlier = !g.launched && k < g.replaced_held.size() && g.replaced_held[k] != 0;
      replaced[k] = earlier ? g.replaced_held[k] : g.held_addresses[k];
    }
    for (std::uint64_t a : g.replaced_held) {
      const auto old = held_.find(a);
      if (a != 0 && old != held_.end() && old->second == gi) held_.erase(old);
    }
    std::vector<bool> live = g.held_live;
    hold(gi, held_of(g.model));
    live.resize(g.held_addresses.size(), false);
    replaced.resize(g.held_addresses.size(), 0);
    g.held_live = std::move(live);
    g.replaced_held = std::move(replaced);
    for (std::uint64_t a : g.replaced_held) {
      if (a != 0) held_[a] = gi;
    }
  } else if (notes_.size() < 64) {
    notes_.push_back("the graph of an update of '" + g.name +
                     "' could not be read: its record keeps the memory nodes of the graph before it");
  }
  g.model.name = g.name;
  const std::string site = origin != graph_origin_.end() ? g.python_site + "|" + g.framework_label : "";
  g.shape = shape_of(g.instantiate_stack.get(), g.nvtx + "|" + site, g.kind, g.flags, g.model);
  // A new instance's history: never launched, nothing uploaded or mapped.
  g.launched = false;
  g.uploaded = false;
  g.last_stream = 0;
  g.trims_seen = trims_[g.devices.front()];
  e.device = g.devices.front();
  const std::int64_t ev = push_event(g, e);
  if (after) point(t_us, e.device, "update", gi, *after);
  log({'E', gi, 0, -1, 1, 0, ev, t_us});
}

void recorder::on_node_params_set(std::uint64_t exec) {
  const auto it = execs_.find(exec);
  if (it != execs_.end()) ++graphs_[it->second].node_param_sets;
}

}  // namespace gmem::record
