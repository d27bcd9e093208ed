#include "gmem/profiler/pool_analysis.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/pool_model.hpp"
#include "gmem/profiler/size_text.hpp"

namespace gmem::profiler {
namespace {

bool maps_memory(const recorded_event& e) {
  return e.result.empty() &&
         (e.kind == "launch" || e.kind == "upload" || e.kind == "instantiate" || e.kind == "update");
}

// Where one device's pool stood when its high watermark was reached, by the model.
struct high_moment {
  bool seen = false;
  std::size_t graph = 0, event = 0;  // the call after which it was taken
  std::uint64_t model_bytes = 0;
  std::vector<pool_share> shares;
  std::map<std::size_t, pool_model::held_summary> held;  // by recording graph index
};

// The k-th held allocation (node order) of a graph as (device layout, allocation) of its layout.
std::optional<std::pair<std::size_t, std::size_t>> held_at(const pool_graph& g, std::int64_t k) {
  std::vector<std::pair<std::size_t, std::pair<std::size_t, std::size_t>>> held;  // node, where
  for (std::size_t d = 0; d < g.devices.size(); ++d) {
    for (std::size_t a = 0; a < g.devices[d].allocations.size(); ++a) {
      if (g.devices[d].allocations[a].held) held.push_back({g.devices[d].allocations[a].node, {d, a}});
    }
  }
  std::sort(held.begin(), held.end());
  if (k < 0 || static_cast<std::size_t>(k) >= held.size()) return std::nullopt;
  return held[static_cast<std::size_t>(k)].second;
}

// Splits `granules` among members in proportion to their weights, no member above its cap
// while another has room (largest remainder first).
std::vector<std::uint64_t> split(std::uint64_t granules, const std::vector<double>& weight,
                                 const std::vector<std::uint64_t>& cap) {
  const std::size_t n = weight.size();
  std::vector<std::uint64_t> out(n, 0);
  double total = 0;
  for (double w : weight) total += w;
  for (std::uint64_t g = 0; g < granules; ++g) {
    std::size_t best = n;
    double best_need = 0;
    for (bool respect_cap : {true, false}) {
      for (std::size_t i = 0; i < n; ++i) {
        if (respect_cap && out[i] >= cap[i]) continue;
        const double want = total > 0 ? weight[i] / total * static_cast<double>(granules) : 1.0;
        const double need = want - static_cast<double>(out[i]);
        if (best == n || need > best_need) {
          best = i;
          best_need = need;
        }
      }
      if (best != n) break;
    }
    if (best == n) break;
    ++out[best];
  }
  return out;
}

/// A launch the model classed anew: (graph, event) and the event's label before.
using relabel = std::pair<std::pair<std::size_t, std::size_t>, std::string>;

// The counter timeline's points of the launches the model classed anew (a slow relaunch that is
// a remap, a remap the model does not explain) take the class their events now have: the timeline
// says what the graphs' events say.
void relabel_points(recording& rec, const std::vector<relabel>& relabelled) {
  if (relabelled.empty()) return;
  std::map<std::string, std::vector<const relabel*>> by_graph;
  for (const auto& r : relabelled) by_graph[rec.graphs[r.first.first].name].push_back(&r);
  for (recording::point& p : rec.timeline) {
    const auto g = by_graph.find(p.graph);
    if (g == by_graph.end()) continue;
    for (const auto* r : g->second) {
      const recorded_event& e = rec.graphs[r->first.first].events[r->first.second];
      if (e.t_us == p.t_us && e.device == p.device && p.event == r->second) {
        p.event = e.kind + ":" + e.cls;
        break;
      }
    }
  }
}

// ---- The phases of analyse_pools, each over the recording and what the ones before returned.

using call = std::pair<std::size_t, std::size_t>;  // (graph, event)

recorded_event& event_of(recording& rec, const call& c) { return rec.graphs[c.first].events[c.second]; }

// The graphs with memory nodes in the model: each laid out alone (its reuse prediction: most of
// the analysis's time at 2000 graphs), then added in order. Sets each graph's held bytes.
struct laid_out {
  std::vector<std::optional<std::size_t>> index;  ///< each graph's index in the model, where it has one
  std::vector<std::uint64_t> footprint;           ///< each graph's own layout's bytes
};

laid_out lay_out(recording& rec, const std::vector<skeleton>& skeletons, std::uint64_t granularity,
                 const for_each_index& each, pool_model& model) {
  laid_out out;
  out.index.resize(rec.graphs.size());
  out.footprint.assign(rec.graphs.size(), 0);
  std::vector<std::optional<pool_graph>> layouts(rec.graphs.size());
  run_each(each, rec.graphs.size(), [&](std::size_t i) {
    recorded_graph& g = rec.graphs[i];
    g.held_requested_bytes = g.held_granule_bytes = 0;
    if (g.kind != "memory_nodes" || i >= skeletons.size() || skeletons[i].nodes.empty()) return;
    try {
      pool_graph layout = pool_graph_of(skeletons[i], granularity, g.flags.auto_free_on_launch);
      layout.name = g.name;
      for (const pool_device_layout& d : layout.devices) {
        out.footprint[i] += d.slots * granularity;
        for (const pool_allocation& a : d.allocations) g.held_requested_bytes += a.held ? a.bytes : 0;
      }
      g.held_granule_bytes = held_granule_bytes(layout, granularity);
      layouts[i] = std::move(layout);
    } catch (...) {  // a skeleton the model cannot take (a hand-edited report): measured figures only
      out.footprint[i] = g.held_requested_bytes = g.held_granule_bytes = 0;
    }
  });
  for (std::size_t i = 0; i < rec.graphs.size(); ++i) {
    try {
      if (layouts[i]) out.index[i] = model.add(std::move(*layouts[i]));
    } catch (const std::exception&) {  // a layout beyond its own slots: measured figures only
    }
  }
  return out;
}

// Measured growth, per call, where no other thread's call overlapped its window.
void measure_growth(recording& rec) {
  for (recorded_graph& g : rec.graphs) {
    for (recorded_event& e : g.events) {
      e.growth_bytes = 0;
      if (!maps_memory(e) || e.concurrent || !e.before || !e.after) continue;
      if (e.after->reserved_current > e.before->reserved_current) {
        e.growth_bytes = static_cast<std::int64_t>(e.after->reserved_current - e.before->reserved_current);
      }
    }
  }
}

// Each device's high watermark and the call that reached it: the first that left the
// reservation at the high.
struct highs {
  std::map<int, std::uint64_t> bytes;  ///< by device
  std::map<int, call> reached_by;      ///< by device
};

highs high_watermarks(const recording& rec) {
  highs h;
  for (const recorded_graph& g : rec.graphs) {
    for (const recorded_event& e : g.events) {
      if (e.after) h.bytes[e.device] = std::max(h.bytes[e.device], e.after->reserved_high);
    }
    if (g.kind == "private_pool" && !g.devices.empty()) h.bytes.emplace(g.devices.front(), 0);
  }
  for (const auto& p : rec.timeline) h.bytes[p.device] = std::max(h.bytes[p.device], p.values.reserved_high);
  std::map<int, double> when;
  for (std::size_t gi = 0; gi < rec.graphs.size(); ++gi) {
    const recorded_graph& g = rec.graphs[gi];
    for (std::size_t ei = 0; ei < g.events.size(); ++ei) {
      const recorded_event& e = g.events[ei];
      if (!maps_memory(e) || !e.after || e.after->reserved_current != h.bytes[e.device]) continue;
      const auto t = when.find(e.device);
      if (t == when.end() || e.t_us < t->second) {
        when[e.device] = e.t_us;
        h.reached_by[e.device] = {gi, ei};
      }
    }
  }
  return h;
}

// Calls whose windows overlapped another thread's, grouped (transitively overlapping windows on
// one device): the counters say only what the group grew the pool by.
struct call_groups {
  std::vector<std::vector<call>> groups;
  std::map<call, std::size_t> group_of;
  [[nodiscard]] bool together(const call& a, const call& b) const {
    const auto x = group_of.find(a), y = group_of.find(b);
    return x != group_of.end() && y != group_of.end() && x->second == y->second;
  }
};

call_groups concurrent_groups(recording& rec) {
  call_groups out;
  const auto ev = [&](const call& c) -> const recorded_event& { return event_of(rec, c); };
  std::map<int, std::vector<call>> concurrent;
  for (std::size_t gi = 0; gi < rec.graphs.size(); ++gi) {
    for (std::size_t ei = 0; ei < rec.graphs[gi].events.size(); ++ei) {
      const recorded_event& e = rec.graphs[gi].events[ei];
      if (e.concurrent && maps_memory(e) && e.before && e.after) concurrent[e.device].push_back({gi, ei});
    }
  }
  for (auto& [device, calls] : concurrent) {
    std::sort(calls.begin(), calls.end(), [&](const call& a, const call& b) { return ev(a).t_us < ev(b).t_us; });
    for (std::size_t start = 0; start < calls.size();) {
      std::size_t end = start + 1;
      double until = ev(calls[start]).t_us + ev(calls[start]).host_us;
      while (end < calls.size() && ev(calls[end]).t_us <= until) {
        until = std::max(until, ev(calls[end]).t_us + ev(calls[end]).host_us);
        ++end;
      }
      for (std::size_t k = start; k < end; ++k) out.group_of[calls[k]] = out.groups.size();
      out.groups.emplace_back(calls.begin() + static_cast<std::ptrdiff_t>(start),
                              calls.begin() + static_cast<std::ptrdiff_t>(end));
      start = end;
    }
  }
  return out;
}

// The stand-in graph for memory reserved before the first recorded call.
const std::string held_before = "(memory held before)";

// Memory reserved before the first recorded call (after a trim: other graphs' live
// allocations): granules the set's graphs cannot use, held by a stand-in graph. Returns each
// device's reservation then.
std::map<int, std::uint64_t> hold_memory_before(const recording& rec, std::uint64_t granularity, pool_model& model) {
  std::map<int, std::uint64_t> start;
  std::map<int, double> first_t;
  for (const recorded_graph& g : rec.graphs) {
    for (const recorded_event& e : g.events) {
      if (!e.before || !maps_memory(e)) continue;
      const auto t = first_t.find(e.device);
      if (t == first_t.end() || e.t_us < t->second) {
        first_t[e.device] = e.t_us;
        start[e.device] = e.before->reserved_current;
      }
    }
  }
  for (const auto& [device, bytes] : start) {
    if (bytes < granularity) continue;
    pool_graph other;
    other.name = held_before;
    pool_device_layout d;
    d.device = device;
    d.slots = static_cast<std::size_t>(bytes / granularity);
    pool_allocation all;
    all.end_slot = d.slots;
    all.bytes = d.slots * granularity;
    all.held = true;
    all.label = "memory reserved before the first recorded call";
    d.allocations.push_back(all);
    other.devices.push_back(d);
    model.launch(model.add(std::move(other)), 0);
  }
  model.synchronize();
  return start;
}

// What the model followed over the call sequence: what each call grew the pool by, the pool at
// each device's high watermark, and the launches it classed anew.
struct followed {
  std::map<call, std::uint64_t> predicted;
  std::map<int, high_moment> moments;
  std::vector<relabel> relabelled;
};

// The events of the call a sequence step stands for: one per device whose counters were read,
// recorded together. [first, end); empty where the step names none.
std::pair<std::size_t, std::size_t> events_of_step(const std::vector<recorded_event>& events, std::int64_t event) {
  std::size_t first = 0, end = 0;
  if (event >= 0 && static_cast<std::size_t>(event) < events.size()) {
    first = static_cast<std::size_t>(event);
    for (end = first; end < events.size() && events[end].t_us == events[first].t_us &&
                      events[end].kind == events[first].kind;
         ++end) {
    }
  }
  return {first, end};
}

// What the driver grew the pool by in a call, where every device's counters were read and no
// other thread's call overlapped: the model follows it where other streams' work may have
// completed unseen.
std::optional<std::uint64_t> measured_growth(const std::vector<recorded_event>& events, std::size_t first,
                                             std::size_t end) {
  if (end <= first) return std::nullopt;
  std::uint64_t grown = 0;
  for (std::size_t ei = first; ei < end; ++ei) {
    const recorded_event& e = events[ei];
    if (!e.before || !e.after || e.concurrent || !e.result.empty()) return std::nullopt;
    grown += e.after->reserved_current > e.before->reserved_current ? e.after->reserved_current - e.before->reserved_current
                                                                    : 0;
  }
  return grown;
}

// Follows the model over the recording's call sequence.
class sequence_follower {
 public:
  sequence_follower(recording& rec, pool_model& model, const laid_out& graphs, const highs& high,
                    const call_groups& groups)
      : rec_(rec), model_(model), graphs_(graphs), high_(high), groups_(groups) {}

