// An experiment, not part of gmem: what recording would cost a capturing program if it
// took the driver's calls itself instead of through CUPTI, whose attachment alone slows every
// driver call. LD_PRELOADed into an unrecorded program (tools/record_scale.py --variant), it
// interposes dlsym, so that whoever asks for libcuda's cuGetProcAddress (the CUDA runtime does, for
// every driver entry point it uses) gets one that hands back wrappers for the calls a recording
// takes: stream capture's begin and end, instantiation, graph launches, stream-ordered frees.
//   GMEM_INTERPOSE=empty  the wrappers count and forward: the interception's own floor
//   GMEM_INTERPOSE=work   and around each instantiation they do what a recording cannot defer
//                         (unavoidable_work.hpp: the graph's read and the two memory readings)
//   otherwise             dlsym is interposed, nothing is wrapped: the shim's presence alone
// GMEM_INTERPOSE_LOG=FILE: at exit, one JSON line of counts is appended to FILE, so that a run
// shows what was wrapped and called (a wrapper never asked for measures nothing).
// Not fit for a user's process as it stands: a dlsym(RTLD_NEXT, ...) made through this dlsym is
// answered as if asked from here, and an entry point asked for twice with different answers
// (flags, versions) is wrapped once and then handed back unwrapped.
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda.h>

#include "benchmarks/unavoidable_work.hpp"

namespace {

using dlsym_fn = void* (*)(void*, const char*);
using proc_v2_fn = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using proc_v1_fn = CUresult (*)(const char*, void**, int, cuuint64_t);
using begin_fn = CUresult (*)(CUstream, CUstreamCaptureMode);
using end_fn = CUresult (*)(CUstream, CUgraph*);
using instantiate_fn = CUresult (*)(CUgraphExec*, CUgraph, unsigned long long);
using launch_fn = CUresult (*)(CUgraphExec, CUstream);
using free_fn = CUresult (*)(CUdeviceptr, CUstream);

int mode() {  // 0: nothing wrapped, 1: empty wrappers, 2: with the work
  static const int m = [] {
    const char* v = std::getenv("GMEM_INTERPOSE");
    if (!v) return 0;
    if (std::strcmp(v, "empty") == 0) return 1;
    if (std::strcmp(v, "work") == 0) return 2;
    return 0;
  }();
  return m;
}

dlsym_fn real_dlsym() {
  static const dlsym_fn f = [] {
    void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    return reinterpret_cast<dlsym_fn>(p);
  }();
  return f;
}

std::atomic<proc_v2_fn> real_proc_v2{nullptr};
std::atomic<proc_v1_fn> real_proc_v1{nullptr};

// Two slots per call: the legacy stream's entry point and the per-thread default stream's
// (instantiation: cuGraphInstantiateWithFlags, and cuGraphInstantiate as CUDA 12 gives it).
std::atomic<void*> real_begin[2], real_end[2], real_instantiate[2], real_launch[2], real_free[2];
std::atomic<std::uint64_t> begins{0}, ends{0}, instantiations{0}, launches{0}, frees{0}, nodes_read{0};
std::atomic<std::uint64_t> lookups{0}, wrapped{0}, declined{0};

template <int S>
CUresult wrapped_begin(CUstream s, CUstreamCaptureMode m) {
  begins.fetch_add(1, std::memory_order_relaxed);
  return reinterpret_cast<begin_fn>(real_begin[S].load(std::memory_order_relaxed))(s, m);
}

template <int S>
CUresult wrapped_end(CUstream s, CUgraph* g) {
  ends.fetch_add(1, std::memory_order_relaxed);
  return reinterpret_cast<end_fn>(real_end[S].load(std::memory_order_relaxed))(s, g);
}

template <int S>
CUresult wrapped_instantiate(CUgraphExec* e, CUgraph g, unsigned long long flags) {
  instantiations.fetch_add(1, std::memory_order_relaxed);
  const bool work = mode() == 2;
  if (work) nodes_read.fetch_add(gmem_experiment::before_instantiation(g), std::memory_order_relaxed);
  const CUresult r = reinterpret_cast<instantiate_fn>(real_instantiate[S].load(std::memory_order_relaxed))(e, g, flags);
  if (work) gmem_experiment::after_instantiation();
  return r;
}

template <int S>
CUresult wrapped_launch(CUgraphExec e, CUstream s) {
  launches.fetch_add(1, std::memory_order_relaxed);
  return reinterpret_cast<launch_fn>(real_launch[S].load(std::memory_order_relaxed))(e, s);
}

template <int S>
CUresult wrapped_free(CUdeviceptr p, CUstream s) {
  frees.fetch_add(1, std::memory_order_relaxed);
  return reinterpret_cast<free_fn>(real_free[S].load(std::memory_order_relaxed))(p, s);
}

// Each call's wrappers by slot (0: the legacy stream's entry point, 1: the per-thread one's).
void* const begin_wrappers[2] = {reinterpret_cast<void*>(&wrapped_begin<0>), reinterpret_cast<void*>(&wrapped_begin<1>)};
void* const end_wrappers[2] = {reinterpret_cast<void*>(&wrapped_end<0>), reinterpret_cast<void*>(&wrapped_end<1>)};
void* const instantiate_wrappers[2] = {reinterpret_cast<void*>(&wrapped_instantiate<0>),
                                       reinterpret_cast<void*>(&wrapped_instantiate<1>)};
void* const launch_wrappers[2] = {reinterpret_cast<void*>(&wrapped_launch<0>), reinterpret_cast<void*>(&wrapped_launch<1>)};
void* const free_wrappers[2] = {reinterpret_cast<void*>(&wrapped_free<0>), reinterpret_cast<void*>(&wrapped_free<1>)};

// The wrapper for SLOT holding REAL, or REAL itself where the slot holds another entry point.
void* into(std::atomic<void*>& slot, void* real, void* wrapper) {
  void* expected = nullptr;
  if (slot.compare_exchange_strong(expected, real) || expected == real) {
    wrapped.fetch_add(1, std::memory_order_relaxed);
    return wrapper;
  }
  declined.fetch_add(1, std::memory_order_relaxed);
  return real;
}

CUresult proc_v2(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
CUresult proc_v1(const char*, void**, int, cuuint64_t);

void* wrap(const char* symbol, void* real, int version, cuuint64_t flags) {
  lookups.fetch_add(1, std::memory_order_relaxed);
  if (mode() == 0 || !symbol || !real) return real;
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) {  // itself, through itself: still this one
    if (version >= 12000) {
      real_proc_v2.store(reinterpret_cast<proc_v2_fn>(real));
      return reinterpret_cast<void*>(&proc_v2);
    }
    real_proc_v1.store(reinterpret_cast<proc_v1_fn>(real));
    return reinterpret_cast<void*>(&proc_v1);
  }
  const int s = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? 1 : 0;
  if (std::strcmp(symbol, "cuStreamBeginCapture") == 0 && version >= 10010) {
    return into(real_begin[s], real, begin_wrappers[s]);
  }
  if (std::strcmp(symbol, "cuStreamEndCapture") == 0) {
    return into(real_end[s], real, end_wrappers[s]);
  }
  if (std::strcmp(symbol, "cuGraphInstantiateWithFlags") == 0) {
    return into(real_instantiate[0], real, instantiate_wrappers[0]);
  }
  if (std::strcmp(symbol, "cuGraphInstantiate") == 0 && version >= 12000) {
    return into(real_instantiate[1], real, instantiate_wrappers[1]);
  }
  if (std::strcmp(symbol, "cuGraphLaunch") == 0) {
    return into(real_launch[s], real, launch_wrappers[s]);
  }
  if (std::strcmp(symbol, "cuMemFreeAsync") == 0) {
    return into(real_free[s], real, free_wrappers[s]);
  }
  return real;
}

CUresult proc_v2(const char* symbol, void** pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  const proc_v2_fn real = real_proc_v2.load();
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && pfn && *pfn) *pfn = wrap(symbol, *pfn, version, flags);
  return r;
}

