// Record mode's corpus, the C++ programs: plain CUDA runtime code as a user writes
// it (not gmem's allocator layer), each run recorded and unrecorded by tools/record_corpus.py.
// Each reads the graph memory counters itself where its checks need them and writes them to
// SELF_JSON (its last argument); stdout holds only lines that do not vary from run to run.
//   corpus_client pdl SELF_JSON          a capture with programmatic dependent launch (a
//                                        programmatic edge between two kernels) and memory nodes
//   corpus_client events SELF_JSON       pairs of graphs in two streams, the second launched after
//                                        an event synchronize, a polled event query, a polled
//                                        stream query, or only a stream wait on the event
//   corpus_client tight SELF_JSON [N]    one graph launched N times (20000) back to back
//   corpus_client back-to-back SELF_JSON [G]   G graphs (1000), each holding a small output,
//                                        launched in three rounds back to back in one stream
//   corpus_client identical SELF_JSON    eight graphs built by one function, all alive
//   corpus_client sigterm-exit SELF_JSON a thread launching graphs; a SIGTERM handler that calls
//                                        exit(3) runs on it
//   corpus_client segv-handled SELF_JSON a program whose own SIGSEGV handler (installed before
//                                        CUDA starts) recovers from 200 faults made on purpose
//   corpus_client rounds SELF_JSON [N]   N rounds (16000) of two graphs made, launched, destroyed,
//                                        and a trim
#include <cuda_runtime.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "corpus_client: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
#define CK(x) check((x), #x)

struct reading {
  unsigned long long used = 0, used_high = 0, reserved = 0, reserved_high = 0;
};

reading counters() {
  reading r;
  CK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &r.used));
  CK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &r.used_high));
  CK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &r.reserved));
  CK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &r.reserved_high));
  return r;
}

std::string json_of(const reading& r) {
  std::ostringstream o;
  o << "{\"used_current\": " << r.used << ", \"used_high\": " << r.used_high
    << ", \"reserved_current\": " << r.reserved << ", \"reserved_high\": " << r.reserved_high << "}";
  return o.str();
}

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text << "\n";
}

__global__ void touch(char* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) p[i] = 1;
}

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void producer(float* p) {
  p[threadIdx.x] = 1.0f;
  cudaTriggerProgrammaticLaunchCompletion();
}

__global__ void consumer(float* p) {
  cudaGridDependencySynchronize();
  p[threadIdx.x] += 1.0f;
}

long long cycles_per_ms() {
  int khz = 0;
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  return khz;
}

// A captured graph: `working` bytes allocated and freed inside it around a kernel of `ms`
// milliseconds, and an output of `output` bytes left allocated (returned through `out`).
cudaGraphExec_t graph_of(cudaStream_t s, std::size_t working, double ms, std::size_t output = 0,
                         void** out = nullptr, bool auto_free = false) {
  cudaGraph_t g = nullptr;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  char* w = nullptr;
  CK(cudaMallocAsync(reinterpret_cast<void**>(&w), working, s));
  touch<<<64, 256, 0, s>>>(w, 4096);
  if (ms > 0) spin<<<1, 1, 0, s>>>(static_cast<long long>(ms * cycles_per_ms()));
  if (output) {
    CK(cudaMallocAsync(out, output, s));
    touch<<<1, 256, 0, s>>>(static_cast<char*>(*out), 256);
  }
  CK(cudaFreeAsync(w, s));
  CK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t e = nullptr;
  CK(cudaGraphInstantiateWithFlags(&e, g, auto_free ? cudaGraphInstantiateFlagAutoFreeOnLaunch : 0));
  CK(cudaGraphDestroy(g));
  return e;
}

void trim_and_reset() {
  CK(cudaDeviceSynchronize());
  CK(cudaDeviceGraphMemTrim(0));
  unsigned long long zero = 0;
  CK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &zero));
  CK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero));
}

