// The preloaded half of the recording library's own interception (record/preload.cpp), on the
// host: this test runs with LD_PRELOAD naming it, GMEM_RECORD_HOOK=interpose, and
// GMEM_RECORD_LIBRARY_LOADED naming a stand-in for the recording library (fake_recording.cpp);
// libcuda is a stand-in too (fake_cuda.cpp). It checks what a wrong interception would get wrong:
// which entry point a wrapper stands for (by version and per-thread-stream flag, not by name),
// that the arguments and the result pass through unchanged and reach the recording at enter and
// at exit, that cuInit starts the recording once, and that dlsym(RTLD_NEXT, ...) is still
// answered from where it was asked.
#include <cupti.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

// This program's own definition, before next_a's and next_b's in the search order.
extern "C" __attribute__((visibility("default"))) int probe_which() { return 0; }
extern "C" void* probe_next_from_a();
extern "C" int probe_b_marker();

namespace {

using proc_fn = int (*)(const char*, void**, int, unsigned long long, int*);
using launch_fn = int (*)(void*, void*);
using begin_v1_fn = int (*)(void*);
using begin_v2_fn = int (*)(void*, int);
using init_fn = int (*)(unsigned);
using sync_fn = int (*)();
using update_fn = int (*)(void*, void*, void*);

template <class F>
F in(void* library, const char* name) {
  return reinterpret_cast<F>(dlsym(library, name));
}

// The stand-in libcuda's own address of NAME, asked of it without the interposed dlsym's help:
// what dladdr says its symbol is.
void* fake_address(void* cuda, const char* name) {
  void* found = dlsym(cuda, name);
  Dl_info info{};
  if (!found || !dladdr(found, &info) || !info.dli_sname) return nullptr;
  return std::string(info.dli_sname) == name ? found : nullptr;
}

struct word {
  unsigned id;
  int enter;
  std::uintptr_t a, b;
  int result;
};

word recorded(std::size_t k) {
  void* r = dlopen(GMEM_FAKE_RECORDING, RTLD_NOW | RTLD_NOLOAD);
  word w{};
  if (!r) return w;
  in<void (*)(std::size_t, unsigned*, int*, std::uintptr_t*, std::uintptr_t*, int*)>(r, "fake_recording_word")(
      k, &w.id, &w.enter, &w.a, &w.b, &w.result);
  return w;
}

std::size_t words() {
  void* r = dlopen(GMEM_FAKE_RECORDING, RTLD_NOW | RTLD_NOLOAD);
  return r ? in<std::size_t (*)()>(r, "fake_recording_words")() : 0;
}

// A cuGraphLaunch(EXEC, STREAM) just made: libcuda's stand-in got it with its arguments, and the
// recording heard it at enter and at exit (the two words from BEFORE) with its result.
void expect_launch_reached_and_recorded(void* cuda, std::size_t before, std::uintptr_t exec, std::uintptr_t stream) {
  std::uintptr_t a = 0, b = 0;
  int calls = 0;
  EXPECT_EQ(std::string(in<const char* (*)(std::uintptr_t*, std::uintptr_t*, int*)>(cuda, "fake_cuda_last")(&a, &b, &calls)),
            "cuGraphLaunch");
  EXPECT_EQ(a, exec);
  EXPECT_EQ(b, stream);
  ASSERT_EQ(words(), before + 2);
  const word enter = recorded(before), exit = recorded(before + 1);
  EXPECT_EQ(enter.id, static_cast<unsigned>(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch));
  EXPECT_EQ(enter.enter, 1);
  EXPECT_EQ(enter.a, exec);
  EXPECT_EQ(enter.b, stream);
  EXPECT_EQ(exit.id, enter.id);
  EXPECT_EQ(exit.enter, 0);
  EXPECT_EQ(exit.result, 600);
}

bool preloaded() {
  const char* p = std::getenv("LD_PRELOAD");
  return p && std::string(p).find("libgmem_record_preload.so") != std::string::npos;
}

}  // namespace

