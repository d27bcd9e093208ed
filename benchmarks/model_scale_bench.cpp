// Host-only scale benchmark: analysis, diagnostics, both bounds and the what-if search
// on a graph of 10,000 memory nodes (5,000 allocations and their frees) in 100,000 nodes, within
// 2 s of host time and 1 GiB. Prints one JSON object (time per stage, peak resident memory, the
// machine).
// Usage: gmem_model_scale_bench [ALLOCS] [NODES] [--wide K | --layered N | --pool-rounds R]
//                               [--check MS MIB]  (exit 1 over MS or MIB)
// --wide K: K independent alloc -> empty -> free branches instead of the lanes graph,
// the widest shape there is: K allocations all live together, every pair of them a candidate.
// --layered N: N allocations each freed by its own free node, the frees unordered
// among themselves, all joined by one empty node, then N larger allocations after the join, each
// freed: one component whose order is complete between the layers. Besides the stages above it
// times what a recording runs at exit per graph (study_alone: analysis, skeleton, pool layout,
// diagnostics; the lifetimes; the pool layout analyse_pools makes).
// --pool-rounds R: R rounds of add graph / launch / destroy / trim on the pool model,
// and the same R rounds as a recording's call sequence through analyse_pools.
// Targets: lanes 2000 ms and 1024 MiB; wide 10,000 in 1000 ms and 256 MiB, wide 50,000
// in 10,000 ms; layered 5,000 + 5,000 in 1000 ms and 256 MiB.
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/graph_alone.hpp"
#include "gmem/profiler/lifetime.hpp"
#include "gmem/profiler/pool_analysis.hpp"
#include "gmem/profiler/pool_model.hpp"
#include "gmem/profiler/reuse_model.hpp"

#ifndef GMEM_GIT_COMMIT
#define GMEM_GIT_COMMIT "unknown"
#endif

