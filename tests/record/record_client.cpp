// Record-mode client 4: a C++ program built on gmem's allocator layer, run under
// `gmemprof record`. It reads the graph memory counters itself (cudaDeviceGetGraphMemAttribute)
// right after the calls the recording classifies, and writes them for check_record.py.
//   record_client points SELF_JSON   captured graph (first launch, steady, trim + remap, other
//                                    stream) and an explicit-node graph uploaded at instantiation
//   record_client multi SELF_JSON    (two GPUs) a graph on device 1 and a peer-mapped one on 0
//   record_client bench N            N launches of a captured graph with memory nodes; prints
//                                    the wall time of the loop in microseconds
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

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

}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  if (argc != 3 || cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("SKIP: usage record_client points FILE | bench N, with a CUDA device\n");
    return 0;
  }
  const std::string mode = argv[1];
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
