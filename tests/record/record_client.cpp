// Record-mode client 4: a C++ program built on gmem's allocator layer, run under
// `gmemprof record`. It reads the graph memory counters itself (cudaDeviceGetGraphMemAttribute)
// right after the calls the recording classifies, and writes them for check_record.py.
//   record_client points SELF_JSON   captured graph (first launch, steady, trim + remap, other
//                                    stream) and an explicit-node graph uploaded at instantiation
//   record_client multi SELF_JSON    (two GPUs) a graph on device 1 and a peer-mapped one on 0
//   record_client bench N            N launches of a captured graph with memory nodes; prints
//                                    the wall time of the loop in microseconds
//   record_client serving SELF_JSON [largest|smallest] [extra] six graphs of 512 +
//                                    1 ... 16 + 6 MiB (working memory freed inside, an output
//                                    held), AutoFreeOnLaunch, one stream, three rounds; reads the
//                                    counters around every launch (extra: a seventh graph that
//                                    only holds an output, as a regression to catch)
//   record_client failed SELF_JSON a graph with an output, no AutoFreeOnLaunch,
//                                    launched twice: the driver refuses the second launch
//   record_client segv SELF_JSON a program with its own SIGSEGV handler
//                                    (SA_SIGINFO) that faults: its handler must see the fault
//                                    address; exits 42 when it does, 43 when not
//   record_client soak SELF_JSON L G L launches of one graph, then G graphs created,
//                                    launched and destroyed; writes the process's VmRSS at 10%
//                                    steps of the graphs
//   record_client both SELF_JSON     (two GPUs) a graph that allocates on device 0 and on
//                                    device 1 (an output held there), launched twice; reads
//                                    both devices' counters around its first launch
//   record_client threads SELF_JSON four threads, each a graph of 64, 128, 192 or 256
//                                    MiB plus a 1 MiB output in its own stream, launched at once,
//                                    then 50 more times each
#include <cuda_runtime_api.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nvtx3/nvToolsExt.h>

#include "gmem/gmem.hpp"

namespace {

struct point {
  std::string label, event;
  int graph;
  int device;
  std::string expect_devices;  ///< JSON list the recorded graph's devices must equal, or empty
  unsigned long long v[4];
};
std::vector<point> points;

void mark(const std::string& label, const std::string& event, int graph, int device = 0,
          const std::string& expect_devices = "") {
  point p{label, event, graph, device, expect_devices, {}};
  const cudaGraphMemAttributeType attrs[4] = {
      cudaGraphMemAttrUsedMemCurrent, cudaGraphMemAttrUsedMemHigh,
      cudaGraphMemAttrReservedMemCurrent, cudaGraphMemAttrReservedMemHigh};
  for (int i = 0; i < 4; ++i) {
    if (cudaDeviceGetGraphMemAttribute(device, attrs[i], &p.v[i]) != cudaSuccess) std::abort();
  }
  points.push_back(p);
}

gmem::graph captured(cudaStream_t s, std::size_t bytes) {
  gmem::capture cap(s, "captured");
  void* a = cap.malloc_async(bytes);
  cudaMemsetAsync(a, 1, bytes, s);
  cap.free_async(a);
  void* b = cap.malloc_async(bytes);
  cudaMemsetAsync(b, 2, bytes, s);
  cap.free_async(b);
  return cap.end();
}

std::uint64_t reserved_current(int device = 0) {
  std::uint64_t v = 0;
  if (cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrReservedMemCurrent, &v) != cudaSuccess) std::abort();
  return v;
}
std::uint64_t reserved_high(int device = 0) {
  std::uint64_t v = 0;
  if (cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrReservedMemHigh, &v) != cudaSuccess) std::abort();
  return v;
}

// A graph of working memory (freed inside it) and an output it leaves allocated.
gmem::graph work_and_output(const std::string& name, std::size_t work, std::size_t output) {
  gmem::graph g(name);
  auto w = g.add_alloc({work, 0});
  auto o = g.add_alloc({output, 0});
  auto t = g.add_memset({w.node, o.node}, w.ptr, 1, 1 << 20);
  g.add_memset({t}, o.ptr, 2, output);
  g.add_free(w.ptr, {t});
  return g;
}

