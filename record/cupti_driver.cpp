// The driver behind the recording session: the graph memory counters, a graph read back into
// the plain model, streams, the call stack, the device's description. Driver API calls only:
// the application's CUDA runtime may be another instance than any this library could link, so
// it makes no runtime calls at all.
#include <cuda.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "record/handoff.hpp"
#include "record/injected.hpp"
#include "record/node_index.hpp"

namespace gmem::record::injected {
namespace {

std::optional<counters> read_counters(int ordinal) {
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

// The driver-API twin of profiler::read_graph. Edges are read with their data: the driver
// refuses a query without it (CUDA_ERROR_LOSSY_QUERY) when a graph has edges of another kind
// than full completion, as programmatic dependent launch makes. Every edge orders its nodes, so
// each is an edge of the model.
bool read_graph_into(CUgraph graph, profiler::graph_model& m, bool& has_alloc) {
  std::size_t n = 0;
  if (cuGraphGetNodes(graph, nullptr, &n) != CUDA_SUCCESS) return false;
  std::vector<CUgraphNode> nodes(n);
  if (n && cuGraphGetNodes(graph, nodes.data(), &n) != CUDA_SUCCESS) return false;
  nodes.resize(n);
  m.nodes.reserve(m.nodes.size() + n);
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
      if (!read_graph_into(child, cm, has_alloc)) return false;
      m.children.push_back(std::move(cm));
    }
    m.nodes.push_back(std::move(mn));
  }
  std::size_t e = 0;
  if (cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &e) != CUDA_SUCCESS) return false;
  std::vector<CUgraphNode> from(e), to(e);
  std::vector<CUgraphEdgeData> data(e);
  if (e && cuGraphGetEdges(graph, from.data(), to.data(), data.data(), &e) != CUDA_SUCCESS) return false;
  const node_index index(nodes);
  m.edges.reserve(m.edges.size() + e);
  for (std::size_t i = 0; i < e && i < from.size(); ++i) {
    const auto a = index.find(from[i]), b = index.find(to[i]);
    if (!a || !b) return false;
    m.edges.emplace_back(*a, *b);
  }
  return true;
}

bool read_graph(std::uint64_t graph, profiler::graph_model& m, bool& has_alloc) {
  return read_graph_into(reinterpret_cast<CUgraph>(graph), m, has_alloc);
}

int current_device() {
  CUdevice d = 0;
  return cuCtxGetDevice(&d) == CUDA_SUCCESS ? static_cast<int>(d) : 0;
}

// A stream under capture is not asked: cuStreamGetFlags fails there with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture, so that the program's next
// wait on an event recorded in it returns CUDA_ERROR_INVALID_VALUE (docs/driver-facts.md).
// cuStreamIsCapturing is made to be asked during a capture.
std::optional<bool> stream_blocking(std::uint64_t stream) {
  if (stream == legacy_stream || stream == per_thread_stream) return true;
  const auto s = reinterpret_cast<CUstream>(stream);
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (cuStreamIsCapturing(s, &capture) != CUDA_SUCCESS || capture != CU_STREAM_CAPTURE_STATUS_NONE) return std::nullopt;
  unsigned int flags = 0;
  if (cuStreamGetFlags(s, &flags) != CUDA_SUCCESS) return std::nullopt;
  return !(flags & CU_STREAM_NON_BLOCKING);
}

// One frame as a stack names it: "object!symbol+0xoffset", the offset from the symbol when
// dladdr names one, else from the object's base; "" for a frame of the driver, CUPTI or this
// library and its preloaded half (left out), "?" where dladdr knows no object.
std::string frame_name(void* address) {
  Dl_info info{};
  if (!dladdr(address, &info) || !info.dli_fname) return "?";
  std::string object = info.dli_fname;
  object = object.substr(object.find_last_of('/') + 1);
  // libgmem_record: this library and its preloaded half (--hook interpose), whose wrapper is the
  // frame above the program's call: a graph's stack, so its identity, is the same either way.
  if (object.rfind("libcuda.so", 0) == 0 || object.rfind("libcupti.so", 0) == 0 ||
      object.rfind("libgmem_record.so", 0) == 0 || object.rfind("libgmem_record_preload.so", 0) == 0) {
    return "";
  }
  std::string frame = object;
  const void* base = info.dli_sname ? info.dli_saddr : info.dli_fbase;
  if (info.dli_sname) {
    int status = -1;
    char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    frame += "!" + std::string(status == 0 && demangled ? demangled : info.dli_sname);
    std::free(demangled);
  }
  char offset[32];
  std::snprintf(offset, sizeof offset, "+0x%zx",
                static_cast<std::size_t>(static_cast<const char*>(address) - static_cast<const char*>(base)));
  return frame + offset;
}

