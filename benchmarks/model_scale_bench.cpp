// Host-only scale benchmark of issue 9: analysis, diagnostics, both bounds and the what-if search
// on a graph of 10,000 memory nodes (5,000 allocations and their frees) in 100,000 nodes, within
// 2 s of host time and 1 GiB. Prints one JSON object (time per stage, peak resident memory, the
// machine).
// Usage: gmem_model_scale_bench [ALLOCS] [NODES] [--wide K] [--check MS MIB]  (exit 1 over MS or MIB)
// --wide K (issue 20): K independent alloc -> empty -> free branches instead of the lanes graph,
// the widest shape there is: K allocations all live together, every pair of them a candidate.
// Targets: lanes 2000 ms and 1024 MiB (issue 9); wide 10,000 in 1000 ms and 256 MiB, wide 50,000
// in 10,000 ms (issue 20).
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/diagnostics.hpp"
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

}  // namespace

int main(int argc, char** argv) {
  std::size_t allocs = 5000, nodes = 100000;
  bool check = false;
  std::size_t wide = 0;  // 0: the lanes graph
  double budget_ms = 2000, budget_mib = 1024;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--check") && i + 2 < argc) {
      check = true;
      budget_ms = std::stod(argv[++i]);
      budget_mib = std::stod(argv[++i]);
    } else if (!std::strcmp(argv[i], "--wide") && i + 1 < argc) {
      wide = std::stoul(argv[++i]);
    } else {
      pos.emplace_back(argv[i]);
    }
  }
  if (!pos.empty()) allocs = std::stoul(pos[0]);
  if (pos.size() > 1) nodes = std::stoul(pos[1]);
  const std::uint64_t granule = 32 << 20;
  const skeleton made = wide ? make_wide(wide, 9) : make_graph(allocs, nodes, 9);
  const flat_graph flat = as_read(made);
  const double before_mib = peak_mib();
  using clock = std::chrono::steady_clock;
  const auto ms = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const auto t0 = clock::now();
  const graph_analysis a = analyse(flat, granule);
  const auto t0d = clock::now();
  // What record mode does next at exit (issue 20): the diagnostics, with a reservation high
  // enough above the bound to be reported.
  runtime_facts facts;
  facts.graph_name = "scale";
  facts.reserved_high = 2 * a.lower_bound_rounded_bytes;
  const std::vector<diagnostic> diagnostics = diagnose(flat, a, facts);
  const auto t1 = clock::now();
  const skeleton seen = skeleton_of(flat, a, "scale");
  const auto t2 = clock::now();
  const reuse_bounds b = bounds_of(seen, a, granule);
  const auto t3 = clock::now();
  const auto cands = candidate_changes(seen, a, granule);
  const auto plan = plan_changes(seen, granule);  // the plan is part of the what-if search
  const auto t4 = clock::now();
  const double total = ms(t0, t4);
  const double peak = peak_mib();
  std::size_t memory_nodes = 0;
  for (const auto& n : seen.nodes) memory_nodes += n.kind != skeleton_kind::empty;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string cmd;
  for (int i = 0; i < argc; ++i) cmd += (i ? " " : "") + std::string(i ? argv[i] : "gmem_model_scale_bench");
  std::cout << "{\n  \"benchmark\": \"model_scale\",\n  \"shape\": \"" << (wide ? "wide" : "lanes")
            << "\",\n  \"commit\": \"" << GMEM_GIT_COMMIT
            << "\",\n  \"date\": \"" << date << "\",\n  \"command\": \"" << cmd
            << "\",\n  \"cpu\": \"" << cpu_model() << "\",\n  \"nodes\": " << seen.nodes.size()
            << ",\n  \"memory_nodes\": " << memory_nodes << ",\n  \"allocations\": " << a.allocations.size()
            << ",\n  \"late_edges_inferred\": " << seen.late_edges.size()
            << ",\n  \"diagnostics\": " << diagnostics.size()
            << ",\n  \"ms\": {\"analyse\": " << ms(t0, t0d) << ", \"diagnose\": " << ms(t0d, t1)
            << ", \"skeleton_of\": " << ms(t1, t2)
            << ", \"bounds\": " << ms(t2, t3) << ", \"what_if_search\": " << ms(t3, t4)
            << ", \"total\": " << total << "},\n  \"peak_rss_mib\": " << peak
            << ",\n  \"rss_before_mib\": " << before_mib
            << ",\n  \"order_free_bytes\": " << b.order_free_bytes
            << ",\n  \"creation_order_bytes\": " << b.creation_order_bytes
            << ",\n  \"as_created_bytes\": " << b.as_created_bytes << ",\n  \"binding\": \"" << b.binding
            << "\",\n  \"candidates\": " << cands.size()
            << ",\n  \"plan_dependencies\": " << (plan ? plan->change.added_edges.size() : 0)
            << ",\n  \"plan_bytes\": " << (plan ? plan->change.predicted_bytes : 0) << ",\n  \"target\": "
            << (!wide            ? "{\"ms\": 2000, \"mib\": 1024}"
                : wide <= 10000 ? "{\"ms\": 1000, \"mib\": 256}"
                                 : "{\"ms\": 10000}")
            << "\n}\n";
  if (check && (total > budget_ms || peak > budget_mib)) {
    std::cerr << "model_scale: over budget (" << total << " ms, " << peak << " MiB peak)\n";
    return 1;
  }
  return 0;
}
