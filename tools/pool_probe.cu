// Measures how the driver shares one device's graph memory pool between several graphs:
// sequences of launches of graphs that hold outputs between launches, with and without
// AutoFreeOnLaunch, in one stream and in several, with uploads, trims, frees outside the graphs
// and destroyed executable graphs. Prints the four counters and the host time of every step, so
// that the pool model (profiler/model/pool_model.cpp) can be tested case by case against it
// (tests/host/pool_model_test.cpp reads this program's committed output).
// Build: nvcc -std=c++17 -O2 -arch=sm_90 -cudart static tools/pool_probe.cu -o pool_probe
//
// pool_probe [--device N] 'NAME: GRAPHS | PROGRAM' ...
//   GRAPHS   gK[!][:tMS]=ITEM,ITEM,...   graph K; "!" instantiates it with AutoFreeOnLaunch,
//            ":tMS" puts a kernel of MS milliseconds between its allocations and its frees.
//            ITEM wSIZE: working memory (allocated and freed inside the graph), oSIZE: an output
//            (allocated and left allocated); SIZE in MiB. The alloc nodes are created in the
//            order given, with no dependencies between them (all live at once).
//   PROGRAM  LK[@s] launch graph K into stream s (0..3 non-blocking, 4 a blocking stream;
//            default 0); LK*N[@s] launch it N times back to back (one summary line: how many
//            took 15 us or more, the slowest, the reservation's change); UK[@s] upload it;
//            FK[@s] free graph K's outputs (cudaFreeAsync into stream s); DK destroy graph K's
//            executable graph; S synchronize the device; T synchronize and trim.
//            Completions and orderings the program makes without a device synchronize:
//            R@s record stream s's event; EK cudaEventSynchronize on stream K's event; QK
//            poll cudaEventQuery on it until it reports done; YK poll cudaStreamQuery(stream K)
//            until idle; WK@s make stream s wait on stream K's event; C a synchronous 4-byte
//            cudaMemcpy device to host (the legacy stream); ZMS sleep MS milliseconds on the
//            host, no CUDA call (does the driver share memory of work that completed unseen?).
// Every graph is instantiated (in the order defined) before the program runs. Each step prints
//   step I TOKEN rc=.. rh=.. uc=.. uh=.. host_us=..
// (reserved / used, current / high, MiB), each case starts from a trimmed pool with its high
// watermarks reset, and ends with its graphs destroyed, its outputs freed and a trim.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;
int dev = 0;
bool failed = false;

bool ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("  ! %s: %s\n", what, cudaGetErrorString(e));
    cudaGetLastError();
    failed = true;
    return false;
  }
  return true;
}
#define CK(x) ok((x), #x)

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

std::uint64_t attr(cudaGraphMemAttributeType t) {
  std::uint64_t v = 0;
  CK(cudaDeviceGetGraphMemAttribute(dev, t, &v));
  return v;
}

