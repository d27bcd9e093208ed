// Host-only benchmark of what the recording session itself costs a serving warm-up:
// GRAPHS captures of one site (an MLP step as PyTorch's cudaMallocAsync backend captures it: three
// allocations, four kernels, two frees, the output held), each instantiated, then ROUNDS rounds of
// launches of every graph, then the report written at exit. The driver is a stand-in that answers
// at once (the real driver's graph read, counters and cuMemGetInfo cost what record_scale.py
// measures on a GPU): what is timed is the session and the recorder alone, per call.
// Prints one JSON object: microseconds per capture (begin and end), per instantiation (the
// recorder's part), per launch, and the report at exit, with the session's own record_cost.
// With --made N instead: N rounds of two graphs made, launched, destroyed and trimmed (what
// tests/record/corpus_client.cu's `rounds` does on a GPU), a long run's recording section at exit.
// Usage: gmem_record_cost_bench [GRAPHS] [ROUNDS] [--layers L] [--made N] [--keep REPORT]
//                               [--check US_PER_INSTANTIATION]
//        (exit 1 when the recorder's part of an instantiation is over US_PER_INSTANTIATION)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "record/session.hpp"

namespace {

using gmem::profiler::graph_model;
using gmem::profiler::model_node;
using gmem::profiler::node_kind;
using gmem::record::counters;

std::map<std::uint64_t, graph_model>& graphs() {
  static std::map<std::uint64_t, graph_model> g;
  return g;
}

counters& device_counters() {
  static counters c;
  return c;
}

double now_us() {
  static const auto t0 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// The step of tests/record/scale/warmup.py for batch `b` as the driver reads it back.
graph_model mlp_step(std::uint64_t b, std::uint64_t base) {
  graph_model m;
  const auto node = [&m](node_kind k, std::uint64_t address = 0, std::size_t bytes = 0) {
    model_node n;
    n.kind = k;
    n.address = address;
    n.bytes = bytes;
    m.nodes.push_back(n);
  };
  const std::size_t hidden = b * 512 * 4, out = b * 64 * 4;
  node(node_kind::mem_alloc, base, hidden);                // x @ w1
  node(node_kind::kernel);
  node(node_kind::mem_alloc, base + hidden, hidden);       // relu
  node(node_kind::kernel);
  node(node_kind::mem_free, base);
  node(node_kind::mem_alloc, base, out);                   // h @ w2: the output, held
  node(node_kind::kernel);
  node(node_kind::kernel);
  node(node_kind::mem_free, base + hidden);
  for (std::size_t i = 0; i + 1 < m.nodes.size(); ++i) m.edges.emplace_back(i, i + 1);
  return m;
}

// With --layers L: a decode step of L decoder layers as warmup.py --layers captures it, in its
// numbers (331 nodes for 4 layers on an H100): per layer 27 operations, each allocating its
// output, running its kernel and freeing the output of two operations before; the step's output
// held.
// A graph of corpus_client's `rounds`: an allocation, a kernel that touches it, its free.
graph_model working_set(std::uint64_t address, std::size_t bytes) {
  graph_model m;
  for (node_kind k : {node_kind::mem_alloc, node_kind::kernel, node_kind::mem_free}) {
    model_node n;
    n.kind = k;
    n.address = k == node_kind::kernel ? 0 : address;
    n.bytes = k == node_kind::mem_alloc ? bytes : 0;
    m.nodes.push_back(n);
  }
  m.edges = {{0, 1}, {1, 2}};
  return m;
}

graph_model decoder_step(std::uint64_t b, std::uint64_t base, std::size_t layers) {
  graph_model m;
  std::vector<std::uint64_t> live;  // the outputs not yet freed, oldest first
  std::uint64_t next = base;
  for (std::size_t op = 0; op < 27 * layers; ++op) {
    model_node a;
    a.kind = node_kind::mem_alloc;
    a.address = next;
    a.bytes = b * 256 * 4 * (1 + op % 3);
    next += (a.bytes + 511) / 512 * 512;
    m.nodes.push_back(a);
    live.push_back(a.address);
    model_node k;
    k.kind = node_kind::kernel;
    m.nodes.push_back(k);
    if (live.size() > 2) {
      model_node f;
      f.kind = node_kind::mem_free;
      f.address = live.front();
      live.erase(live.begin());
      m.nodes.push_back(f);
    }
  }
  for (std::size_t i = 0; i + 1 < m.nodes.size(); ++i) m.edges.emplace_back(i, i + 1);
  return m;
}

gmem::record::driver_api stand_in() {
  gmem::record::driver_api d;
  d.read_counters = [](int) -> std::optional<counters> { return device_counters(); };
  d.read_graph = [](std::uint64_t graph, graph_model& m, bool& has_alloc) {
    const auto it = graphs().find(graph);
    if (it == graphs().end()) return false;
    m = it->second;
    has_alloc = true;
    return true;
  };
  d.current_device = [] { return 0; };
  d.stream_blocking = [](std::uint64_t) { return std::optional<bool>(false); };
  d.call_stack = [] {
    return std::vector<std::string>{"libtorch_cuda.so!at::cuda::CUDAGraph::capture_end()+0x4c",
                                    "libtorch_python.so!pybind11::cpp_function::dispatcher+0x3e1",
                                    "python3.12!_PyEval_EvalFrameDefault+0x7a1", "python3.12!main+0x23"};
  };
  d.now_us = now_us;
  d.describe = [](int device, gmem::profiler::environment& env, std::uint64_t& granularity) {
    env.device_name = "stand-in";
    env.device_index = device;
    granularity = env.granularity_bytes = 32ull << 20;
    return true;
  };
  d.is_host_pointer = [](std::uint64_t) { return true; };
  d.memory_used = [](int& device, std::uint64_t& used) {
    device = 0;
    used = 1ull << 30;
    return true;
  };
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 2000, rounds = 3, layers = 0, made = 0;
  double check_us = -1;
  std::string keep;  // where the report is copied before its folder is removed
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--check") == 0 && i + 1 < argc) {
      check_us = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--keep") == 0 && i + 1 < argc) {
      keep = argv[++i];
    } else if (std::strcmp(argv[i], "--layers") == 0 && i + 1 < argc) {
      layers = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--made") == 0 && i + 1 < argc) {
      made = std::strtoull(argv[++i], nullptr, 10);
    } else {
      positional.emplace_back(argv[i]);
    }
  }
  if (!positional.empty()) n = std::strtoull(positional[0].c_str(), nullptr, 10);
  if (positional.size() > 1) rounds = std::strtoull(positional[1].c_str(), nullptr, 10);
  const auto dir = std::filesystem::temp_directory_path() / ("gmem-record-cost-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "record.json").string();
  gmem::record::session s(stand_in(), gmem::record::name_source::stream, out);
  const std::uint64_t stream = 0x5000;
  const double t0 = now_us();
  if (made) {
    n = 2 * made;
    rounds = 0;
  }
  for (std::size_t r = 0; r < made; ++r) {
    std::uint64_t execs[2] = {};
    for (std::uint64_t g = 0; g < 2; ++g) {
      const std::uint64_t graph = 0x10000 + 2 * r + g, exec = 0x90000 + 2 * r + g;
      s.capture_begin(stream);
      s.capture_began(stream, true);
      graphs()[graph] = working_set(1ull << 32, (g + 1) * (2ull << 20));
      s.capture_end(stream, graph);
      s.instantiate_enter(graph);
      s.instantiate_exit(exec, graph, "", gmem::profiler::instantiate_flags{}, std::nullopt);
      s.graph_destroy(graph);
      graphs().erase(graph);
      execs[g] = exec;
    }
    for (std::uint64_t exec : execs) {
      s.launch_enter(exec, stream);
      device_counters().reserved_current += 32ull << 20;  // trimmed before: each first launch maps
      device_counters().reserved_high = std::max(device_counters().reserved_high, device_counters().reserved_current);
      s.launch_exit(exec, "");
    }
    s.stream_synchronized(stream);
    for (std::uint64_t exec : execs) s.exec_destroy(exec);
    s.trim_enter(0);
    device_counters().reserved_current = 0;
    s.trim_exit(0);
  }
  for (std::size_t k = 0; k < n && !made; ++k) {
    const std::uint64_t graph = 0x10000 + k, exec = 0x90000 + k;
    s.capture_begin(stream);
    s.capture_began(stream, true);
    graphs()[graph] = layers ? decoder_step(n - k, (k + 1) << 32, layers) : mlp_step(n - k, (k + 1) << 32);
    s.capture_end(stream, graph);
    s.instantiate_enter(graph);
    s.instantiate_exit(exec, graph, "", gmem::profiler::instantiate_flags{}, std::nullopt);
  }
  const double t1 = now_us();
  for (std::size_t r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint64_t exec = 0x90000 + k;
      s.launch_enter(exec, stream);
      if (r == 0) device_counters().reserved_current += 32ull << 20;  // each first launch maps
      device_counters().reserved_high = device_counters().reserved_current;
      s.launch_exit(exec, "");
    }
  }
  s.device_synchronized();
  const double t2 = now_us();
  std::string why;
  const bool written = s.write_at_exit(&why, 10);
  const double t3 = now_us();
  double instantiate_us = 0;
  std::printf("{\"graphs\": %zu, \"made_rounds\": %zu, \"layers\": %zu, \"nodes\": %zu, \"rounds\": %zu, \"captures_us_per_graph\": %.2f, \"launch_us\": %.3f, "
              "\"exit_s\": %.3f, \"report_bytes\": %llu, \"record_cost_us_per_call\": {",
              n, made, layers, made ? std::size_t{3} : graphs().begin()->second.nodes.size(), rounds, (t1 - t0) / static_cast<double>(n), rounds ? (t2 - t1) / static_cast<double>(n * rounds) : 0.0,
              (t3 - t2) / 1e6,
              static_cast<unsigned long long>(written ? std::filesystem::file_size(out) : 0));
  const auto cost = s.cost();
  for (std::size_t i = 0; i < cost.size(); ++i) {
    std::printf("%s\"%s\": %.3f", i ? ", " : "", cost[i].part.c_str(), cost[i].us / static_cast<double>(cost[i].calls));
    if (cost[i].part.rfind("instantiate", 0) == 0) instantiate_us += cost[i].us / static_cast<double>(cost[i].calls);
  }
  const gmem::record::end_times& end = s.end();
  std::printf("}, \"instantiate_us\": %.3f, \"exit_parts_s\": {\"last_readings\": %.3f, \"analysis\": %.3f, \"threads\": %u, "
              "\"text\": %.3f, \"read_back\": %.3f, \"write\": %.3f}%s}\n",
              instantiate_us, end.finish_s, end.analysis_s, end.threads, end.text_s, end.read_back_s, end.write_s,
              written ? "" : (", \"error\": \"" + why + "\"").c_str());
  std::error_code ec;
  if (written && !keep.empty()) std::filesystem::copy_file(out, keep, std::filesystem::copy_options::overwrite_existing, ec);
  std::filesystem::remove_all(dir, ec);
  if (!written) return 2;
  if (check_us >= 0 && instantiate_us > check_us) {
    std::fprintf(stderr, "record_cost_bench: the recorder's part of an instantiation is %.1f us, over %.1f us\n",
                 instantiate_us, check_us);
    return 1;
  }
  return 0;
}