// The native call stack of the instantiation, taken in the callback after the call (its host
// time is already measured). Frames of the driver, CUPTI and this library are left out; symbols
// are demangled. dladdr walks an object's whole symbol table for the nearest symbol, which in
// libtorch_cuda.so or libpython is hundreds of thousands of symbols per frame: each address is
// named once per process and kept (a warm-up captures thousands of graphs from a few sites).
std::vector<std::string> call_stack() {
  // Never destroyed: another thread may instantiate while the process runs its exit handlers.
  static std::mutex& names_mutex = *new std::mutex;
  static auto& names = *new std::unordered_map<void*, std::string>;
  constexpr std::size_t names_kept = 1 << 16;  // at most a few MiB, whatever the program does
  void* frames[64];
  const int n = backtrace(frames, 64);
  std::vector<std::string> out;
  std::lock_guard<std::mutex> lock(names_mutex);
  for (int i = 0; i < n && out.size() < 24; ++i) {
    auto it = names.find(frames[i]);
    if (it == names.end()) {
      std::string name = frame_name(frames[i]);
      if (names.size() >= names_kept) names.clear();
      it = names.emplace(frames[i], std::move(name)).first;
    }
    if (!it->second.empty()) out.push_back(it->second);
  }
  return out;
}

// The object (its file's name) of the innermost frame that is not the driver's, the CUDA
// runtime's, CUPTI's, the C library's or this library's: the library whose call this is
// ("libnccl.so.2", "libc10_cuda.so"). A runtime linked statically into a library is that
// library's frames. "" where no frame names one. Each address's object is looked up once.
std::string calling_object() {
  static std::mutex& objects_mutex = *new std::mutex;  // never destroyed, as call_stack's
  static auto& objects = *new std::unordered_map<void*, std::string>;
  constexpr std::size_t objects_kept = 1 << 14;
  void* frames[32];
  const int n = backtrace(frames, 32);
  std::lock_guard<std::mutex> lock(objects_mutex);
  for (int i = 0; i < n; ++i) {
    auto it = objects.find(frames[i]);
    if (it == objects.end()) {
      std::string object;
      Dl_info info{};
      if (dladdr(frames[i], &info) && info.dli_fname) {
        object = info.dli_fname;
        object = object.substr(object.find_last_of('/') + 1);
        for (const char* skipped : {"libcuda.so", "libcudart.so", "libcupti.so", "libgmem_record", "libc.so", "ld-linux"}) {
          if (object.rfind(skipped, 0) == 0) object.clear();
        }
      }
      if (objects.size() >= objects_kept) objects.clear();
      it = objects.emplace(frames[i], std::move(object)).first;
    }
    if (!it->second.empty()) return it->second;
  }
  return {};
}

const auto t0 = std::chrono::steady_clock::now();

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// Called from a callback (a context exists, the driver is initialised).
bool describe(int ordinal, profiler::environment& e, std::uint64_t& granularity) {
  CUdevice dev = 0;
  if (cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS) return false;
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
  granularity = gran;
  e.granularity_bytes = gran;
  e.granularity_method = "cuMemGetAllocationGranularity (minimum), read by the recording library";
  // What the driver really reserves per graph allocation (32 MiB on H100 and H200, against 2 MiB
  // from cuMemGetAllocationGranularity), measured by `gmemprof record` before the command
  // started: the lower bound is rounded to it.
  if (const std::uint64_t measured = granularity_from_text(std::getenv("GMEM_RECORD_GRANULARITY"))) {
    granularity = measured;
    e.granularity_bytes = measured;
    const char* method = std::getenv("GMEM_RECORD_GRANULARITY_METHOD");
    e.granularity_method = method && *method ? method : "measured by gmemprof record";
  }
  return true;
}

bool is_host_pointer(std::uint64_t address) {
  CUmemorytype type{};
  // Pageable host memory the driver never saw is not a device pointer: the query fails.
  const CUresult r = cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, static_cast<CUdeviceptr>(address));
  return r != CUDA_SUCCESS || type == CU_MEMORYTYPE_HOST;
}

// The readings' helper thread (record/handoff.hpp): made at the first reading, never destroyed
// (a reading may come from any thread until the process ends); none with
// GMEM_RECORD_READING_HELPER=0, and none in a child made by fork(), which has no such thread.
handoff* reading_helper() {
  static handoff* const helper = [] {
    const char* off = std::getenv("GMEM_RECORD_READING_HELPER");
    if (off && std::strcmp(off, "0") == 0) return static_cast<handoff*>(nullptr);
    // Spinning 2 ms after each reading keeps it up through a warm-up's captures (one every
    // 0.2 to 0.5 ms on an H100 host) and lets it sleep soon after them.
    auto* h = new handoff(std::chrono::microseconds(2000));
    pthread_atfork(nullptr, nullptr, [] {
      if (handoff* again = reading_helper()) again->forked();
    });
    return h;
  }();
  return helper;
}