int pdl(const std::string& self) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g = nullptr;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  float* buf = nullptr;
  CK(cudaMallocAsync(reinterpret_cast<void**>(&buf), 64 * MiB, s));
  producer<<<1, 32, 0, s>>>(buf);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(1);
  cfg.blockDim = dim3(32);
  cfg.stream = s;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, consumer, buf));
  CK(cudaFreeAsync(buf, s));
  CK(cudaStreamEndCapture(s, &g));
  // The capture made a programmatic edge: reading the edges without their data is refused.
  std::size_t edges = 0;
  CK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &edges));
  std::vector<cudaGraphNode_t> from(edges), to(edges);
  std::vector<cudaGraphEdgeData> data(edges);
  CK(cudaGraphGetEdges(g, from.data(), to.data(), data.data(), &edges));
  int programmatic = 0;
  for (const auto& d : data) programmatic += d.type == cudaGraphDependencyTypeProgrammatic;
  cudaGraphExec_t e = nullptr;
  CK(cudaGraphInstantiate(&e, g, 0));
  const reading before = counters();
  CK(cudaGraphLaunch(e, s));
  const reading after = counters();
  for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(e, s));
  CK(cudaStreamSynchronize(s));
  write(self, "{\"programmatic_edges\": " + std::to_string(programmatic) + ", \"before\": " + json_of(before) +
                  ", \"after\": " + json_of(after) + ", \"final\": " + json_of(counters()) + "}");
  std::printf("pdl: %d programmatic edge(s), 4 launches\n", programmatic);
  CK(cudaGraphExecDestroy(e));
  CK(cudaGraphDestroy(g));
  return 0;
}

int events(const std::string& self) {
  cudaStream_t s1, s2;
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t e;
  CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  const char* ways[] = {"event_synchronize", "event_query", "stream_query", "stream_wait"};
  std::string out = "{\"variants\": [";
  for (int v = 0; v < 4; ++v) {
    trim_and_reset();
    cudaGraphExec_t a = graph_of(s1, 256 * MiB, 20), b = graph_of(s2, 256 * MiB, 20);
    std::string rounds;
    for (int round = 0; round < 2; ++round) {
      CK(cudaGraphLaunch(a, s1));
      CK(cudaEventRecord(e, s1));
      switch (v) {
        case 0: CK(cudaEventSynchronize(e)); break;
        case 1:
          while (cudaEventQuery(e) == cudaErrorNotReady) {
          }
          break;
        case 2:
          while (cudaStreamQuery(s1) == cudaErrorNotReady) {
          }
          break;
        default: CK(cudaStreamWaitEvent(s2, e, 0));
      }
      const reading before = counters();
      const auto t = std::chrono::steady_clock::now();
      CK(cudaGraphLaunch(b, s2));
      const double host_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
      const reading after = counters();
      CK(cudaDeviceSynchronize());
      rounds += std::string(round ? ", " : "") + "{\"before\": " + json_of(before) + ", \"after\": " + json_of(after) +
                ", \"host_us\": " + std::to_string(host_us) + "}";
    }
    out += std::string(v ? ", " : "") + "{\"way\": \"" + ways[v] + "\", \"second_launches\": [" + rounds +
           "], \"final\": " + json_of(counters()) + "}";
    CK(cudaGraphExecDestroy(a));
    CK(cudaGraphExecDestroy(b));
    std::printf("events: %s\n", ways[v]);
  }
  write(self, out + "]}");
  return 0;
}

int tight(const std::string& self, int n) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraphExec_t g = graph_of(s, 64 * MiB, 0.02);
  for (int i = 0; i < n; ++i) CK(cudaGraphLaunch(g, s));
  CK(cudaStreamSynchronize(s));
  write(self, "{\"launches\": " + std::to_string(n) + ", \"final\": " + json_of(counters()) + "}");
  std::printf("tight: %d launches\n", n);
  return 0;
}

int back_to_back(const std::string& self, int graphs) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<cudaGraphExec_t> g(graphs);
  std::vector<void*> outputs(graphs);
  for (int k = 0; k < graphs; ++k) g[k] = graph_of(s, 2 * MiB, 0, 256 << 10, &outputs[k], true);
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < graphs; ++k) CK(cudaGraphLaunch(g[k], s));
  }
  CK(cudaStreamSynchronize(s));
  write(self, "{\"graphs\": " + std::to_string(graphs) + ", \"final\": " + json_of(counters()) + "}");
  std::printf("back-to-back: %d graphs, 3 rounds\n", graphs);
  for (int k = 0; k < graphs; ++k) {
    CK(cudaGraphExecDestroy(g[k]));
    CK(cudaFree(outputs[k]));
  }
  return 0;
}

int identical(const std::string& self) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<cudaGraphExec_t> g(8);
  std::vector<void*> outputs(8);
  for (int k = 0; k < 8; ++k) g[k] = graph_of(s, 64 * MiB, 0, 1 * MiB, &outputs[k], true);
  std::string firsts;
  for (int k = 0; k < 8; ++k) {
    const reading before = counters();
    CK(cudaGraphLaunch(g[k], s));
    const reading after = counters();
    firsts += std::string(k ? ", " : "") + "{\"before\": " + json_of(before) + ", \"after\": " + json_of(after) + "}";
  }
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 8; ++k) CK(cudaGraphLaunch(g[k], s));
  }
  CK(cudaStreamSynchronize(s));
  write(self, "{\"first_launches\": [" + firsts + "], \"final\": " + json_of(counters()) + "}");
  std::printf("identical: 8 graphs alive, 4 launches each\n");
  for (int k = 0; k < 8; ++k) CK(cudaGraphExecDestroy(g[k]));
  for (int k = 0; k < 8; ++k) CK(cudaFree(outputs[k]));
  return 0;
}