  followed run() {
    for (const sequence_step& st : rec_.sequence) {
      try {
        step(st);
      } catch (const std::exception&) {
        // A call the model cannot follow (a launch of a destroyed graph in a hand-edited report).
      }
    }
    return std::move(out_);
  }

 private:
  std::uint64_t stream_id(const std::string& s) { return stream_ids_.emplace(s, stream_ids_.size() + 1).first->second; }

  void step(const sequence_step& st) {
    const bool on_graph = st.graph >= 0 && static_cast<std::size_t>(st.graph) < rec_.graphs.size();
    const std::size_t gi = on_graph ? static_cast<std::size_t>(st.graph) : 0;
    // The graph's index in the model (no_node: none); a plain index, not an optional, for GCC
    // 12's -Wmaybe-uninitialized.
    const std::size_t m = on_graph && graphs_.index[gi] ? *graphs_.index[gi] : no_node;
    const bool launch_or_upload = st.op == "launch" || st.op == "upload";
    const std::uint64_t base = launch_or_upload ? ordinals_[st.stream] : 0;
    if (launch_or_upload) ordinals_[st.stream] = base + st.count;
    if (launch_or_upload && m != no_node) {
      launched(st, gi, m, base);
    } else if (st.op == "free" && m != no_node) {
      if (st.held < 0) {
        model_.free_held(m);
      } else if (const auto where = held_at(model_.graph(m), st.held)) {
        model_.free_held(m, where->second, model_.graph(m).devices[where->first].device);
      }
    } else if (st.op == "destroy" && m != no_node) {
      model_.destroy(m);
    } else if (st.op == "instantiate" && m != no_node) {
      model_.instantiate(m);
    } else if (st.op == "update" && m != no_node) {
      model_.update(m);
    } else if (st.op == "trim" && st.device >= 0) {
      model_.trim(st.device);
    } else if (st.op == "sync") {
      if (st.stream.empty()) {
        model_.synchronize();
      } else if (st.upto >= 0) {
        model_.synchronize(stream_id(st.stream), static_cast<std::uint64_t>(st.upto));
      } else {
        model_.synchronize(stream_id(st.stream));
      }
    }
  }

