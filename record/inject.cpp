// The injected library: CUDA loads it through CUDA_INJECTION64_PATH and calls
// InitializeInjection during cuInit. It subscribes to CUPTI's driver API callbacks, reads each
// instantiated graph through the driver API (no second CUDA runtime in the process), reads the
// four graph memory counters around the calls that map memory, and hands everything to the
// plain recorder. It writes the report at exit, or flagged partial on a fatal signal.
//
// Cost on the application: a graph launch of a graph without memory nodes costs one map lookup;
// a steady launch of a graph with memory nodes two clock reads; only first launches, launches
// after an upload, a trim or a stream switch, and launches slow enough to have mapped memory
// read the counters (eight attribute reads). Nothing synchronizes the application's streams.
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <cxxabi.h>
#include <execinfo.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cctype>
#include <fstream>
#include <sstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "record/recorder.hpp"

namespace gmem::record {
namespace {

using clock_type = std::chrono::steady_clock;

struct state {
  std::mutex mutex;
  recorder rec;
  recording_info info;
  std::string out_path;
  int device_filter = -1;  ///< -1: all devices
  clock_type::time_point t0 = clock_type::now();
  bool have_env = false;
  profiler::environment env;
  std::uint64_t granularity = 0;
  bool written = false;
  explicit state(name_source n) : rec(n) {}
};

state* g = nullptr;  // leaked on purpose: it must outlive every static destructor at exit
thread_local bool in_callback = false;
// The stream this thread is capturing into (0: none): memory the thread allocates meanwhile
// (cuMemAlloc, cuMemCreate) is an allocator growing the graph's private pool (issue 22).
thread_local std::uint64_t capturing_stream = 0;
thread_local std::vector<std::string> nvtx_stack;

// Windows of graph calls (launches, uploads, instantiations of graphs with memory nodes,
// trims) across threads: a call whose counter window another such call overlapped reads the
// device-wide counters with the other's mapping in them, so it is marked concurrent and its
// growth split by the pool model (profiler/pool_analysis.hpp), never given to one graph by guess.
std::atomic<int> calls_in_flight{0};
std::atomic<std::uint64_t> calls_started{0};

struct pending_call {
  double t_us = 0;
  clock_type::time_point start;
  std::optional<counters> before;
  int device = -1;
  bool tracked = false;
  std::uint64_t stream = 0;
  record::recorder::launch_plan plan;
  profiler::graph_model model;
  bool has_memory_nodes = false;
  std::uint64_t epoch = 0;
  bool busy_at_enter = false;
  bool windowed = false;
  /// The counters of the call's graph's other devices, read before the call (a graph that
  /// allocates on several devices maps on each: issue 19).
  std::vector<std::pair<int, std::optional<counters>>> others;
};
thread_local pending_call pending;

void window_enter() {
  pending.windowed = true;
  pending.epoch = calls_started.fetch_add(1, std::memory_order_relaxed) + 1;
  pending.busy_at_enter = calls_in_flight.fetch_add(1, std::memory_order_relaxed) > 0;
}

// Whether another graph call overlapped this thread's window (see calls_in_flight).
bool window_exit() {
  if (!pending.windowed) return false;
  pending.windowed = false;
  const bool busy_at_exit = calls_in_flight.fetch_sub(1, std::memory_order_relaxed) > 1;
  return pending.busy_at_enter || busy_at_exit ||
         calls_started.load(std::memory_order_relaxed) != pending.epoch;
}

// The CUresult a call returned, as its name ("CUDA_ERROR_INVALID_VALUE"); empty on success.
std::string failure_of(const CUpti_CallbackData* cb) {
  if (!cb->functionReturnValue) return "";
  const CUresult r = *static_cast<const CUresult*>(cb->functionReturnValue);
  if (r == CUDA_SUCCESS) return "";
  const char* name = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) return "CUresult " + std::to_string(static_cast<int>(r));
  return name;
}

double now_us() {
  return std::chrono::duration<double, std::micro>(clock_type::now() - g->t0).count();
}

std::optional<counters> read_device_counters(int ordinal) {
  CUdevice dev = 0;
  if (cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS) return std::nullopt;
  counters c;
  cuuint64_t v = 0;
  if (cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v) != CUDA_SUCCESS) {
    return std::nullopt;
  }
  c.used_current = v;
  cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v);
  c.used_high = v;
  cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v);
  c.reserved_current = v;
  cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &v);
  c.reserved_high = v;
  return c;
}