// What cuMemGetInfo says in the context CONTEXT, run on the readings' helper thread.
struct reading {
  CUcontext context = nullptr;
  std::size_t free = 0, total = 0;
  CUresult result = CUDA_ERROR_UNKNOWN;
};

void read_in_context(void* p) {
  auto* r = static_cast<reading*>(p);
  if (cuCtxSetCurrent(r->context) != CUDA_SUCCESS) return;
  r->result = cuMemGetInfo(&r->free, &r->total);
  cuCtxSetCurrent(nullptr);  // holds no context between readings
}

// A reading of the device memory in use on the calling thread's device, begun by
// start_memory_reading and answered by finish_memory_reading: on the helper thread where it is up
// (the driver's and the kernel's work then leave this core's caches to the program, and the
// caller works meanwhile), else at once, here.
struct thread_reading {
  bool device_read = false, taken_here = false;
  CUdevice device = 0;
  std::size_t free = 0, total = 0;
  std::shared_ptr<reading> job;
  handoff::in_flight call;
};

thread_reading& this_threads_reading() {
  thread_local thread_reading r;
  return r;
}

void start_memory_reading() {
  thread_reading& t = this_threads_reading();
  t.call.finish();  // one at a time: an earlier one not finished is let go
  t.job.reset();
  t.device_read = cuCtxGetDevice(&t.device) == CUDA_SUCCESS;
  t.taken_here = false;
  if (!t.device_read) return;
  if (handoff* helper = reading_helper()) {
    auto job = std::make_shared<reading>();
    if (cuCtxGetCurrent(&job->context) == CUDA_SUCCESS && job->context) {
      t.call = helper->start(read_in_context, job);
      if (t.call.taken()) {
        t.job = std::move(job);
        return;
      }
    }
  }
  t.taken_here = cuMemGetInfo(&t.free, &t.total) == CUDA_SUCCESS;
}

bool finish_memory_reading(int& device, std::uint64_t& used) {
  thread_reading& t = this_threads_reading();
  if (!t.device_read) return false;
  std::size_t free = 0, total = 0;
  if (t.call.taken()) {
    // Not answered by the helper (patience ran out): read here, still before the caller goes on.
    if (t.call.finish() && t.job->result == CUDA_SUCCESS) {
      free = t.job->free;
      total = t.job->total;
    } else if (cuMemGetInfo(&free, &total) != CUDA_SUCCESS) {
      return false;
    }
    t.call = handoff::in_flight();
    t.job.reset();
  } else if (t.taken_here) {
    free = t.free;
    total = t.total;
  } else {
    return false;
  }
  if (free > total) return false;
  device = static_cast<int>(t.device);
  used = total - free;
  return true;
}

// The device memory in use, read at once (on the helper thread where it is up, while this one
// waits). It keeps no thread_local state: the session reads at the recording's end too, in the
// exit handlers, after the thread's thread_local objects were destroyed (a reading through
// this_threads_reading() there freed a destroyed shared_ptr again: a heap corruption at exit).
bool memory_used(int& device, std::uint64_t& used) {
  CUdevice d = 0;
  if (cuCtxGetDevice(&d) != CUDA_SUCCESS) return false;
  std::size_t free = 0, total = 0;
  handoff* helper = reading_helper();
  auto r = helper ? std::make_shared<reading>() : nullptr;
  if (r && cuCtxGetCurrent(&r->context) == CUDA_SUCCESS && r->context && helper->run(read_in_context, r) &&
      r->result == CUDA_SUCCESS) {
    free = r->free;
    total = r->total;
  } else if (cuMemGetInfo(&free, &total) != CUDA_SUCCESS) {
    return false;
  }
  if (free > total) return false;
  device = static_cast<int>(d);
  used = total - free;
  return true;
}

// A context just made is not current yet: made current for the reading, then put back.
bool context_memory_used(std::uint64_t context, int& device, std::uint64_t& used) {
  const auto c = reinterpret_cast<CUcontext>(context);
  if (!c || cuCtxPushCurrent(c) != CUDA_SUCCESS) return false;
  const bool read = memory_used(device, used);
  CUcontext popped = nullptr;
  cuCtxPopCurrent(&popped);
  return read;
}

}  // namespace

driver_api real_driver() {
  driver_api d;
  d.read_counters = read_counters;
  d.read_graph = read_graph;
  d.current_device = current_device;
  d.stream_blocking = stream_blocking;
  d.call_stack = call_stack;
  d.calling_object = calling_object;
  d.now_us = now_us;
  d.describe = describe;
  d.is_host_pointer = is_host_pointer;
  d.memory_used = memory_used;
  d.start_memory_reading = start_memory_reading;
  d.finish_memory_reading = finish_memory_reading;
  d.context_memory_used = context_memory_used;
  return d;
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
  for (char& c : s) {
    if (c == '\0') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace gmem::record::injected