  // A launch or an upload of graph GI (M in the model), COUNT of them: the first and the last
  // of a run are followed (the others repeat the last).
  void launched(const sequence_step& st, std::size_t gi, std::size_t m, std::uint64_t base) {
    auto& events = rec_.graphs[gi].events;
    const auto [first, end] = events_of_step(events, st.event);
    const std::optional<std::uint64_t> measured = measured_growth(events, first, end);
    const std::uint64_t repeat = std::min<std::uint64_t>(st.count, 2);
    for (std::uint64_t k = 0; k < repeat; ++k) {
      // Each device's reservation before the call: a graph on several devices grows each.
      std::map<int, std::uint64_t> before_call;
      for (const pool_device_layout& d : model_.graph(m).devices) before_call[d.device] = model_.reserved(d.device);
      const std::uint64_t ordinal = k == 0 ? base + 1 : base + st.count;
      const std::optional<std::uint64_t> told = k == 0 ? measured : std::nullopt;
      const pool_step done = st.op == "launch" ? model_.launch(m, stream_id(st.stream), ordinal, told)
                                               : model_.upload(m, stream_id(st.stream), ordinal, told);
      if (k != 0 || end == first) continue;
      reclass(events, gi, first, end, done);
      for (std::size_t ei = first; ei < end; ++ei) {
        const int device = events[ei].device;
        const auto b = before_call.find(device);
        out_.predicted[{gi, ei}] = b == before_call.end() ? 0 : model_.reserved(device) - b->second;
        take_high_moment(device, {gi, ei}, m);
      }
    }
  }