// Reads the counters of `exec`'s devices other than `primary` into pending.others (before the
// call). Only for calls whose counters are read: a steady launch pays nothing.
void read_other_devices_before(std::uint64_t exec, int primary) {
  pending.others.clear();
  for (int d : g->rec.devices_of(exec)) {
    if (d != primary) pending.others.emplace_back(d, read_device_counters(d));
  }
}

// The same call on `exec`'s other devices, after it (the caller holds the lock and recorded the
// call on the primary device at `t_us`).
void record_other_devices(std::uint64_t exec, int primary, double t_us) {
  for (int d : g->rec.devices_of(exec)) {
    if (d == primary) continue;
    std::optional<counters> before;
    for (const auto& [device, c] : pending.others) {
      if (device == d) before = c;
    }
    if (!before) before = g->rec.last_counters(d);
    g->rec.on_other_device(exec, d, t_us, before, read_device_counters(d));
  }
  pending.others.clear();
}

profiler::node_kind kind_of(CUgraphNodeType t) {
  using profiler::node_kind;
  switch (t) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return node_kind::kernel;
    case CU_GRAPH_NODE_TYPE_MEMCPY: return node_kind::memcpy;
    case CU_GRAPH_NODE_TYPE_MEMSET: return node_kind::memset;
    case CU_GRAPH_NODE_TYPE_HOST: return node_kind::host;
    case CU_GRAPH_NODE_TYPE_GRAPH: return node_kind::child_graph;
    case CU_GRAPH_NODE_TYPE_EMPTY: return node_kind::empty;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return node_kind::event_wait;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return node_kind::event_record;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return node_kind::mem_alloc;
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return node_kind::mem_free;
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: return node_kind::conditional;
    default: return node_kind::other;
  }
}

// The driver-API twin of profiler::read_graph: the application's runtime may be another
// instance than ours, so this library makes no runtime API calls at all. Returns false when
// the driver refused a query (the graph is then not recorded).
bool read_graph(CUgraph graph, profiler::graph_model& m, bool& has_alloc) {
  std::size_t n = 0;
  if (cuGraphGetNodes(graph, nullptr, &n) != CUDA_SUCCESS) return false;
  std::vector<CUgraphNode> nodes(n);
  if (n && cuGraphGetNodes(graph, nodes.data(), &n) != CUDA_SUCCESS) return false;
  std::map<CUgraphNode, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i) index[nodes[i]] = i;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType t{};
    if (cuGraphNodeGetType(node, &t) != CUDA_SUCCESS) return false;
    profiler::model_node mn;
    mn.kind = kind_of(t);
    if (mn.kind == profiler::node_kind::mem_alloc) {
      CUDA_MEM_ALLOC_NODE_PARAMS p{};
      if (cuGraphMemAllocNodeGetParams(node, &p) != CUDA_SUCCESS) return false;
      has_alloc = true;
      mn.address = p.dptr;
      mn.bytes = p.bytesize;
      mn.device = p.poolProps.location.id;
      for (std::size_t i = 0; i < p.accessDescCount; ++i) {
        if (p.accessDescs[i].location.id != mn.device) mn.peers.push_back(p.accessDescs[i].location.id);
      }
    } else if (mn.kind == profiler::node_kind::mem_free) {
      CUdeviceptr d = 0;
      if (cuGraphMemFreeNodeGetParams(node, &d) != CUDA_SUCCESS) return false;
      mn.address = d;
    } else if (mn.kind == profiler::node_kind::child_graph) {
      CUgraph child = nullptr;
      if (cuGraphChildGraphNodeGetGraph(node, &child) != CUDA_SUCCESS) return false;
      mn.child = m.children.size();
      profiler::graph_model cm;
      cm.name = m.name + " / child " + std::to_string(m.children.size());
      if (!read_graph(child, cm, has_alloc)) return false;
      m.children.push_back(std::move(cm));
    }
    m.nodes.push_back(std::move(mn));
  }
  std::size_t e = 0;
  if (cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &e) != CUDA_SUCCESS) return false;
  std::vector<CUgraphNode> from(e), to(e);
  if (e && cuGraphGetEdges(graph, from.data(), to.data(), nullptr, &e) != CUDA_SUCCESS) return false;
  for (std::size_t i = 0; i < e; ++i) m.edges.emplace_back(index.at(from[i]), index.at(to[i]));
  return true;
}