void reset_pool() {
  CK(cudaDeviceSynchronize());
  CK(cudaDeviceGraphMemTrim(dev));
  std::uint64_t z = 0;
  CK(cudaDeviceSetGraphMemAttribute(dev, cudaGraphMemAttrReservedMemHigh, &z));
  CK(cudaDeviceSetGraphMemAttribute(dev, cudaGraphMemAttrUsedMemHigh, &z));
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

struct probe_graph {
  bool auto_free = false;
  double kernel_ms = 0;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::vector<void*> outputs;
};

long long clock_rate_khz = 0;

bool build(const std::string& def, probe_graph& g) {
  const std::size_t eq = def.find('=');
  if (eq == std::string::npos) return false;
  const std::string head = def.substr(0, eq);
  g.auto_free = head.find('!') != std::string::npos;
  if (const std::size_t t = head.find(":t"); t != std::string::npos) g.kernel_ms = std::stod(head.substr(t + 2));
  CK(cudaGraphCreate(&g.graph, 0));
  std::vector<cudaGraphNode_t> allocs;
  std::vector<void*> working;
  for (const std::string& item : split(def.substr(eq + 1), ',')) {
    if (item.size() < 2 || (item[0] != 'w' && item[0] != 'o')) return false;
    cudaMemAllocNodeParams p{};
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.poolProps.location.id = dev;
    p.bytesize = static_cast<std::size_t>(std::stod(item.substr(1)) * MiB);
    cudaGraphNode_t n = nullptr;
    if (!CK(cudaGraphAddMemAllocNode(&n, g.graph, nullptr, 0, &p))) return false;
    allocs.push_back(n);
    (item[0] == 'w' ? working : g.outputs).push_back(p.dptr);
  }
  cudaGraphNode_t body = nullptr;
  if (g.kernel_ms > 0) {
    cudaKernelNodeParams k{};
    long long cycles = static_cast<long long>(g.kernel_ms * clock_rate_khz);
    void* args[] = {&cycles};
    k.func = reinterpret_cast<void*>(spin);
    k.gridDim = dim3(1);
    k.blockDim = dim3(1);
    k.kernelParams = args;
    CK(cudaGraphAddKernelNode(&body, g.graph, allocs.data(), allocs.size(), &k));
  } else {
    CK(cudaGraphAddEmptyNode(&body, g.graph, allocs.data(), allocs.size()));
  }
  for (void* w : working) {
    cudaGraphNode_t f = nullptr;
    CK(cudaGraphAddMemFreeNode(&f, g.graph, &body, 1, w));
  }
  return CK(cudaGraphInstantiateWithFlags(&g.exec, g.graph,
                                          g.auto_free ? cudaGraphInstantiateFlagAutoFreeOnLaunch : 0));
}

void print_step(int i, const std::string& token, double host_us) {
  std::printf("step %d %s rc=%.0f rh=%.0f uc=%.0f uh=%.0f host_us=%.1f\n", i, token.c_str(),
              attr(cudaGraphMemAttrReservedMemCurrent) / double(MiB),
              attr(cudaGraphMemAttrReservedMemHigh) / double(MiB),
              attr(cudaGraphMemAttrUsedMemCurrent) / double(MiB),
              attr(cudaGraphMemAttrUsedMemHigh) / double(MiB), host_us);
}

constexpr int stream_count = 5;  // 0..3 non-blocking, 4 blocking (synchronous with the legacy stream)
cudaEvent_t stream_events[stream_count];
void* copy_source = nullptr;

bool run_case(const std::string& arg, cudaStream_t* streams) {
  const std::size_t colon = arg.find(':');
  const std::size_t bar = arg.find('|');
  if (colon == std::string::npos || bar == std::string::npos || bar < colon) {
    std::printf("bad case (want 'NAME: GRAPHS | PROGRAM'): %s\n", arg.c_str());
    return false;
  }
  const std::string name = arg.substr(0, colon);
  reset_pool();
  std::printf("case %s |%s\n", name.c_str(), arg.substr(colon + 1).c_str());
  std::vector<probe_graph> graphs;
  for (const std::string& def : split(arg.substr(colon + 1, bar - colon - 1), ' ')) {
    if (def.size() < 2 || def[0] != 'g' || std::atoi(def.c_str() + 1) != static_cast<int>(graphs.size())) {
      std::printf("bad graph (want g0, g1, ... in order): %s\n", def.c_str());
      return false;
    }
    graphs.emplace_back();
    if (!build(def, graphs.back())) {
      std::printf("bad graph: %s\n", def.c_str());
      return false;
    }
  }
  print_step(0, "instantiated", 0);
  int i = 0;
  std::vector<bool> freed(graphs.size(), true);  // outputs freed since the last launch
  for (const std::string& tok : split(arg.substr(bar + 1), ' ')) {
    ++i;
    const char op = tok[0];
    int k = -1, s = 0;
    if (const std::size_t at = tok.find('@'); at != std::string::npos) {
      s = std::atoi(tok.c_str() + at + 1);
      if (s < 0 || s >= stream_count) {
        std::printf("bad stream in step %s\n", tok.c_str());
        return false;
      }
    }
    if (op == 'L' || op == 'U' || op == 'F' || op == 'D') {
      k = std::atoi(tok.c_str() + 1);
      if (k < 0 || k >= static_cast<int>(graphs.size())) {
        std::printf("bad step %s\n", tok.c_str());
        return false;
      }
    } else if (op == 'E' || op == 'Q' || op == 'Y' || op == 'W') {
      k = std::atoi(tok.c_str() + 1);
      if (k < 0 || k >= stream_count) {
        std::printf("bad stream in step %s\n", tok.c_str());
        return false;
      }
    }
    const std::size_t star = tok.find('*');
    const long repeat = op == 'L' && star != std::string::npos ? std::atol(tok.c_str() + star + 1) : 0;
    if (repeat > 0) {  // back to back: how many launches were slow, and did anything map?
      const std::uint64_t before = attr(cudaGraphMemAttrReservedMemCurrent);
      long slow = 0;
      double slowest = 0, total = 0;
      for (long n = 0; n < repeat; ++n) {
        const auto t = std::chrono::steady_clock::now();
        CK(cudaGraphLaunch(graphs[k].exec, streams[s]));
        const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
        slow += us >= 15.0;
        slowest = us > slowest ? us : slowest;
        total += us;
      }
      freed[k] = graphs[k].outputs.empty();
      std::printf("  loop %s: %ld launches, %ld took 15 us or more, slowest %.1f us, %.1f ms in all, "
                  "reserved %+.0f MiB\n", tok.c_str(), repeat, slow, slowest, total / 1000,
                  (double(attr(cudaGraphMemAttrReservedMemCurrent)) - double(before)) / double(MiB));
      print_step(i, tok, slowest);
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    switch (op) {
      case 'L':
        CK(cudaGraphLaunch(graphs[k].exec, streams[s]));
        freed[k] = graphs[k].outputs.empty();
        break;
      case 'R': CK(cudaEventRecord(stream_events[s], streams[s])); break;
      case 'E': CK(cudaEventSynchronize(stream_events[k])); break;
      case 'Q':
        while (cudaEventQuery(stream_events[k]) == cudaErrorNotReady) {
        }
        break;
      case 'Y':
        while (cudaStreamQuery(streams[k]) == cudaErrorNotReady) {
        }
        break;
      case 'W': CK(cudaStreamWaitEvent(streams[s], stream_events[k], 0)); break;
      case 'C': {
        int host = 0;
        CK(cudaMemcpy(&host, copy_source, sizeof host, cudaMemcpyDeviceToHost));
        break;
      }
      case 'Z': std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(tok.c_str() + 1))); break;
      case 'U': CK(cudaGraphUpload(graphs[k].exec, streams[s])); break;
      case 'F':
        for (void* p : graphs[k].outputs) CK(cudaFreeAsync(p, streams[s]));
        freed[k] = true;
        break;
      case 'D':
        CK(cudaDeviceSynchronize());
        CK(cudaGraphExecDestroy(graphs[k].exec));
        graphs[k].exec = nullptr;
        break;
      case 'S': CK(cudaDeviceSynchronize()); break;
      case 'T':
        CK(cudaDeviceSynchronize());
        CK(cudaDeviceGraphMemTrim(dev));
        break;
      default: std::printf("bad step %s\n", tok.c_str()); return false;
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    print_step(i, tok, us);
  }
  CK(cudaDeviceSynchronize());
  for (std::size_t k = 0; k < graphs.size(); ++k) {
    if (!freed[k]) {
      for (void* p : graphs[k].outputs) CK(cudaFreeAsync(p, streams[0]));
    }
    CK(cudaDeviceSynchronize());
    if (graphs[k].exec) CK(cudaGraphExecDestroy(graphs[k].exec));
    CK(cudaGraphDestroy(graphs[k].graph));
  }
  reset_pool();
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int first = 1;
  if (argc > 2 && std::string(argv[1]) == "--device") {
    dev = std::atoi(argv[2]);
    first = 3;
  }
  if (!CK(cudaSetDevice(dev))) return 1;
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, dev));
  int drv = 0, rate = 0;
  cudaDriverGetVersion(&drv);
  CK(cudaDeviceGetAttribute(&rate, cudaDevAttrClockRate, dev));
  clock_rate_khz = rate;
  std::printf("device %d: %s, driver API %d\n", dev, prop.name, drv);
  CK(cudaFree(nullptr));
  cudaStream_t streams[stream_count];
  for (int k = 0; k < stream_count; ++k) {
    CK(cudaStreamCreateWithFlags(&streams[k], k < 4 ? cudaStreamNonBlocking : cudaStreamDefault));
    CK(cudaEventCreateWithFlags(&stream_events[k], cudaEventDisableTiming));
  }
  CK(cudaMalloc(&copy_source, 4));
  bool good = true;
  for (int i = first; i < argc; ++i) good = run_case(argv[i], streams) && good;
  std::printf("done%s\n", failed ? " (with CUDA errors)" : "");
  return good && !failed ? 0 : 1;
}
