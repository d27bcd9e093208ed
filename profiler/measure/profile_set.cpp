#include "gmem/profiler/profile_set.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "gmem/error.hpp"
#include "gmem/usage_error.hpp"
#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/environment.hpp"
#include "gmem/profiler/graph_alone.hpp"
#include "gmem/profiler/graph_reader.hpp"
#include "gmem/profiler/pool_analysis.hpp"
#include "gmem/profiler/profile.hpp"
#include "gmem/profiler/skeleton_replay.hpp"
#include "measure/set_runner.hpp"
#include "measure/skeleton_build.hpp"
#include "gmem/profiler/size_text.hpp"
#include "gmem/user_object.hpp"

namespace gmem::profiler {
namespace {

// A scenario for one graph of a set: its own figures and diagnostics, its skeleton, and the
// host time of its launches by class (no wall time: the set runner synchronizes every call).
scenario_result scenario_of(const graph_alone& alone, const recorded_graph& g, const std::string& source) {
  scenario_result s;
  s.name = g.name;
  s.params.emplace_back("source", source);
  s.analysis = alone.summary;
  s.diagnostics = alone.diagnostics;
  s.skeletons.push_back(alone.shape);
  add_event_phases(s, g);
  return s;
}

// The set's high watermark, by the pool model, with every call complete before the next (as
// the set runner makes them).
std::uint64_t predict_high(const std::vector<skeleton>& graphs, const std::vector<bool>& auto_free,
                           const std::vector<sequence_step>& steps, std::uint64_t granularity, int device) {
  pool_model m(granularity);
  for (std::size_t i = 0; i < graphs.size(); ++i) m.add(pool_graph_of(graphs[i], granularity, auto_free[i]));
  std::map<std::string, std::uint64_t> ids;
  std::uint64_t high = 0;
  std::vector<bool> destroyed(graphs.size(), false);
  for (const sequence_step& st : steps) {
    const bool on_graph = st.graph >= 0 && static_cast<std::size_t>(st.graph) < graphs.size();
    const std::size_t g = on_graph ? static_cast<std::size_t>(st.graph) : 0;
    const std::uint64_t stream = ids.emplace(st.stream, ids.size() + 1).first->second;
    if (st.op == "instantiate" && on_graph && destroyed[g]) {
      m.instantiate(g);
      destroyed[g] = false;
      continue;
    }
    if (on_graph && destroyed[g]) continue;
    if (st.op == "update" && on_graph) {
      m.update(g);
      continue;
    }
    if (st.op == "launch" && on_graph) {
      for (std::uint64_t n = 0; n < std::min<std::uint64_t>(st.count, 2); ++n) m.launch(g, stream);
    } else if (st.op == "upload" && on_graph) {
      m.upload(g, stream);
    } else if (st.op == "free" && on_graph) {
      m.free_held(g);
    } else if (st.op == "destroy" && on_graph) {
      m.destroy(g);
      destroyed[g] = true;
    } else if (st.op == "trim") {
      m.trim(device);
    }
    m.synchronize();
    high = std::max(high, m.reserved(device));
  }
  return high;
}

// Skeletons built and run through `steps` on `device`; returns the reservation's high
// watermark above what was reserved before (the pool is trimmed first). `retained` (where given,
// one list per graph) are user objects moved into each graph before its instantiation: they live
// until the graph and its executable graphs are destroyed, at the replay's end.
std::uint64_t replay_steps(const std::vector<skeleton>& graphs, const std::vector<bool>& auto_free,
                           const std::vector<sequence_step>& steps, int device, recording* out,
                           std::vector<std::vector<user_object>>* retained = nullptr) {
  GMEM_CUDA_TRY_CTX(cudaSetDevice(device), "replaying a set of graphs");
  std::vector<detail::built_graph> built;
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    validate(graphs[i]);
    std::vector<user_object> objects;
    if (retained && i < retained->size()) objects = std::move((*retained)[i]);
    built.push_back(detail::build(graphs[i], auto_free[i] ? cudaGraphInstantiateFlagAutoFreeOnLaunch : 0,
                                  std::move(objects)));
  }
  std::vector<detail::set_member> members;
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    detail::set_member m;
    m.name = graphs[i].name;
    m.exec = built[i].exec;
    m.held.assign(built[i].unfreed.begin(), built[i].unfreed.end());
    m.auto_free = auto_free[i];
    detail::built_graph* b = &built[i];
    const std::string name = graphs[i].name;
    m.destroy = [b, name] {
      GMEM_CUDA_TRY_CTX(cudaGraphExecDestroy(b->exec), "replaying a set of graphs, destroying '" + name + "'");
      b->exec = nullptr;
    };
    const unsigned long long flags = auto_free[i] ? cudaGraphInstantiateFlagAutoFreeOnLaunch : 0;
    m.instantiate = [b, name, flags, &members, i] {
      GMEM_CUDA_TRY_CTX(cudaGraphInstantiateWithFlags(&b->exec, b->graph, flags),
                        "replaying a set of graphs, instantiating '" + name + "' again");
      members[i].exec = b->exec;
    };
    members.push_back(std::move(m));
  }
  for (auto& b : built) b.unfreed.clear();  // run_set frees what the launches leave
  recording rec = detail::run_set(members, steps, device);
  const std::uint64_t high = read_counters(device).reserved_high;
  built.clear();
  (void)trim(device);
  if (out) *out = std::move(rec);
  return high;
}

}  // namespace