int current_device() {
  CUdevice d = 0;
  return cuCtxGetDevice(&d) == CUDA_SUCCESS ? static_cast<int>(d) : 0;
}

std::string iso_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string process_command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (char& c : s) if (c == '\0') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// Called from a callback (a context exists, the driver is initialised).
void describe_environment(int ordinal) {
  if (g->have_env) return;
  CUdevice dev = 0;
  if (cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS) return;
  profiler::environment& e = g->env;
  char name[256] = {};
  cuDeviceGetName(name, sizeof name, dev);
  e.device_name = name;
  e.device_index = ordinal;
  cuDeviceGetAttribute(&e.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cuDeviceGetAttribute(&e.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  std::size_t total = 0;
  cuDeviceTotalMem(&total, dev);
  e.total_memory_bytes = total;
  cuDriverGetVersion(&e.driver_version);
  cuDeviceGetCount(&e.device_count);
  std::ifstream v("/proc/driver/nvidia/version");
  std::string line;
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...":
  // the first word that is digits and dots with a dot in it.
  std::string word;
  while (std::getline(v, line) && e.driver_release.empty()) {
    std::istringstream words(line);
    while (words >> word) {
      if (word.find('.') != std::string::npos && std::isdigit(static_cast<unsigned char>(word[0])) &&
          word.find_first_not_of("0123456789.") == std::string::npos) {
        e.driver_release = word;
        break;
      }
    }
  }
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  std::size_t gran = 0;
  cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  g->granularity = gran;
  e.granularity_bytes = gran;
  e.granularity_method = "cuMemGetAllocationGranularity (minimum), read by the recording library";
  // What the driver really reserves per graph allocation (32 MiB on H100 and H200, against 2 MiB
  // from cuMemGetAllocationGranularity), measured by `gmemprof record` before the command
  // started: the lower bound is rounded to it.
  if (const std::uint64_t measured = granularity_from_text(std::getenv("GMEM_RECORD_GRANULARITY"))) {
    g->granularity = measured;
    e.granularity_bytes = measured;
    const char* method = std::getenv("GMEM_RECORD_GRANULARITY_METHOD");
    e.granularity_method = method && *method ? method : "measured by gmemprof record";
  }
  e.tool_version = GMEM_VERSION;
  e.git_commit = GMEM_GIT_COMMIT;
  e.command_line = process_command_line();
  e.date = iso_now();
  g->have_env = true;
}

void write_now(bool partial, const std::string& reason) {
  if (!g || g->out_path.empty()) return;
  try {
    g->info.partial = partial;
    g->info.partial_reason = reason;
    if (!g->have_env) g->env.tool_version = GMEM_VERSION, g->env.git_commit = GMEM_GIT_COMMIT;
    if (g->env.command_line.empty()) g->env.command_line = process_command_line();
    if (g->env.date.empty()) g->env.date = iso_now();
    const profiler::report rep = assemble(g->rec, g->env, g->granularity, g->info);
    write_recording(rep, g->out_path);
    g->written = true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmemprof record: the report could not be written to '%s': %s\n",
                 g->out_path.c_str(), e.what());
  }
}

std::atomic<bool> forked_child{false};  // a fork() copy: records nothing, writes nothing

void at_exit() {
  if (!g || forked_child) return;
  std::lock_guard<std::mutex> lock(g->mutex);
  write_now(false, "");
}

// Signals. The handler does only what is async-signal-safe: it writes the signal's number to a
// pipe and waits (poll, up to 5 s) for the writer thread to answer on another pipe once the
// partial report is written; then it passes the signal on as the program would have had it: to
// the program's own handler with the original siginfo (its flags kept: ours were installed with
// them), or the default action restored and the signal taken again. The writer thread blocks
// every signal and takes the recorder's lock with try_lock for at most 2 s: a signal that landed
// while a callback held it does not deadlock the process, it loses the partial report.
constexpr int handled_signals[] = {SIGTERM, SIGINT, SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};
struct sigaction previous[65];
bool installed[65];
int wake_pipe[2] = {-1, -1};
int done_pipe[2] = {-1, -1};
std::atomic<bool> signal_writing{false};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    default: return "?";
  }
}