  // A slow relaunch is a remap only where the model says another graph's live allocation took
  // granules it had mapped; the pool's growth inside a relaunch the model says needed nothing is
  // a remap the model does not explain.
  void reclass(std::vector<recorded_event>& events, std::size_t gi, std::size_t first, std::size_t end,
               const pool_step& done) {
    for (std::size_t ei = first; ei < end; ++ei) {
      const std::string was = events[ei].cls;
      if (events[ei].cls == "slow_launch" && done.mapped_slots > 0) events[ei].cls = "remap_contention";
      if (events[ei].cls == "remap_contention" && done.mapped_slots == 0) events[ei].cls = "remap_unexplained";
      if (events[ei].cls != was) out_.relabelled.push_back({{gi, ei}, events[ei].kind + ":" + was});
    }
  }

  // The moment of the high watermark: after the call that reached it, or after the last call of
  // its group when other threads' calls overlapped it.
  void take_high_moment(int device, const call& c, std::size_t m) {
    const auto hc = high_.reached_by.find(device);
    if (hc == high_.reached_by.end() || !(hc->second == c || groups_.together(c, hc->second))) return;
    high_moment& hm = out_.moments[device];
    hm.seen = true;
    hm.graph = c.first;
    hm.event = c.second;
    hm.model_bytes = model_.reserved(device);
    hm.shares = model_.shares(device, m);
    for (std::size_t o = 0; o < rec_.graphs.size(); ++o) {
      if (graphs_.index[o]) hm.held[o] = model_.held(*graphs_.index[o], device);
    }
  }

