// Soak of frees outside the allocating graph: N graphs each allocate 4 KiB, launch once and
// leave the allocation to be freed in a stream (odd ones while the graph lives, even ones
// after it is destroyed, as an orphan). Measures what gmem's registry holds (live graphs,
// orphans, remembered frees) and the host's resident memory before, every 1000 graphs, and
// after, and writes them as JSON with the run's metadata. Exit status 1 when the registry grew
// (an orphan left behind, or more frees remembered than its bound), 2 on a usage mistake.
//
// usage: gmem_free_soak --out FILE [--graphs N] [--warmup N] [--commit SHA]
//                       [--command TEXT] [--driver-version TEXT]
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmem/gmem.hpp"
#include "soak_support.hpp"

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

struct sample {
  int graphs = 0;
  gmem::allocation_registry::counts registry;
  long rss = 0;
};

std::string to_json(const sample& s) {
  std::ostringstream o;
  o << "{\"graphs\": " << s.graphs << ", \"live_graphs\": " << s.registry.live_graphs
    << ", \"orphans\": " << s.registry.orphans
    << ", \"remembered_frees\": " << s.registry.remembered_frees << ", \"rss_kib\": " << s.rss
    << "}";
  return o.str();
}

sample take(int graphs) {
  return {graphs, gmem::allocation_registry::global().size(), gmem::soak::rss_kib()};
}

// One graph: alloc node, instantiate, launch, free in a stream (before or after destroying it).
void one_graph(int i, cudaStream_t s) {
  void* ptr = nullptr;
  {
    gmem::graph g("soak " + std::to_string(i));
    ptr = g.add_alloc({4096, 0}).ptr;
    gmem::graph_exec exec(g);
    exec.launch(s);
    if (i % 2) gmem::free_in_stream(ptr, s);
  }
  if (i % 2 == 0) gmem::free_in_stream(ptr, s);  // an orphan until now
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  gmem::soak::run_info run;
  int graphs = 10000, warmup = 500;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (gmem::soak::take_run_flag(i, argc, argv, run)) continue;
    if (a == "--out" && has_value) out = argv[++i];
    else if (a == "--graphs" && has_value) graphs = std::atoi(argv[++i]);
    else if (a == "--warmup" && has_value) warmup = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "gmem_free_soak: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (out.empty() || graphs <= 0 || warmup < 0) {
    std::fprintf(stderr, "usage: gmem_free_soak --out FILE [--graphs N] [--warmup N] "
                         "[--commit SHA] [--command TEXT] [--driver-version TEXT]\n");
    return 2;
  }
  try {
    gmem::soak::describe_device(run);
    gmem::stream s;
    for (int i = 0; i < warmup; ++i) one_graph(-1 - 2 * i, s);  // odd: freed while alive
    s.synchronize();
    const sample before = take(0);
    std::vector<sample> checkpoints;
    std::size_t max_orphans = before.registry.orphans;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < graphs; ++i) {
      one_graph(i, s);
      const auto n = gmem::allocation_registry::global().size();
      if (n.orphans > max_orphans) max_orphans = n.orphans;
      if ((i + 1) % 100 == 0) s.synchronize();
      if ((i + 1) % 1000 == 0) checkpoints.push_back(take(i + 1));
    }
    s.synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const sample after = take(graphs);
    const bool bounded =
        after.registry.orphans <= before.registry.orphans &&
        after.registry.live_graphs == before.registry.live_graphs &&
        after.registry.remembered_frees <= gmem::allocation_registry::remembered_frees_max;

    std::ostringstream j;
    j << "{\n  \"kind\": \"gmem soak: graph allocations freed in a stream\",\n"
      << "  \"commit\": " << quoted(run.commit) << ",\n"
      << "  \"date\": " << quoted(gmem::soak::utc_now()) << ",\n"
      << "  \"command\": " << quoted(run.command) << ",\n"
      << "  \"device\": " << quoted(run.device) << ",\n"
      << "  \"driver_version\": " << quoted(run.driver_version) << ",\n"
      << "  \"cuda_driver_api\": " << run.cuda_driver_api << ",\n"
      << "  \"cuda_runtime\": " << run.cuda_runtime << ",\n"
      << "  \"graphs\": " << graphs << ",\n  \"warmup_graphs\": " << warmup << ",\n"
      << "  \"allocation_bytes\": 4096,\n"
      << "  \"pattern\": \"each graph: alloc node, instantiate, launch, free_in_stream; odd "
         "graphs freed while alive, even ones after the graph was destroyed (orphans)\",\n"
      << "  \"remembered_frees_max\": " << gmem::allocation_registry::remembered_frees_max
      << ",\n  \"seconds\": " << seconds << ",\n  \"max_orphans_seen\": " << max_orphans
      << ",\n  \"before\": " << to_json(before) << ",\n  \"after\": " << to_json(after)
      << ",\n  \"checkpoints\": [";
    for (std::size_t i = 0; i < checkpoints.size(); ++i) {
      j << (i ? ",\n    " : "\n    ") << to_json(checkpoints[i]);
    }
    j << "\n  ],\n  \"bounded\": " << (bounded ? "true" : "false") << "\n}\n";
    const std::string tmp = out + ".tmp";
    {
      std::ofstream f(tmp);
      f << j.str();
      if (!f) throw std::runtime_error("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), out.c_str()) != 0) {
      throw std::runtime_error("cannot rename " + tmp + " to " + out);
    }
    std::fputs(j.str().c_str(), stdout);
    return bounded ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmem_free_soak: %s\n", e.what());
    return 2;
  }
}