// ROUNDS rounds of: two graphs made (A, B), each launched, synchronized, both destroyed, the
// pool trimmed (as graphMemoryFootprint does, and programs that capture in a loop). The
// recording stays two records whatever ROUNDS is; the program times its own rounds.
int rounds(const std::string& self, int n) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < n; ++k) {
    cudaGraphExec_t a = graph_of(s, 2 * MiB, 0), b = graph_of(s, 4 * MiB, 0);
    CK(cudaGraphLaunch(a, s));
    CK(cudaGraphLaunch(b, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaGraphExecDestroy(a));
    CK(cudaGraphExecDestroy(b));
    CK(cudaDeviceGraphMemTrim(0));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write(self, "{\"rounds\": " + std::to_string(n) + ", \"rounds_s\": " + std::to_string(seconds) +
                  ", \"final\": " + json_of(counters()) + "}");
  std::printf("rounds: %d rounds of two graphs made, launched, destroyed, trimmed\n", n);
  return 0;
}

void on_term(int) { std::exit(3); }

// A program whose SIGTERM handler calls exit(): the signal lands on the thread that launches
// graphs, at times inside a recorded CUDA call. The thread spends most of its time on the host
// (a 100 us spin between launches), so that without recording the exit is orderly.
int sigterm_exit(const std::string& self) {
  write(self, "{\"expected_exit\": 3}");
  struct sigaction sa {};
  sa.sa_handler = on_term;
  sigemptyset(&sa.sa_mask);
  CK(cudaFree(nullptr));
  sigaction(SIGTERM, &sa, nullptr);  // after CUDA started: the recorder's handler is replaced
  std::atomic<bool> ready{false};
  std::thread worker([&ready] {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraphExec_t g = graph_of(s, 8 * MiB, 0);
    ready = true;
    for (;;) {
      cudaGraphLaunch(g, s);
      const auto t = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - t < std::chrono::microseconds(100)) {
      }
    }
  });
  while (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::printf("sigterm-exit: started\n");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  pthread_kill(worker.native_handle(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::seconds(30));  // the handler's exit() ends it first
  std::printf("sigterm-exit: the signal did not end the process\n");
  std::_Exit(1);
}

sigjmp_buf recover;
void on_segv(int, siginfo_t*, void*) { siglongjmp(recover, 1); }

int segv_handled(const std::string& self) {
  // Installed before CUDA starts, as a JVM's is: the recorder's handler, installed at cuInit,
  // finds it and passes the faults on.
  struct sigaction sa {};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraphExec_t g = graph_of(s, 64 * MiB, 0);
  CK(cudaGraphLaunch(g, s));
  CK(cudaStreamSynchronize(s));
  int recovered = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    if (sigsetjmp(recover, 1) == 0) {
      *reinterpret_cast<volatile int*>(static_cast<std::uintptr_t>(16 + i)) = i;  // faults
    } else {
      ++recovered;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CK(cudaGraphLaunch(g, s));
  CK(cudaStreamSynchronize(s));
  write(self, "{\"faults\": 200, \"recovered\": " + std::to_string(recovered) + ", \"fault_loop_s\": " +
                  std::to_string(seconds) + ", \"final\": " + json_of(counters()) + "}");
  std::printf("segv-handled: %d of 200 faults recovered\n", recovered);
  CK(cudaGraphExecDestroy(g));
  return recovered == 200 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: corpus_client pdl|events|tight|back-to-back|identical|sigterm-exit|segv-handled|rounds SELF_JSON [N]\n");
    return 2;
  }
  const std::string mode = argv[1], self = argv[2];
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 0;
  }
  if (mode == "pdl") return pdl(self);
  if (mode == "events") return events(self);
  if (mode == "tight") return tight(self, argc > 3 ? std::atoi(argv[3]) : 20000);
  if (mode == "back-to-back") return back_to_back(self, argc > 3 ? std::atoi(argv[3]) : 1000);
  if (mode == "identical") return identical(self);
  if (mode == "sigterm-exit") return sigterm_exit(self);
  if (mode == "segv-handled") return segv_handled(self);
  if (mode == "rounds") return rounds(self, argc > 3 ? std::atoi(argv[3]) : 16000);
  std::fprintf(stderr, "corpus_client: unknown mode '%s'\n", mode.c_str());
  return 2;
}