// The C++ serving warm-up; writes what it read itself around every launch, in the form
// tests/record/check_pool.py compares with the recording.
int serving(const std::string& path, bool smallest_first, bool extra) {
  std::vector<std::string> names;
  std::vector<gmem::graph> graphs;
  for (int i = 0; i < 6; ++i) {
    names.push_back("serving " + std::to_string(512 >> i) + " MiB");
    graphs.push_back(work_and_output(names.back(), (std::size_t{512} >> i) << 20, std::size_t(i + 1) << 20));
  }
  if (extra) {
    names.push_back("serving extra output");
    gmem::graph g(names.back());
    auto o = g.add_alloc({std::size_t{1} << 20, 0});
    g.add_memset({o.node}, o.ptr, 3, 1 << 20);
    graphs.push_back(std::move(g));
  }
  std::vector<std::size_t> order(graphs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = smallest_first ? order.size() - 1 - i : i;
  gmem::instantiate_options o;
  o.auto_free_on_launch = true;
  std::vector<std::unique_ptr<gmem::graph_exec>> execs(graphs.size());
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    // Named by the NVTX range around its instantiation (record names graphs after it).
    nvtxRangePushA(names[i].c_str());
    execs[i] = std::make_unique<gmem::graph_exec>(graphs[i], o);
    nvtxRangePop();
  }
  gmem::stream s;
  std::vector<std::uint64_t> before_first(graphs.size()), after_first(graphs.size()), growth(graphs.size());
  std::vector<int> launches(graphs.size(), 0);
  std::string log;
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i : order) {
      const std::uint64_t before = reserved_current();
      execs[i]->launch(s);
      const std::uint64_t after = reserved_current();
      if (launches[i]++ == 0) {
        before_first[i] = before;
        after_first[i] = after;
      }
      if (after > before) growth[i] += after - before;
      log += std::string(log.empty() ? "" : ", ") + "[\"" + names[i] + "\", " + std::to_string(before) +
             ", " + std::to_string(after) + "]";
    }
    s.synchronize();
  }
  std::ofstream f(path);
  f << "{\"client\": \"cpp_serving\", \"order\": \"" << (smallest_first ? "smallest" : "largest")
    << "\", \"graphs\": [";
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    f << (i ? ",\n" : "\n") << "{\"name\": \"" << names[i] << "\", \"reserved_before\": " << before_first[i]
      << ", \"reserved_after\": " << after_first[i] << ", \"growth_total\": " << growth[i]
      << ", \"replays\": " << launches[i] << "}";
  }
  f << "],\n\"final_reserved_high\": " << reserved_high() << ", \"final_reserved_current\": "
    << reserved_current() << ",\n\"launches\": [" << log << "]}\n";
  std::printf("cpp serving done: reserved high %llu MiB\n", static_cast<unsigned long long>(reserved_high() >> 20));
  return 0;
}

// The four threads: each thread's first launch maps memory at the same moment as the
// others', so no thread's counter window holds its own growth alone.
int threads(const std::string& path) {
  constexpr int n = 4;
  std::vector<std::unique_ptr<gmem::graph>> graphs;
  std::vector<std::unique_ptr<gmem::graph_exec>> execs;
  std::vector<std::unique_ptr<gmem::stream>> streams;
  for (int i = 0; i < n; ++i) {
    graphs.push_back(std::make_unique<gmem::graph>(
        work_and_output("thread " + std::to_string(i), std::size_t(64 * (i + 1)) << 20, std::size_t{1} << 20)));
    gmem::instantiate_options o;
    o.auto_free_on_launch = true;
    execs.push_back(std::make_unique<gmem::graph_exec>(*graphs.back(), o));
    streams.push_back(std::make_unique<gmem::stream>());
  }
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int i = 0; i < n; ++i) {
    pool.emplace_back([&, i] {
      ++ready;
      while (ready.load() < n) {
      }
      for (int k = 0; k < 51; ++k) execs[i]->launch(*streams[i]);
      streams[i]->synchronize();
    });
  }
  for (auto& t : pool) t.join();
  std::ofstream f(path);
  f << "{\"client\": \"cpp_threads\", \"final_reserved_high\": " << reserved_high()
    << ", \"final_reserved_current\": " << reserved_current() << "}\n";
  std::printf("cpp threads done: reserved high %llu MiB\n", static_cast<unsigned long long>(reserved_high() >> 20));
  return 0;
}

