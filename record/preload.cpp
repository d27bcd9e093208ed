// The preloaded half of the recording library's own interception of the driver's calls
// (`gmemprof record --hook interpose`, which names this library in LD_PRELOAD): the alternative
// to CUPTI, whose attachment alone slows every driver call a capture makes (docs/benchmarks.md,
// "Without CUPTI"). It links nothing but libc, so a process of the command that never uses CUDA
// (a shell, a compiler torch.compile starts) loads only this; the recording library
// (libgmem_record.so, interpose.cpp) is loaded once the process looks libcuda up.
//
// How the calls are taken:
//   - dlsym is interposed. A lookup of a "cu" name with a library's handle (the CUDA runtime
//     asks libcuda for cuGetProcAddress so; a library that loads libcuda itself asks it for each
//     entry point so) is
//     answered from here: the entry point, or the wrapper of it where it is one the recording
//     takes. Every other lookup (RTLD_NEXT and RTLD_DEFAULT ones too, which depend on where they
//     are asked from) jumps to glibc's dlsym with the caller's return address intact.
//   - cuGetProcAddress (both versions) hands back the wrapper of an entry point it returns.
//     Entry points are told apart by address, not by the name asked for: one name gives
//     different entry points by version and per-thread-stream flag, and each is one of the
//     driver's exported symbols, which CUPTI names its callback ids after.
//   - Each wrapper lays its arguments out as CUPTI's parameter struct for that entry point and
//     hands them to the recording library, at enter and at exit, where the same decoders read
//     them as CUPTI's callback's (inject.cpp).
//   - cuInit's wrapper starts the recording once the driver is up, where CUPTI would call
//     InitializeInjection.
//   - The same entry points, cuInit and cuGetProcAddress are also defined here under the driver's
//     names: a program or library linked to libcuda (-lcuda) calls them through the PLT, which
//     the dynamic linker binds to this library's definitions (LD_PRELOAD puts it first), and
//     they go to the same wrappers, or straight to libcuda's own where nothing is recorded.
//     libcuda binds its own names inside itself, so its calls to itself are not taken twice.
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "record/hook.hpp"
#include "record/routes.hpp"

using dlsym_fn = void* (*)(void*, const char*);

// glibc's dlsym, where the interposed dlsym jumps (read by the assembly below).
extern "C" {
__attribute__((visibility("hidden"))) std::atomic<dlsym_fn> gmem_real_dlsym{nullptr};
}

