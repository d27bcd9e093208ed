// An experiment, not part of gmem: LD_PRELOADed into a recorded program, it takes parts of the
// recording library's own work away without changing the library, so that what each part costs
// the program, directly and in what it does to the program's caches, is measured by difference
// (tools/record_scale.py --variant; docs/benchmarks.md). GMEM_ABLATE names the parts:
//   readings  cuMemGetInfo answers a constant (the library's readings around each instantiation
//             and its bill's readings: the recording's figures for them are then wrong)
//   stack     backtrace() returns no frame (the recording names no native call stack)
// With GMEM_ABLATE unset or empty, both calls go to the real ones: the shim's presence alone.
#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace {

using mem_get_info_fn = int (*)(std::size_t*, std::size_t*);
using backtrace_fn = int (*)(void**, int);

// The driver's own cuMemGetInfo_v2: libcuda is loaded by the program (dlopen, local scope) where
// RTLD_NEXT does not look.
mem_get_info_fn drivers_mem_get_info() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  return reinterpret_cast<mem_get_info_fn>(cuda ? dlsym(cuda, "cuMemGetInfo_v2") : nullptr);
}

bool ablated(const char* part) {
  const char* a = std::getenv("GMEM_ABLATE");
  return a && std::strstr(a, part) != nullptr;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int cuMemGetInfo_v2(std::size_t* free_bytes, std::size_t* total) {
  static const bool fake = ablated("readings");
  static mem_get_info_fn real = nullptr;
  if (fake) {
    *free_bytes = std::size_t{40} << 30;
    *total = std::size_t{80} << 30;
    return 0;
  }
  if (!real) real = drivers_mem_get_info();  // after cuInit: libcuda is loaded by then
  return real ? real(free_bytes, total) : 1;
}

extern "C" __attribute__((visibility("default"))) int backtrace(void** frames, int n) {
  static const bool fake = ablated("stack");
  static const auto real = reinterpret_cast<backtrace_fn>(dlsym(RTLD_NEXT, "backtrace"));
  if (fake) return 0;
  return real ? real(frames, n) : 0;
}
