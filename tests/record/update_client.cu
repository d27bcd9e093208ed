// Record mode's check of executable graphs updated in place, run recorded and unrecorded by
// tools/gpu-record-runs.sh (stage `updates`) and checked by tests/record/check_updates.py.
//   update_client runtime|driver SELF_JSON [UPDATES]
// One step captured on one stream: 64 MiB of working memory filled (a kernel) and freed inside
// the graph, its first 8 MiB copied (a kernel) into an 8 MiB output the graph leaves allocated.
// Kernels, not memset and memcpy nodes: on an H100 with driver 580.159.04 the driver refused every
// update of a step whose memset and memcpy nodes worked on the graph's own allocations
// (cudaGraphExecUpdateError), where the same step with kernels updates. The step is
// instantiated once (no flags) and launched; a graph of another topology (one more node) is
// offered as an update, which the driver must refuse; then UPDATES times (5) the step is
// captured again (its allocations at new addresses) and the executable graph updated with it, in
// place (the first offered while the last launch's output is unfreed, and again after it is
// freed where the driver refuses it). Each graph's launches are two, each output freed by the
// program. Two calls set a node's parameters (the fill's value, the fill enabled). `runtime`
// makes the calls through the CUDA runtime (cudaGraphExecUpdate...),
// `driver` the update and node calls through the driver API this program is linked to
// (cuGraphExecUpdate...: the program's PLT, not a lookup). The program reads the graph memory
// counters itself right after each update and each first launch of a graph, at the end and after
// it let its graphs go and trimmed the pool, and
// writes them with its own counts to SELF_JSON. Exit 0; 3 where the driver did not do what the
// check rests on (an update of the same shape refused, or one of another topology taken).
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

__global__ void fill(unsigned char* p, int value, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    p[i] = static_cast<unsigned char>(value);
  }
}

__global__ void copy(unsigned char* dst, const unsigned char* src, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    dst[i] = src[i];
  }
}

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t work_bytes = 64 * MiB;
constexpr std::size_t out_bytes = 8 * MiB;

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "update_client: %s failed: %s\n", what, cudaGetErrorName(e));
  std::exit(1);
}
void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  std::fprintf(stderr, "update_client: %s failed: %s\n", what, name ? name : "?");
  std::exit(1);
}
#define CK(call) check((call), #call)

struct counters {
  unsigned long long v[4] = {};  // used current, used high, reserved current, reserved high
};

counters read_counters() {
  static const cudaGraphMemAttributeType attrs[4] = {
      cudaGraphMemAttrUsedMemCurrent, cudaGraphMemAttrUsedMemHigh, cudaGraphMemAttrReservedMemCurrent,
      cudaGraphMemAttrReservedMemHigh};
  counters c;
  for (int k = 0; k < 4; ++k) CK(cudaDeviceGetGraphMemAttribute(0, attrs[k], &c.v[k]));
  return c;
}

std::string json_of(const counters& c) {
  return "{\"used_current\": " + std::to_string(c.v[0]) + ", \"used_high\": " + std::to_string(c.v[1]) +
         ", \"reserved_current\": " + std::to_string(c.v[2]) + ", \"reserved_high\": " + std::to_string(c.v[3]) + "}";
}

// A reading and the recorded event it must equal: the `index`-th event of `kind` (successful
// updates, or first launches) of the program's one recorded graph.
struct point {
  std::string label, kind;
  int index;
  counters c;
};

struct step_graph {
  cudaGraph_t graph = nullptr;
  void* work = nullptr;
  void* out = nullptr;
};

// One capture of the step; `extra`: one more node (another topology).
step_graph capture(cudaStream_t s, int value, bool extra) {
  step_graph g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK(cudaMallocAsync(&g.work, work_bytes, s));
  fill<<<264, 256, 0, s>>>(static_cast<unsigned char*>(g.work), value, work_bytes);
  CK(cudaMallocAsync(&g.out, out_bytes, s));
  copy<<<264, 256, 0, s>>>(static_cast<unsigned char*>(g.out), static_cast<const unsigned char*>(g.work), out_bytes);
  if (extra) fill<<<1, 256, 0, s>>>(static_cast<unsigned char*>(g.out), 0, 4096);
  CK(cudaFreeAsync(g.work, s));
  CK(cudaStreamEndCapture(s, &g.graph));
  return g;
}