// The driver refuses a relaunch of a graph whose previous launch's allocation is still live
// (no AutoFreeOnLaunch): record must record it as a failed call, not a launch.
int failed(const std::string& path) {
  gmem::graph g = work_and_output("refused relaunch", 64 << 20, 8 << 20);
  gmem::graph_exec exec(g);
  gmem::stream s;
  exec.launch(s);
  s.synchronize();
  cudaGraphExec_t raw = exec.get();
  const cudaError_t second = cudaGraphLaunch(raw, s.get());
  (void)cudaGetLastError();
  std::ofstream(path) << "{\"client\": \"cpp_failed\", \"second_launch\": \"" << cudaGetErrorName(second) << "\"}\n";
  std::printf("second launch: %s\n", cudaGetErrorName(second));
  return second == cudaSuccess ? 1 : 0;
}

// An address no mapping holds, read through a volatile pointer the compiler cannot see through.
volatile std::uintptr_t fault_address = 16;
volatile int* fault_at = nullptr;
void on_segv(int, siginfo_t* info, void*) { _exit(info && info->si_addr == (void*)fault_at ? 42 : 43); }

// A program with its own crash handler: recording must pass it the original siginfo.
int segv() {
  gmem::graph g = work_and_output("before the crash", 32 << 20, 1 << 20);
  gmem::instantiate_options o;
  o.auto_free_on_launch = true;
  gmem::graph_exec exec(g, o);
  gmem::stream s;
  exec.launch(s);
  s.synchronize();
  struct sigaction sa {};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
  fault_at = reinterpret_cast<volatile int*>(fault_address);
  return *fault_at;  // faults
}

// A graph whose memory is on two devices: each device's pool grows by its own part.
int both(const std::string& path) {
  gmem::graph g("on two devices");
  auto a0 = g.add_alloc({std::size_t{64} << 20, 0});
  auto a1 = g.add_alloc({std::size_t{96} << 20, 1});
  auto o1 = g.add_alloc({std::size_t{8} << 20, 1});
  auto k = g.add_memset({a0.node, a1.node, o1.node}, a0.ptr, 1, 1 << 20);
  g.add_free(a0.ptr, {k});
  g.add_free(a1.ptr, {k});
  gmem::instantiate_options o;
  o.auto_free_on_launch = true;
  gmem::graph_exec exec(g, o);
  gmem::stream s;
  const std::uint64_t b0 = reserved_current(0), b1 = reserved_current(1);
  exec.launch(s);
  const std::uint64_t a0r = reserved_current(0), a1r = reserved_current(1);
  exec.launch(s);
  s.synchronize();
  std::ofstream(path) << "{\"client\": \"cpp_both\", \"graph\": \"on two devices\", \"devices\": ["
                      << "{\"device\": 0, \"reserved_before\": " << b0 << ", \"reserved_after\": " << a0r
                      << ", \"final_reserved_high\": " << reserved_high(0) << "}, {\"device\": 1, \"reserved_before\": "
                      << b1 << ", \"reserved_after\": " << a1r << ", \"final_reserved_high\": " << reserved_high(1)
                      << "}]}\n";
  std::printf("both: device 0 +%llu MiB, device 1 +%llu MiB\n", static_cast<unsigned long long>((a0r - b0) >> 20),
              static_cast<unsigned long long>((a1r - b1) >> 20));
  return 0;
}

long rss_kib() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