void writer_thread() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    int sig = 0;
    const ssize_t n = read(wake_pipe[0], &sig, sizeof sig);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof sig)) return;
    bool locked = false;
    for (int i = 0; i < 200 && !(locked = g->mutex.try_lock()); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (locked) {
      write_now(true, "signal " + std::to_string(sig) + " (" + signal_name(sig) + ")");
      g->mutex.unlock();
    }
    const char done = 1;
    (void)!write(done_pipe[1], &done, 1);
  }
}

bool fault(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL; }

void on_signal(int sig, siginfo_t* info, void* context) {
  const int saved = errno;
  if (g && !forked_child && wake_pipe[1] >= 0 && !signal_writing.exchange(true)) {
    if (write(wake_pipe[1], &sig, sizeof sig) == static_cast<ssize_t>(sizeof sig)) {
      struct pollfd p {done_pipe[0], POLLIN, 0};
      int r;
      while ((r = poll(&p, 1, 5000)) < 0 && errno == EINTR) {
      }
      char c;
      if (r > 0) (void)!read(done_pipe[0], &c, 1);
    }
  }
  errno = saved;
  const struct sigaction& old = previous[sig];
  if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) {
    old.sa_sigaction(sig, info, context);
  } else if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) {
  } else if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL) {
    old.sa_handler(sig);  // e.g. Python's SIGINT handler: the program goes on, KeyboardInterrupt
  } else {
    // The default action, as without recording: a fault raised by the kernel happens again
    // when the handler returns; any other signal is taken again once this handler returns.
    sigaction(sig, &old, nullptr);
    installed[sig] = false;
    if (!(fault(sig) && info && info->si_code > 0)) raise(sig);
    return;
  }
  signal_writing = false;  // the program went on: a later signal writes again
}

void install_signal_handlers() {
  if (pipe2(wake_pipe, O_CLOEXEC) != 0 || pipe2(done_pipe, O_CLOEXEC) != 0) return;
  std::thread(writer_thread).detach();
  for (int sig : handled_signals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) continue;
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue;  // ignored: stays so
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_mask = old.sa_mask;
    sa.sa_flags = (old.sa_flags | SA_SIGINFO) & ~SA_RESETHAND;  // the program's SA_RESTART, SA_ONSTACK...
    if (sigaction(sig, &sa, &previous[sig]) == 0) installed[sig] = true;
  }
}

// A child made by fork() (without exec) holds a copy of the recorder: the parent's graphs, its
// output path, its signal handlers. It must not write over the parent's report nor catch the
// parent's signals: it records nothing (CUDA cannot be used in it after the parent's cuInit; a
// child of a process that never initialised CUDA loads this library afresh at its own cuInit
// and records under its own pid).
void in_forked_child() {
  forked_child = true;
  for (int sig : handled_signals) {
    if (installed[sig]) sigaction(sig, &previous[sig], nullptr);
  }
}

