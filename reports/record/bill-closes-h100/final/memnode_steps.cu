// Device memory used (cudaMemGetInfo) at each step of a program whose only allocations are
// memory nodes: context, stream, each of six graphs built, instantiated, launched; then trim and
// destruction. Prints one line per step: name, used MiB, change since the last step in KiB.
#include <cstdio>
#include <cuda_runtime.h>
static size_t last = 0;
static void step(const char* name) {
  cudaDeviceSynchronize();
  size_t f = 0, t = 0;
  cudaMemGetInfo(&f, &t);
  const size_t used = t - f;
  std::printf("STEP %-28s used %10.3f MiB  change %+10lld KiB\n", name, used / 1048576.0,
              last ? (long long)(used - last) / 1024 : 0LL);
  last = used;
}
__global__ void touch(char* p) { p[threadIdx.x] = 1; }
int main(int argc, char** argv) {
  const bool kernels = argc > 1;
  cudaFree(0);
  step("context");
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  step("stream");
  cudaGraph_t g[6];
  cudaGraphExec_t e[6];
  for (int i = 0; i < 6; ++i) {
    char name[64];
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    char* p = nullptr;
    cudaMallocAsync((void**)&p, (size_t)(i + 1) << 24, s);
    if (kernels) touch<<<1, 32, 0, s>>>(p);
    cudaFreeAsync(p, s);
    cudaStreamEndCapture(s, &g[i]);
    std::snprintf(name, sizeof name, "graph %d captured", i); step(name);
    cudaGraphInstantiate(&e[i], g[i], 0);
    std::snprintf(name, sizeof name, "graph %d instantiated", i); step(name);
    cudaGraphLaunch(e[i], s);
    cudaStreamSynchronize(s);
    std::snprintf(name, sizeof name, "graph %d launched", i); step(name);
  }
  cudaDeviceGraphMemTrim(0);
  step("trim");
  for (int i = 0; i < 6; ++i) { cudaGraphExecDestroy(e[i]); cudaGraphDestroy(g[i]); }
  step("destroyed");
  cudaDeviceGraphMemTrim(0);
  step("trim again");
  return 0;
}
