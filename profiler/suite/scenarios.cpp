#include "suite/scenarios.hpp"

#include <cstdlib>
#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "gmem/capability.hpp"
#include "gmem/capture.hpp"
#include "gmem/error.hpp"
#include "gmem/graph.hpp"
#include "gmem/graph_exec.hpp"
#include "gmem/handles.hpp"
#include "gmem/outside_free.hpp"
#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/graph_reader.hpp"
#include "gmem/profiler/lifetime.hpp"
#include "gmem/profiler/profile.hpp"
#include "gmem/profiler/profile_set.hpp"
#include "gmem/profiler/reuse_model.hpp"
#include "gmem/profiler/skeleton_replay.hpp"
#include "gmem/profiler/timing.hpp"

namespace gmem::profiler {
namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::uint64_t GiB = std::uint64_t{1} << 30;
/// Memset nodes touch at most this much of an allocation: enough to use it, small enough that
/// launch times measure the graph and its mapping, not memory bandwidth.
constexpr std::uint64_t touch_bytes = MiB;

/// TEST-ONLY regression injection, read by the suite and nowhere else: the
/// environment variable GMEM_SUITE_INJECT set to one of
///   extra_granule  single_alloc holds one more granule-sized allocation beside its own;
///   free_removed   address_reuse_chain's first free no longer precedes the next allocation
///                  (it moves to the end of the graph, so the chain cannot reuse that memory);
///   remap          multi-graph scenarios trim before every steady iteration: each remaps;
///   slow_launch    multi-graph scenarios launch their graphs twice per steady iteration;
///   slow_steady    single_alloc's graphs of at most 2 MiB launch twice per steady sample (a
///                  small graph's steady launch twice as slow).
/// It exists to measure that `gmemprof check` catches such regressions
/// (reports/check-quality/); unset (always, outside that measurement) it changes nothing.
std::string injected() {
  const char* v = std::getenv("GMEM_SUITE_INJECT");
  return v ? v : "";
}

profile_options options_for(const scenario_context& ctx, std::vector<std::string> phases) {
  profile_options o;
  o.device = ctx.device;
  o.warmups = ctx.warmups;
  o.reps = ctx.reps;
  o.granularity = ctx.granularity;
  o.phases = std::move(phases);
  return o;
}

scenario_result named(scenario_result r, std::string name, parameters params) {
  r.name = std::move(name);
  r.params = std::move(params);
  return r;
}

scenario_result skipped(std::string name, parameters params, std::string why) {
  scenario_result r;
  r.name = std::move(name);
  r.params = std::move(params);
  r.status = scenario_status::skipped;
  r.status_message = std::move(why);
  return r;
}

/// alloc -> memset -> (free): returns the memset node.
cudaGraphNode_t touch(graph& g, const graph_allocation& a) {
  return g.add_memset({a.node}, a.ptr, 0x5a, std::min<std::uint64_t>(a.bytes, touch_bytes));
}

graph single_graph(const std::string& name, std::uint64_t bytes, int device, bool free_it = true,
                   std::uint64_t extra_bytes = 0) {
  graph g(name);
  const auto a = g.add_alloc({bytes, device});
  const auto t = touch(g, a);
  if (free_it) (void)g.add_free(a.ptr, {t});
  if (extra_bytes > 0) {  // test-only injection, see injected()
    const auto e = g.add_alloc({extra_bytes, device});
    (void)g.add_free(e.ptr, {touch(g, e)});
  }
  return g;
}

const std::vector<std::string> cold_and_steady{phase::instantiate, phase::first_launch_no_upload,
                                               phase::steady_launch};

// ---- multi-graph scenarios -------------------------------------------------------------

/// The graphs of a multi-graph scenario as one model: each graph is a child-graph node, a free
/// in a stream is a free node, chained in the order the host launches them. That serial order
/// is the only schedule the driver is sure to see: it maps memory at launch time, knowing which
/// earlier launches have completed, so graphs in different streams are not all live together
/// (measured on an H100: 4 x 256 MiB graphs in 4 streams reserved 448 MiB, not 1 GiB). The
/// bound of this model is therefore a true lower bound; concurrency across streams can raise
/// the reservation above it, up to the sum, and the diagnostics say so.
class scenario_model {
 public:
  explicit scenario_model(std::string name) { model_.name = std::move(name); }
  /// Adds `g`, launched after everything added before, into `stream_label`; returns its node.
  std::size_t add_graph(const graph& g, const std::string& stream_label) {
    model_node n;
    n.kind = node_kind::child_graph;
    n.child = model_.children.size();
    model_.children.push_back(read_graph(g.get(), g.name()));
    // Only graphs that allocate compete for physical memory across streams.
    if (g.ledger().alloc_count() > 0) launches_.push_back({g.name(), stream_label});
    return add(std::move(n));
  }
  /// Adds a cudaFreeAsync of `address` made in a stream after everything added before.
  std::size_t add_stream_free(const void* address) {
    model_node n;
    n.kind = node_kind::mem_free;
    n.address = reinterpret_cast<std::uint64_t>(address);
    return add(std::move(n));
  }
  [[nodiscard]] const graph_model& model() const { return model_; }
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& launches() const {
    return launches_;
  }