// The native call stack of the instantiation, taken in the callback after the call (its host
// time is already measured): backtrace() and dladdr(), a few microseconds once per graph.
// Frames of the driver, CUPTI and this library are left out; symbols are demangled.
std::vector<std::string> instantiate_stack() {
  void* frames[64];
  const int n = backtrace(frames, 64);
  std::vector<std::string> out;
  for (int i = 0; i < n && out.size() < 24; ++i) {
    Dl_info info{};
    if (!dladdr(frames[i], &info) || !info.dli_fname) {
      out.push_back("?");
      continue;
    }
    std::string object = info.dli_fname;
    object = object.substr(object.find_last_of('/') + 1);
    if (object.rfind("libcuda.so", 0) == 0 || object.rfind("libcupti.so", 0) == 0 ||
        object.rfind("libgmem_record.so", 0) == 0) {
      continue;
    }
    std::string frame = object;
    // Offset from the symbol when dladdr names one, else from the object's base.
    const void* base = info.dli_sname ? info.dli_saddr : info.dli_fbase;
    if (info.dli_sname) {
      int status = -1;
      char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
      frame += "!" + std::string(status == 0 && demangled ? demangled : info.dli_sname);
      std::free(demangled);
    }
    char offset[32];
    std::snprintf(offset, sizeof offset, "+0x%zx",
                  static_cast<std::size_t>(static_cast<const char*>(frames[i]) -
                                           static_cast<const char*>(base)));
    frame += offset;
    out.push_back(std::move(frame));
  }
  return out;
}

template <class P>
const P* params(const CUpti_CallbackData* cb) {
  return static_cast<const P*>(cb->functionParams);
}

// Every instantiate flavour starts with (CUgraphExec* phGraphExec, CUgraph hGraph).
struct instantiate_prefix {
  CUgraphExec* phGraphExec;
  CUgraph hGraph;
};
// Every begin-capture flavour starts with the stream.
struct stream_prefix {
  CUstream hStream;
};

