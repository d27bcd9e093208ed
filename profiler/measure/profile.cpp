#include "gmem/profiler/profile.hpp"

#include <algorithm>
#include <optional>
#include <functional>
#include <map>
#include <utility>

#include "gmem/capability.hpp"
#include "gmem/usage_error.hpp"
#include "gmem/handles.hpp"
#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/reuse_model.hpp"
#include "gmem/profiler/skeleton_replay.hpp"
#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/critical_path.hpp"
#include "gmem/profiler/node_durations.hpp"
#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/environment.hpp"
#include "gmem/profiler/graph_reader.hpp"
#include "gmem/profiler/lifetime.hpp"
#include "gmem/profiler/phase_driver.hpp"
#include "gmem/profiler/timing.hpp"
#include "gmem/profiler/size_text.hpp"

namespace gmem::profiler {

namespace {

// The phases asked for (all by default), once the options are checked.
std::vector<std::string> checked_phases(const std::string& name, const profile_options& options) {
  std::vector<std::string> phases = options.phases.empty() ? all_phases() : options.phases;
  check_phases(phases);
  if (options.reps < 1 || options.warmups < 0 || options.min_reps < 0 || !(options.settled_spread >= 0)) {
    throw usage_error("profiling graph '" + name + "': reps must be at least 1, warmups and min_reps at "
                      "least 0, settled_spread a fraction at least 0");
  }
  return phases;
}

// Each phase's launch cost and the counters after it, into `r` in the order asked for: the cold
// phases from shared resets (one instantiation feeds two samples, one upload two), then each
// other phase on its own.
void measure_phases(phase_driver& drive, const std::vector<std::string>& phases, const profile_options& options,
                    scenario_result& r) {
  const int dev = options.device;
  const settling settle{std::min(options.min_reps, options.reps), options.settled_spread};
  std::map<std::string, launch_cost> costs;
  std::map<std::string, counters> after;
  const std::vector<phase_chain> chains = drive.cold_chains(phases);
  if (!chains.empty()) {
    std::vector<chain_plan> plans;
    for (const phase_chain& c : chains) {
      chain_plan plan{c.reset, {}, c.cleanup};
      for (const phase_chain::step& st : c.steps) {
        plan.steps.push_back({st.phase, [&st] { return time_call(st.call, st.stream); }});
      }
      plans.push_back(std::move(plan));
    }
    for (launch_cost& c : measure_chains(plans, options.warmups, options.reps, settle)) {
      costs[c.phase] = std::move(c);
    }
    drive.settle();
    const counters read = read_counters(dev);
    for (const auto& c : costs) after[c.first] = read;
  }
  for (const std::string& p : phases) {
    if (phase_driver::is_cold(p)) continue;
    const phase_step step = drive.step(p);
    const int launches = p == phase::steady_launch ? std::max(1, options.steady_launches_per_sample) : 1;
    const std::function<void()> call =
        launches == 1 ? step.call : [&step, launches] { for (int i = 0; i < launches; ++i) step.call(); };
    const phase_plan plan{p, step.reset, [&] { return time_call(call, step.stream); }, step.cleanup};
    costs[p] = measure_phase(plan, options.warmups, options.reps, settle);
    drive.settle();
    after[p] = read_counters(dev);
  }
  for (const std::string& p : phases) {
    r.launch_costs.push_back(costs.at(p));
    r.counters_after_phase.push_back({p, after.at(p)});
  }
}

// The nodes' GPU durations on the real graph (CUPTI), which price each change that adds
// dependencies in launch time; nullopt with `note` saying why there is no price.
std::optional<advice_pricing> node_pricing(cudaGraph_t g, const graph_model& model, const flat_graph& flat,
                                           const std::vector<void*>& unfreed, const profile_options& options,
                                           std::string& note) {
  std::optional<advice_pricing> pricing;
  try {
    std::string why = "profile_options::price_advice is off";
    const auto d = options.price_advice ? measure_node_durations(g, options.device, unfreed, why) : std::nullopt;
    if (d) {
      pricing = advice_pricing{flat, flat_durations(model, d->top_level_us), 0};
      pricing->critical_path_us = critical_path_us(pricing->flat, pricing->duration_us);
      if (d->unplaced_records > 0) {
        note = std::to_string(d->unplaced_records) + " of " + std::to_string(d->kernel_records) +
               " kernel records came from nodes inside child graphs and were not placed: "
               "they weigh 0 in the predicted launch times";
      }
    } else {
      note = "no launch-time price: " + why;
    }
  } catch (const std::exception& e) {
    note = std::string("no launch-time price: the node durations could not be measured: ") + e.what();
  }
  return pricing;
}

// Each candidate change replayed as a skeleton (no user kernel runs), kept where the driver saved
// at least one granule; into `r`'s advice, or a diagnostic saying why none is made. Leaves the
// pool trimmed.
void measure_graph_advice(cudaGraph_t g, const graph_model& model, const flat_graph& flat, const graph_analysis& a,
                          std::uint64_t granularity, std::uint64_t reserved_high, const std::vector<void*>& unfreed,
                          const profile_options& options, scenario_result& r) {
  const int dev = options.device;
  std::string durations_note;
  const std::optional<advice_pricing> pricing = node_pricing(g, model, flat, unfreed, options, durations_note);
  (void)trim(dev);
  try {
    const advice_report adv = measure_advice(r.skeletons.back(), a, granularity, granularity, dev,
                                             false, pricing ? &*pricing : nullptr);
    const std::uint64_t real = reserved_high;
    const std::uint64_t apart = adv.baseline_bytes > real ? adv.baseline_bytes - real : real - adv.baseline_bytes;
    if (apart > std::max<std::uint64_t>(granularity, 1)) {
      // Advice is a claim about this graph: measured on a skeleton that reserves what the
      // graph reserves, or not made.
      r.diagnostics.push_back(
          {"advice_not_measured", "info",
           "the skeleton of graph '" + r.name + "' replayed reserved " + size_text(adv.baseline_bytes) +
               " where the graph reserved " + size_text(real) +
               ": the skeleton does not reproduce this graph (child graphs cost the driver more "
               "than their memory nodes: README, \"The driver's reuse rule\"), so no change is advised",
           apart});
    } else {
      advice_measurement m;
      m.baseline_bytes = adv.baseline_bytes;
      m.changes = adv.advice;
      m.combined = adv.combined;
      m.combined_reaches_order_free_bound = adv.combined_reaches_order_free_bound;
      m.tried = adv.tried;
      if (pricing) m.critical_path_us = pricing->critical_path_us;
      m.durations_note = durations_note;
      r.advice = std::move(m);
    }
  } catch (const std::exception& e) {
    r.diagnostics.push_back({"advice_not_measured", "info",
                             std::string("the candidate changes could not be replayed: ") + e.what(),
                             0});
  }
}

}  // namespace

scenario_result profile_graph(cudaGraph_t g, const std::string& name,
                              const profile_options& options) {
  const std::vector<std::string> phases = checked_phases(name, options);
  const int dev = options.device;
  require_graph_mem_nodes(dev);
  device_guard on(dev);
  const std::uint64_t granularity =
      options.granularity ? options.granularity : measure_granularity(dev).bytes;

  scenario_result r;
  r.name = name;
  const graph_model model = read_graph(g, name);
  const graph_analysis a = analyse(model, granularity);
  if (a.foreign_frees > 0) {
    throw usage_error("profiling graph '" + name + "': it frees " +
                      std::to_string(a.foreign_frees) +
                      " allocation(s) another graph made, so it cannot be launched again and "
                      "again on its own; profile the graphs together (gmemprof run's "
                      "outside_free_graph scenario shows how) or the allocating graph alone");
  }
  std::vector<void*> unfreed;
  for (std::size_t i : a.unfreed) {
    unfreed.push_back(reinterpret_cast<void*>(a.allocations[i].address));
  }

  phase_driver drive(
      g, name, dev,
      {options.auto_free_on_launch, unfreed,
       std::max<std::uint64_t>(a.lower_bound_rounded_bytes, granularity)});
  auto record = [&](const std::string& p) {
    r.counters_after_phase.push_back({p, read_counters(dev)});
  };

  // Footprint: one launch from a trimmed pool with reset watermarks.
  (void)trim(dev);
  reset_high_watermarks(dev);
  drive.launch_cold();
  record("footprint");
  const counters footprint = r.counters_after_phase.back().values;
  drive.settle();
  measure_phases(drive, phases, options, r);

  drive.finish();
  runtime_facts facts;
  facts.graph_name = name;
  facts.auto_free_on_launch = options.auto_free_on_launch;
  facts.launches = {{name, "stream 1"}};
  facts.graphs_destroyed = true;  // its executable graphs are gone; the graph stays the caller's
  facts.reserved_after_destroy = read_counters(dev).reserved_current;
  facts.reserved_high = footprint.reserved_high;
  facts.excess_ratio_threshold = options.excess_ratio_threshold;
  record("destroyed");
  (void)trim(dev);
  record("trimmed");

  r.analysis = summarize(a, footprint.used_high, footprint.reserved_high);
  r.allocations = lifetimes(model, a);
  const flat_graph flat = flatten(model);
  r.diagnostics = diagnose(flat, a, facts);
  r.skeletons.push_back(skeleton_of(flat, a, name));  // For gmemprof replay
  if (options.measure_advice && a.alloc_nodes > 0) {
    measure_graph_advice(g, model, flat, a, granularity, footprint.reserved_high, unfreed, options, r);
  }
  return r;
}

scenario_result profile_graph(const graph& g, const profile_options& options) {
  if (!g.get() || !g.shared_ledger()) {
    throw usage_error("profiling an empty gmem::graph (moved from, or moved into a parent)");
  }
  if (g.ledger().live_execs() > 0 && g.ledger().has_memory_nodes()) {
    throw usage_error("profiling graph '" + g.name() +
                      "': it has a live executable graph, and a graph with memory nodes may "
                      "have only one; destroy it first (the profiler instantiates its own)");
  }
  return profile_graph(g.get(), g.name(), options);
}

report make_report(std::vector<scenario_result> scenarios, int device,
                   const std::string& command_line) {
  report rep;
  rep.env = collect_environment(device, command_line);
  rep.scenarios = std::move(scenarios);
  return rep;
}

}  // namespace gmem::profiler