 private:
  std::size_t add(model_node n) {
    model_.nodes.push_back(std::move(n));
    const std::size_t index = model_.nodes.size() - 1;
    if (index > 0) model_.edges.emplace_back(index - 1, index);
    return index;
  }
  graph_model model_;
  std::vector<std::pair<std::string, std::string>> launches_;
};

/// For a scenario of several graphs: each graph's skeleton, and, where the graphs that
/// allocate were launched into more than one stream, those graphs replayed in one stream against
/// the footprint measured as launched ("one_stream"; advice only where it saved a granule).
void measure_launch_advice(scenario_result& r, const scenario_model& set, std::uint64_t reserved_as_launched,
                           std::uint64_t order_free_bound, const scenario_context& ctx) {
  for (const graph_model& child : set.model().children) {
    const flat_graph flat = flatten(child);
    r.skeletons.push_back(skeleton_of(flat, analyse(flat, ctx.granularity), child.name));
  }
  std::vector<skeleton> launched;
  std::vector<std::string> streams;
  for (const auto& [graph_name, stream_label] : set.launches()) {
    for (const skeleton& s : r.skeletons) {
      if (s.name != graph_name) continue;
      launched.push_back(s);
      streams.push_back(stream_label);
      break;
    }
  }
  if (std::set<std::string>(streams.begin(), streams.end()).size() < 2) return;
  try {
    const measured_change m =
        measure_one_stream(launched, streams, reserved_as_launched, ctx.granularity, ctx.device);
    advice_measurement adv;
    adv.baseline_bytes = reserved_as_launched;
    adv.combined = m;
    adv.combined_reaches_order_free_bound = m.measured_bytes <= order_free_bound;
    (m.saving_bytes >= std::max<std::uint64_t>(ctx.granularity, 1) ? adv.changes : adv.tried).push_back(m);
    r.advice = std::move(adv);
  } catch (const std::exception& e) {
    r.diagnostics.push_back({"advice_not_measured", "info",
                             std::string("the graphs could not be replayed in one stream: ") + e.what(), 0});
  }
}

/// Measures a multi-graph scenario: `iteration` launches the graphs (and any stream work) once.
/// Footprint from a trimmed pool; then the iteration timed cold (after a trim) and steady.
scenario_result run_multi(const scenario_context& ctx, std::string name, parameters params,
                          const scenario_model& set, const std::function<void()>& iteration) {
  scenario_result r;
  r.name = std::move(name);
  r.params = std::move(params);
  const int dev = ctx.device;
  auto record = [&](const std::string& p) {
    r.counters_after_phase.push_back({p, read_counters(dev)});
  };
  const auto run_once = [&] {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    iteration();
    const auto t1 = clock::now();
    GMEM_CUDA_TRY(cudaDeviceSynchronize());
    const auto t2 = clock::now();
    return timed{std::chrono::duration<double, std::micro>(t1 - t0).count(),
                 std::chrono::duration<double, std::micro>(t2 - t0).count()};
  };
  (void)trim(dev);
  reset_high_watermarks(dev);
  (void)run_once();
  record("footprint");
  const counters footprint = r.counters_after_phase.back().values;

  phase_plan cold{"cold_iteration", [&] { (void)trim(dev); }, run_once, nullptr};
  r.launch_costs.push_back(measure_phase(cold, ctx.warmups, ctx.reps));
  record("cold_iteration");
  // Test-only injections (see injected()): a steady iteration that remaps, or one twice as slow.
  const std::string inject = injected();
  const auto run_twice = [&] {
    const timed a = run_once();
    const timed b = run_once();
    return timed{a.host_us + b.host_us, a.wall_us + b.wall_us};
  };
  phase_plan steady{"steady_iteration",
                    inject == "remap" ? std::function<void()>([&] { (void)trim(dev); }) : nullptr,
                    inject == "slow_launch" ? std::function<timed()>(run_twice)
                                            : std::function<timed()>(run_once),
                    nullptr};
  r.launch_costs.push_back(measure_phase(steady, ctx.warmups, ctx.reps));
  record("steady_iteration");
  GMEM_CUDA_TRY(cudaDeviceSynchronize());

  const graph_analysis a = analyse(set.model(), ctx.granularity);
  runtime_facts facts;
  facts.graph_name = r.name;
  facts.launches = set.launches();
  facts.reserved_high = footprint.reserved_high;
  r.analysis = summarize(a, footprint.used_high, footprint.reserved_high);
  r.allocations = lifetimes(set.model(), a);
  r.diagnostics = diagnose(flatten(set.model()), a, facts);
  measure_launch_advice(r, set, footprint.reserved_high, a.lower_bound_rounded_bytes, ctx);
  return r;
}

// ---- the scenarios ------------------------------------------------------------------------

std::vector<scenario_result> single_alloc(const scenario_context& ctx) {
  std::vector<scenario_result> out;
  for (const std::uint64_t bytes : ctx.params.values("bytes")) {
    for (const std::uint64_t upload_value : ctx.params.values("upload")) {
      const bool upload = upload_value != 0;
      parameters params{{"bytes", static_cast<std::int64_t>(bytes)}, {"upload", upload}};
      if (bytes > ctx.free_memory / 2) {
        out.push_back(skipped("single_alloc", params,
                              "needs " + format_bytes(bytes) + " but only " +
                                  format_bytes(ctx.free_memory) + " of device memory was free"));
        continue;
      }
      const std::vector<std::string> phases =
          upload ? std::vector<std::string>{phase::instantiate, phase::upload,
                                            phase::first_launch_after_upload, phase::steady_launch}
                 : cold_and_steady;
      try {
        graph g = single_graph("single_alloc", bytes, ctx.device, true,
                               injected() == "extra_granule" ? ctx.granularity : 0);
        profile_options o = options_for(ctx, phases);
        if (injected() == "slow_steady" && bytes <= 2 * MiB) o.steady_launches_per_sample = 2;
        out.push_back(named(profile_graph(g, o), "single_alloc", params));
      } catch (const std::exception& e) {  // one size failing keeps the others' results
        scenario_result r = skipped("single_alloc", params, e.what());
        r.status = scenario_status::error;
        out.push_back(std::move(r));
        (void)cudaDeviceSynchronize();
        (void)cudaGetLastError();
      }
    }
  }
  return out;
}

std::vector<scenario_result> address_reuse_chain(const scenario_context& ctx) {
  const int n = ctx.params.count("allocations");
  const std::uint64_t bytes = ctx.params.get("bytes");
  graph g("address_reuse_chain");
  std::vector<cudaGraphNode_t> deps;
  const bool remove_free = injected() == "free_removed";  // test-only, see injected()
  void* first = nullptr;
  for (int i = 0; i < n; ++i) {
    const auto a = g.add_alloc({bytes, ctx.device}, deps);
    if (i == 0 && remove_free) {
      first = a.ptr;
      deps = {touch(g, a)};
    } else {
      deps = {g.add_free(a.ptr, {touch(g, a)})};
    }
  }
  if (first != nullptr) (void)g.add_free(first, deps);
  return {named(profile_graph(g, options_for(ctx, cold_and_steady)), "address_reuse_chain",
                {{"allocations", std::int64_t{n}}, {"bytes", static_cast<std::int64_t>(bytes)}})};
}

std::vector<scenario_result> independent(const scenario_context& ctx, const std::string& name) {
  const int n = ctx.params.count("allocations");
  const std::uint64_t bytes = ctx.params.get("bytes");
  graph g(name);
  for (int i = 0; i < n; ++i) {
    const auto a = g.add_alloc({bytes, ctx.device});
    (void)g.add_free(a.ptr, {touch(g, a)});
  }
  return {named(profile_graph(g, options_for(ctx, cold_and_steady)), name,
                {{"allocations", std::int64_t{n}}, {"bytes", static_cast<std::int64_t>(bytes)}})};
}

std::vector<scenario_result> many_small_chained(const scenario_context& ctx) {
  const int n = ctx.params.count("allocations");
  const std::uint64_t bytes = ctx.params.get("bytes");
  graph g("many_small_chained");
  std::vector<cudaGraphNode_t> deps;
  for (int i = 0; i < n; ++i) {
    const auto a = g.add_alloc({bytes, ctx.device}, deps);
    deps = {g.add_free(a.ptr, {touch(g, a)})};
  }
  return {named(profile_graph(g, options_for(ctx, cold_and_steady)), "many_small_chained",
                {{"allocations", std::int64_t{n}}, {"bytes", static_cast<std::int64_t>(bytes)}})};
}

/// n graphs, each alloc -> memset -> free of `bytes`, launched into one stream or n streams.
std::vector<scenario_result> several_graphs(const scenario_context& ctx, const std::string& name,
                                            bool separate_streams) {
  const int n = ctx.params.count("graphs");
  const std::uint64_t bytes = ctx.params.get("bytes");
  std::vector<graph> graphs;
  std::vector<std::unique_ptr<graph_exec>> execs;
  std::vector<stream> streams(separate_streams ? n : 1);
  scenario_model set(name);
  for (int i = 0; i < n; ++i) {
    graphs.push_back(single_graph("graph " + std::to_string(i), bytes, ctx.device));
    execs.push_back(std::make_unique<graph_exec>(graphs.back()));
    (void)set.add_graph(graphs.back(), "stream " + std::to_string(separate_streams ? i : 0));
  }
  const auto iteration = [&] {
    for (int i = 0; i < n; ++i) execs[i]->launch(streams[separate_streams ? i : 0]);
  };
  return {run_multi(ctx, name, {{"graphs", std::int64_t{n}}, {"bytes", static_cast<std::int64_t>(bytes)},
                                {"streams", std::int64_t(streams.size())}},
                    set, iteration)};
}

// A serving warm-up as inference engines do it: one graph per batch size, largest first, each
// with working memory freed inside it (bytes, bytes/2, ...) and an output it leaves allocated
// ((i + 1) MiB), instantiated with AutoFreeOnLaunch, launched into one stream: two rounds. The
// set's footprint is the largest graph's working set plus a whole granule for each output the
// others hold (measured, README "Many graphs, one pool").
std::vector<scenario_result> serving_warmup(const scenario_context& ctx) {
  const int n = ctx.params.count("graphs");
  const std::uint64_t bytes = ctx.params.get("bytes");
  std::vector<graph> graphs;
  std::vector<std::pair<cudaGraph_t, std::string>> set;
  for (int i = 0; i < n; ++i) {
    graph g("batch " + std::to_string(i));
    const std::uint64_t work = std::max<std::uint64_t>(bytes >> i, MiB);
    const auto w = g.add_alloc({work, ctx.device});
    const auto o = g.add_alloc({static_cast<std::uint64_t>(i + 1) * MiB, ctx.device});
    const auto t = g.add_memset({w.node, o.node}, w.ptr, 0x5a, std::min<std::uint64_t>(work, touch_bytes));
    (void)g.add_memset({t}, o.ptr, 0x5b, MiB);
    (void)g.add_free(w.ptr, {t});
    graphs.push_back(std::move(g));
  }
  for (const graph& g : graphs) set.emplace_back(g.get(), g.name());
  set_profile_options o;
  o.device = ctx.device;
  o.granularity = ctx.granularity;
  o.rounds = 2;
  const report rep = profile_graphs(set, o);
  const recording& rec = *rep.recorded;
  scenario_result r;
  r.name = "serving_warmup";
  r.params = {{"graphs", std::int64_t{n}}, {"bytes", static_cast<std::int64_t>(bytes)}};
  // The set's bound: while graph g runs, the others hold their outputs. Its heaviest antichain
  // plus their held bytes, for the worst g, rounded to the granule as a whole.
  std::uint64_t held = 0, bound = 0;
  for (const recorded_graph& g : rec.graphs) held += g.held_requested_bytes;
  for (std::size_t i = 0; i < rep.scenarios.size(); ++i) {
    const analysis_summary& a = rep.scenarios[i].analysis;
    r.analysis.alloc_nodes += a.alloc_nodes;
    r.analysis.free_nodes += a.free_nodes;
    r.analysis.unfreed_allocations += a.unfreed_allocations;
    r.analysis.requested_bytes += a.requested_bytes;
    r.analysis.distinct_addresses += a.distinct_addresses;
    bound = std::max(bound, a.lower_bound_bytes + held - rec.graphs[i].held_requested_bytes);
    r.skeletons.insert(r.skeletons.end(), rep.scenarios[i].skeletons.begin(), rep.scenarios[i].skeletons.end());
  }
  const recorded_pool& pool = rec.pools.at(0);
  r.analysis.lower_bound_bytes = bound;
  r.analysis.lower_bound_rounded_bytes = round_up(bound, ctx.granularity);
  r.analysis.reserved_high_bytes = pool.high_bytes;
  std::uint64_t used_high = 0;
  for (const recorded_graph& g : rec.graphs) {
    for (const recorded_event& e : g.events) {
      if (e.after) used_high = std::max(used_high, e.after->used_high);
    }
  }
  r.analysis.used_high_bytes = used_high;
  r.analysis.va_reuse_ratio = r.analysis.distinct_addresses
                                  ? static_cast<double>(r.analysis.alloc_nodes) / r.analysis.distinct_addresses
                                  : 0;
  r.analysis.physical_reuse_ratio =
      pool.high_bytes ? static_cast<double>(r.analysis.requested_bytes) / pool.high_bytes : 0;
  r.analysis.bound_ratio = r.analysis.lower_bound_rounded_bytes
                               ? static_cast<double>(pool.high_bytes) / r.analysis.lower_bound_rounded_bytes
                               : 0;
  // Counters after each round, host times of the launches by class.
  std::map<std::string, std::vector<double>> host;
  std::vector<std::string> order;
  for (std::size_t k = 0; k < rec.sequence.size(); ++k) {
    const sequence_step& st = rec.sequence[k];
    if (st.graph < 0 || st.event < 0) continue;
    const recorded_event& e = rec.graphs[static_cast<std::size_t>(st.graph)].events[static_cast<std::size_t>(st.event)];
    if (!host.count(e.cls)) order.push_back(e.cls);
    host[e.cls].push_back(e.host_us);
    if ((k + 1) % static_cast<std::size_t>(n) == 0 && e.after) {
      r.counters_after_phase.push_back({k + 1 == static_cast<std::size_t>(n) ? "first_round" : "second_round", *e.after});
    }
  }
  for (const std::string& cls : order) {
    launch_cost c;
    c.phase = cls;
    c.host = summarize_samples(std::move(host[cls]));
    r.launch_costs.push_back(c);
  }
  r.diagnostics = pool.diagnostics;
  return {r};
}

std::vector<scenario_result> unfreed_relaunch(const scenario_context& ctx, bool auto_free) {
  const std::uint64_t bytes = ctx.params.get("bytes");
  const std::string name = auto_free ? "auto_free_on_launch" : "unfreed_relaunch";
  graph g = single_graph(name, bytes, ctx.device, /*free_it=*/false);
  profile_options o = options_for(ctx, cold_and_steady);
  o.auto_free_on_launch = auto_free;
  return {named(profile_graph(g, o), name, {{"bytes", static_cast<std::int64_t>(bytes)},
                                            {"auto_free_on_launch", auto_free}})};
}

std::vector<scenario_result> capture_fork_join(const scenario_context& ctx) {
  const std::uint64_t bytes = ctx.params.get("bytes");
  const std::uint64_t touched = std::min(bytes, touch_bytes);
  stream s1, s2;
  graph g = [&] {
    capture cap(s1, "capture_fork_join");
    void* a = cap.malloc_async(bytes);
    cap.fork(s2);
    void* b = cap.malloc_async(bytes, s2);
    GMEM_CUDA_TRY(cudaMemsetAsync(a, 1, touched, s1));
    GMEM_CUDA_TRY(cudaMemsetAsync(b, 2, touched, s2));
    cap.free_async(b, s2);
    cap.join(s2);
    cap.free_async(a);
    return cap.end();
  }();
  return {named(profile_graph(g, options_for(ctx, cold_and_steady)), "capture_fork_join",
                {{"bytes", static_cast<std::int64_t>(bytes)}, {"streams", std::int64_t{2}}})};
}

std::vector<scenario_result> outside_free_stream(const scenario_context& ctx) {
  const std::uint64_t bytes = ctx.params.get("bytes");
  const std::uint64_t touched = std::min(bytes, touch_bytes);
  graph g = single_graph("alloc graph", bytes, ctx.device, false);
  const void* ptr = reinterpret_cast<const void*>(g.ledger().unfreed().at(0).address);
  graph_exec exec(g);
  stream s;
  scenario_model set("outside_free_stream");
  (void)set.add_graph(g, "stream 0");
  (void)set.add_stream_free(ptr);
  const auto iteration = [&] {
    exec.launch(s);
    GMEM_CUDA_TRY(cudaMemsetAsync(const_cast<void*>(ptr), 3, touched, s));
    free_in_stream(const_cast<void*>(ptr), s);
  };
  return {run_multi(ctx, "outside_free_stream", {{"bytes", static_cast<std::int64_t>(bytes)}}, set,
                    iteration)};
}

std::vector<scenario_result> outside_free_graph(const scenario_context& ctx) {
  const std::uint64_t bytes = ctx.params.get("bytes");
  const std::uint64_t touched = std::min(bytes, touch_bytes);
  graph alloc_graph = single_graph("alloc graph", bytes, ctx.device, false);
  void* ptr = reinterpret_cast<void*>(alloc_graph.ledger().unfreed().at(0).address);
  graph free_graph("free graph");
  const auto use = free_graph.add_memset({}, ptr, 4, touched);
  (void)free_graph.add_free(ptr, {use});
  graph_exec alloc_exec(alloc_graph), free_exec(free_graph);
  stream s;
  scenario_model set("outside_free_graph");
  (void)set.add_graph(alloc_graph, "stream 0");
  (void)set.add_graph(free_graph, "stream 0");
  const auto iteration = [&] {
    alloc_exec.launch(s);
    free_exec.launch(s);
  };
  return {run_multi(ctx, "outside_free_graph", {{"bytes", static_cast<std::int64_t>(bytes)}}, set,
                    iteration)};
}

std::vector<scenario_result> outside_free_events(const scenario_context& ctx) {
  const std::uint64_t bytes = ctx.params.get("bytes");
  const std::uint64_t touched = std::min(bytes, touch_bytes);
  event alloc_ready, use_done;
  graph alloc_graph("alloc graph");
  const auto a = alloc_graph.add_alloc({bytes, ctx.device});
  (void)alloc_graph.add_event_record({a.node}, alloc_ready);
  graph wait_and_free("wait and free graph");
  const auto w1 = wait_and_free.add_event_wait({}, use_done);
  const auto w2 = wait_and_free.add_event_wait({}, alloc_ready);
  const auto use = wait_and_free.add_memset({w1, w2}, a.ptr, 5, touched);
  (void)wait_and_free.add_free(a.ptr, {use});
  graph_exec alloc_exec(alloc_graph), free_exec(wait_and_free);
  stream alloc_stream, s2, s3;
  scenario_model set("outside_free_events");
  (void)set.add_graph(alloc_graph, "alloc stream");
  (void)set.add_graph(wait_and_free, "stream 3");
  const auto iteration = [&] {
    alloc_exec.launch(alloc_stream);
    alloc_ready.wait_in(s2);
    GMEM_CUDA_TRY(cudaMemsetAsync(a.ptr, 6, touched, s2));
    use_done.record(s2);
    free_exec.launch(s3);
  };
  return {run_multi(ctx, "outside_free_events", {{"bytes", static_cast<std::int64_t>(bytes)}}, set,
                    iteration)};
}

std::vector<scenario_result> child_graph_move(const scenario_context& ctx) {
  const int n = ctx.params.count("children");
  const std::uint64_t bytes = ctx.params.get("bytes");
  graph parent("child_graph_move");
  std::vector<cudaGraphNode_t> deps;
  for (int i = 0; i < n; ++i) {
    graph child = single_graph("child " + std::to_string(i), bytes, ctx.device);
    deps = {parent.add_child_graph(deps, std::move(child))};
  }
  return {named(profile_graph(parent, options_for(ctx, cold_and_steady)), "child_graph_move",
                {{"children", std::int64_t{n}}, {"bytes", static_cast<std::int64_t>(bytes)}})};
}

std::vector<scenario_result> one_phase(const scenario_context& ctx, const std::string& name,
                                       const std::vector<std::string>& phases) {
  const std::uint64_t bytes = ctx.params.get("bytes");
  graph g = single_graph(name, bytes, ctx.device);
  return {named(profile_graph(g, options_for(ctx, phases)), name,
                {{"bytes", static_cast<std::int64_t>(bytes)}})};
}

std::vector<scenario_result> peer_access(const scenario_context& ctx) {
  const std::uint64_t bytes = ctx.params.get("bytes");
  const int peer = ctx.device == 0 ? 1 : 0;
  parameters params{{"bytes", static_cast<std::int64_t>(bytes)}, {"peer", std::int64_t{peer}}};
  if (ctx.device_count < 2) {
    return {skipped("peer_access", params,
                    "needs two GPUs; this machine has " + std::to_string(ctx.device_count))};
  }
  if (!can_access_peer(peer, ctx.device)) {
    return {skipped("peer_access", params,
                    "device " + std::to_string(peer) + " cannot access device " +
                        std::to_string(ctx.device))};
  }
  graph g("peer_access");
  const auto a = g.add_alloc({bytes, ctx.device, {peer}});
  (void)g.add_free(a.ptr, {touch(g, a)});
  return {named(profile_graph(g, options_for(ctx, cold_and_steady)), "peer_access", params)};
}

// ---- their parameters -------------------------------------------------------------------

/// The largest size --set accepts: beyond any GPU's memory today, small enough that a count
/// times it stays far inside 64 bits.
constexpr std::uint64_t max_bytes = std::uint64_t{1} << 40;
constexpr std::uint64_t max_allocations = 100000;  // instantiating 100000 nodes takes seconds
constexpr std::uint64_t max_graphs = 256;          // each its own executable graph (and stream)
constexpr std::uint64_t max_children = 1024;

param_spec size_param(std::vector<std::uint64_t> defaults, std::string meaning) {
  return {"bytes", param_kind::size, std::move(defaults), 1, max_bytes, std::move(meaning)};
}
param_spec count_param(std::string name, std::uint64_t default_value, std::uint64_t max,
                       std::string meaning) {
  return {std::move(name), param_kind::count, {default_value}, 1, max, std::move(meaning)};
}
param_spec allocations_param(std::uint64_t default_value) {
  return count_param("allocations", default_value, max_allocations, "how many allocations");
}

}  // namespace

