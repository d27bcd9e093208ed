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
  return e.result.empty() && (e.kind == "launch" || e.kind == "upload" || e.kind == "instantiate");
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

}  // namespace

void analyse_pools(recording& rec, const std::vector<skeleton>& skeletons, std::uint64_t granularity,
                   const for_each_index& each) {
  if (granularity == 0) throw std::invalid_argument("analyse_pools: the granularity is 0");
  pool_model model(granularity);
  std::vector<std::optional<std::size_t>> index(rec.graphs.size());
  std::vector<std::uint64_t> footprint(rec.graphs.size(), 0);
  // Each graph laid out alone (its reuse prediction: most of this function's time at 2000 graphs),
  // then added to the model in order.
  std::vector<std::optional<pool_graph>> layouts(rec.graphs.size());
  const auto lay_out = [&](std::size_t i) {
    recorded_graph& g = rec.graphs[i];
    g.held_requested_bytes = g.held_granule_bytes = 0;
    if (g.kind != "memory_nodes" || i >= skeletons.size() || skeletons[i].nodes.empty()) return;
    try {
      pool_graph layout = pool_graph_of(skeletons[i], granularity, g.flags.auto_free_on_launch);
      layout.name = g.name;
      for (const pool_device_layout& d : layout.devices) {
        footprint[i] += d.slots * granularity;
        for (const pool_allocation& a : d.allocations) g.held_requested_bytes += a.held ? a.bytes : 0;
      }
      g.held_granule_bytes = held_granule_bytes(layout, granularity);
      layouts[i] = std::move(layout);
    } catch (...) {  // a skeleton the model cannot take (a hand-edited report): measured figures only
      footprint[i] = g.held_requested_bytes = g.held_granule_bytes = 0;
    }
  };
  run_each(each, rec.graphs.size(), lay_out);
  for (std::size_t i = 0; i < rec.graphs.size(); ++i) {
    try {
      if (layouts[i]) index[i] = model.add(std::move(*layouts[i]));
    } catch (const std::exception&) {  // a layout beyond its own slots: measured figures only
    }
  }
  layouts.clear();

  // Measured growth, per call, where no other thread's call overlapped its window.
  for (recorded_graph& g : rec.graphs) {
    for (recorded_event& e : g.events) {
      e.growth_bytes = 0;
      if (!maps_memory(e) || e.concurrent || !e.before || !e.after) continue;
      if (e.after->reserved_current > e.before->reserved_current) {
        e.growth_bytes = static_cast<std::int64_t>(e.after->reserved_current - e.before->reserved_current);
      }
    }
  }

  // Each device's high watermark and the call that reached it: the first that left the
  // reservation at the high.
  std::map<int, std::uint64_t> high;
  for (const recorded_graph& g : rec.graphs) {
    for (const recorded_event& e : g.events) {
      if (e.after) high[e.device] = std::max(high[e.device], e.after->reserved_high);
    }
    if (g.kind == "private_pool" && !g.devices.empty()) high.emplace(g.devices.front(), 0);
  }
  for (const auto& p : rec.timeline) high[p.device] = std::max(high[p.device], p.values.reserved_high);
  std::map<int, std::pair<std::size_t, std::size_t>> high_call;  // device -> (graph, event)
  std::map<int, double> high_t;
  for (std::size_t gi = 0; gi < rec.graphs.size(); ++gi) {
    const recorded_graph& g = rec.graphs[gi];
    for (std::size_t ei = 0; ei < g.events.size(); ++ei) {
      const recorded_event& e = g.events[ei];
      if (!maps_memory(e) || !e.after || e.after->reserved_current != high[e.device]) continue;
      const auto t = high_t.find(e.device);
      if (t == high_t.end() || e.t_us < t->second) {
        high_t[e.device] = e.t_us;
        high_call[e.device] = {gi, ei};
      }
    }
  }

  // Calls whose windows overlapped another thread's, grouped (transitively overlapping windows
  // on one device): the counters say only what the group grew the pool by.
  using call = std::pair<std::size_t, std::size_t>;  // (graph, event)
  const auto ev = [&](const call& c) -> recorded_event& { return rec.graphs[c.first].events[c.second]; };
  std::vector<std::vector<call>> groups;
  std::map<call, std::size_t> group_of;
  {
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
        for (std::size_t k = start; k < end; ++k) group_of[calls[k]] = groups.size();
        groups.emplace_back(calls.begin() + static_cast<std::ptrdiff_t>(start),
                            calls.begin() + static_cast<std::ptrdiff_t>(end));
        start = end;
      }
    }
  }

  // Memory reserved before the first recorded call (after a trim: other graphs' live
  // allocations): granules the set's graphs cannot use, held by a stand-in graph.
  const std::string held_before = "(memory held before)";
  std::map<int, std::uint64_t> start;
  {
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
  }

  // The model over the call sequence: what each call grew the pool by, and the pool at each
  // device's high watermark.
  std::map<call, std::uint64_t> predicted;
  std::map<int, high_moment> moments;
  std::map<std::string, std::uint64_t> stream_ids;
  const auto stream_id = [&](const std::string& s) {
    return stream_ids.emplace(s, stream_ids.size() + 1).first->second;
  };
  std::map<std::string, std::uint64_t> ordinals;  // launches and uploads so far, per stream
  std::vector<relabel> relabelled;
  for (const sequence_step& st : rec.sequence) {
    const bool on_graph = st.graph >= 0 && static_cast<std::size_t>(st.graph) < rec.graphs.size();
    const std::size_t gi = on_graph ? static_cast<std::size_t>(st.graph) : 0;
    // The graph's index in the model (no_node: none); a plain index, not an optional, for GCC
    // 12's -Wmaybe-uninitialized.
    const std::size_t m = on_graph && index[gi] ? *index[gi] : no_node;
    try {
      const std::uint64_t base = (st.op == "launch" || st.op == "upload") ? ordinals[st.stream] : 0;
      if (st.op == "launch" || st.op == "upload") ordinals[st.stream] = base + st.count;
      if ((st.op == "launch" || st.op == "upload") && m != no_node) {
        const std::uint64_t repeat = std::min<std::uint64_t>(st.count, 2);
        auto& events = rec.graphs[gi].events;
        // The call's events: one per device whose counters were read, recorded together.
        std::size_t first = 0, end = 0;
        if (st.event >= 0 && static_cast<std::size_t>(st.event) < events.size()) {
          first = static_cast<std::size_t>(st.event);
          for (end = first; end < events.size() && events[end].t_us == events[first].t_us &&
                            events[end].kind == events[first].kind;
               ++end) {
          }
        }
        // What the driver grew the pool by in this call, where every device's counters were read
        // and no other thread's call overlapped: the model follows it where other streams' work
        // may have completed unseen.
        std::optional<std::uint64_t> measured;
        if (end > first) {
          measured = 0;
          for (std::size_t ei = first; ei < end; ++ei) {
            const recorded_event& e = events[ei];
            if (!e.before || !e.after || e.concurrent || !e.result.empty()) {
              measured.reset();
              break;
            }
            *measured += e.after->reserved_current > e.before->reserved_current
                             ? e.after->reserved_current - e.before->reserved_current
                             : 0;
          }
        }
        for (std::uint64_t k = 0; k < repeat; ++k) {
          // Each device's reservation before the call: a graph on several devices grows each.
          std::map<int, std::uint64_t> before_call;
          for (const pool_device_layout& d : model.graph(m).devices) before_call[d.device] = model.reserved(d.device);
          const std::uint64_t ordinal = k == 0 ? base + 1 : base + st.count;
          const pool_step done = st.op == "launch"
                                     ? model.launch(m, stream_id(st.stream), ordinal, k == 0 ? measured : std::nullopt)
                                     : model.upload(m, stream_id(st.stream), ordinal, k == 0 ? measured : std::nullopt);
          if (k != 0 || end == first) continue;
          for (std::size_t ei = first; ei < end; ++ei) {
            // A slow relaunch is a remap only where the model says another graph's live
            // allocation took granules it had mapped; the pool's growth inside a relaunch the
            // model says needed nothing is a remap the model does not explain.
            const std::string was = events[ei].cls;
            if (events[ei].cls == "slow_launch" && done.mapped_slots > 0) events[ei].cls = "remap_contention";
            if (events[ei].cls == "remap_contention" && done.mapped_slots == 0) events[ei].cls = "remap_unexplained";
            if (events[ei].cls != was) relabelled.push_back({{gi, ei}, events[ei].kind + ":" + was});
          }
          for (std::size_t ei = first; ei < end; ++ei) {
            const int device = events[ei].device;
            const auto b = before_call.find(device);
            predicted[{gi, ei}] = b == before_call.end() ? 0 : model.reserved(device) - b->second;
            // The moment of the high watermark: after the call that reached it, or after the
            // last call of its group when other threads' calls overlapped it.
            const auto hc = high_call.find(device);
            const auto in_group = [&](const call& c) {
              const auto x = group_of.find(c), y = group_of.find(hc->second);
              return x != group_of.end() && y != group_of.end() && x->second == y->second;
            };
            if (hc != high_call.end() && (hc->second == call{gi, ei} || in_group(call{gi, ei}))) {
              high_moment& hm = moments[device];
              hm.seen = true;
              hm.graph = gi;
              hm.event = ei;
              hm.model_bytes = model.reserved(device);
              hm.shares = model.shares(device, m);
              for (std::size_t o = 0; o < rec.graphs.size(); ++o) {
                if (index[o]) hm.held[o] = model.held(*index[o], device);
              }
            }
          }
        }
      } else if (st.op == "free" && m != no_node) {
        if (st.held < 0) {
          model.free_held(m);
        } else if (const auto where = held_at(model.graph(m), st.held)) {
          model.free_held(m, where->second, model.graph(m).devices[where->first].device);
        }
      } else if (st.op == "destroy" && m != no_node) {
        model.destroy(m);
      } else if (st.op == "instantiate" && m != no_node) {
        model.instantiate(m);
      } else if (st.op == "trim" && st.device >= 0) {
        model.trim(st.device);
      } else if (st.op == "sync") {
        if (st.stream.empty()) {
          model.synchronize();
        } else if (st.upto >= 0) {
          model.synchronize(stream_id(st.stream), static_cast<std::uint64_t>(st.upto));
        } else {
          model.synchronize(stream_id(st.stream));
        }
      }
    } catch (const std::exception&) {
      // A call the model cannot follow (a launch of a destroyed graph in a hand-edited report).
    }
  }

  relabel_points(rec, relabelled);

  // Each group's measured growth, split in proportion to the model's.
  for (const std::vector<call>& group : groups) {
    std::uint64_t first_before = ev(group.front()).before->reserved_current, last_after = 0;
    double last_end = -1;
    std::vector<double> weight;
    std::vector<std::uint64_t> cap;
    for (const call& c : group) {
      const recorded_event& e = ev(c);
      if (e.t_us + e.host_us >= last_end) {
        last_end = e.t_us + e.host_us;
        last_after = e.after->reserved_current;
      }
      const auto p = predicted.find(c);
      weight.push_back(p == predicted.end() ? 0.0 : static_cast<double>(p->second));
      cap.push_back(footprint[c.first] / granularity);
    }
    const std::uint64_t grown = last_after > first_before ? last_after - first_before : 0;
    const std::vector<std::uint64_t> share = split(grown / granularity, weight, cap);
    for (std::size_t k = 0; k < group.size(); ++k) {
      ev(group[k]).growth_bytes = static_cast<std::int64_t>(share[k] * granularity);
    }
    ev(group.front()).growth_bytes += static_cast<std::int64_t>(grown % granularity);
  }

  for (recorded_graph& g : rec.graphs) {
    g.growth_bytes = 0;
    for (const recorded_event& e : g.events) {
      if (e.growth_bytes > 0) g.growth_bytes += static_cast<std::uint64_t>(e.growth_bytes);
    }
  }

  // The pools.
  rec.pools.clear();
  for (const auto& [device, high_bytes] : high) {
    recorded_pool pool;
    pool.device = device;
    pool.high_bytes = high_bytes;
    pool.start_bytes = start.count(device) ? start.at(device) : 0;
    double last_t = -1;
    std::map<double, std::vector<pool_point>> points;
    for (const recorded_graph& g : rec.graphs) {
      for (const recorded_event& e : g.events) {
        if (e.device != device || !e.after) continue;
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
      if (g.kind != "private_pool" || g.devices.empty() || g.devices.front() != device) continue;
      pool.private_pool_bytes += g.capture_pool_growth_bytes;
    }
    // A device with private pools and no graph memory (a program on PyTorch's native
    // allocator): its timeline is the private pools' growth, capture by capture. Where graph
    // memory exists too, the timeline stays graph memory's (the two are different memory).
    if (high_bytes == 0 && pool.private_pool_bytes > 0) {
      std::vector<std::pair<double, const recorded_graph*>> captures;
      for (const recorded_graph& g : rec.graphs) {
        if (g.kind == "private_pool" && !g.devices.empty() && g.devices.front() == device && !g.events.empty()) {
          captures.emplace_back(g.events.front().t_us, &g);
        }
      }
      std::stable_sort(captures.begin(), captures.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      std::uint64_t total = 0;
      for (const auto& [t, g] : captures) {
        total += g->capture_pool_growth_bytes;
        pool.timeline.push_back({t, g->name, "capture", total, static_cast<std::int64_t>(g->capture_pool_growth_bytes)});
      }
    }
    const high_moment& hm = moments[device];
    const auto hc = high_call.find(device);
    if (hc != high_call.end()) {
      // The call the attribution was taken after: the high call itself, or the last of the
      // calls that overlapped it (the counters cannot tell which of them reached the high).
      pool.high_concurrent = group_of.count(hc->second) != 0;
      const call named = hm.seen && pool.high_concurrent ? call{hm.graph, hm.event} : hc->second;
      const recorded_graph& g = rec.graphs[named.first];
      const recorded_event& e = g.events[named.second];
      pool.high_graph = g.name;
      pool.high_event = e.kind + (e.cls.empty() ? "" : ":" + e.cls);
      pool.high_t_us = e.t_us;
    }
    if (hm.seen) {
      pool.model_high_bytes = hm.model_bytes;
      for (const pool_share& s : hm.shares) {
        if (s.graph == held_before) {
          pool.attribution.push_back({"", "held_before", s.bytes});
        } else {
          pool.attribution.push_back({s.graph, s.why, s.bytes});
        }
      }
    }

    // Diagnostics about the set.
    if (hm.seen) {
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
            listed += std::string(listed.empty() ? "" : ", ") + "'" + s.graph + "' " +
                      size_text(h.requested_bytes) + " in " + size_text(s.bytes);
          }
        }
      }
      if (holders > 8) listed += ", and " + std::to_string(holders - 8) + " more";
      if (mapped >= requested + granularity) {
        pool.diagnostics.push_back(
            {"held_outputs", "warning",
             "At the high watermark (" + size_text(high_bytes) + ", reached by '" + pool.high_graph +
                 "'), " + std::to_string(holders) +
                 " other graph(s) held allocations they leave allocated between launches: " +
                 size_text(requested) + " requested, " + size_text(mapped) +
                 " of the pool, since each occupies whole " + size_text(granularity) +
                 " granules, which the launching graph could not use (" + listed +
                 "). Allocating such outputs outside the graphs (buffers the caller owns, written by "
                 "the graph) takes them out of the pool; `gmemprof replay REPORT --set` measures "
                 "what that saves.",
             mapped});
      }
      std::uint64_t overlapping = 0;
      std::set<std::string> others;
      for (const pool_share& s : hm.shares) {
        if (s.why != "concurrent_launch") continue;
        overlapping += s.bytes;
        if (!s.graph.empty()) others.insert("'" + s.graph + "'");
      }
      if (overlapping >= granularity) {
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
    }
    std::size_t remaps = 0;
    double remap_us = 0;
    std::uint64_t remap_growth = 0;
    std::map<std::string, std::pair<std::size_t, double>> by_graph;
    for (const recorded_graph& g : rec.graphs) {
      for (const recorded_event& e : g.events) {
        if (e.device != device || e.cls != "remap_contention") continue;
        ++remaps;
        remap_us += e.host_us;
        if (e.growth_bytes > 0) remap_growth += static_cast<std::uint64_t>(e.growth_bytes);
        by_graph[g.name].first += 1;
        by_graph[g.name].second += e.host_us;
      }
    }
    if (remaps > 0) {
      std::string listed;
      for (const auto& [name, c] : by_graph) {
        listed += std::string(listed.empty() ? "" : ", ") + "'" + name + "' " + std::to_string(c.first) +
                  " (" + duration_text(c.second) + ")";
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
    std::size_t unexplained = 0;
    std::uint64_t unexplained_growth = 0;
    std::string unexplained_first;
    for (const recorded_graph& g : rec.graphs) {
      for (const recorded_event& e : g.events) {
        if (e.device != device || e.cls != "remap_unexplained") continue;
        if (unexplained++ == 0) unexplained_first = g.name;
        if (e.growth_bytes > 0) unexplained_growth += static_cast<std::uint64_t>(e.growth_bytes);
      }
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
    rec.pools.push_back(std::move(pool));
  }
}

}  // namespace gmem::profiler