report profile_graphs(const std::vector<std::pair<cudaGraph_t, std::string>>& graphs,
                      const set_profile_options& options) {
  if (graphs.empty()) throw std::invalid_argument("profile_graphs: no graphs given");
  if (options.rounds < 1) throw std::invalid_argument("profile_graphs: rounds must be at least 1");
  GMEM_CUDA_TRY_CTX(cudaSetDevice(options.device), "profile_graphs");
  const std::uint64_t granularity =
      options.granularity ? options.granularity : measure_granularity(options.device).bytes;
  std::vector<graph_alone> alone;
  std::vector<cudaGraphExec_t> execs(graphs.size(), nullptr);
  const auto destroy_all = [&] {
    for (cudaGraphExec_t& e : execs) {
      if (e) (void)cudaGraphExecDestroy(e);
      e = nullptr;
    }
  };
  std::vector<detail::set_member> members;
  try {
    for (std::size_t i = 0; i < graphs.size(); ++i) {
      const auto& [g, name] = graphs[i];
      alone.push_back(study_alone(flatten(read_graph(g, name)), name, granularity, options.auto_free_on_launch,
                                  {"stream 1"}));
      GMEM_CUDA_TRY_CTX(cudaGraphInstantiateWithFlags(
                            &execs[i], g, options.auto_free_on_launch ? cudaGraphInstantiateFlagAutoFreeOnLaunch : 0),
                        "profile_graphs: instantiating graph '" + name + "'");
      detail::set_member m;
      m.name = name;
      m.exec = execs[i];
      for (std::uint64_t a : alone.back().held_addresses) m.held.push_back(reinterpret_cast<void*>(a));
      m.auto_free = options.auto_free_on_launch;
      m.destroy = [&execs, i] {
        GMEM_CUDA_TRY(cudaGraphExecDestroy(execs[i]));
        execs[i] = nullptr;
      };
      members.push_back(std::move(m));
    }
    std::vector<sequence_step> steps;
    for (int r = 0; r < options.rounds; ++r) {
      for (std::size_t i = 0; i < graphs.size(); ++i) {
        sequence_step st;
        st.op = "launch";
        st.graph = static_cast<std::int64_t>(i);
        st.stream = "stream 1";
        steps.push_back(st);
      }
    }
    recording rec = detail::run_set(members, steps, options.device);
    destroy_all();
    (void)trim(options.device);
    std::vector<skeleton> skeletons;
    report rep = make_report({}, options.device, "profile_graphs");
    for (std::size_t i = 0; i < graphs.size(); ++i) {
      recorded_graph& g = rec.graphs[i];
      g.identity = "name:" + g.name;
      g.nodes = alone[i].flat.nodes.size();
      g.own_footprint_bytes = alone[i].reserved_bytes;
      g.own_footprint_method = "reuse model: the graph alone from a trimmed pool, predicted";
      skeletons.push_back(alone[i].shape);
      rep.scenarios.push_back(scenario_of(alone[i], g, "profile_graphs"));
    }
    analyse_pools(rec, skeletons, granularity);
    rec.command = "profile_graphs";
    rep.recorded = std::move(rec);
    return rep;
  } catch (...) {
    destroy_all();
    throw;
  }
}

