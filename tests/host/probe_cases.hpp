#pragma once
// The pool probe's committed output (tools/pool_probe.cu, tools/pool_cases.sh, run on an H100):
// its cases, each with its graphs, its program and what the driver did after every step. Read
// by the pool model's and the recorder's host tests.

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmem/profiler/graph_model.hpp"
#include "gmem/profiler/skeleton.hpp"

namespace gmem::profiler::probe {

constexpr std::uint64_t MiB = 1ull << 20;
constexpr std::uint64_t granule = 32 * MiB;
inline const char* probe_output = GMEM_SOURCE_DIR "/reports/gpu-runs/2026-11-23-H100-pool-probe.txt";
/// The same cases run on an H200 (the same driver): every reservation and used figure equal.
inline const char* probe_output_h200 = GMEM_SOURCE_DIR "/reports/gpu-runs/2026-11-23-H200-pool-probe.txt";
/// Completions without a device synchronize, and back-to-back launches (tools/completion_cases.sh).
inline const char* completion_output = GMEM_SOURCE_DIR "/reports/gpu-runs/2026-11-25-H100-completion-probe.txt";

inline std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

/// The items of a graph spec "gK[!][:tMS]=w512,o1": (working?, bytes).
inline std::vector<std::pair<bool, std::uint64_t>> items_of(const std::string& def) {
  std::vector<std::pair<bool, std::uint64_t>> out;
  const std::string items = def.substr(def.find('=') + 1);
  for (std::size_t at = 0; at < items.size();) {
    std::size_t comma = items.find(',', at);
    if (comma == std::string::npos) comma = items.size();
    const std::string item = items.substr(at, comma - at);
    out.emplace_back(item[0] == 'w', static_cast<std::uint64_t>(std::stod(item.substr(1)) * MiB));
    at = comma + 1;
  }
  return out;
}

inline bool auto_free(const std::string& def) { return def.find('!') < def.find('='); }
inline std::string name_of(const std::string& def) { return def.substr(0, def.find_first_of("!:=")); }

/// The probe's graph as a skeleton: alloc nodes in the order given (no dependencies), an empty
/// node after all of them (the probe's kernel or empty node), frees of the working ones after it.
inline skeleton skeleton_of_spec(const std::string& def) {
  skeleton s;
  s.name = name_of(def);
  std::vector<std::size_t> allocs, working;
  for (const auto& [w, bytes] : items_of(def)) {
    skeleton_node n;
    n.kind = skeleton_kind::alloc;
    n.bytes = bytes;
    allocs.push_back(s.nodes.size());
    if (w) working.push_back(s.nodes.size());
    s.nodes.push_back(n);
  }
  skeleton_node body;
  body.deps = allocs;
  const std::size_t b = s.nodes.size();
  s.nodes.push_back(body);
  for (std::size_t w : working) {
    skeleton_node f;
    f.kind = skeleton_kind::free;
    f.frees = w;
    f.deps = {b};
    s.nodes.push_back(f);
  }
  return s;
}

/// The same graph as the driver reads it back (a graph model), its allocations at `base`
/// onwards, one after the other, as the driver places allocations that are live together.
inline graph_model model_of_spec(const std::string& def, std::uint64_t base) {
  graph_model g;
  g.name = name_of(def);
  std::vector<std::uint64_t> addresses;
  std::vector<bool> working;
  for (const auto& [w, bytes] : items_of(def)) {
    model_node n;
    n.kind = node_kind::mem_alloc;
    n.address = base;
    n.bytes = bytes;
    addresses.push_back(base);
    working.push_back(w);
    base += bytes;
    g.nodes.push_back(n);
  }
  const std::size_t body = g.nodes.size();
  g.nodes.push_back(model_node{node_kind::kernel, 0, 0, 0, {}, std::nullopt});
  for (std::size_t i = 0; i < body; ++i) g.edges.emplace_back(i, body);
  for (std::size_t i = 0; i < body; ++i) {
    if (!working[i]) continue;
    g.edges.emplace_back(body, g.nodes.size());
    g.nodes.push_back(model_node{node_kind::mem_free, addresses[i], 0, 0, {}, std::nullopt});
  }
  return g;
}

struct probe_step {
  std::string token;
  std::uint64_t reserved = 0, used = 0, reserved_high = 0, used_high = 0;
  double host_us = 0;
};
struct probe_case {
  std::string name;
  std::vector<std::string> graphs, program;
  std::vector<probe_step> steps;
};

inline std::uint64_t field(const std::string& line, const std::string& key) {
  const std::size_t at = line.find(" " + key + "=");
  return static_cast<std::uint64_t>(std::stod(line.substr(at + key.size() + 2))) * MiB;
}

/// Every case of a committed output (the H100's by default), in order.
inline std::vector<probe_case> read_cases(const char* path = probe_output) {
  std::ifstream in(path);
  std::vector<probe_case> cases;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("case ", 0) == 0) {
      const std::size_t bar1 = line.find(" | ");
      const std::size_t bar2 = line.find(" | ", bar1 + 3);
      probe_case c;
      c.name = line.substr(5, bar1 - 5);
      c.graphs = words(line.substr(bar1 + 3, bar2 - bar1 - 3));
      c.program = words(line.substr(bar2 + 3));
      cases.push_back(std::move(c));
    } else if (line.rfind("step ", 0) == 0 && !cases.empty()) {
      const auto w = words(line);
      if (w[1] == "0") continue;  // instantiated: nothing mapped yet
      const std::size_t h = line.find("host_us=");
      cases.back().steps.push_back({w[2], field(line, "rc"), field(line, "uc"), field(line, "rh"),
                                    field(line, "uh"), std::stod(line.substr(h + 8))});
    }
  }
  return cases;
}

}  // namespace gmem::profiler::probe