// The update of `exec` with `g`, through the runtime or the driver; the result and the driver's
// reason where refused.
bool update(bool driver, cudaGraphExec_t exec, cudaGraph_t g, std::string& why) {
  if (driver) {
    CUgraphExecUpdateResultInfo info{};
    const CUresult r = cuGraphExecUpdate(exec, g, &info);
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    why = std::string(name ? name : "?") + ", result " + std::to_string(static_cast<int>(info.result));
    return r == CUDA_SUCCESS;
  }
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t e = cudaGraphExecUpdate(exec, g, &info);
  (void)cudaGetLastError();  // a refusal leaves no error behind for the calls after it
  why = std::string(cudaGetErrorName(e)) + ", result " + std::to_string(static_cast<int>(info.result));
  return e == cudaSuccess;
}

// The first kernel node of `g` (the working memory's fill).
cudaGraphNode_t fill_node(cudaGraph_t g) {
  std::size_t n = 0;
  CK(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  CK(cudaGraphGetNodes(g, nodes.data(), &n));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    CK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) return node;
  }
  std::fprintf(stderr, "update_client: the captured step has no kernel node\n");
  std::exit(1);
}

// Two calls that set a node's parameters of `exec` (the fill's value, the fill enabled); how many
// the driver took.
int set_node_params(bool driver, cudaGraphExec_t exec, cudaGraphNode_t node) {
  int taken = 0;
  // The fill's arguments (its pointer, the value 7, its size) for the kernel node's parameters.
  const auto args_of = [](void** from, unsigned char*& ptr, int& value, std::size_t& n, void** to) {
    ptr = *static_cast<unsigned char**>(from[0]);
    value = 7;
    n = *static_cast<std::size_t*>(from[2]);
    to[0] = &ptr;
    to[1] = &value;
    to[2] = &n;
  };
  unsigned char* ptr = nullptr;
  int value = 0;
  std::size_t n = 0;
  void* args[3] = {};
  if (driver) {
    CUDA_KERNEL_NODE_PARAMS p{};
    CK(cuGraphKernelNodeGetParams(node, &p));
    args_of(p.kernelParams, ptr, value, n, args);
    p.kernelParams = args;
    p.extra = nullptr;
    taken += cuGraphExecKernelNodeSetParams(exec, node, &p) == CUDA_SUCCESS;
    taken += cuGraphNodeSetEnabled(exec, node, 1) == CUDA_SUCCESS;
  } else {
    cudaKernelNodeParams p{};
    CK(cudaGraphKernelNodeGetParams(node, &p));
    args_of(p.kernelParams, ptr, value, n, args);
    p.kernelParams = args;
    p.extra = nullptr;
    taken += cudaGraphExecKernelNodeSetParams(exec, node, &p) == cudaSuccess;
    taken += cudaGraphNodeSetEnabled(exec, node, 1) == cudaSuccess;
  }
  (void)cudaGetLastError();
  return taken;
}