namespace {

using gmem::record::interposing;

// The recording library's words (interpose.cpp), once it is loaded.
using call_fn = void (*)(unsigned, const CUpti_CallbackData*);
using start_fn = void (*)();
std::atomic<call_fn> record_call{nullptr};
std::atomic<start_fn> record_start{nullptr};

void driver_call(unsigned id, const CUpti_CallbackData* cb) {
  if (const call_fn f = record_call.load(std::memory_order_relaxed)) f(id, cb);
}

dlsym_fn real_dlsym() {
  dlsym_fn f = gmem_real_dlsym.load(std::memory_order_acquire);
  if (!f) {
    void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    f = reinterpret_cast<dlsym_fn>(p);
    gmem_real_dlsym.store(f, std::memory_order_release);
  }
  return f;
}

constexpr std::size_t id_count = CUPTI_DRIVER_TRACE_CBID_SIZE;

// Each routed entry point's real address, by CUPTI's callback id.
std::atomic<void*> real_of[id_count];

// CUPTI's parameter struct for an entry point without parameters (cuCtxSynchronize).
struct no_params {};

// The wrapper of the entry point with callback id ID: its arguments laid out as CUPTI's struct P.
template <unsigned Id, class P, class... A>
CUresult CUDAAPI wrapped(A... a) {
  using fn = CUresult(CUDAAPI*)(A...);
  const auto real = reinterpret_cast<fn>(real_of[Id].load(std::memory_order_relaxed));
  P p{a...};
  CUresult r = CUDA_SUCCESS;
  CUpti_CallbackData cb{};
  cb.callbackSite = CUPTI_API_ENTER;
  cb.functionParams = &p;
  cb.functionReturnValue = &r;
  driver_call(Id, &cb);
  r = real(a...);
  cb.callbackSite = CUPTI_API_EXIT;
  driver_call(Id, &cb);
  return r;
}

struct entry {
  const char* name;  // the driver's exported symbol, which CUPTI names the callback id after
  unsigned id;
  void* wrapper;
};

// The entry points the recording takes (routes.hpp, the list inject.cpp's decoders are found by).
#define GMEM_ENTRY(name, decode, ...)                                                             \
  entry{#name, CUPTI_DRIVER_TRACE_CBID_##name,                                                    \
        reinterpret_cast<void*>(&wrapped<CUPTI_DRIVER_TRACE_CBID_##name, name##_params, __VA_ARGS__>)},
#define GMEM_ENTRY0(name, decode) \
  entry{#name, CUPTI_DRIVER_TRACE_CBID_##name, reinterpret_cast<void*>(&wrapped<CUPTI_DRIVER_TRACE_CBID_##name, no_params>)},
const entry entries[] = {GMEM_RECORD_ROUTES(GMEM_ENTRY, GMEM_ENTRY0)};
#undef GMEM_ENTRY
#undef GMEM_ENTRY0

// ---- cuInit and cuGetProcAddress

using init_fn = CUresult(CUDAAPI*)(unsigned int);
using proc_v1_fn = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t);
using proc_v2_fn = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
std::atomic<void*> real_init{nullptr}, real_proc_v1{nullptr}, real_proc_v2{nullptr};
std::atomic<bool> learned{false};

CUresult CUDAAPI init_wrapper(unsigned int flags) {
  const CUresult r = reinterpret_cast<init_fn>(real_init.load(std::memory_order_relaxed))(flags);
  if (r == CUDA_SUCCESS) {
    static std::atomic<bool> started{false};
    const start_fn start = record_start.load(std::memory_order_relaxed);
    if (start && !started.exchange(true)) start();
  }
  return r;
}

void* handed(void* real);

CUresult CUDAAPI proc_v1_wrapper(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  const CUresult r = reinterpret_cast<proc_v1_fn>(real_proc_v1.load(std::memory_order_relaxed))(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && pfn && *pfn) *pfn = handed(*pfn);
  return r;
}

CUresult CUDAAPI proc_v2_wrapper(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult* status) {
  const CUresult r = reinterpret_cast<proc_v2_fn>(real_proc_v2.load(std::memory_order_relaxed))(
      symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && pfn && *pfn) *pfn = handed(*pfn);
  return r;
}

// The recording library (GMEM_RECORD_LIBRARY_LOADED, set by gmemprof record), loaded once: false
// where it cannot be, and then nothing is wrapped. A lookup made while it loads (by the
// constructors of the libraries it brings) is answered unwrapped. Another thread's lookup waits
// for the load at most a while: one that holds the dynamic loader's lock (a library's
// constructor) would otherwise wait for a load that waits for that lock. It is then answered
// unwrapped; nothing here ever waits without end.
std::timed_mutex loading;
thread_local bool in_load = false;
int load_state = 0;  // 0: not tried, 1: loaded, 2: failed (under `loading`)
std::atomic<bool> given_up{false};  // it failed: nothing is wrapped, nothing more is tried

bool load_recording_library(dlsym_fn real) {
  if (in_load) return false;
  std::unique_lock<std::timed_mutex> l(loading, std::defer_lock);
  if (!l.try_lock_for(std::chrono::milliseconds(500))) return false;
  if (load_state == 0) {
    in_load = true;
    load_state = 2;
    const char* path = std::getenv("GMEM_RECORD_LIBRARY_LOADED");
    if (void* library = path && *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr) {
      const auto call = reinterpret_cast<call_fn>(real(library, "gmem_record_interposed_call"));
      const auto start = reinterpret_cast<start_fn>(real(library, "gmem_record_interposed_start"));
      if (call && start) {
        record_call.store(call);
        record_start.store(start);
        load_state = 1;
      }
    }
    in_load = false;
    if (load_state == 2) given_up.store(true, std::memory_order_relaxed);
  }
  return load_state == 1;
}

// The real entry points, from the library that defines FOUND (libcuda), once, and the recording
// library loaded. Nothing more is tried once the recording library could not be loaded.
void learn(void* found) {
  if (learned.load(std::memory_order_acquire) || given_up.load(std::memory_order_relaxed)) return;
  // A handle to the library that defines FOUND, from dlopen: a library the program was linked to
  // was loaded without the search list dlsym reads through a handle, and dlopen makes it (its
  // link map, as dladdr1 gives it, crashes dlsym there). Once learned, the reference it takes is
  // kept: libcuda stays loaded while anything calls it.
  Dl_info info{};
  if (!dladdr(found, &info) || !info.dli_fname) return;
  void* const map = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!map) return;
  const dlsym_fn real = real_dlsym();
  void* const proc_v2 = real(map, "cuGetProcAddress_v2");
  if (!proc_v2 || !load_recording_library(real)) {  // not libcuda, or nothing to record with
    dlclose(map);
    return;
  }
  real_proc_v2.store(proc_v2);
  real_proc_v1.store(real(map, "cuGetProcAddress"));
  real_init.store(real(map, "cuInit"));
  for (const entry& e : entries) real_of[e.id].store(real(map, e.name));
  learned.store(true, std::memory_order_release);
}

// REAL's wrapper where it is an entry point the recording takes, else REAL.
void* handed(void* real) {
  if (!real || !learned.load(std::memory_order_acquire)) return real;
  void* out = real;
  if (real == real_init.load(std::memory_order_relaxed)) {
    out = reinterpret_cast<void*>(&init_wrapper);
  } else if (real == real_proc_v2.load(std::memory_order_relaxed)) {
    out = reinterpret_cast<void*>(&proc_v2_wrapper);
  } else if (real == real_proc_v1.load(std::memory_order_relaxed)) {
    out = reinterpret_cast<void*>(&proc_v1_wrapper);
  } else {
    for (const entry& e : entries) {
      if (real_of[e.id].load(std::memory_order_relaxed) == real) {
        out = e.wrapper;
        break;
      }
    }
  }
  return out;
}

// ---- Entry points a program links to libcuda directly

// The definition of NAME that comes after this library's: libcuda's where it is in the global
// scope; else (libcuda loaded into a library's own scope, dlopen RTLD_LOCAL) libcuda's own.
void* next_definition(const char* name) {
  const dlsym_fn real = real_dlsym();
  if (!real) return nullptr;
  if (void* f = real(RTLD_NEXT, name)) return f;
  void* const cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!cuda) return nullptr;
  void* const f = real(cuda, name);
  dlclose(cuda);  // NOLOAD took a reference: libcuda stays loaded by whoever loaded it
  return f;
}

// The definition after this library's of NAME, found once into SLOT.
void* next_cached(std::atomic<void*>& slot, const char* name) {
  void* f = slot.load(std::memory_order_acquire);
  if (!f) {
    f = next_definition(name);
    if (f) slot.store(f, std::memory_order_release);
  }
  return f;
}

// The libcuda entry point this library's definition of callback id ID stands for. Null where there
// is none (then the caller gets CUDA_ERROR_NOT_FOUND, as from the driver).
std::atomic<void*> next_of[id_count];

void* next_entry(unsigned id) {
  if (void* f = next_of[id].load(std::memory_order_acquire)) return f;
  for (const entry& e : entries) {
    if (e.id == id) return next_cached(next_of[id], e.name);
  }
  return nullptr;
}

// Where a call linked to libcuda goes, NEXT being the definition after this library's: WRAPPER
// where the interception is up and NEXT is libcuda's own (REAL, once learned), else NEXT as it
// is. Each entry point learns at most once (TRIED): a shim after this library is not libcuda.
template <class Fn>
Fn linked_target(void* next, const std::atomic<void*>& real, Fn wrapper, std::atomic<bool>& tried) {
  if (!next || !interposing()) return reinterpret_cast<Fn>(next);
  if (!tried.load(std::memory_order_relaxed) && !tried.exchange(true, std::memory_order_relaxed)) learn(next);
  return learned.load(std::memory_order_acquire) && real.load(std::memory_order_relaxed) == next
             ? wrapper
             : reinterpret_cast<Fn>(next);
}

// What a call linked to libcuda reaches (through the jumps below).
template <unsigned Id, class P, class... A>
CUresult CUDAAPI linked(A... a) {
  using fn = CUresult(CUDAAPI*)(A...);
  static std::atomic<bool> tried{false};
  const fn f = linked_target<fn>(next_entry(Id), real_of[Id], &wrapped<Id, P, A...>, tried);
  return f ? f(a...) : CUDA_ERROR_NOT_FOUND;
}

// cuInit and cuGetProcAddress linked directly: the same, through their wrappers.
std::atomic<void*> next_init{nullptr}, next_proc_v1{nullptr}, next_proc_v2{nullptr};
std::atomic<bool> tried_init{false}, tried_proc_v1{false}, tried_proc_v2{false};

CUresult CUDAAPI linked_init(unsigned int flags) {
  const init_fn f = linked_target<init_fn>(next_cached(next_init, "cuInit"), real_init, &init_wrapper, tried_init);
  return f ? f(flags) : CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI linked_proc_v1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  const proc_v1_fn f = linked_target<proc_v1_fn>(next_cached(next_proc_v1, "cuGetProcAddress"), real_proc_v1,
                                                 &proc_v1_wrapper, tried_proc_v1);
  return f ? f(symbol, pfn, version, flags) : CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI linked_proc_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                CUdriverProcAddressQueryResult* status) {
  const proc_v2_fn f = linked_target<proc_v2_fn>(next_cached(next_proc_v2, "cuGetProcAddress_v2"), real_proc_v2,
                                                 &proc_v2_wrapper, tried_proc_v2);
  return f ? f(symbol, pfn, version, flags, status) : CUDA_ERROR_NOT_FOUND;
}

}  // namespace

