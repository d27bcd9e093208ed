// A stand-in for libcuda in the preload test (preload_test.cpp): the entry points the preloaded
// interception (record/preload.cpp) looks up, answering as the driver does (cuGetProcAddress gives
// the exported entry point for the version and per-thread-stream flag asked), and remembering the
// arguments each was called with. No cuda.h: its macros rename the entry points.
#include <cstdint>
#include <cstring>

namespace {
struct last_call {
  const char* name = "";
  std::uintptr_t a = 0, b = 0;
  int calls = 0;
};
last_call last;
int inits = 0;

int record(const char* name, std::uintptr_t a, std::uintptr_t b) {
  last.name = name;
  last.a = a;
  last.b = b;
  ++last.calls;
  return 600;  // CUDA_ERROR_NOT_READY: a result the wrapper must hand back unchanged
}
}  // namespace

extern "C" {
__attribute__((visibility("default"))) const char* fake_cuda_last(std::uintptr_t* a, std::uintptr_t* b, int* calls) {
  *a = last.a;
  *b = last.b;
  *calls = last.calls;
  return last.name;
}
__attribute__((visibility("default"))) int fake_cuda_inits() { return inits; }

__attribute__((visibility("default"))) int cuInit(unsigned) {
  ++inits;
  return 0;
}
__attribute__((visibility("default"))) int cuGraphLaunch(void* e, void* s) {
  return record("cuGraphLaunch", reinterpret_cast<std::uintptr_t>(e), reinterpret_cast<std::uintptr_t>(s));
}
__attribute__((visibility("default"))) int cuGraphLaunch_ptsz(void* e, void* s) {
  return record("cuGraphLaunch_ptsz", reinterpret_cast<std::uintptr_t>(e), reinterpret_cast<std::uintptr_t>(s));
}
__attribute__((visibility("default"))) int cuStreamBeginCapture(void* s) {
  return record("cuStreamBeginCapture", reinterpret_cast<std::uintptr_t>(s), 0);
}
__attribute__((visibility("default"))) int cuStreamBeginCapture_v2(void* s, int mode) {
  return record("cuStreamBeginCapture_v2", reinterpret_cast<std::uintptr_t>(s), static_cast<std::uintptr_t>(mode));
}
__attribute__((visibility("default"))) int cuCtxSynchronize() { return record("cuCtxSynchronize", 0, 0); }
__attribute__((visibility("default"))) int cuGraphExecUpdate_v2(void* e, void* g, void*) {
  return record("cuGraphExecUpdate_v2", reinterpret_cast<std::uintptr_t>(e), reinterpret_cast<std::uintptr_t>(g));
}
__attribute__((visibility("default"))) int cuGraphExecKernelNodeSetParams_v2(void* e, void* n, const void*) {
  return record("cuGraphExecKernelNodeSetParams_v2", reinterpret_cast<std::uintptr_t>(e),
                reinterpret_cast<std::uintptr_t>(n));
}
// Not one the recording takes: handed back as it is.
__attribute__((visibility("default"))) int cuDeviceGetCount(int* n) {
  *n = 1;
  return 0;
}

__attribute__((visibility("default"))) int cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                                               unsigned long long flags, int* status) {
  const bool per_thread = flags & 2;  // CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
  void* f = nullptr;
  if (std::strcmp(symbol, "cuGraphLaunch") == 0) {
    f = per_thread ? reinterpret_cast<void*>(&cuGraphLaunch_ptsz) : reinterpret_cast<void*>(&cuGraphLaunch);
  } else if (std::strcmp(symbol, "cuStreamBeginCapture") == 0) {
    f = version >= 10010 ? reinterpret_cast<void*>(&cuStreamBeginCapture_v2) : reinterpret_cast<void*>(&cuStreamBeginCapture);
  } else if (std::strcmp(symbol, "cuGraphExecUpdate") == 0 && version >= 12000) {
    f = reinterpret_cast<void*>(&cuGraphExecUpdate_v2);
  } else if (std::strcmp(symbol, "cuGraphExecKernelNodeSetParams") == 0 && version >= 12000) {
    f = reinterpret_cast<void*>(&cuGraphExecKernelNodeSetParams_v2);
  } else if (std::strcmp(symbol, "cuCtxSynchronize") == 0) {
    f = reinterpret_cast<void*>(&cuCtxSynchronize);
  } else if (std::strcmp(symbol, "cuDeviceGetCount") == 0) {
    f = reinterpret_cast<void*>(&cuDeviceGetCount);
  } else if (std::strcmp(symbol, "cuInit") == 0) {
    f = reinterpret_cast<void*>(&cuInit);
  } else if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
    f = reinterpret_cast<void*>(&cuGetProcAddress_v2);
  }
  if (status) *status = f ? 0 : 1;
  *pfn = f;
  return f ? 0 : 500;  // CUDA_ERROR_NOT_FOUND
}
}
