// Bounds on the recorder's records: an executable graph of the site and structure of a
// destroyed one (a program that makes the same graph again and again, or alternates two) is
// recorded as that graph again, with a count of instances, so that the recorder's memory stays
// flat. A record is taken again only when its graph was destroyed before the new one was made
// and left no allocation live: two graphs that exist together are never one record (identical
// live graphs, as vLLM's piecewise layers, stay apart), and the pool model sees the new
// instance start with no mapping (a sequence entry "instantiate").
#include <algorithm>

#include "gmem/profiler/analysis.hpp"
#include "model/fnv.hpp"
#include "record/recorder.hpp"

namespace gmem::record {

namespace fnv = profiler::fnv;
using fnv::mix_whole;
using fnv::mix_text;

stack_ref make_stack(std::vector<std::string> frames) {
  if (frames.empty()) return nullptr;
  auto s = std::make_shared<call_stack>();
  s->hash = fnv::basis;
  for (const std::string& frame : frames) mix_text(s->hash, frame);
  s->frames = std::move(frames);
  return s;
}

std::uint64_t recorder::shape_of(const call_stack* stack, const std::string& nvtx, const std::string& kind,
                                 const profiler::instantiate_flags& flags, const profiler::graph_model& model) {
  // FNV-1a over the site, the stack by its own hash; the structure's numbers mixed whole (no
  // text made: it runs at every instantiation, in the program's thread).
  std::uint64_t h = fnv::basis;
  mix_whole(h, stack ? stack->hash : 0);
  mix_text(h, nvtx);
  mix_text(h, kind);
  mix_whole(h, (flags.auto_free_on_launch ? 1u : 0u) | (flags.upload ? 2u : 0u) | (flags.device_launch ? 4u : 0u) |
                    (flags.use_node_priority ? 8u : 0u));
  const auto structure = [&h](const profiler::graph_model& m, const auto& self) -> void {
    mix_whole(h, m.nodes.size());
    for (const auto& n : m.nodes) {
      mix_whole(h, static_cast<std::uint64_t>(n.kind));
      mix_whole(h, n.bytes);
      mix_whole(h, static_cast<std::uint64_t>(static_cast<std::int64_t>(n.device)));
    }
    mix_whole(h, m.edges.size());
    for (const auto& [a, b] : m.edges) {
      mix_whole(h, a);
      mix_whole(h, b);
    }
    mix_whole(h, m.children.size());
    for (const auto& c : m.children) self(c, self);
  };
  structure(model, structure);
  return h;
}

std::optional<std::size_t> recorder::revivable(std::uint64_t shape) const {
  const auto it = destroyed_shapes_.find(shape);
  if (it == destroyed_shapes_.end()) return std::nullopt;
  for (auto k = it->second.rbegin(); k != it->second.rend(); ++k) {
    const graph_record& g = graphs_[*k];
    // Its allocations still live are the earlier instance's: the pool model could not tell them
    // from the new one's.
    if (g.destroyed && std::find(g.held_live.begin(), g.held_live.end(), true) == g.held_live.end()) return *k;
  }
  return std::nullopt;
}

void recorder::revive(std::size_t gi, std::uint64_t exec, std::uint64_t graph,
                      const profiler::graph_model& model, double t_us, double host_us,
                      const std::optional<counters>& before, const std::optional<counters>& after) {
  auto& list = destroyed_shapes_[graphs_[gi].shape];
  list.erase(std::remove(list.begin(), list.end(), gi), list.end());
  if (list.empty()) destroyed_shapes_.erase(graphs_[gi].shape);
  graph_record& g = graphs_[gi];
  ++g.instances;
  g.destroyed = false;
  g.launched = false;
  g.uploaded = false;
  g.last_stream = 0;
  g.trims_seen = trims_[g.devices.front()];
  const auto origin = graph_origin_.find(graph);
  if (origin != graph_origin_.end()) {
    origin->second.instantiated = true;
    g.library_bytes += origin->second.library_bytes;
    if (g.kind == "private_pool") {
      g.capture_bytes += origin->second.capture_bytes;
      g.capture_allocations += origin->second.capture_allocations;
      for (auto& [handle, m] : capture_memory_) {
        if (m.graph == graph && m.record == static_cast<std::size_t>(-1)) m.record = gi;
      }
      const std::size_t pool = origin->second.pool;
      if (pool < pools_.size() &&
          std::find(pools_[pool].graphs.begin(), pools_[pool].graphs.end(), gi) == pools_[pool].graphs.end()) {
        pools_[pool].graphs.push_back(gi);
      }
    }
  }
  graph_event e;
  e.t_us = t_us;
  e.kind = "instantiate";
  e.device = g.devices.front();
  e.host_us = host_us;
  e.before = before;
  e.after = after;
  const std::int64_t ev = push_event(g, e);
  if (after) point(t_us, e.device, "instantiate", gi, *after);
  execs_[exec] = gi;
  hold(gi, held_of(model));  // this instance's addresses, in the order of the first's alloc nodes
  sequence_entry s{'I', gi, 0, -1, 1, 0, ev, t_us};
  log(s);
}

void recorder::record_uninstantiated(std::uint64_t graph, const capture_origin& o) {
  (void)graph;
  if (o.capture_bytes == 0) {
    ++never_instantiated_;
    return;
  }
  // Its capture grew the application's pool: that memory is the graph's cost whether or not it
  // was ever instantiated (PyTorch's keep_graph=True instantiates at the first replay).
  graph_record g;
  g.sequence = graphs_.size() + 1;
  g.kind = "private_pool";
  g.capture_bytes = o.capture_bytes;
  g.capture_allocations = o.capture_allocations;
  g.stream = "stream " + std::to_string(o.stream_label);
  g.nvtx = o.nvtx;
  std::string name = make_name(names_, g.nvtx, g.stream, o.stream_sequence, g.sequence, o.python_site, o.framework_label);
  g.plain_name = name;
  const int uses = ++name_uses_[name];
  if (uses > 1) name += " (" + std::to_string(uses) + ")";
  g.name = name;
  g.model.name = name;
  g.devices = {o.device};
  g.destroyed = true;
  g.instances = 0;  // never instantiated
  graph_event e;
  e.t_us = o.t_us;
  e.kind = "capture";
  e.device = o.device;
  g.events.push_back(e);
  g.python_site = o.python_site;
  g.framework_label = o.framework_label;
  g.framework_detail = o.framework_detail;
  for (auto& [handle, m] : capture_memory_) {
    if (m.graph == graph && m.record == static_cast<std::size_t>(-1)) m.record = graphs_.size();
  }
  if (o.pool < pools_.size()) pools_[o.pool].graphs.push_back(graphs_.size());
  graphs_.push_back(std::move(g));
}

void recorder::on_graph_destroy(std::uint64_t graph) {
  const auto it = graph_origin_.find(graph);
  if (it == graph_origin_.end()) return;
  if (!it->second.instantiated) record_uninstantiated(graph, it->second);
  graph_origin_.erase(it);
}

void recorder::finish() {
  for (auto& [graph, o] : graph_origin_) {
    if (!o.instantiated) record_uninstantiated(graph, o);
    o.instantiated = true;  // once
  }
}

}  // namespace gmem::record