namespace {

// What a set's replay works on: the recording's graphs with memory nodes and skeletons, and the
// calls between them, renumbered for those graphs.
struct replayed_set {
  std::vector<skeleton> graphs;
  std::vector<bool> auto_free;
  std::vector<std::int64_t> index;  ///< recording graph -> replayed graph, -1 where not replayed
  std::vector<sequence_step> steps;
  int device = 0;
  std::uint64_t granularity = 0;
};

replayed_set set_of(const report& r, int device) {
  if (!r.recorded || r.recorded->graphs.empty()) {
    throw std::invalid_argument("the report has no recorded graphs: `gmemprof replay --set` replays a "
                                "report of `gmemprof record` or gmem.profile_graphs");
  }
  const recording& rec = *r.recorded;
  replayed_set set;
  set.device = device;
  set.index.assign(rec.graphs.size(), -1);
  for (std::size_t i = 0; i < rec.graphs.size() && i < r.scenarios.size(); ++i) {
    if (rec.graphs[i].kind != "memory_nodes" || r.scenarios[i].skeletons.empty()) continue;
    set.index[i] = static_cast<std::int64_t>(set.graphs.size());
    set.graphs.push_back(r.scenarios[i].skeletons.front());
    set.auto_free.push_back(rec.graphs[i].flags.auto_free_on_launch);
  }
  if (set.graphs.empty()) {
    throw std::invalid_argument("the report's recorded graphs carry no skeletons: record it again with this gmemprof");
  }
  for (const sequence_step& st : rec.sequence) {
    sequence_step s = st;
    if (st.graph >= 0) {
      if (set.index[static_cast<std::size_t>(st.graph)] < 0) continue;
      s.graph = set.index[static_cast<std::size_t>(st.graph)];
    }
    if (s.op == "trim") s.device = device;
    s.event = -1;
    set.steps.push_back(s);
  }
  return set;
}

// A change to the calls, predicted by the pool model and measured by replaying them.
measured_change changed_calls(const replayed_set& set, const std::vector<sequence_step>& steps, std::string kind,
                              std::string where) {
  measured_change c;
  c.kind = std::move(kind);
  c.where = std::move(where);
  c.predicted_bytes = predict_high(set.graphs, set.auto_free, steps, set.granularity, set.device);
  c.measured_bytes = replay_steps(set.graphs, set.auto_free, steps, set.device, nullptr);
  return c;
}

// How long the replay waits for the buffers outside the graphs to be freed once the graphs
// that retained them are gone: the driver releases a user object at some time after its last
// reference went, on a thread of its own, and gmem's release thread frees the buffer then; no
// CUDA call waits for that, so the replay polls.
constexpr auto outside_release_bound = std::chrono::seconds(5);

// Which buffers outside the graphs were freed (outside_buffer's after_free, on gmem's release
// thread): shared with the callbacks, which may run after outputs_outside has returned.
struct outside_frees {
  explicit outside_frees(std::size_t n) : freed(n) {}
  std::vector<std::atomic<bool>> freed;
};

// Waits, a bounded time, until every buffer of `frees` was freed; throws std::runtime_error
// naming those that were not (`names`: each buffer's size and the graph that retained it).
void wait_until_freed(const outside_frees& frees, const std::vector<std::string>& names) {
  const auto deadline = std::chrono::steady_clock::now() + outside_release_bound;
  for (;;) {
    GMEM_CUDA_TRY_CTX(cudaDeviceSynchronize(), "replay --set: waiting for the outside buffers' release");
    wait_for_deferred_releases();
    std::vector<std::string> left;
    for (std::size_t k = 0; k < names.size(); ++k) {
      if (!frees.freed[k].load()) left.push_back(names[k]);
    }
    if (left.empty()) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string listed;
      for (std::size_t k = 0; k < left.size() && k < 8; ++k) listed += (k ? ", " : "") + left[k];
      if (left.size() > 8) listed += " and " + std::to_string(left.size() - 8) + " more";
      throw std::runtime_error(
          "replay --set: " + std::to_string(left.size()) + " buffer(s) outside the graphs were not freed within " +
          std::to_string(outside_release_bound.count()) + " s of the graphs that retained them being destroyed (" +
          listed + "): a reference to their user objects outlived the graphs");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The allocations graphs hold between launches, allocated outside them: the skeletons without
// those alloc nodes, and the buffers allocated for real as gmem::outside_buffer, each retained by
// the replayed graph that held that allocation (the graph and its executable graphs own it, as
// the advice says to do). After the replay every buffer must have been freed once its graph went.
std::optional<measured_change> outputs_outside(const replayed_set& set) {
  std::vector<skeleton> outside = set.graphs;
  std::size_t buffers = 0;
  std::uint64_t requested = 0;
  std::string names;
  std::vector<std::size_t> bytes;
  std::vector<std::size_t> holder;  // the replayed graph that held each allocation
  for (std::size_t g = 0; g < outside.size(); ++g) {
    skeleton& sk = outside[g];
    std::vector<bool> freed(sk.nodes.size(), false);
    for (const skeleton_node& n : sk.nodes) {
      if (n.kind == skeleton_kind::free) freed[n.frees] = true;
    }
    bool any = false;
    for (std::size_t v = 0; v < sk.nodes.size(); ++v) {
      if (sk.nodes[v].kind != skeleton_kind::alloc || freed[v]) continue;
      bytes.push_back(sk.nodes[v].bytes);
      holder.push_back(g);
      requested += sk.nodes[v].bytes;
      sk.nodes[v].kind = skeleton_kind::empty;
      sk.nodes[v].bytes = 0;
      any = true;
    }
    if (any && ++buffers <= 8) names += std::string(names.empty() ? "" : ", ") + "'" + sk.name + "'";
  }
  if (bytes.empty()) return std::nullopt;
  std::vector<sequence_step> no_frees;
  for (const sequence_step& st : set.steps) {
    if (st.op != "free") no_frees.push_back(st);
  }
  std::size_t free_before = 0, free_after = 0, total = 0;
  GMEM_CUDA_TRY_CTX(cudaMemGetInfo(&free_before, &total), "replay --set");
  const auto frees = std::make_shared<outside_frees>(bytes.size());
  std::vector<std::string> described;
  std::vector<std::vector<user_object>> retained(outside.size());
  for (std::size_t k = 0; k < bytes.size(); ++k) {
    outside_buffer buffer(bytes[k], set.device, [frees, k] { frees->freed[k].store(true); });
    described.push_back(size_text(bytes[k]) + " at " + format_address(reinterpret_cast<std::uintptr_t>(buffer.get())) +
                        " (retained by '" + outside[holder[k]].name + "')");
    retained[holder[k]].push_back(std::move(buffer.owner()));  // the graph's alone from its build on
  }
  GMEM_CUDA_TRY_CTX(cudaMemGetInfo(&free_after, &total), "replay --set");
  measured_change c;
  c.kind = "outputs_outside";
  c.where = "allocate the " + std::to_string(bytes.size()) + " allocation(s) that graphs " + names +
            (buffers > 8 ? " and others" : "") + " leave allocated between launches (" + size_text(requested) +
            ") outside the graphs, as gmem::outside_buffer (or a CUDA user object) retained by the graphs that "
            "write them, so they live exactly as long as those graphs; measured as the pool's high watermark "
            "plus what cudaMalloc took for them";
  c.predicted_bytes = predict_high(outside, set.auto_free, no_frees, set.granularity, set.device) + requested;
  // The buffers not yet moved into a graph (an error midway) are released with `retained`.
  c.measured_bytes =
      replay_steps(outside, set.auto_free, no_frees, set.device, nullptr, &retained) + (free_before - free_after);
  retained.clear();
  wait_until_freed(*frees, described);
  return c;
}

// The graphs first launched largest first (their footprint alone, replayed).
std::optional<measured_change> largest_first(const replayed_set& set, const std::vector<std::uint64_t>& alone_bytes) {
  std::vector<std::size_t> firsts;
  std::set<std::int64_t> seen;
  for (std::size_t k = 0; k < set.steps.size(); ++k) {
    if (set.steps[k].op == "launch" && seen.insert(set.steps[k].graph).second) firsts.push_back(k);
  }
  std::vector<std::int64_t> order;
  for (std::size_t k : firsts) order.push_back(set.steps[k].graph);
  std::vector<std::int64_t> largest = order;
  std::stable_sort(largest.begin(), largest.end(), [&](std::int64_t a, std::int64_t b) {
    return alone_bytes[static_cast<std::size_t>(a)] > alone_bytes[static_cast<std::size_t>(b)];
  });
  if (largest == order) return std::nullopt;
  std::vector<sequence_step> reordered = set.steps;
  for (std::size_t k = 0; k < firsts.size(); ++k) reordered[firsts[k]].graph = largest[k];
  return changed_calls(set, reordered, "launch_order",
                       "launch (or capture and launch) the graphs largest first the first time: '" +
                           set.graphs[static_cast<std::size_t>(largest.front())].name + "' first");
}

// Every call in one stream.
std::optional<measured_change> one_stream(const replayed_set& set) {
  std::set<std::string> streams;
  for (const sequence_step& st : set.steps) {
    if (!st.stream.empty()) streams.insert(st.stream);
  }
  if (streams.size() <= 1) return std::nullopt;
  std::vector<sequence_step> one = set.steps;
  for (sequence_step& st : one) {
    if (!st.stream.empty()) st.stream = *streams.begin();
  }
  return changed_calls(set, one, "one_stream",
                       "launch the graphs into one stream (" + std::to_string(streams.size()) +
                           " streams were used), or make each launch's stream wait on an event recorded "
                           "after the previous launch");
}

// A trim before the call that reached the high watermark.
std::optional<measured_change> trim_before_high(const replayed_set& set, const recording& rec) {
  if (rec.pools.empty() || rec.pools.front().high_graph.empty()) return std::nullopt;
  const recorded_pool& pool = rec.pools.front();
  std::int64_t at = -1, seen = 0;
  for (const sequence_step& st : rec.sequence) {
    if (st.graph >= 0 && st.event >= 0 && set.index[static_cast<std::size_t>(st.graph)] >= 0) {
      const recorded_graph& g = rec.graphs[static_cast<std::size_t>(st.graph)];
      if (g.name == pool.high_graph && g.events[static_cast<std::size_t>(st.event)].t_us == pool.high_t_us) at = seen;
    }
    if (st.graph < 0 || set.index[static_cast<std::size_t>(st.graph)] >= 0) ++seen;
  }
  if (at <= 0) return std::nullopt;
  std::vector<sequence_step> trimmed = set.steps;
  sequence_step t;
  t.op = "trim";
  t.device = set.device;
  trimmed.insert(trimmed.begin() + at, t);
  return changed_calls(set, trimmed, "trim",
                       "call cudaDeviceGraphMemTrim before the launch of '" + pool.high_graph +
                           "' that reached the high watermark");
}

}  // namespace

set_replay_result replay_set(const report& r, int device) {
  replayed_set set = set_of(r, device);
  const recording& rec = *r.recorded;
  GMEM_CUDA_TRY_CTX(cudaSetDevice(device), "replay --set");
  set.granularity = measure_granularity(device).bytes;
  set_replay_result out;
  out.calls = set.steps.size();
  if (!rec.pools.empty()) out.recorded_high_bytes = rec.pools.front().high_bytes;
  recording replayed;
  out.high_bytes = replay_steps(set.graphs, set.auto_free, set.steps, device, &replayed);
  analyse_pools(replayed, set.graphs, set.granularity);
  for (const recorded_graph& g : replayed.graphs) out.growth_bytes.push_back(g.growth_bytes);
  for (const skeleton& g : set.graphs) out.alone_bytes.push_back(replay(g, device).reserved_bytes);

  // Each change measured in turn; kept where it saves at least a granule.
  const auto consider = [&](std::optional<measured_change> c) {
    if (!c) return;
    c->saving_bytes = c->measured_bytes < out.high_bytes ? out.high_bytes - c->measured_bytes : 0;
    (c->saving_bytes >= set.granularity ? out.changes : out.tried).push_back(std::move(*c));
  };
  consider(outputs_outside(set));
  consider(largest_first(set, out.alone_bytes));
  consider(one_stream(set));
  consider(trim_before_high(set, rec));
  std::sort(out.changes.begin(), out.changes.end(),
            [](const measured_change& a, const measured_change& b) { return a.saving_bytes > b.saving_bytes; });
  return out;
}

}  // namespace gmem::profiler