int run(bool driver, const std::string& self, int updates) {
  CK(cudaSetDevice(0));
  cudaStream_t s = nullptr;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<point> points;
  std::vector<step_graph> graphs;
  int frees = 0, refused = 0, taken = 0;
  const auto free_output = [&](void* out) {
    CK(cudaFreeAsync(out, s));
    CK(cudaStreamSynchronize(s));
    ++frees;
  };
  // A graph's two launches, each output freed but the last (freed after the next update).
  cudaGraphExec_t exec = nullptr;
  const auto launch_twice = [&](const step_graph& g, int index) {
    CK(cudaGraphLaunch(exec, s));
    points.push_back({"first launch of graph " + std::to_string(index), "launch:first_launch", index, read_counters()});
    CK(cudaStreamSynchronize(s));
    free_output(g.out);
    CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
  };

  graphs.push_back(capture(s, 1, false));
  CK(cudaGraphInstantiate(&exec, graphs[0].graph, 0));
  const int node_param_sets = set_node_params(driver, exec, fill_node(graphs[0].graph));
  launch_twice(graphs[0], 0);

  // Another topology: refused, and the executable graph stays the step's.
  step_graph other = capture(s, 2, true);
  std::string why;
  if (update(driver, exec, other.graph, why)) {
    std::fprintf(stderr, "update_client: the driver updated the step with a graph of another topology (%s)\n",
                 why.c_str());
    return 3;
  }
  ++refused;
  std::printf("update_client: an update with another topology was refused (%s)\n", why.c_str());

  // The first update is offered while the executable graph's last launch still holds its output
  // (an allocation of the graph the program has not freed): on an H100 with driver 580.159.04 the
  // driver refused it (cudaGraphExecUpdateError). Where refused, the output is freed and the
  // update offered again; the later updates come after the output is freed.
  for (int k = 1; k <= updates; ++k) {
    graphs.push_back(capture(s, 10 + k, false));
    bool freed = false;
    if (k > 1) {
      free_output(graphs[graphs.size() - 2].out);  // the graph before's last output, at its address
      freed = true;
    }
    if (!update(driver, exec, graphs.back().graph, why)) {
      if (freed) {
        std::fprintf(stderr, "update_client: the driver refused update %d with a graph of the step's shape (%s)\n", k,
                     why.c_str());
        return 3;
      }
      ++refused;
      std::printf("update_client: driver fact: an update while the last launch's output is unfreed was refused (%s)\n",
                  why.c_str());
      free_output(graphs[graphs.size() - 2].out);
      freed = true;
      if (!update(driver, exec, graphs.back().graph, why)) {
        std::fprintf(stderr, "update_client: the driver refused update %d after the output was freed (%s)\n", k,
                     why.c_str());
        return 3;
      }
    }
    ++taken;
    points.push_back({"update " + std::to_string(k), "update", k - 1, read_counters()});
    if (!freed) free_output(graphs[graphs.size() - 2].out);  // an update the driver took with it unfreed
    launch_twice(graphs.back(), k);
  }
  free_output(graphs.back().out);
  const counters final_counters = read_counters();
  // Then the program lets its graphs go and trims the pool: what the recording's end (the exit)
  // reads.
  CK(cudaGraphExecDestroy(exec));
  for (const step_graph& g : graphs) CK(cudaGraphDestroy(g.graph));
  CK(cudaGraphDestroy(other.graph));
  CK(cudaStreamDestroy(s));
  CK(cudaDeviceGraphMemTrim(0));
  const counters after_trim = read_counters();

  std::ofstream out(self);
  out << "{\"client\": \"update " << (driver ? "driver" : "runtime") << "\", \"updates\": " << taken
      << ", \"refused\": " << refused << ", \"node_param_sets\": " << node_param_sets << ", \"frees\": " << frees
      << ", \"last_addresses\": [" << reinterpret_cast<std::uintptr_t>(graphs.back().work) << ", "
      << reinterpret_cast<std::uintptr_t>(graphs.back().out) << "], \"final\": " << json_of(final_counters)
      << ", \"after_trim\": " << json_of(after_trim)
      << ", \"points\": [";
  for (std::size_t k = 0; k < points.size(); ++k) {
    out << (k ? ", " : "") << "{\"label\": \"" << points[k].label << "\", \"event\": \"" << points[k].kind
        << "\", \"index\": " << points[k].index << ", \"counters\": " << json_of(points[k].c) << "}";
  }
  out << "]}\n";
  std::printf("update_client: %d updates in place, %d refused, %d node parameter calls, %d frees; reserved high %llu MiB\n",
              taken, refused, node_param_sets, frees, final_counters.v[3] / MiB);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (argc < 3 || (mode != "runtime" && mode != "driver")) {
    std::fprintf(stderr, "usage: update_client runtime|driver SELF_JSON [UPDATES]\n");
    return 2;
  }
  const int updates = argc > 3 ? std::atoi(argv[3]) : 5;
  return run(mode == "driver", argv[2], updates > 0 ? updates : 5);
}