TEST(PreloadedInterception, HandsBackTheWrapperOfTheEntryPointTheDriverGaveAndRecordsItsCall) {
  if (!preloaded()) GTEST_SKIP() << "runs only under LD_PRELOAD=libgmem_record_preload.so (ctest sets it)";
  void* cuda = dlopen(GMEM_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(cuda, nullptr) << dlerror();
  const auto proc = in<proc_fn>(cuda, "cuGetProcAddress_v2");
  ASSERT_NE(proc, nullptr);
  // The lookup is answered with a wrapper: not libcuda's own cuGetProcAddress_v2.
  Dl_info info{};
  ASSERT_TRUE(dladdr(reinterpret_cast<void*>(proc), &info));
  EXPECT_NE(std::string(info.dli_fname).find("libgmem_record_preload.so"), std::string::npos) << info.dli_fname;

  const std::size_t before = words();
  void* pfn = nullptr;
  int status = -1;
  ASSERT_EQ(proc("cuGraphLaunch", &pfn, 12000, 0, &status), 0);
  ASSERT_NE(pfn, nullptr);
  EXPECT_NE(pfn, fake_address(cuda, "cuGraphLaunch"));
  EXPECT_EQ(status, 0);
  // The call passes through with its arguments and its result, and the recording hears it at
  // enter and at exit as cuGraphLaunch (not the per-thread entry point).
  auto* exec = reinterpret_cast<void*>(0x1234);
  auto* stream = reinterpret_cast<void*>(0x5678);
  EXPECT_EQ(reinterpret_cast<launch_fn>(pfn)(exec, stream), 600);
  expect_launch_reached_and_recorded(cuda, before, 0x1234u, 0x5678u);
  std::uintptr_t a = 0, b = 0;
  int calls = 0;

  // The same name with the per-thread-stream flag: another entry point, another wrapper.
  void* ptsz = nullptr;
  ASSERT_EQ(proc("cuGraphLaunch", &ptsz, 12000, 2, &status), 0);
  EXPECT_NE(ptsz, pfn);
  EXPECT_NE(ptsz, fake_address(cuda, "cuGraphLaunch_ptsz"));
  EXPECT_EQ(reinterpret_cast<launch_fn>(ptsz)(exec, nullptr), 600);
  EXPECT_EQ(std::string(in<const char* (*)(std::uintptr_t*, std::uintptr_t*, int*)>(cuda, "fake_cuda_last")(&a, &b, &calls)),
            "cuGraphLaunch_ptsz");
  ASSERT_EQ(words(), before + 4);
  EXPECT_EQ(recorded(before + 2).id, static_cast<unsigned>(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz));

  // One name, two versions: cuStreamBeginCapture (the stream alone) before CUDA 10.1, its _v2
  // (the stream and the mode) since.
  void* v1 = nullptr;
  void* v2 = nullptr;
  ASSERT_EQ(proc("cuStreamBeginCapture", &v1, 10000, 0, &status), 0);
  ASSERT_EQ(proc("cuStreamBeginCapture", &v2, 12000, 0, &status), 0);
  EXPECT_NE(v1, v2);
  EXPECT_EQ(reinterpret_cast<begin_v1_fn>(v1)(stream), 600);
  EXPECT_EQ(reinterpret_cast<begin_v2_fn>(v2)(stream, 2), 600);
  ASSERT_EQ(words(), before + 8);
  EXPECT_EQ(recorded(before + 4).id, static_cast<unsigned>(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture));
  EXPECT_EQ(recorded(before + 4).a, 0x5678u);
  const word v2_enter = recorded(before + 6);
  EXPECT_EQ(v2_enter.id, static_cast<unsigned>(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2));
  EXPECT_EQ(v2_enter.a, 0x5678u);
  EXPECT_EQ(v2_enter.b & 0xffffffffu, 2u);  // the mode, an int in a pointer-sized slot

  // An entry point without parameters.
  void* sync = nullptr;
  ASSERT_EQ(proc("cuCtxSynchronize", &sync, 12000, 0, &status), 0);
  EXPECT_EQ(reinterpret_cast<sync_fn>(sync)(), 600);
  ASSERT_EQ(words(), before + 10);
  EXPECT_EQ(recorded(before + 8).id, static_cast<unsigned>(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize));

  // An update in place (the name's version 12.0 entry point, cuGraphExecUpdate_v2) and a node's
  // parameters set: recorded with the executable graph and the graph (or the node) first.
  void* update = nullptr;
  void* kernel_params = nullptr;
  ASSERT_EQ(proc("cuGraphExecUpdate", &update, 12000, 0, &status), 0);
  ASSERT_EQ(proc("cuGraphExecKernelNodeSetParams", &kernel_params, 12000, 0, &status), 0);
  EXPECT_NE(update, fake_address(cuda, "cuGraphExecUpdate_v2"));
  EXPECT_NE(kernel_params, fake_address(cuda, "cuGraphExecKernelNodeSetParams_v2"));
  EXPECT_EQ(reinterpret_cast<update_fn>(update)(exec, stream, nullptr), 600);
  EXPECT_EQ(reinterpret_cast<update_fn>(kernel_params)(exec, stream, nullptr), 600);
  ASSERT_EQ(words(), before + 14);
  EXPECT_EQ(recorded(before + 10).id, static_cast<unsigned>(CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2));
  EXPECT_EQ(recorded(before + 10).a, 0x1234u);
  EXPECT_EQ(recorded(before + 11).b, 0x5678u);
  EXPECT_EQ(recorded(before + 11).result, 600);
  EXPECT_EQ(recorded(before + 12).id, static_cast<unsigned>(CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2));

  // One the recording does not take is handed back as the driver gave it, through dlsym too.
  void* count = nullptr;
  ASSERT_EQ(proc("cuDeviceGetCount", &count, 12000, 0, &status), 0);
  EXPECT_EQ(count, fake_address(cuda, "cuDeviceGetCount"));
  EXPECT_EQ(dlsym(cuda, "cuDeviceGetCount"), fake_address(cuda, "cuDeviceGetCount"));
  // cuGetProcAddress asked for through itself is still the wrapper.
  void* self = nullptr;
  ASSERT_EQ(proc("cuGetProcAddress", &self, 12000, 0, &status), 0);
  EXPECT_EQ(self, reinterpret_cast<void*>(proc));
  // A name libcuda lacks: null, and dlerror says why (glibc's dlsym answered).
  dlerror();
  EXPECT_EQ(dlsym(cuda, "cuNoSuchEntryPoint"), nullptr);
  EXPECT_NE(dlerror(), nullptr);
  // Names that are not the driver's are glibc's answers.
  EXPECT_EQ(dlsym(cuda, "fake_cuda_inits"), fake_address(cuda, "fake_cuda_inits"));
  EXPECT_EQ(words(), before + 14);
}

TEST(PreloadedInterception, CuInitStartsTheRecordingOnceAfterTheDriverIsUp) {
  if (!preloaded()) GTEST_SKIP() << "runs only under LD_PRELOAD=libgmem_record_preload.so (ctest sets it)";
  void* cuda = dlopen(GMEM_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(cuda, nullptr) << dlerror();
  const auto init = in<init_fn>(cuda, "cuInit");
  ASSERT_NE(init, nullptr);
  EXPECT_NE(reinterpret_cast<void*>(init), fake_address(cuda, "cuInit"));
  void* recording = dlopen(GMEM_FAKE_RECORDING, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(recording, nullptr) << "the recording library is loaded once libcuda is looked up";
  const auto starts = in<int (*)()>(recording, "fake_recording_starts");
  const auto inits = in<int (*)()>(cuda, "fake_cuda_inits");
  const int inits_before = inits();
  EXPECT_EQ(init(0), 0);
  EXPECT_EQ(init(0), 0);
  EXPECT_EQ(inits(), inits_before + 2);
  EXPECT_EQ(starts(), 1);
}

TEST(PreloadedInterception, RtldNextIsAnsweredFromWhereItWasAsked) {
  if (!preloaded()) GTEST_SKIP() << "runs only under LD_PRELOAD=libgmem_record_preload.so (ctest sets it)";
  ASSERT_EQ(probe_b_marker(), 2);
  // Asked from next_a: the definition after next_a's is next_b's. Asked as if from the preloaded
  // library (before next_a), it would be next_a's own.
  void* next = probe_next_from_a();
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(reinterpret_cast<int (*)()>(next)(), 2);
  // And from here (the program, first in the search order): the preloaded library defines none,
  // so next_a's.
  void* from_here = dlsym(RTLD_NEXT, "probe_which");
  ASSERT_NE(from_here, nullptr);
  EXPECT_EQ(reinterpret_cast<int (*)()>(from_here)(), 1);
}

// A program linked to libcuda (-lcuda) calls the driver through the PLT: the dynamic linker binds
// those calls to the preloaded library's definitions of the driver's names, which record them as
// the looked-up entry points are, and call libcuda's own. Run by ctest in a process of its own:
// its first call is cuInit, made before anything opens libcuda with dlopen (a library the program
// was linked to has no search list for dlsym until dlopen makes one).
TEST(PreloadedLinked, CallsLinkedToLibcudaDirectlyAreRecordedAndReachTheDriver) {
  if (!preloaded()) GTEST_SKIP() << "runs only under LD_PRELOAD=libgmem_record_preload.so (ctest sets it)";
  EXPECT_EQ(cuInit(0), CUDA_SUCCESS);
  void* cuda = dlopen(GMEM_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(cuda, nullptr) << "this program links the stand-in libcuda";
  EXPECT_EQ(in<int (*)()>(cuda, "fake_cuda_inits")(), 1);
  void* recording = dlopen(GMEM_FAKE_RECORDING, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(recording, nullptr) << "cuInit linked directly loads the recording library";
  EXPECT_EQ(in<int (*)()>(recording, "fake_recording_starts")(), 1);
  EXPECT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(in<int (*)()>(cuda, "fake_cuda_inits")(), 2);
  EXPECT_EQ(in<int (*)()>(recording, "fake_recording_starts")(), 1) << "the recording starts once";
  // The name the program binds to is the preloaded library's, not libcuda's.
  void* bound = dlsym(RTLD_DEFAULT, "cuGraphLaunch");
  ASSERT_NE(bound, nullptr);
  Dl_info info{};
  ASSERT_TRUE(dladdr(bound, &info));
  EXPECT_NE(std::string(info.dli_fname).find("libgmem_record_preload.so"), std::string::npos) << info.dli_fname;
  const auto last = in<const char* (*)(std::uintptr_t*, std::uintptr_t*, int*)>(cuda, "fake_cuda_last");

  const std::size_t before = words();
  EXPECT_EQ(static_cast<int>(cuGraphLaunch(reinterpret_cast<CUgraphExec>(0x4321), reinterpret_cast<CUstream>(0x8765))),
            600);
  expect_launch_reached_and_recorded(cuda, before, 0x4321u, 0x8765u);
  std::uintptr_t a = 0, b = 0;
  int calls = 0;
  // An entry point without parameters, and a version of another one.
  EXPECT_EQ(static_cast<int>(cuCtxSynchronize()), 600);
  EXPECT_EQ(static_cast<int>(cuStreamBeginCapture_v2(reinterpret_cast<CUstream>(0x8765), CU_STREAM_CAPTURE_MODE_RELAXED)),
            600);
  EXPECT_EQ(std::string(last(&a, &b, &calls)), "cuStreamBeginCapture_v2");
  EXPECT_EQ(b, static_cast<std::uintptr_t>(CU_STREAM_CAPTURE_MODE_RELAXED));
  ASSERT_EQ(words(), before + 6);
  EXPECT_EQ(recorded(before + 2).id, static_cast<unsigned>(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize));
  EXPECT_EQ(recorded(before + 4).id, static_cast<unsigned>(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2));
  // An update in place linked directly: cuda.h names cuGraphExecUpdate_v2 cuGraphExecUpdate.
  EXPECT_EQ(static_cast<int>(cuGraphExecUpdate(reinterpret_cast<CUgraphExec>(0x4321), reinterpret_cast<CUgraph>(0x1111),
                                               nullptr)),
            600);
  EXPECT_EQ(std::string(last(&a, &b, &calls)), "cuGraphExecUpdate_v2");
  EXPECT_EQ(b, 0x1111u);
  ASSERT_EQ(words(), before + 8);
  EXPECT_EQ(recorded(before + 6).id, static_cast<unsigned>(CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2));
  EXPECT_EQ(recorded(before + 6).a, 0x4321u);
  EXPECT_EQ(recorded(before + 6).b, 0x1111u);
  // One the recording does not take is libcuda's own, bound directly.
  int n = 0;
  EXPECT_EQ(cuDeviceGetCount(&n), CUDA_SUCCESS);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "cuDeviceGetCount"), fake_address(cuda, "cuDeviceGetCount"));
  // cuGetProcAddress linked directly hands back wrappers too.
  void* pfn = nullptr;
  CUdriverProcAddressQueryResult status{};
  ASSERT_EQ(cuGetProcAddress_v2("cuGraphLaunch", &pfn, 12000, 0, &status), CUDA_SUCCESS);
  EXPECT_NE(pfn, fake_address(cuda, "cuGraphLaunch"));
  EXPECT_EQ(reinterpret_cast<launch_fn>(pfn)(nullptr, nullptr), 600);
  EXPECT_EQ(words(), before + 10);
}

// Run by ctest apart, preloaded where the interception must stay out of the way: without the
// recording library (GMEM_RECORD_LIBRARY_LOADED naming none), or with another hook
// (GMEM_RECORD_HOOK=cupti). Every lookup is then glibc's answer and every call the driver's own.
TEST(PreloadedButIdle, EveryLookupIsTheLibrarysOwnAndTheProgramRunsAsWithout) {
  if (!preloaded()) GTEST_SKIP() << "runs only under LD_PRELOAD=libgmem_record_preload.so (ctest sets it)";
  void* cuda = dlopen(GMEM_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(cuda, nullptr) << dlerror();
  for (const char* name : {"cuGetProcAddress_v2", "cuInit", "cuGraphLaunch", "cuDeviceGetCount"}) {
    EXPECT_EQ(dlsym(cuda, name), fake_address(cuda, name)) << name;
  }
  const auto proc = in<proc_fn>(cuda, "cuGetProcAddress_v2");
  ASSERT_NE(proc, nullptr);
  void* pfn = nullptr;
  int status = -1;
  ASSERT_EQ(proc("cuGraphLaunch", &pfn, 12000, 2, &status), 0);
  EXPECT_EQ(pfn, fake_address(cuda, "cuGraphLaunch_ptsz"));
  EXPECT_EQ(reinterpret_cast<launch_fn>(pfn)(nullptr, nullptr), 600);
  EXPECT_EQ(in<init_fn>(cuda, "cuInit")(0), 0);
  // Calls linked to libcuda directly reach it unchanged.
  EXPECT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<int>(cuGraphLaunch(reinterpret_cast<CUgraphExec>(0x4321), nullptr)), 600);
  std::uintptr_t a = 0, b = 0;
  int calls = 0;
  EXPECT_EQ(std::string(in<const char* (*)(std::uintptr_t*, std::uintptr_t*, int*)>(cuda, "fake_cuda_last")(&a, &b, &calls)),
            "cuGraphLaunch");
  EXPECT_EQ(a, 0x4321u);
  // Nothing loaded the recording library (or its stand-in).
  EXPECT_EQ(dlopen(GMEM_FAKE_RECORDING, RTLD_NOW | RTLD_NOLOAD), nullptr);
  void* next = probe_next_from_a();
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(reinterpret_cast<int (*)()>(next)(), 2);
}
