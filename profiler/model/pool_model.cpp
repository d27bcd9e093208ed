#include "gmem/profiler/pool_model.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "gmem/profiler/reuse_model.hpp"

namespace gmem::profiler {

pool_graph pool_graph_of(const skeleton& s, std::uint64_t granularity, bool auto_free_on_launch,
                         const deadline& until) {
  if (granularity == 0) throw std::invalid_argument("pool_graph_of: the granularity is 0");
  const reuse_prediction p = predict_reuse(s, granularity, until);  // validates
  pool_graph g;
  g.name = s.name;
  g.auto_free_on_launch = auto_free_on_launch;
  // A device's pools (one per set of peers) laid one after the other, in slots of a granule.
  std::vector<std::size_t> base(p.pool_mapped.size(), 0);
  std::map<int, std::size_t> slots;
  for (std::size_t k = 0; k < p.pool_mapped.size(); ++k) {
    base[k] = slots[p.pool_device[k]];
    slots[p.pool_device[k]] += static_cast<std::size_t>(p.pool_mapped[k] / granularity);
  }
  std::map<int, std::size_t> index;
  for (const auto& [device, n] : slots) {
    index[device] = g.devices.size();
    g.devices.push_back({device, n, {}});
  }
  std::vector<bool> freed(s.nodes.size(), false);
  for (const skeleton_node& n : s.nodes) {
    if (n.kind == skeleton_kind::free) freed[n.frees] = true;
  }
  for (std::size_t v = 0; v < s.nodes.size(); ++v) {
    const skeleton_node& n = s.nodes[v];
    if (n.kind != skeleton_kind::alloc || n.bytes == 0) continue;
    const std::size_t k = p.pool[v];
    pool_allocation a;
    a.first_slot = base[k] + static_cast<std::size_t>(p.offset[v] / granularity);
    a.end_slot = base[k] + static_cast<std::size_t>((p.offset[v] + n.bytes + granularity - 1) / granularity);
    a.bytes = n.bytes;
    a.held = !freed[v];
    a.node = v;
    a.label = n.label.empty() ? "alloc node #" + std::to_string(v) + " of '" + s.name + "'" : n.label;
    g.devices[index[n.device]].allocations.push_back(std::move(a));
  }
  return g;
}

std::uint64_t held_granule_bytes(const pool_graph& g, std::uint64_t granularity) {
  std::uint64_t bytes = 0;
  for (const pool_device_layout& d : g.devices) {
    std::set<std::size_t> slots;
    for (const pool_allocation& a : d.allocations) {
      for (std::size_t s = a.first_slot; a.held && s < a.end_slot; ++s) slots.insert(s);
    }
    bytes += slots.size() * granularity;
  }
  return bytes;
}

pool_model::pool_model(std::uint64_t granularity) : granularity_(granularity) {
  if (granularity == 0) throw std::invalid_argument("pool_model: the granularity is 0");
}

std::size_t pool_model::add(pool_graph g) {
  graph_state gs;
  for (const pool_device_layout& d : g.devices) {
    for (const pool_allocation& a : d.allocations) {
      if (a.first_slot > a.end_slot || a.end_slot > d.slots) {
        throw std::invalid_argument("pool_model: " + a.label + " of graph '" + g.name +
                                    "' covers slots beyond the graph's mapping on device " +
                                    std::to_string(d.device));
      }
    }
    gs.slots.emplace_back(d.slots, 0);
    gs.covered.emplace_back(d.slots, false);
    for (const pool_allocation& a : d.allocations) {
      for (std::size_t slot = a.first_slot; slot < a.end_slot; ++slot) gs.covered.back()[slot] = true;
    }
    gs.live.emplace_back(d.allocations.size(), false);
  }
  gs.layout = std::move(g);
  graphs_.push_back(std::move(gs));
  return graphs_.size() - 1;
}

void pool_model::unpin(std::size_t g, std::size_t d, std::size_t a) {
  graph_state& gs = graphs_[g];
  if (!gs.live[d][a]) return;
  gs.live[d][a] = false;
  if (--gs.live_count == 0) holding_.erase(g);
  const pool_allocation& al = gs.layout.devices[d].allocations[a];
  for (std::size_t slot = al.first_slot; slot < al.end_slot; ++slot) {
    const auto it = chunks_.find(gs.slots[d][slot]);
    if (it != chunks_.end() && it->second.pins > 0) --it->second.pins;
  }
}

void pool_model::set_live(std::size_t g, std::size_t d, std::size_t a) {
  graph_state& gs = graphs_[g];
  if (gs.live[d][a]) return;
  gs.live[d][a] = true;
  if (gs.live_count++ == 0) holding_.insert(g);
}

void pool_model::set_slot(graph_state& gs, std::size_t d, std::size_t slot, std::uint64_t id) {
  std::uint64_t& mapped = gs.slots[d][slot];
  if (mapped == id) return;
  if (gs.covered[d][slot]) {
    // A chunk trimmed away leaves its id in the slots that mapped it; ids are never reused.
    if (const auto it = chunks_.find(mapped); mapped != 0 && it != chunks_.end()) --it->second.covering;
    if (id != 0) ++chunks_.at(id).covering;
  }
  mapped = id;
}

std::vector<pool_model::device_plan> pool_model::plan(const graph_state& gs, std::uint64_t stream) const {
  // Granules the graph's own live allocations occupy (an upload between launches, or a launch
  // before AutoFreeOnLaunch frees them) are its own.
  std::map<std::uint64_t, std::size_t> own_pins;
  for (std::size_t d = 0; d < gs.live.size(); ++d) {
    for (std::size_t a = 0; a < gs.live[d].size(); ++a) {
      if (!gs.live[d][a]) continue;
      const pool_allocation& al = gs.layout.devices[d].allocations[a];
      for (std::size_t slot = al.first_slot; slot < al.end_slot; ++slot) ++own_pins[gs.slots[d][slot]];
    }
  }
  const auto others_pin = [&](std::uint64_t id, const chunk& c) {
    const auto own = own_pins.find(id);
    return c.pins > (own == own_pins.end() ? 0 : own->second);
  };
  std::vector<device_plan> out(gs.layout.devices.size());
  for (std::size_t d = 0; d < gs.layout.devices.size(); ++d) {
    const int device = gs.layout.devices[d].device;
    const std::vector<std::uint64_t>& slots = gs.slots[d];
    const std::vector<bool>& covered = gs.covered[d];
    std::set<std::uint64_t> kept;
    for (std::size_t slot = 0; slot < slots.size(); ++slot) {
      const auto it = slots[slot] == 0 ? chunks_.end() : chunks_.find(slots[slot]);
      if (it != chunks_.end() && !others_pin(it->first, it->second) && !busy_for(it->second, stream)) {
        kept.insert(it->first);
      } else if (covered[slot] || !gs.mapped_once) {
        out[d].need.push_back(slot);
      } else if (slots[slot] != 0) {
        out[d].drop.push_back(slot);
      }
    }
    // The oldest free granules first (P11), then new ones.
    for (auto it = chunks_.begin(); it != chunks_.end() && out[d].reuse.size() < out[d].need.size(); ++it) {
      if (it->second.device != device || kept.count(it->first) || others_pin(it->first, it->second) ||
          busy_for(it->second, stream)) {
        continue;
      }
      out[d].reuse.push_back(it->first);
    }
  }
  return out;
}

bool pool_model::others_running(std::uint64_t stream) const {
  return !busy_in_.empty() && (busy_in_.size() > 1 || busy_in_.begin()->first != stream);
}

void pool_model::set_busy(chunk& c, std::optional<std::uint64_t> stream) {
  if (c.busy_stream == stream) return;
  if (c.busy_stream) {
    const auto it = busy_in_.find(*c.busy_stream);
    if (--it->second == 0) busy_in_.erase(it);
  }
  if (stream) ++busy_in_[*stream];
  c.busy_stream = stream;
}

std::uint64_t pool_model::growth_if_mapped(std::size_t g, std::uint64_t stream, bool run) const {
  const graph_state& gs = graphs_.at(g);
  if (gs.destroyed) {
    throw std::invalid_argument("pool_model: graph '" + gs.layout.name + "' was destroyed");
  }
  if (run && holds_live(gs) && !gs.layout.auto_free_on_launch) return 0;  // refused
  std::uint64_t grown = 0;
  for (const device_plan& p : plan(gs, stream)) grown += (p.need.size() - p.reuse.size()) * granularity_;
  return grown;
}

pool_step pool_model::map(std::size_t g, std::uint64_t stream, bool run, std::uint64_t ordinal,
                          std::optional<std::uint64_t> measured_growth) {
  graph_state& gs = graphs_.at(g);
  if (gs.destroyed) {
    throw std::invalid_argument("pool_model: graph '" + gs.layout.name + "' was destroyed");
  }
  pool_step step;
  if (run && holds_live(gs)) {
    if (!gs.layout.auto_free_on_launch) {
      step.refused = true;
      return step;
    }
    for (std::size_t d = 0; d < gs.live.size(); ++d) {
      for (std::size_t a = 0; a < gs.live[d].size(); ++a) unpin(g, d, a);
    }
  }
  std::vector<device_plan> plans = plan(gs, stream);
  if (measured_growth && others_running(stream)) {
    std::uint64_t predicted = 0;
    for (const device_plan& p : plans) predicted += (p.need.size() - p.reuse.size()) * granularity_;
    if (predicted > *measured_growth) {
      // The driver grew the pool less: the other streams' work had completed (C6).
      for (auto& [id, c] : chunks_) {
        if (busy_for(c, stream)) set_busy(c, std::nullopt);
      }
      step.others_completed = true;
      plans = plan(gs, stream);
    }
  }
  for (std::size_t d = 0; d < gs.layout.devices.size(); ++d) {
    const int device = gs.layout.devices[d].device;
    const device_plan& p = plans[d];
    // A granule gone or taken that no allocation of the graph touches stays unmapped after the
    // graph's first mapping (P3, P17).
    for (std::size_t slot : p.drop) set_slot(gs, d, slot, 0);
    std::size_t next = 0;
    for (; next < p.reuse.size(); ++next) set_slot(gs, d, p.need[p.need.size() - 1 - next], p.reuse[next]);
    for (; next < p.need.size(); ++next) {
      chunk c;
      c.device = device;
      chunks_.emplace(next_chunk_, c);
      ++chunks_on_[device];
      set_slot(gs, d, p.need[p.need.size() - 1 - next], next_chunk_++);
      step.grown_bytes += granularity_;
    }
    step.mapped_slots += p.need.size();
  }
  gs.mapped_once = true;
  if (!run) return step;
  gs.last_stream = stream;
  for (std::size_t d = 0; d < gs.layout.devices.size(); ++d) {
    for (std::uint64_t id : gs.slots[d]) {
      if (id == 0) continue;
      chunk& c = chunks_.at(id);
      set_busy(c, stream);
      c.busy_ordinal = ordinal;
      c.last_graph = g;
    }
    const auto& allocs = gs.layout.devices[d].allocations;
    for (std::size_t a = 0; a < allocs.size(); ++a) {
      if (!allocs[a].held) continue;
      set_live(g, d, a);
      for (std::size_t slot = allocs[a].first_slot; slot < allocs[a].end_slot; ++slot) {
        ++chunks_.at(gs.slots[d][slot]).pins;
      }
    }
  }
  return step;
}

pool_step pool_model::launch(std::size_t g, std::uint64_t stream, std::uint64_t ordinal,
                             std::optional<std::uint64_t> measured_growth) {
  return map(g, stream, true, ordinal, measured_growth);
}

pool_step pool_model::upload(std::size_t g, std::uint64_t stream, std::uint64_t ordinal,
                             std::optional<std::uint64_t> measured_growth) {
  return map(g, stream, false, ordinal, measured_growth);
}

void pool_model::instantiate(std::size_t g) {
  graph_state& gs = graphs_.at(g);
  // Allocations the earlier instance left live keep their granules (nothing this instance
  // launches frees them); the new instance starts with no mapping.
  for (auto& live : gs.live) live.assign(live.size(), false);
  gs.live_count = 0;
  holding_.erase(g);
  for (std::size_t d = 0; d < gs.slots.size(); ++d) {
    for (std::size_t slot = 0; slot < gs.slots[d].size(); ++slot) set_slot(gs, d, slot, 0);
  }
  gs.destroyed = false;
  gs.mapped_once = false;
  gs.last_stream = 0;
}

void pool_model::update(std::size_t g) {
  graph_state& gs = graphs_.at(g);
  for (std::size_t d = 0; d < gs.slots.size(); ++d) {
    // The granules of its live allocations stay mapped where they are: their pins are found
    // through these slots when the allocations are freed.
    std::vector<bool> live(gs.slots[d].size(), false);
    const auto& allocs = gs.layout.devices[d].allocations;
    for (std::size_t a = 0; a < allocs.size(); ++a) {
      if (!gs.live[d][a]) continue;
      for (std::size_t slot = allocs[a].first_slot; slot < allocs[a].end_slot; ++slot) live[slot] = true;
    }
    for (std::size_t slot = 0; slot < gs.slots[d].size(); ++slot) {
      if (!live[slot]) set_slot(gs, d, slot, 0);
    }
  }
  gs.mapped_once = false;
  gs.last_stream = 0;
}

void pool_model::free_held(std::size_t g, std::optional<std::size_t> allocation, int device) {
  graph_state& gs = graphs_.at(g);
  for (std::size_t d = 0; d < gs.live.size(); ++d) {
    if (device >= 0 && gs.layout.devices[d].device != device) continue;
    for (std::size_t a = 0; a < gs.live[d].size(); ++a) {
      if (!allocation || *allocation == a) unpin(g, d, a);
    }
  }
}

void pool_model::destroy(std::size_t g) { graphs_.at(g).destroyed = true; }

void pool_model::synchronize() {
  if (busy_in_.empty()) return;
  for (auto& [id, c] : chunks_) set_busy(c, std::nullopt);
}

void pool_model::synchronize(std::uint64_t stream) {
  if (!busy_in_.count(stream)) return;
  for (auto& [id, c] : chunks_) {
    if (c.busy_stream == stream) set_busy(c, std::nullopt);
  }
}

void pool_model::synchronize(std::uint64_t stream, std::uint64_t upto) {
  if (!busy_in_.count(stream)) return;
  for (auto& [id, c] : chunks_) {
    if (c.busy_stream == stream && c.busy_ordinal <= upto) set_busy(c, std::nullopt);
  }
}

void pool_model::trim(int device) {
  for (auto it = chunks_.begin(); it != chunks_.end();) {
    if (it->second.device == device && it->second.pins == 0 && !it->second.busy_stream) {
      --chunks_on_[device];
      it = chunks_.erase(it);
    } else {
      ++it;
    }
  }
}

std::uint64_t pool_model::reserved(int device) const {
  const auto it = chunks_on_.find(device);
  return it == chunks_on_.end() ? 0 : it->second * granularity_;
}

std::uint64_t pool_model::used(int device) const {
  // A granule some graph's allocation covers in a mapping not trimmed away (destroyed graphs'
  // mappings too): counted as slots are mapped, so not a walk over every graph.
  std::uint64_t n = 0;
  for (const auto& [id, c] : chunks_) n += c.device == device && c.covering > 0;
  return n * granularity_;
}

std::vector<pool_share> pool_model::shares(int device, std::optional<std::size_t> launching) const {
  std::set<std::uint64_t> working;
  if (launching) {
    const graph_state& gs = graphs_.at(*launching);
    for (std::size_t d = 0; d < gs.layout.devices.size(); ++d) {
      if (gs.layout.devices[d].device != device) continue;
      for (std::uint64_t id : gs.slots[d]) {
        if (id != 0) working.insert(id);
      }
    }
  }
  // Which graph's live allocation occupies each granule (the granule's last runner says who
  // ran there last).
  std::map<std::uint64_t, std::size_t> holder;
  for (std::size_t g : holding_) {  // ascending, as a walk over every graph went
    const graph_state& gs = graphs_[g];
    for (std::size_t d = 0; d < gs.layout.devices.size(); ++d) {
      if (gs.layout.devices[d].device != device) continue;
      const auto& allocs = gs.layout.devices[d].allocations;
      for (std::size_t a = 0; a < allocs.size(); ++a) {
        if (!gs.live[d][a]) continue;
        for (std::size_t slot = allocs[a].first_slot; slot < allocs[a].end_slot; ++slot) {
          holder.emplace(gs.slots[d][slot], g);
        }
      }
    }
  }
  std::map<std::pair<std::string, std::string>, std::uint64_t> sum;
  for (const auto& [id, c] : chunks_) {
    if (c.device != device) continue;
    std::pair<std::string, std::string> key{"", "idle"};
    if (working.count(id)) {
      key = {graphs_[*launching].layout.name, "working_set"};
    } else if (const auto h = holder.find(id); h != holder.end() && c.pins > 0) {
      key = {graphs_[h->second].layout.name, "held_outputs"};
    } else if (c.busy_stream && (!launching || *c.busy_stream != graphs_[*launching].last_stream)) {
      key = {c.last_graph < graphs_.size() ? graphs_[c.last_graph].layout.name : "", "concurrent_launch"};
    }
    sum[key] += granularity_;
  }
  std::vector<pool_share> out;
  for (const auto& [key, bytes] : sum) out.push_back({key.first, key.second, bytes});
  std::stable_sort(out.begin(), out.end(),
                   [](const pool_share& a, const pool_share& b) { return a.bytes > b.bytes; });
  return out;
}

pool_model::held_summary pool_model::held(std::size_t g, int device) const {
  const graph_state& gs = graphs_.at(g);
  held_summary h;
  std::set<std::uint64_t> granules;
  for (std::size_t d = 0; d < gs.layout.devices.size(); ++d) {
    if (gs.layout.devices[d].device != device) continue;
    const auto& allocs = gs.layout.devices[d].allocations;
    for (std::size_t a = 0; a < allocs.size(); ++a) {
      if (!gs.live[d][a]) continue;
      ++h.allocations;
      h.requested_bytes += allocs[a].bytes;
      for (std::size_t slot = allocs[a].first_slot; slot < allocs[a].end_slot; ++slot) {
        if (exists(gs.slots[d][slot])) granules.insert(gs.slots[d][slot]);
      }
    }
  }
  h.granule_bytes = granules.size() * granularity_;
  return h;
}

}  // namespace gmem::profiler