CUresult proc_v1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  const proc_v1_fn real = real_proc_v1.load();
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && pfn && *pfn) *pfn = wrap(symbol, *pfn, version, flags);
  return r;
}

struct at_exit {
  ~at_exit() {
    const char* path = std::getenv("GMEM_INTERPOSE_LOG");
    if (!path) return;
    if (FILE* f = std::fopen(path, "a")) {
      std::fprintf(f,
                   "{\"mode\": %d, \"lookups\": %llu, \"wrapped\": %llu, \"declined\": %llu, \"begins\": %llu, "
                   "\"ends\": %llu, \"instantiations\": %llu, \"launches\": %llu, \"frees\": %llu, "
                   "\"nodes_read\": %llu}\n",
                   mode(), static_cast<unsigned long long>(lookups.load()),
                   static_cast<unsigned long long>(wrapped.load()), static_cast<unsigned long long>(declined.load()),
                   static_cast<unsigned long long>(begins.load()), static_cast<unsigned long long>(ends.load()),
                   static_cast<unsigned long long>(instantiations.load()),
                   static_cast<unsigned long long>(launches.load()), static_cast<unsigned long long>(frees.load()),
                   static_cast<unsigned long long>(nodes_read.load()));
      std::fclose(f);
    }
  }
} report_at_exit;

}  // namespace

extern "C" __attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) {
  const dlsym_fn real = real_dlsym();
  void* found = real ? real(handle, name) : nullptr;
  if (!found || std::strncmp(name, "cuGetProcAddress", 16) != 0) return found;
  if (std::strcmp(name, "cuGetProcAddress_v2") == 0) {
    real_proc_v2.store(reinterpret_cast<proc_v2_fn>(found));
    return reinterpret_cast<void*>(&proc_v2);
  }
  if (std::strcmp(name, "cuGetProcAddress") == 0) {
    real_proc_v1.store(reinterpret_cast<proc_v1_fn>(found));
    return reinterpret_cast<void*>(&proc_v1);
  }
  return found;
}