// The defaults are chosen so that each scenario shows what it exists to show on a GPU whose
// reservation granule is 32 MiB (H100, H200; allocation granularity 2 MiB): the sizes that
// compare reservations span several granules.
const std::vector<scenario_definition>& scenario_definitions() {
  static const std::vector<scenario_definition> defs{
      {"single_alloc", "one allocation of each size, with and without upload",
       {size_param({2 * MiB, 64 * MiB, GiB, 8 * GiB}, "the allocation's size"),
        {"upload", param_kind::flag, {1, 0}, 0, 1, "upload the graph before its first launch"}},
       single_alloc},
      {"address_reuse_chain", "allocations each ordered after the previous free: one address",
       {allocations_param(8), size_param({64 * MiB}, "each allocation's size")},
       address_reuse_chain},
      {"independent_allocs", "unordered allocations: all live together",
       {allocations_param(8), size_param({64 * MiB}, "each allocation's size")},
       [](const scenario_context& c) { return independent(c, "independent_allocs"); }},
      // 64 x 2 MiB: concurrent they need 128 MiB (4 granules), chained one 2 MiB allocation
      // reused (1 granule). The former 256 x 64 KiB (16 MiB) fit one granule either way.
      {"many_small_concurrent",
       "unordered small allocations: all live together, so more granules than chained",
       {allocations_param(64), size_param({2 * MiB}, "each allocation's size")},
       [](const scenario_context& c) { return independent(c, "many_small_concurrent"); }},
      {"many_small_chained", "chained small allocations: one address, one granule",
       {allocations_param(64), size_param({2 * MiB}, "each allocation's size")},
       many_small_chained},
      {"sequential_graphs_one_stream", "graphs launched into one stream share memory",
       {count_param("graphs", 4, max_graphs, "how many graphs"),
        size_param({256 * MiB}, "each graph's allocation")},
       [](const scenario_context& c) {
         return several_graphs(c, "sequential_graphs_one_stream", false);
       }},
      {"graphs_in_separate_streams", "graphs each in its own stream cannot share memory",
       {count_param("graphs", 4, max_graphs, "how many graphs (one stream each)"),
        size_param({256 * MiB}, "each graph's allocation")},
       [](const scenario_context& c) {
         return several_graphs(c, "graphs_in_separate_streams", true);
       }},
      {"serving_warmup",
       "graphs of decreasing size holding outputs (AutoFreeOnLaunch, one stream): what each adds to the pool",
       {count_param("graphs", 6, max_graphs, "how many graphs (batch sizes)"),
        size_param({512 * MiB}, "the largest graph's working memory (halved for each next graph)")},
       serving_warmup},
      {"unfreed_relaunch", "an allocation left unfreed, freed in a stream before each relaunch",
       {size_param({128 * MiB}, "the unfreed allocation's size")},
       [](const scenario_context& c) { return unfreed_relaunch(c, false); }},
      {"auto_free_on_launch", "an unfreed allocation freed by the next launch (AutoFreeOnLaunch)",
       {size_param({128 * MiB}, "the unfreed allocation's size")},
       [](const scenario_context& c) { return unfreed_relaunch(c, true); }},
      {"capture_fork_join", "stream-ordered allocations captured across two streams",
       {size_param({64 * MiB}, "each stream's allocation")}, capture_fork_join},
      {"outside_free_stream", "allocated by a graph, freed with cudaFreeAsync",
       {size_param({128 * MiB}, "the allocation's size")}, outside_free_stream},
      {"outside_free_graph", "allocated by one graph, freed by another",
       {size_param({128 * MiB}, "the allocation's size")}, outside_free_graph},
      {"outside_free_events", "freed by a graph ordered through event record / wait nodes",
       {size_param({128 * MiB}, "the allocation's size")}, outside_free_events},
      {"child_graph_move", "moved child graphs with memory nodes, one after the other",
       {count_param("children", 2, max_children, "how many child graphs, chained"),
        size_param({128 * MiB}, "each child's allocation")},
       child_graph_move},
      {"stream_switch", "launching into another stream than the last launch",
       {size_param({256 * MiB}, "the allocation's size")},
       [](const scenario_context& c) {
         return one_phase(c, "stream_switch",
                          {phase::steady_launch, phase::launch_after_stream_switch});
       }},
      {"upload_other_stream", "upload in one stream, launch in another",
       {size_param({256 * MiB}, "the allocation's size")},
       [](const scenario_context& c) {
         return one_phase(c, "upload_other_stream", {phase::first_launch_after_upload,
                                                      phase::upload_then_launch_other_stream});
       }},
      {"trim_relaunch", "launching after a trim returned the memory",
       {size_param({256 * MiB}, "the allocation's size")},
       [](const scenario_context& c) {
         return one_phase(c, "trim_relaunch", {phase::steady_launch, phase::launch_after_trim});
       }},
      {"contention_unfreed", "launching while another graph's unfreed allocation holds memory",
       {size_param({256 * MiB}, "the allocation's size")},
       [](const scenario_context& c) {
         return one_phase(c, "contention_unfreed",
                          {phase::steady_launch, phase::launch_with_unfreed_contention});
       }},
      {"peer_access", "an allocation mapped for a peer device (needs two GPUs)",
       {size_param({64 * MiB}, "the allocation's size")}, peer_access},
  };
  return defs;
}

}  // namespace gmem::profiler
