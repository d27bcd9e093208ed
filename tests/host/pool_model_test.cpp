// The pool model against the driver, case by case: every step of every case that
// tools/pool_cases.sh ran on an H100 (reports/gpu-runs/2026-11-23-H100-issue24-pool-probe.txt)
// is replayed through the model, which must give the reservation the driver had after it, the
// used memory, and whether each launch or upload mapped memory (its host time says so). The cases are read from the committed output itself (each case line holds its
// graphs and its program), so a new case there is tested without touching this file.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmem/profiler/pool_model.hpp"

namespace gmem::profiler {
namespace {

constexpr std::uint64_t MiB = 1ull << 20;
constexpr std::uint64_t granule = 32 * MiB;
const char* probe_output = GMEM_SOURCE_DIR "/reports/gpu-runs/2026-11-23-H100-issue24-pool-probe.txt";

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The probe's graph: alloc nodes in the order given (no dependencies), an empty node after all
// of them (the probe's kernel or empty node), free nodes of the working allocations after it.
pool_graph probe_graph(const std::string& def) {
  const std::size_t eq = def.find('=');
  skeleton s;
  s.name = def.substr(0, def.find_first_of("!:="));
  std::vector<std::size_t> allocs, working;
  std::string items = def.substr(eq + 1);
  for (std::size_t at = 0; at < items.size();) {
    std::size_t comma = items.find(',', at);
    if (comma == std::string::npos) comma = items.size();
    const std::string item = items.substr(at, comma - at);
    skeleton_node n;
    n.kind = skeleton_kind::alloc;
    n.bytes = static_cast<std::size_t>(std::stod(item.substr(1)) * MiB);
    allocs.push_back(s.nodes.size());
    if (item[0] == 'w') working.push_back(s.nodes.size());
    s.nodes.push_back(n);
    at = comma + 1;
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
  return pool_graph_of(s, granule, def.find('!') < eq);
}

struct probe_step {
  std::string token;
  std::uint64_t reserved = 0, used = 0;
  double host_us = 0;
};
struct probe_case {
  std::string name;
  std::vector<std::string> graphs, program;
  std::vector<probe_step> steps;
};

std::uint64_t field(const std::string& line, const std::string& key) {
  const std::size_t at = line.find(" " + key + "=");
  return static_cast<std::uint64_t>(std::stod(line.substr(at + key.size() + 2))) * MiB;
}

std::vector<probe_case> read_cases() {
  std::ifstream in(probe_output);
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
      cases.back().steps.push_back({w[2], field(line, "rc"), field(line, "uc"), std::stod(line.substr(h + 8))});
    }
  }
  return cases;
}

TEST(PoolModel, EveryStepOfTheProbeCasesMeasuredOnTheDriver) {
  const std::vector<probe_case> cases = read_cases();
  ASSERT_EQ(cases.size(), 18u) << "the committed probe output " << probe_output;
  std::size_t steps = 0, calls = 0;
  for (const probe_case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_EQ(c.steps.size(), c.program.size());
    pool_model m(granule);
    for (const std::string& def : c.graphs) m.add(probe_graph(def));
    for (std::size_t i = 0; i < c.program.size(); ++i) {
      const std::string& t = c.program[i];
      ASSERT_EQ(t, c.steps[i].token);
      const std::size_t at = t.find('@');
      const std::uint64_t stream = at == std::string::npos ? 0 : std::stoull(t.substr(at + 1));
      const std::size_t g = t.size() > 1 ? std::stoul(t.substr(1)) : 0;
      switch (t[0]) {
        case 'L':
        case 'U': {
          const pool_step r = t[0] == 'L' ? m.launch(g, stream) : m.upload(g, stream);
          EXPECT_FALSE(r.refused) << t;
          // Whether the call mapped memory, from its host time: in this file steady launches
          // took 0.7 to 14.4 us, calls that mapped a granule or more 18.9 us and up.
          const bool mapped = c.steps[i].host_us >= 15.0;
          EXPECT_EQ(r.mapped_slots > 0, mapped)
              << "step " << i + 1 << " " << t << ": the model maps " << r.mapped_slots
              << " slot(s), the driver took " << c.steps[i].host_us << " us";
          ++calls;
          break;
        }
        case 'F': m.free_held(g); break;
        case 'D': m.synchronize(); m.destroy(g); break;
        case 'S': m.synchronize(); break;
        case 'T': m.synchronize(); m.trim(0); break;
        default: FAIL() << "unknown step " << t;
      }
      EXPECT_EQ(m.reserved(0) / MiB, c.steps[i].reserved / MiB) << "after step " << i + 1 << " " << t;
      EXPECT_EQ(m.used(0) / MiB, c.steps[i].used / MiB) << "used, after step " << i + 1 << " " << t;
      ++steps;
    }
  }
  EXPECT_GT(steps, 200u);
  EXPECT_GT(calls, 150u);
}

}  // namespace
}  // namespace gmem::profiler