  recording& rec_;
  pool_model& model_;
  const laid_out& graphs_;
  const highs& high_;
  const call_groups& groups_;
  followed out_;
  std::map<std::string, std::uint64_t> stream_ids_;
  std::map<std::string, std::uint64_t> ordinals_;  // launches and uploads so far, per stream
};

// Each group's measured growth, split in proportion to the model's; then each graph's growth,
// the sum of its events'.
void split_concurrent_growth(recording& rec, const call_groups& groups, const followed& f, const laid_out& graphs,
                             std::uint64_t granularity) {
  for (const std::vector<call>& group : groups.groups) {
    std::uint64_t first_before = event_of(rec, group.front()).before->reserved_current, last_after = 0;
    double last_end = -1;
    std::vector<double> weight;
    std::vector<std::uint64_t> cap;
    for (const call& c : group) {
      const recorded_event& e = event_of(rec, c);
      if (e.t_us + e.host_us >= last_end) {
        last_end = e.t_us + e.host_us;
        last_after = e.after->reserved_current;
      }
      const auto p = f.predicted.find(c);
      weight.push_back(p == f.predicted.end() ? 0.0 : static_cast<double>(p->second));
      cap.push_back(graphs.footprint[c.first] / granularity);
    }
    const std::uint64_t grown = last_after > first_before ? last_after - first_before : 0;
    const std::vector<std::uint64_t> share = split(grown / granularity, weight, cap);
    for (std::size_t k = 0; k < group.size(); ++k) {
      event_of(rec, group[k]).growth_bytes = static_cast<std::int64_t>(share[k] * granularity);
    }
    event_of(rec, group.front()).growth_bytes += static_cast<std::int64_t>(grown % granularity);
  }
  for (recorded_graph& g : rec.graphs) {
    g.growth_bytes = 0;
    for (const recorded_event& e : g.events) {
      if (e.growth_bytes > 0) g.growth_bytes += static_cast<std::uint64_t>(e.growth_bytes);
    }
  }
}

// The pool's timeline: each call that grew it and each trim, in time order (at most 4096
// points), and its reservation when its last call returned; on a device with private pools and
// no graph memory (a program on PyTorch's native allocator), the private pools' growth, capture by
// capture (where graph memory exists too, the timeline stays graph memory's: the two are
// different memory).
void pool_timeline(const recording& rec, recorded_pool& pool) {
  double last_t = -1;
  std::map<double, std::vector<pool_point>> points;
  for (const recorded_graph& g : rec.graphs) {
    for (const recorded_event& e : g.events) {
      if (e.device != pool.device || !e.after) continue;
      if (e.t_us + e.host_us >= last_t) {  // the last reading: when the call returned
        last_t = e.t_us + e.host_us;
        pool.end_bytes = e.after->reserved_current;
      }
      const bool trim = e.kind == "trim";
      if (!trim && e.growth_bytes == 0) continue;
      if (trim && !points[e.t_us].empty()) continue;  // a trim is listed once, not per graph
      pool_point p;
      p.t_us = e.t_us;
      p.graph = trim ? "" : g.name;
      p.event = e.kind + (e.cls.empty() ? "" : ":" + e.cls);
      p.reserved_bytes = e.after->reserved_current;
      p.growth_bytes = trim && e.before ? static_cast<std::int64_t>(e.after->reserved_current) -
                                              static_cast<std::int64_t>(e.before->reserved_current)
                                        : e.growth_bytes;
      p.concurrent = e.concurrent;
      points[e.t_us].push_back(std::move(p));
    }
  }
  for (auto& [t, list] : points) {
    for (auto& p : list) {
      if (pool.timeline.size() < 4096) pool.timeline.push_back(std::move(p));
    }
  }
  // Private pools (the native allocator's): what captures took from the device, by graph.
  for (const recorded_graph& g : rec.graphs) {
    if (g.kind != "private_pool" || g.devices.empty() || g.devices.front() != pool.device) continue;
    pool.private_pool_bytes += g.capture_pool_growth_bytes;
  }
  if (pool.high_bytes != 0 || pool.private_pool_bytes == 0) return;
  std::vector<std::pair<double, const recorded_graph*>> captures;
  for (const recorded_graph& g : rec.graphs) {
    if (g.kind == "private_pool" && !g.devices.empty() && g.devices.front() == pool.device && !g.events.empty()) {
      captures.emplace_back(g.events.front().t_us, &g);
    }
  }
  std::stable_sort(captures.begin(), captures.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::uint64_t total = 0;
  for (const auto& [t, g] : captures) {
    total += g->capture_pool_growth_bytes;
    pool.timeline.push_back({t, g->name, "capture", total, static_cast<std::int64_t>(g->capture_pool_growth_bytes)});
  }
}

// The call the pool's high watermark is named after (the high call itself, or the last of the
// calls that overlapped it: the counters cannot tell which of them reached the high), and what
// held the pool there by the model.
void high_attribution(const recording& rec, const highs& high, const call_groups& groups, const high_moment& hm,
                      recorded_pool& pool) {
  const auto hc = high.reached_by.find(pool.device);
  if (hc != high.reached_by.end()) {
    pool.high_concurrent = groups.group_of.count(hc->second) != 0;
    const call named = hm.seen && pool.high_concurrent ? call{hm.graph, hm.event} : hc->second;
    const recorded_graph& g = rec.graphs[named.first];
    const recorded_event& e = g.events[named.second];
    pool.high_graph = g.name;
    pool.high_event = e.kind + (e.cls.empty() ? "" : ":" + e.cls);
    pool.high_t_us = e.t_us;
  }
  if (!hm.seen) return;
  pool.model_high_bytes = hm.model_bytes;
  for (const pool_share& s : hm.shares) {
    if (s.graph == held_before) {
      pool.attribution.push_back({"", "held_before", s.bytes});
    } else {
      pool.attribution.push_back({s.graph, s.why, s.bytes});
    }
  }
}

// Small allocations other graphs held at the high watermark, each in whole granules.
void diagnose_held_outputs(const recording& rec, const high_moment& hm, std::uint64_t granularity,
                           recorded_pool& pool) {
  std::uint64_t requested = 0, mapped = 0;
  std::size_t holders = 0;
  std::string listed;
  for (const pool_share& s : hm.shares) {
    if (s.why != "held_outputs") continue;
    for (std::size_t o = 0; o < rec.graphs.size(); ++o) {
      if (rec.graphs[o].name != s.graph || !hm.held.count(o)) continue;
      const pool_model::held_summary& h = hm.held.at(o);
      ++holders;
      requested += h.requested_bytes;
      mapped += s.bytes;
      if (holders <= 8) {
        listed += std::string(listed.empty() ? "" : ", ") + "'" + s.graph + "' " + size_text(h.requested_bytes) +
                  " in " + size_text(s.bytes);
      }
    }
  }
  if (holders > 8) listed += ", and " + std::to_string(holders - 8) + " more";
  if (mapped < requested + granularity) return;
  pool.diagnostics.push_back(
      {"held_outputs", "warning",
       "At the high watermark (" + size_text(pool.high_bytes) + ", reached by '" + pool.high_graph + "'), " +
           std::to_string(holders) + " other graph(s) held allocations they leave allocated between launches: " +
           size_text(requested) + " requested, " + size_text(mapped) + " of the pool, since each occupies whole " +
           size_text(granularity) + " granules, which the launching graph could not use (" + listed +
           "). Allocating such outputs outside the graphs takes them out of the pool: allocate them as "
           "gmem::outside_buffer (or a CUDA user object) retained by the graphs that write them, so they "
           "live exactly as long as those graphs; `gmemprof replay REPORT --set` measures what that saves.",
       mapped});
}

// Memory mapped at the high watermark for launches in other streams still running.
void diagnose_separate_streams(const high_moment& hm, std::uint64_t granularity, recorded_pool& pool) {
  std::uint64_t overlapping = 0;
  std::set<std::string> others;
  for (const pool_share& s : hm.shares) {
    if (s.why != "concurrent_launch") continue;
    overlapping += s.bytes;
    if (!s.graph.empty()) others.insert("'" + s.graph + "'");
  }
  if (overlapping < granularity) return;
  std::string names;
  for (const auto& n : others) names += (names.empty() ? "" : ", ") + n;
  pool.diagnostics.push_back(
      {"separate_streams", "warning",
       "At the high watermark, " + size_text(overlapping) +
           " was mapped for launches in other streams that were still running (" + names +
           "): launches that may run at the same time cannot share memory. Launched into "
           "one stream, the graphs share it; a stream that waits on an event recorded after "
           "the other launch is ordered after it but still does not share its memory while "
           "it runs (measured on an H100, driver 580: tools/completion_cases.sh, C4). "
           "`gmemprof replay REPORT --set` measures one stream.",
       overlapping});
}

// Relaunches that had to map again because another graph's live allocation held their memory,
// and growth inside relaunches the model does not explain.
void diagnose_remaps(const recording& rec, recorded_pool& pool) {
  std::size_t remaps = 0, unexplained = 0;
  double remap_us = 0;
  std::uint64_t remap_growth = 0, unexplained_growth = 0;
  std::string unexplained_first;
  std::map<std::string, std::pair<std::size_t, double>> by_graph;
  for (const recorded_graph& g : rec.graphs) {
    for (const recorded_event& e : g.events) {
      if (e.device != pool.device) continue;
      const std::uint64_t grown = e.growth_bytes > 0 ? static_cast<std::uint64_t>(e.growth_bytes) : 0;
      if (e.cls == "remap_contention") {
        ++remaps;
        remap_us += e.host_us;
        remap_growth += grown;
        by_graph[g.name].first += 1;
        by_graph[g.name].second += e.host_us;
      } else if (e.cls == "remap_unexplained") {
        if (unexplained++ == 0) unexplained_first = g.name;
        unexplained_growth += grown;
      }
    }
  }
  if (remaps > 0) {
    std::string listed;
    for (const auto& [name, c] : by_graph) {
      listed += std::string(listed.empty() ? "" : ", ") + "'" + name + "' " + std::to_string(c.first) + " (" +
                duration_text(c.second) + ")";
    }
    pool.diagnostics.push_back(
        {"remap_contention", "info",
         std::to_string(remaps) + " relaunch(es) had to map memory again because another graph's "
         "live allocation held memory they had mapped, " + duration_text(remap_us) +
             " of host time in all, " + size_text(remap_growth) + " of pool growth: " + listed +
             ". Each graph keeps its mapping between launches only while no other graph's "
             "allocation occupies it.",
         remap_growth});
  }
  if (unexplained > 0) {
    pool.diagnostics.push_back(
        {"remap_unexplained", "info",
         std::to_string(unexplained) + " relaunch(es) grew the pool by " + size_text(unexplained_growth) +
             " (first '" + unexplained_first + "') where the pool model says nothing had taken the "
             "graph's memory: gmem's model of the driver does not explain them; please report the "
             "recording.",
         unexplained_growth});
  }
}

}  // namespace

void analyse_pools(recording& rec, const std::vector<skeleton>& skeletons, std::uint64_t granularity,
                   const for_each_index& each) {
  if (granularity == 0) throw std::invalid_argument("analyse_pools: the granularity is 0");
  pool_model model(granularity);
  const laid_out graphs = lay_out(rec, skeletons, granularity, each, model);
  measure_growth(rec);
  const highs high = high_watermarks(rec);
  const call_groups groups = concurrent_groups(rec);
  const std::map<int, std::uint64_t> start = hold_memory_before(rec, granularity, model);
  const followed f = sequence_follower(rec, model, graphs, high, groups).run();
  relabel_points(rec, f.relabelled);
  split_concurrent_growth(rec, groups, f, graphs, granularity);
  rec.pools.clear();
  for (const auto& [device, high_bytes] : high.bytes) {
    recorded_pool pool;
    pool.device = device;
    pool.high_bytes = high_bytes;
    pool.start_bytes = start.count(device) ? start.at(device) : 0;
    pool_timeline(rec, pool);
    const auto hm = f.moments.find(device);
    const high_moment none;
    const high_moment& moment = hm == f.moments.end() ? none : hm->second;
    high_attribution(rec, high, groups, moment, pool);
    if (moment.seen) {
      diagnose_held_outputs(rec, moment, granularity, pool);
      diagnose_separate_streams(moment, granularity, pool);
    }
    diagnose_remaps(rec, pool);
    rec.pools.push_back(std::move(pool));
  }
}

}  // namespace gmem::profiler