// Each of those entry points, cuInit and cuGetProcAddress defined under the driver's name
// (preload_exports.map): a call the program links to libcuda (through the PLT, which binds to
// the first definition in the search order, and LD_PRELOAD puts this library before libcuda) or
// looks up with RTLD_DEFAULT comes here. Each is a jump through a slot that holds its forwarder,
// so the arguments pass untouched. The slots are constant (relocated before any code runs):
// a library's constructor may call the driver before this library's constructors have run.
// NAME is a string: cuda.h renames some of the names as macros (cuGraphInstantiate).
#define GMEM_LINKED_JUMP(name)                                                           \
  asm(".text\n.globl " name "\n.type " name ", @function\n" name ":\n.cfi_startproc\n" \
      "  jmp *gmem_linked_" name "(%rip)\n.cfi_endproc\n.size " name ", .-" name "\n");
#define GMEM_LINKED(name, decode, ...)                                                               \
  extern "C" __attribute__((visibility("hidden"), used)) CUresult(CUDAAPI* const gmem_linked_##name)( \
      __VA_ARGS__) = &linked<CUPTI_DRIVER_TRACE_CBID_##name, name##_params, __VA_ARGS__>;           \
  GMEM_LINKED_JUMP(#name)
#define GMEM_LINKED0(name, decode)                                                                   \
  extern "C" __attribute__((visibility("hidden"), used)) CUresult(CUDAAPI* const gmem_linked_##name)() = \
      &linked<CUPTI_DRIVER_TRACE_CBID_##name, no_params>;                                           \
  GMEM_LINKED_JUMP(#name)
GMEM_RECORD_ROUTES(GMEM_LINKED, GMEM_LINKED0)
extern "C" __attribute__((visibility("hidden"), used)) const init_fn gmem_linked_cuInit = &linked_init;
extern "C" __attribute__((visibility("hidden"), used)) const proc_v1_fn gmem_linked_cuGetProcAddress = &linked_proc_v1;
extern "C" __attribute__((visibility("hidden"), used)) const proc_v2_fn gmem_linked_cuGetProcAddress_v2 =
    &linked_proc_v2;
GMEM_LINKED_JUMP("cuInit")
GMEM_LINKED_JUMP("cuGetProcAddress")
GMEM_LINKED_JUMP("cuGetProcAddress_v2")
#undef GMEM_LINKED
#undef GMEM_LINKED0
#undef GMEM_LINKED_JUMP

// What the interposed dlsym answers itself (a lookup of a "cu" name with a library's handle), or
// null: glibc's dlsym answers, asked as if from the caller.
extern "C" __attribute__((visibility("hidden"))) void* gmem_interpose_decide(void* handle, const char* name) {
  const dlsym_fn real = real_dlsym();
  if (!real || !interposing() || handle == RTLD_NEXT || handle == RTLD_DEFAULT || !name || name[0] != 'c' ||
      name[1] != 'u') {
    return nullptr;
  }
  void* const found = real(handle, name);
  if (!found) return nullptr;  // asked again through glibc's, which sets dlerror
  learn(found);
  return handed(found);
}

// dlsym itself: asks gmem_interpose_decide, and where it answers null jumps to glibc's dlsym with
// the caller's frame as it was, so that RTLD_NEXT and RTLD_DEFAULT are resolved from the caller.
asm(R"(
  .text
  .globl dlsym
  .type dlsym, @function
dlsym:
  .cfi_startproc
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call gmem_interpose_decide
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  testq %rax, %rax
  jz 1f
  ret
1:
  jmp *gmem_real_dlsym(%rip)
  .cfi_endproc
  .size dlsym, .-dlsym
)");