namespace {

using namespace gmem::profiler;  // NOLINT(google-build-using-namespace): a benchmark program

// 100 lanes (streams of work), round-robin creation: in each lane alloc -> kernels -> free; half
// the next allocations of a lane start before the previous free (overlap), one cross-lane edge
// per allocation from a kernel of one lane to a later kernel of another.
skeleton make_graph(std::size_t allocs, std::size_t nodes, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const std::size_t lanes = 100;
  const std::size_t per = nodes / allocs;  // nodes per allocation: alloc, kernels, free
  skeleton s;
  s.name = "scale";
  s.nodes.reserve(nodes);
  std::vector<std::size_t> last(lanes, no_node), mid(lanes, no_node);
  std::vector<std::size_t> pending_free(lanes, no_node);  // alloc whose free is still to come
  std::vector<std::size_t> recent;
  const auto add = [&](skeleton_kind k, std::vector<std::size_t> deps) {
    skeleton_node n;
    n.kind = k;
    n.deps = std::move(deps);
    s.nodes.push_back(std::move(n));
    return s.nodes.size() - 1;
  };
  for (std::size_t i = 0; i < allocs; ++i) {
    const std::size_t lane = i % lanes;
    std::vector<std::size_t> deps;
    // Overlap: depend on the middle of the previous allocation's work, not its free.
    if (last[lane] != no_node) deps.push_back(rng() % 2 ? last[lane] : mid[lane]);
    const std::size_t a = add(skeleton_kind::alloc, deps);
    s.nodes[a].bytes = (1 + rng() % 64) * (std::size_t{1} << 20);
    std::size_t prev = a;
    for (std::size_t k = 0; k + 2 < per; ++k) {
      std::vector<std::size_t> kd{prev};
      if (k == 0 && !recent.empty() && rng() % 2) kd.push_back(recent[rng() % recent.size()]);
      prev = add(skeleton_kind::empty, kd);
      if (k == (per - 2) / 2) {
        mid[lane] = prev;
        // The previous allocation of this lane is freed halfway through this one's work, so
        // that a later allocation overlaps one or two others, depending on what it waits for.
        if (pending_free[lane] != no_node) {
          const std::size_t f = add(skeleton_kind::free, {prev});
          s.nodes[f].frees = pending_free[lane];
          pending_free[lane] = no_node;
          prev = f;
        }
      }
    }
    pending_free[lane] = a;
    last[lane] = prev;
    recent.push_back(prev);
    if (recent.size() > 200) recent.erase(recent.begin());
  }
  for (std::size_t lane = 0; lane < lanes; ++lane) {
    if (pending_free[lane] == no_node) continue;
    const std::size_t f = add(skeleton_kind::free, {last[lane]});
    s.nodes[f].frees = pending_free[lane];
  }
  // A few edges added after creation (1 in 50 allocations), as cudaGraphAddDependencies would.
  for (std::size_t v = 0; v < s.nodes.size(); ++v) {
    if (s.nodes[v].kind == skeleton_kind::alloc && !s.nodes[v].deps.empty() && rng() % 50 == 0) {
      for (std::size_t d : s.nodes[v].deps) s.late_edges.emplace_back(d, v);
      s.nodes[v].deps.clear();
    }
  }
  return s;
}

// K branches alloc -> empty -> free with no edge between branches, created branch by branch;
// sizes 1 to 64 MiB, so that many pairs tie on the smaller size.
skeleton make_wide(std::size_t branches, std::uint32_t seed) {
  std::mt19937 rng(seed);
  skeleton s;
  s.name = "wide";
  s.nodes.reserve(3 * branches);
  for (std::size_t i = 0; i < branches; ++i) {
    skeleton_node a;
    a.kind = skeleton_kind::alloc;
    a.bytes = (1 + rng() % 64) * (std::size_t{1} << 20);
    s.nodes.push_back(std::move(a));
    skeleton_node e;
    e.kind = skeleton_kind::empty;
    e.deps = {s.nodes.size() - 1};
    s.nodes.push_back(std::move(e));
    skeleton_node f;
    f.kind = skeleton_kind::free;
    f.frees = s.nodes.size() - 2;
    f.deps = {s.nodes.size() - 1};
    s.nodes.push_back(std::move(f));
  }
  return s;
}

// N allocations (1 to 64 MiB), each freed by its own free node; one empty node joins the frees;
// then N allocations of 65 to 128 MiB (larger than any of the first), each depending on the join
// and freed. Created layer by layer: the first allocations, their frees, the join, then each
// later allocation and its free.
skeleton make_layered(std::size_t per_layer, std::uint32_t seed) {
  std::mt19937 rng(seed);
  skeleton s;
  s.name = "layered";
  s.nodes.reserve(4 * per_layer + 1);
  const auto add = [&s](skeleton_kind k, std::vector<std::size_t> deps) {
    skeleton_node n;
    n.kind = k;
    n.deps = std::move(deps);
    s.nodes.push_back(std::move(n));
    return s.nodes.size() - 1;
  };
  for (std::size_t i = 0; i < per_layer; ++i) {
    s.nodes[add(skeleton_kind::alloc, {})].bytes = (1 + rng() % 64) * (std::size_t{1} << 20);
  }
  std::vector<std::size_t> frees;
  for (std::size_t i = 0; i < per_layer; ++i) {
    const std::size_t f = add(skeleton_kind::free, {i});
    s.nodes[f].frees = i;
    frees.push_back(f);
  }
  const std::size_t join = add(skeleton_kind::empty, frees);
  for (std::size_t i = 0; i < per_layer; ++i) {
    const std::size_t a = add(skeleton_kind::alloc, {join});
    s.nodes[a].bytes = (65 + rng() % 64) * (std::size_t{1} << 20);
    s.nodes[add(skeleton_kind::free, {a})].frees = a;
  }
  return s;
}

// The graph as the reader would give it: addresses where the rule places each allocation.
flat_graph as_read(const skeleton& s) {
  const reuse_prediction p = predict_reuse(s, 0);
  flat_graph f = flat_of(s);
  for (std::size_t v = 0; v < s.nodes.size(); ++v) {
    const std::size_t a = s.nodes[v].kind == skeleton_kind::free ? s.nodes[v].frees : v;
    if (s.nodes[v].kind != skeleton_kind::empty) {
      f.nodes[v].address = 0x10000000000 + p.pool[a] * 0x1000000000 + p.offset[a];
    }
  }
  return f;
}

double peak_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

using clock_type = std::chrono::steady_clock;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Stages timed one after another: each one's time and the process's peak resident memory after
// it (a peak that grows in a stage was reached in it).
struct stages {
  std::vector<std::pair<std::string, double>> ms;
  std::vector<double> peak_after;
  template <class F>
  void run(const std::string& name, F&& f) {
    const auto t0 = clock_type::now();
    f();
    ms.emplace_back(name, ms_between(t0, clock_type::now()));
    peak_after.push_back(peak_mib());
  }
  [[nodiscard]] double total() const {
    double t = 0;
    for (const auto& [name, v] : ms) t += v;
    return t;
  }
  [[nodiscard]] std::string json() const {
    std::string out = "{";
    for (std::size_t k = 0; k < ms.size(); ++k) {
      out += (k ? ", \"" : "\"") + ms[k].first + "\": " + std::to_string(ms[k].second);
    }
    out += std::string(ms.empty() ? "" : ", ") + "\"total\": " + std::to_string(total()) + "}";
    return out;
  }
  [[nodiscard]] std::string peaks_json() const {
    std::string out = "{";
    for (std::size_t k = 0; k < ms.size(); ++k) {
      out += (k ? ", \"" : "\"") + ms[k].first + "\": " + std::to_string(peak_after[k]);
    }
    return out + "}";
  }
};

// One graph of the rounds: 40 MiB of working memory freed inside, then a 1 MiB output it leaves
// allocated.
skeleton round_skeleton() {
  skeleton s;
  s.name = "round";
  s.nodes.resize(3);
  s.nodes[0].kind = skeleton_kind::alloc;
  s.nodes[0].bytes = 40 << 20;
  s.nodes[1].kind = skeleton_kind::free;
  s.nodes[1].frees = 0;
  s.nodes[1].deps = {0};
  s.nodes[2].kind = skeleton_kind::alloc;
  s.nodes[2].bytes = 1 << 20;
  s.nodes[2].deps = {1};
  return s;
}

// R rounds of a program that makes an executable graph, launches it, waits for it, frees its
// output, destroys it and trims the pool: on the pool model directly, then as a recording through analyse_pools
// (every graph its own, as graphs of different structure would be).
void pool_rounds(stages& st, std::size_t rounds, std::uint64_t granule, std::uint64_t& reserved_end) {
  const skeleton s = round_skeleton();
  const pool_graph layout = pool_graph_of(s, granule, true);
  st.run("pool_model_rounds", [&] {
    pool_model model(granule);
    for (std::size_t r = 0; r < rounds; ++r) {
      const std::size_t k = model.add(layout);
      model.launch(k, 1, r + 1);
      model.synchronize(1);
      model.free_held(k);
      model.destroy(k);
      model.trim(0);
    }
    reserved_end = model.reserved(0);
  });
  recording rec;
  std::vector<skeleton> skeletons;
  st.run("recording_made", [&] {
    for (std::size_t r = 0; r < rounds; ++r) {
      recorded_graph g;
      g.name = "round " + std::to_string(r);
      g.flags.auto_free_on_launch = true;
      g.devices = {0};
      recorded_event e;
      e.t_us = static_cast<double>(4 * r);
      e.kind = "launch";
      e.cls = "first_launch";
      e.host_us = 1;
      e.stream = "stream 1";
      e.before = counters{};
      e.after = counters{granule, 2 * granule, 2 * granule, 2 * granule};
      g.events.push_back(e);
      rec.graphs.push_back(std::move(g));
      skeletons.push_back(s);
      const auto gi = static_cast<std::int64_t>(r);
      sequence_step launch;
      launch.op = "launch";
      launch.graph = gi;
      launch.stream = "stream 1";
      launch.event = 0;
      sequence_step sync;
      sync.op = "sync";
      sync.stream = "stream 1";
      sequence_step free_held;
      free_held.op = "free";
      free_held.graph = gi;
      free_held.stream = "stream 1";
      sequence_step destroy;
      destroy.op = "destroy";
      destroy.graph = gi;
      sequence_step trim;
      trim.op = "trim";
      trim.device = 0;
      rec.sequence.insert(rec.sequence.end(), {launch, sync, free_held, destroy, trim});
    }
  });
  st.run("analyse_pools", [&] { analyse_pools(rec, skeletons, granule); });
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t allocs = 5000, nodes = 100000;
  bool check = false;
  std::size_t wide = 0;     // 0: the lanes graph
  std::size_t layered = 0;  // 0: not the layered graph
  std::size_t rounds = 0;   // 0: no pool rounds
  double budget_ms = 2000, budget_mib = 1024;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--check") && i + 2 < argc) {
      check = true;
      budget_ms = std::stod(argv[++i]);
      budget_mib = std::stod(argv[++i]);
    } else if (!std::strcmp(argv[i], "--wide") && i + 1 < argc) {
      wide = std::stoul(argv[++i]);
    } else if (!std::strcmp(argv[i], "--layered") && i + 1 < argc) {
      layered = std::stoul(argv[++i]);
    } else if (!std::strcmp(argv[i], "--pool-rounds") && i + 1 < argc) {
      rounds = std::stoul(argv[++i]);
    } else {
      pos.emplace_back(argv[i]);
    }
  }
  if (!pos.empty()) allocs = std::stoul(pos[0]);
  if (pos.size() > 1) nodes = std::stoul(pos[1]);
  const std::uint64_t granule = 32 << 20;
  const char* shape = rounds ? "pool_rounds" : layered ? "layered" : wide ? "wide" : "lanes";
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string cmd;
  for (int i = 0; i < argc; ++i) cmd += (i ? " " : "") + std::string(i ? argv[i] : "gmem_model_scale_bench");
  std::cout << "{\n  \"benchmark\": \"model_scale\",\n  \"shape\": \"" << shape
            << "\",\n  \"commit\": \"" << GMEM_GIT_COMMIT << "\",\n  \"date\": \"" << date
            << "\",\n  \"command\": \"" << cmd << "\",\n  \"cpu\": \"" << cpu_model() << "\",\n";
  stages st;
  if (rounds) {
    const double before_mib = peak_mib();
    std::uint64_t reserved_end = 0;
    pool_rounds(st, rounds, granule, reserved_end);
    // The recording is made by the recorder as the program runs, not at exit: not counted.
    const double total = st.total() - st.ms[1].second;
    const double peak = peak_mib();
    std::cout << "  \"rounds\": " << rounds << ",\n  \"reserved_after_bytes\": " << reserved_end
              << ",\n  \"ms\": " << st.json() << ",\n  \"total_without_recording_ms\": " << total
              << ",\n  \"peak_rss_mib\": " << peak << ",\n  \"rss_before_mib\": " << before_mib << "\n}\n";
    if (check && (total > budget_ms || peak > budget_mib)) {
      std::cerr << "model_scale: over budget (" << total << " ms, " << peak << " MiB peak)\n";
      return 1;
    }
    return 0;
  }
  const skeleton made = layered ? make_layered(layered, 9) : wide ? make_wide(wide, 9) : make_graph(allocs, nodes, 9);
  const flat_graph flat = as_read(made);
  const double before_mib = peak_mib();
  graph_analysis a;
  std::vector<diagnostic> diagnostics;
  skeleton seen;
  reuse_bounds b;
  std::vector<candidate_change> cands;
  std::optional<plan_result> plan;
  st.run("analyse", [&] { a = analyse(flat, granule); });
  // What record mode does next at exit: the diagnostics, with a reservation high
  // enough above the bound to be reported.
  st.run("diagnose", [&] {
    runtime_facts facts;
    facts.graph_name = "scale";
    facts.reserved_high = 2 * a.lower_bound_rounded_bytes;
    diagnostics = diagnose(flat, a, facts);
  });
  st.run("skeleton_of", [&] { seen = skeleton_of(flat, a, "scale"); });
  st.run("bounds", [&] { b = bounds_of(seen, a, granule); });
  st.run("what_if_search", [&] {
    cands = candidate_changes(seen, a, granule);
    plan = plan_changes(seen, granule);  // the plan is part of the what-if search
  });
  // What a recording runs at exit for each graph (record/recording_report.cpp): the graph alone
  // (analysis, skeleton, its pool layout and the pool model, diagnostics), its lifetimes, and
  // the layout analyse_pools makes of its skeleton.
  graph_alone alone;
  std::uint64_t layout_slots = 0;
  if (layered) {
    st.run("study_alone", [&] { alone = study_alone(flat, "scale", granule, true); });
    st.run("lifetimes", [&] { (void)lifetimes(alone.flat, alone.analysis); });
    st.run("pool_graph_of", [&] {
      for (const auto& d : pool_graph_of(alone.shape, granule, true).devices) layout_slots += d.slots;
    });
  }
  const double total = st.total();
  const double peak = peak_mib();
  std::size_t memory_nodes = 0;
  for (const auto& n : seen.nodes) memory_nodes += n.kind != skeleton_kind::empty;
  std::cout << "  \"nodes\": " << seen.nodes.size()
            << ",\n  \"memory_nodes\": " << memory_nodes << ",\n  \"allocations\": " << a.allocations.size()
            << ",\n  \"late_edges_inferred\": " << seen.late_edges.size()
            << ",\n  \"diagnostics\": " << diagnostics.size() << ",\n  \"ms\": " << st.json()
            << ",\n  \"peak_rss_mib\": " << peak << ",\n  \"peak_rss_mib_after\": " << st.peaks_json()
            << ",\n  \"rss_before_mib\": " << before_mib
            << ",\n  \"lower_bound_bytes\": " << a.lower_bound_bytes
            << ",\n  \"lower_bound_set\": " << a.lower_bound_set.size()
            << ",\n  \"order_free_bytes\": " << b.order_free_bytes
            << ",\n  \"creation_order_bytes\": " << b.creation_order_bytes
            << ",\n  \"as_created_bytes\": " << b.as_created_bytes << ",\n  \"binding\": \"" << b.binding
            << "\",\n  \"candidates\": " << cands.size()
            << ",\n  \"plan_dependencies\": " << (plan ? plan->change.added_edges.size() : 0)
            << ",\n  \"plan_bytes\": " << (plan ? plan->change.predicted_bytes : 0);
  if (layered) {
    std::cout << ",\n  \"alone_reserved_bytes\": " << alone.reserved_bytes
              << ",\n  \"alone_diagnostics\": " << alone.diagnostics.size()
              << ",\n  \"layout_slots\": " << layout_slots;
  }
  std::cout << ",\n  \"target\": "
            << (layered ? "{\"ms\": 1000, \"mib\": 256}"
                : !wide ? "{\"ms\": 2000, \"mib\": 1024}"
                : wide <= 10000 ? "{\"ms\": 1000, \"mib\": 256}"
                                : "{\"ms\": 10000}")
            << "\n}\n";
  if (check && (total > budget_ms || peak > budget_mib)) {
    std::cerr << "model_scale: over budget (" << total << " ms, " << peak << " MiB peak)\n";
    return 1;
  }
  return 0;
}