// 10^6 launches and 10^4 graphs created and destroyed: the recorder's memory must stay flat.
int soak(const std::string& path, long launches, int graphs) {
  gmem::stream s;
  gmem::instantiate_options o;
  o.auto_free_on_launch = true;
  {
    gmem::graph g = work_and_output("soak loop", 2 << 20, 1 << 20);
    gmem::graph_exec exec(g, o);
    for (long i = 0; i < launches; ++i) exec.launch(s);
    s.synchronize();
  }
  std::string series;
  for (int i = 0; i < graphs; ++i) {
    gmem::graph g = captured(s, 2 << 20);
    gmem::graph_exec exec(g);
    exec.launch(s);
    exec.launch(s);
    s.synchronize();
    if ((i + 1) % (graphs / 10) == 0) series += std::string(series.empty() ? "" : ", ") + std::to_string(rss_kib());
  }
  std::ofstream(path) << "{\"client\": \"cpp_soak\", \"launches\": " << launches << ", \"graphs\": " << graphs
                      << ", \"rss_kib\": [" << series << "]}\n";
  std::printf("soak: rss KiB at each tenth of the graphs: %s\n", series.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  if (argc < 3 || cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("SKIP: usage record_client points FILE | bench N, with a CUDA device\n");
    return 0;
  }
  const std::string mode = argv[1];
  if (mode == "serving") {
    const bool smallest = argc > 3 && std::string(argv[3]) == "smallest";
    const bool extra = (argc > 3 && std::string(argv[3]) == "extra") || (argc > 4 && std::string(argv[4]) == "extra");
    return serving(argv[2], smallest, extra);
  }
  if (mode == "threads") return threads(argv[2]);
  if (mode == "failed") return failed(argv[2]);
  if (mode == "both") {
    if (n < 2) {
      std::printf("SKIP: both needs two CUDA devices, this machine has %d\n", n);
      return 0;
    }
    return both(argv[2]);
  }
  if (mode == "segv") return segv();
  if (mode == "soak") return soak(argv[2], argc > 3 ? std::atol(argv[3]) : 1000000, argc > 4 ? std::atoi(argv[4]) : 10000);
  if (mode == "multi" && n < 2) {
    std::printf("SKIP: multi needs two CUDA devices, this machine has %d\n", n);
    return 0;
  }
  gmem::stream s, other;
  if (mode == "bench") {
    const int launches = std::atoi(argv[2]);
    gmem::graph g = captured(s, 2 << 20);
    gmem::graph_exec exec(g);
    exec.launch(s);
    s.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) exec.launch(s);
    s.synchronize();
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    std::printf("{\"launches\": %d, \"loop_us\": %.1f}\n", launches, us);
    return 0;
  }
  if (mode == "multi") {
    // A graph whose memory lives on device 1, then one on device 0 that device 1 may access.
    cudaSetDevice(1);
    gmem::stream s1;
    gmem::graph g1("on device 1");
    auto a = g1.add_alloc({64 << 20, 1});
    g1.add_free(a.ptr, {a.node});
    gmem::graph_exec e1(g1);
    e1.launch(s1);
    mark("device1_after_first_launch", "launch:first_launch", 0, 1, "[1]");
    s1.synchronize();
    cudaSetDevice(0);
    gmem::graph g0("peer mapped");
    auto b = g0.add_alloc({32 << 20, 0, {1}});
    g0.add_free(b.ptr, {b.node});
    gmem::graph_exec e0(g0);
    e0.launch(s);
    mark("device0_peer_after_first_launch", "launch:first_launch", 1, 0, "[0]");
    s.synchronize();
    mark("device1_unchanged", "", 0, 1);
  } else {
  gmem::graph g = captured(s, 64 << 20);
  gmem::graph_exec exec(g);
  mark("after_instantiate", "instantiate", 0);
  exec.launch(s);
  mark("after_first_launch", "launch:first_launch", 0);
  for (int i = 0; i < 20; ++i) exec.launch(s);
  s.synchronize();
  mark("after_steady", "", 0);
  cudaDeviceGraphMemTrim(0);
  mark("after_trim", "trim", 0);
  exec.launch(s);
  mark("after_relaunch_after_trim", "launch@after_trim", 0);
  s.synchronize();
  exec.launch(other);
  mark("after_launch_other_stream", "", 0);
  other.synchronize();

  gmem::graph e("explicit");
  auto buf = e.add_alloc({32 << 20, 0});
  e.add_free(buf.ptr, {buf.node});
  gmem::instantiate_options opts;
  opts.upload_stream = s.get();
  gmem::graph_exec uploaded(e, opts);
  mark("after_instantiate_with_upload", "instantiate", 1);
  uploaded.launch(s);
  mark("after_first_launch_after_upload", "launch:first_launch_after_upload", 1);
  s.synchronize();
  }

  std::ofstream f(argv[2]);
  f << "{\"client\": \"cpp_gmem\", \"points\": [";
  for (std::size_t i = 0; i < points.size(); ++i) {
    const point& p = points[i];
    f << (i ? ",\n" : "\n") << "{\"label\": \"" << p.label << "\", \"event\": "
      << (p.event.empty() ? "null" : "\"" + p.event + "\"") << ", \"graph\": " << p.graph
      << ", \"device\": " << p.device
      << (p.expect_devices.empty() ? "" : ", \"devices\": " + p.expect_devices)
      << ", \"counters\": {\"used_current\": " << p.v[0] << ", \"used_high\": "
      << p.v[1] << ", \"reserved_current\": " << p.v[2] << ", \"reserved_high\": " << p.v[3]
      << "}}";
  }
  f << "]}\n";
  std::printf("cpp_gmem done\n");
  return 0;
}
