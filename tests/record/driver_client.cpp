// Record mode's corpus, a program linked to libcuda (-lcuda) that calls the driver API directly,
// without the CUDA runtime: its calls go through its PLT, not through a lookup of libcuda's entry
// points, so `gmemprof record`'s own interception sees them only through the driver names its
// preloaded library defines (record/preload.cpp). Run recorded and unrecorded by
// tools/record_corpus.py (cpp:driver-linked).
//   driver_client driver-linked SELF_JSON   one capture of two stream-ordered allocations (64 and
//                                           32 MiB) written and freed, launched 5 times; writes
//                                           the graph memory counters it read itself
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  std::fprintf(stderr, "driver_client: %s failed: %s\n", what, name ? name : "?");
  std::exit(1);
}
#define CK(call) check((call), #call)

std::uint64_t attribute(CUdevice d, CUgraphMem_attribute a) {
  cuuint64_t v = 0;
  CK(cuDeviceGetGraphMemAttribute(d, a, &v));
  return v;
}

int driver_linked(const std::string& self) {
  CK(cuInit(0));
  CUdevice device;
  CK(cuDeviceGet(&device, 0));
  CUcontext context;
  CK(cuDevicePrimaryCtxRetain(&context, device));
  CK(cuCtxSetCurrent(context));
  CUstream s;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUdeviceptr a = 0, b = 0;
  CK(cuMemAllocAsync(&a, 64 * MiB, s));
  CK(cuMemsetD8Async(a, 1, 64 * MiB, s));
  CK(cuMemAllocAsync(&b, 32 * MiB, s));
  CK(cuMemsetD8Async(b, 2, 32 * MiB, s));
  CK(cuMemFreeAsync(a, s));
  CK(cuMemFreeAsync(b, s));
  CUgraph graph;
  CK(cuStreamEndCapture(s, &graph));
  CUgraphExec exec;
  CK(cuGraphInstantiate(&exec, graph, 0));
  CK(cuGraphDestroy(graph));
  const int launches = 5;
  for (int k = 0; k < launches; ++k) CK(cuGraphLaunch(exec, s));
  CK(cuStreamSynchronize(s));
  const std::uint64_t reserved_high = attribute(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH);
  const std::uint64_t used_high = attribute(device, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH);
  std::ofstream(self) << "{\"launches\": " << launches << ", \"final\": {\"reserved_high\": " << reserved_high
                      << ", \"used_high\": " << used_high << "}}";
  std::printf("driver-linked: %d launches\n", launches);
  CK(cuGraphExecDestroy(exec));
  CK(cuStreamDestroy(s));
  CK(cuDeviceGraphMemTrim(device));
  CK(cuDevicePrimaryCtxRelease(device));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || std::string(argv[1]) != "driver-linked") {
    std::fprintf(stderr, "usage: driver_client driver-linked SELF_JSON\n");
    return 2;
  }
  return driver_linked(argv[2]);
}