void on_driver(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  const bool enter = cb->callbackSite == CUPTI_API_ENTER;
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
      const auto* p = params<cuGraphLaunch_params>(cb);
      const auto exec = reinterpret_cast<std::uint64_t>(p->hGraph);
      if (enter) {
        std::lock_guard<std::mutex> lock(g->mutex);
        const recorder::launch_plan plan =
            g->rec.plan_launch(exec, reinterpret_cast<std::uint64_t>(p->hStream));
        pending.tracked = plan.tracked;
        pending.plan = plan;
        if (!plan.tracked) return;
        pending.stream = plan.stream;
        pending.device = plan.device;
        pending.before.reset();
        window_enter();
        pending.others.clear();
        if (plan.read_counters) {
          pending.before = read_device_counters(pending.device);
          read_other_devices_before(exec, pending.device);
        }
        pending.start = clock_type::now();
        return;
      }
      if (!pending.tracked) return;
      const double host_us =
          std::chrono::duration<double, std::micro>(clock_type::now() - pending.start).count();
      const std::string failure = failure_of(cb);
      std::optional<counters> after;
      if (pending.before || !failure.empty() || host_us >= map_floor_us) {
        after = read_device_counters(pending.device);  // inside the window, before it closes
      }
      const bool concurrent = window_exit();
      std::lock_guard<std::mutex> lock(g->mutex);
      std::optional<counters> before = pending.before;
      if (!before && after) before = g->rec.last_counters(pending.device);
      const bool grew = before && after && after->reserved_current > before->reserved_current;
      const double t_start = std::chrono::duration<double, std::micro>(pending.start - g->t0).count();
      if (failure.empty() && !pending.before && !grew && g->rec.on_steady_launch(pending.plan, host_us, t_start)) return;
      if (!grew && failure.empty() && !pending.before && !g->rec.slow(exec, host_us)) {
        before.reset();  // steady: nothing mapped, nothing to keep
        after.reset();
      }
      const double t_us = std::chrono::duration<double, std::micro>(pending.start - g->t0).count();
      g->rec.on_launch(exec, pending.stream, t_us, host_us, before, after, failure, concurrent);
      if (after && failure.empty()) record_other_devices(exec, pending.device, t_us);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphUpload:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphUpload_ptsz: {
      const auto* p = params<cuGraphUpload_params>(cb);
      const auto exec = reinterpret_cast<std::uint64_t>(p->hGraph);
      std::lock_guard<std::mutex> lock(g->mutex);
      if (enter) {
        pending.tracked = g->rec.tracks(exec);
        if (!pending.tracked) return;
        pending.stream = g->rec.stream_label(reinterpret_cast<std::uint64_t>(p->hStream));
        pending.device = g->rec.device_of(exec);
        window_enter();
        pending.before = read_device_counters(pending.device);
        read_other_devices_before(exec, pending.device);
        pending.t_us = now_us();
        pending.start = clock_type::now();
        return;
      }
      if (!pending.tracked) return;
      const double host_us =
          std::chrono::duration<double, std::micro>(clock_type::now() - pending.start).count();
      const auto after = read_device_counters(pending.device);
      const bool concurrent = window_exit();
      const std::string failure = failure_of(cb);
      g->rec.on_upload(exec, pending.stream, pending.t_us, host_us, pending.before, after, failure, concurrent);
      if (failure.empty()) record_other_devices(exec, pending.device, pending.t_us);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz: {
      const auto* p = params<instantiate_prefix>(cb);
      if (enter) {
        pending.model = profiler::graph_model{};
        pending.has_memory_nodes = false;
        pending.tracked = read_graph(p->hGraph, pending.model, pending.has_memory_nodes);
        pending.before.reset();
        pending.device = current_device();
        std::vector<int> devices;  // the recorder's order: its first (lowest) device is the primary
        if (pending.has_memory_nodes) {
          for (const auto& n : profiler::flatten(pending.model).nodes) {
            if (n.kind == profiler::node_kind::mem_alloc) devices.push_back(n.device);
          }
          std::sort(devices.begin(), devices.end());
          devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
          pending.device = devices.front();
        }
        pending.others.clear();
        if (pending.tracked && pending.has_memory_nodes) {
          window_enter();
          pending.before = read_device_counters(pending.device);
          for (std::size_t k = 1; k < devices.size(); ++k) {
            pending.others.emplace_back(devices[k], read_device_counters(devices[k]));
          }
        }
        pending.t_us = now_us();
        pending.start = clock_type::now();
        return;
      }
      const double host_us =
          std::chrono::duration<double, std::micro>(clock_type::now() - pending.start).count();
      if (!pending.tracked) return;
      std::optional<counters> after;
      if (pending.has_memory_nodes) after = read_device_counters(pending.device);
      const bool concurrent = window_exit();
      const std::string failure = failure_of(cb);
      std::lock_guard<std::mutex> lock(g->mutex);
      const std::string nvtx = nvtx_stack.empty() ? "" : nvtx_stack.back();
      if (!failure.empty()) {
        if (pending.has_memory_nodes) g->rec.on_instantiate_failed(nvtx, pending.t_us, failure);
        return;
      }
      if (g->device_filter >= 0 && pending.has_memory_nodes && pending.device != g->device_filter) {
        return;
      }
      describe_environment(pending.device);
      (void)concurrent;  // an instantiation maps memory only with the upload flag
      profiler::instantiate_flags flags;
      unsigned long long raw = 0;
      if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags) {
        raw = params<cuGraphInstantiateWithFlags_params>(cb)->flags;
      } else if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams ||
                 id == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz) {
        const auto* ip = params<cuGraphInstantiateWithParams_params>(cb)->instantiateParams;
        raw = ip ? ip->flags : 0;
      }
      flags.auto_free_on_launch = raw & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
      flags.upload = raw & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
      flags.device_launch = raw & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH;
      flags.use_node_priority = raw & CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
      const auto exec = reinterpret_cast<std::uint64_t>(*p->phGraphExec);
      g->rec.on_instantiate(exec, reinterpret_cast<std::uint64_t>(p->hGraph),
                            std::move(pending.model), nvtx, pending.t_us, host_us, pending.before,
                            after, flags);
      if (pending.has_memory_nodes) {
        g->rec.set_instantiate_stack(exec, instantiate_stack());
        record_other_devices(exec, pending.device, pending.t_us);
      }
      if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams ||
          id == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz) {
        const auto* ip = params<cuGraphInstantiateWithParams_params>(cb)->instantiateParams;
        if (ip && (ip->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)) {
          g->rec.mark_uploaded(exec, g->rec.stream_label(reinterpret_cast<std::uint64_t>(ip->hUploadStream)));
        }
      }
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuDeviceGraphMemTrim: {
      const auto* p = params<cuDeviceGraphMemTrim_params>(cb);
      const int device = static_cast<int>(p->device);
      if (enter) {
        window_enter();
        pending.before = read_device_counters(device);
        pending.t_us = now_us();
        pending.start = clock_type::now();
        return;
      }
      const double host_us =
          std::chrono::duration<double, std::micro>(clock_type::now() - pending.start).count();
      const auto after = read_device_counters(device);
      window_exit();
      std::lock_guard<std::mutex> lock(g->mutex);
      if (pending.before && after) g->rec.on_trim(device, pending.t_us, host_us, *pending.before, *after);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: {
      // An allocation a graph left allocated, freed outside it: its granules are free again.
      if (enter || !failure_of(cb).empty()) return;
      const bool async = id != CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2;
      const CUdeviceptr address = async ? params<cuMemFreeAsync_params>(cb)->dptr
                                        : params<cuMemFree_v2_params>(cb)->dptr;
      std::lock_guard<std::mutex> lock(g->mutex);
      if (!async && g->rec.on_capture_memory_free(address, now_us())) return;
      if (!g->rec.is_held(address)) return;
      const std::uint64_t stream =
          async ? g->rec.stream_label(reinterpret_cast<std::uint64_t>(params<cuMemFreeAsync_params>(cb)->hStream))
                : 0;
      g->rec.on_free(address, stream, now_us());
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      // Memory this thread takes from the device while it captures: a private pool growing.
      if (enter || !capturing_stream || !failure_of(cb).empty()) return;
      std::uint64_t handle = 0, bytes = 0;
      int device = current_device();
      if (id == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) {
        const auto* p = params<cuMemAlloc_v2_params>(cb);
        handle = p->dptr ? static_cast<std::uint64_t>(*p->dptr) : 0;
        bytes = p->bytesize;
      } else {
        const auto* p = params<cuMemCreate_params>(cb);
        handle = p->handle ? static_cast<std::uint64_t>(*p->handle) : 0;
        bytes = p->size;
        if (p->prop && p->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) device = p->prop->location.id;
      }
      std::lock_guard<std::mutex> lock(g->mutex);
      g->rec.on_capture_alloc(capturing_stream, handle, bytes, device, now_us());
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease: {
      if (enter || !failure_of(cb).empty()) return;
      std::lock_guard<std::mutex> lock(g->mutex);
      g->rec.on_capture_memory_free(static_cast<std::uint64_t>(params<cuMemRelease_params>(cb)->handle), now_us());
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz: {
      // Launches known complete: another stream's launch may share their memory (pool model).
      if (enter || !failure_of(cb).empty()) return;
      const bool ctx = id == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize ||
                       id == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2;
      std::lock_guard<std::mutex> lock(g->mutex);
      g->rec.on_sync(ctx ? 0 : g->rec.stream_label(reinterpret_cast<std::uint64_t>(
                                   params<cuStreamSynchronize_params>(cb)->hStream)),
                     now_us());
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphDestroy: {
      if (!enter) return;
      std::lock_guard<std::mutex> lock(g->mutex);
      g->rec.on_graph_destroy(reinterpret_cast<std::uint64_t>(params<cuGraphDestroy_params>(cb)->hGraph));
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy: {
      if (!enter) return;
      const auto* p = params<cuGraphExecDestroy_params>(cb);
      std::lock_guard<std::mutex> lock(g->mutex);
      g->rec.on_exec_destroy(reinterpret_cast<std::uint64_t>(p->hGraphExec), now_us());
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz: {
      const auto* p = params<stream_prefix>(cb);
      if (!enter) {
        if (failure_of(cb).empty()) capturing_stream = reinterpret_cast<std::uint64_t>(p->hStream);
        return;
      }
      std::lock_guard<std::mutex> lock(g->mutex);
      g->rec.on_capture_begin(reinterpret_cast<std::uint64_t>(p->hStream),
                              nvtx_stack.empty() ? "" : nvtx_stack.back());
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz: {
      if (enter) return;
      capturing_stream = 0;
      const auto* p = params<cuStreamEndCapture_params>(cb);
      if (!p->phGraph || !*p->phGraph) return;
      std::lock_guard<std::mutex> lock(g->mutex);
      g->rec.on_capture_end(reinterpret_cast<std::uint64_t>(p->hStream),
                            reinterpret_cast<std::uint64_t>(*p->phGraph));
      return;
    }
    default:
      return;
  }
}

struct nvtx_push_a {
  const char* message;
};

// NVTX callbacks carry CUpti_NvtxData, not CUpti_CallbackData.
void on_nvtx(CUpti_CallbackId id, const CUpti_NvtxData* cb) {
  switch (id) {
    case CUPTI_CBID_NVTX_nvtxRangePushA: {
      const auto* p = static_cast<const nvtx_push_a*>(cb->functionParams);
      nvtx_stack.emplace_back(p && p->message ? p->message : "");
      return;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
    case CUPTI_CBID_NVTX_nvtxRangePushW:
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      nvtx_stack.emplace_back("");  // keeps pushes and pops balanced; only ASCII names are read
      return;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      if (!nvtx_stack.empty()) nvtx_stack.pop_back();
      return;
    default:
      return;
  }
}

void CUPTIAPI callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (in_callback || !g || forked_child) return;  // our own driver calls come back here
  in_callback = true;
  try {
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
      on_driver(id, static_cast<const CUpti_CallbackData*>(data));
    } else if (domain == CUPTI_CB_DOMAIN_NVTX) {
      on_nvtx(id, static_cast<const CUpti_NvtxData*>(data));
    }
  } catch (...) {
    // Never let the recorder take the application down.
  }
  in_callback = false;
}

void say(const std::string& line) { std::fprintf(stderr, "gmemprof record: %s\n", line.c_str()); }

}  // namespace
}  // namespace gmem::record

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  using namespace gmem::record;
  if (g) return 1;
  const char* out = std::getenv("GMEM_RECORD_OUT");
  const char* names = std::getenv("GMEM_RECORD_NAME_FROM");
  const auto source = parse_name_source(names ? names : "nvtx");
  g = new state(source.value_or(name_source::nvtx));
  g->out_path = out ? out : "gmem-record.json";
  if (const char* d = std::getenv("GMEM_RECORD_DEVICE")) g->device_filter = std::atoi(d);
  g->info.pid = static_cast<long>(::getpid());
  if (const char* c = std::getenv("GMEM_RECORD_COMMAND")) g->info.command = c;
  // Every process of the command's tree that uses CUDA inherits the environment and writes its
  // own report, PATH.<pid>.json: `gmemprof record` names each one and merges them into PATH.
  if (const char* prefix = std::getenv("GMEM_RECORD_OUT_PREFIX")) {
    g->out_path = std::string(prefix) + "." + std::to_string(g->info.pid) + ".json";
  }
  pthread_atfork(nullptr, nullptr, in_forked_child);
  // NVTX ranges reach CUPTI only if NVTX is told where CUPTI is, before its first call.
  Dl_info where{};
  if (dladdr(reinterpret_cast<void*>(&cuptiSubscribe), &where) && where.dli_fname) {
    setenv("NVTX_INJECTION64_PATH", where.dli_fname, 0);
  }
  CUpti_SubscriberHandle subscriber{};
  const CUptiResult r = cuptiSubscribe(&subscriber, callback, nullptr);
  if (r != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(r, &text);
    const std::string why = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
        ? "CUPTI is already in use by another tool (a profiler such as Nsight or the PyTorch "
          "profiler)"
        : std::string("CUPTI refused the subscription (") + (text ? text : "?") + ")";
    say(why + "; nothing is recorded, the program runs unchanged");
    g->info.notes.push_back(why + "; nothing was recorded");
    std::atexit(at_exit);
    return 1;
  }
  cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_NVTX);
  for (CUpti_CallbackId id :
       {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuGraphUpload, CUPTI_DRIVER_TRACE_CBID_cuGraphUpload_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
        CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
        CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
        CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuDeviceGraphMemTrim, CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy,
        CUPTI_DRIVER_TRACE_CBID_cuGraphDestroy,
        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,
        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
        CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
        CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
        CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemCreate, CUPTI_DRIVER_TRACE_CBID_cuMemRelease}) {
    cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  }
  std::atexit(at_exit);
  install_signal_handlers();
  return 1;
}
