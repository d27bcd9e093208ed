// An experiment, not part of gmem: LD_PRELOADed into a recorded program, it takes parts of the
// recording library's own work away without changing the library, so that what each part costs
// the program, directly and in what it does to the program's caches, is measured by difference
// (tools/record_scale.py --variant; docs/benchmarks.md). GMEM_ABLATE names the parts:
//   readings  cuMemGetInfo answers a constant (the library's readings around each instantiation
//             and its bill's readings: the recording's figures for them are then wrong)
//   stack     backtrace() returns no frame (the recording names no native call stack)
//   helper    cuMemGetInfo is read by a helper thread in the calling thread's context while the
//             caller waits spinning: the same readings at the same points of the program, with
//             the driver's and the kernel's work on another core (the helper spins for good:
//             an experiment's upper bound on what moving the readings off the thread gains)
// With GMEM_ABLATE unset or empty, both calls go to the real ones: the shim's presence alone.
#include <dlfcn.h>
#include <immintrin.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace {

using mem_get_info_fn = int (*)(std::size_t*, std::size_t*);
using context_fn = int (*)(void**);
using set_context_fn = int (*)(void*);
using backtrace_fn = int (*)(void**, int);

// A driver function: libcuda is loaded by the program (dlopen, local scope) where RTLD_NEXT does
// not look.
void* driver_function(const char* name) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  return cuda ? dlsym(cuda, name) : nullptr;
}

// GMEM_ABLATE=helper: one request at a time (callers take turns), served by a spinning thread.
struct reading_request {
  std::mutex turn;
  std::atomic<int> state{0};  // 0 idle, 1 asked, 2 answered
  void* context = nullptr;
  std::size_t free_bytes = 0, total = 0;
  int result = 0;
};

reading_request& helper_readings(mem_get_info_fn real) {
  static reading_request request;
  static std::once_flag started;
  std::call_once(started, [real] {
    const auto set = reinterpret_cast<set_context_fn>(driver_function("cuCtxSetCurrent"));
    std::thread([real, set] {
      void* current = nullptr;
      for (;;) {
        while (request.state.load(std::memory_order_acquire) != 1) _mm_pause();
        if (request.context != current && set && set(request.context) == 0) current = request.context;
        request.result = real(&request.free_bytes, &request.total);
        request.state.store(2, std::memory_order_release);
      }
    }).detach();
  });
  return request;
}

int read_on_helper(mem_get_info_fn real, std::size_t* free_bytes, std::size_t* total) {
  static const auto get = reinterpret_cast<context_fn>(driver_function("cuCtxGetCurrent"));
  reading_request& request = helper_readings(real);
  std::lock_guard<std::mutex> turn(request.turn);
  void* context = nullptr;
  if (!get || get(&context) != 0 || !context) return real(free_bytes, total);
  request.context = context;
  request.state.store(1, std::memory_order_release);
  while (request.state.load(std::memory_order_acquire) != 2) _mm_pause();
  *free_bytes = request.free_bytes;
  *total = request.total;
  request.state.store(0, std::memory_order_relaxed);
  return request.result;
}

bool ablated(const char* part) {
  const char* a = std::getenv("GMEM_ABLATE");
  return a && std::strstr(a, part) != nullptr;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int cuMemGetInfo_v2(std::size_t* free_bytes, std::size_t* total) {
  static const bool fake = ablated("readings");
  static const bool helper = ablated("helper");
  static mem_get_info_fn real = nullptr;
  if (fake) {
    *free_bytes = std::size_t{40} << 30;
    *total = std::size_t{80} << 30;
    return 0;
  }
  // After cuInit: libcuda is loaded by then.
  if (!real) real = reinterpret_cast<mem_get_info_fn>(driver_function("cuMemGetInfo_v2"));
  if (!real) return 1;
  return helper ? read_on_helper(real, free_bytes, total) : real(free_bytes, total);
}

extern "C" __attribute__((visibility("default"))) int backtrace(void** frames, int n) {
  static const bool fake = ablated("stack");
  static const auto real = reinterpret_cast<backtrace_fn>(dlsym(RTLD_NEXT, "backtrace"));
  if (fake) return 0;
  return real ? real(frames, n) : 0;
}
