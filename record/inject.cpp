// The injected library: CUDA loads it through CUDA_INJECTION64_PATH and calls
// InitializeInjection during cuInit. It subscribes to CUPTI's driver API and NVTX callbacks and
// hands each call, decoded from CUPTI's parameter structs into plain arguments, to the session
// (session.hpp), which reads the driver through cupti_driver.cpp and keeps the recorder. One
// CUPTI callback dispatches through a table of (callback id -> decoder): plain function
// pointers on the fast path, as Kineto's CuptiCallbackApi does.
//
// Cost on the application: a graph launch of a graph without memory nodes costs one map lookup;
// a steady launch of a graph with memory nodes three clock reads and two relaxed atomic adds
// (what recording costs, charged to the report's record_cost); only first launches, launches
// after an upload, a trim or a stream switch, and launches slow enough to have mapped memory
// read the counters (eight attribute reads). Event records, event and stream queries and
// synchronous copies cost one atomic load while no recorded launch awaits completion. Nothing
// synchronizes the application's streams. An executable graph updated in place costs the
// counters around the call and a read of the new graph; a node given other parameters one
// look-up. The device memory in use around each instantiation is read by a helper thread while
// the instantiating thread waits (cupti_driver.cpp, handoff.hpp).
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "record/hook.hpp"
#include "record/injected.hpp"
#include "record/routes.hpp"

namespace gmem::record::injected {

session* the_session = nullptr;

namespace {

thread_local bool in_callback = false;  // our own driver calls come back here

// The CUresult a call returned, as its name ("CUDA_ERROR_INVALID_VALUE"); empty on success.
std::string failure_of(const CUpti_CallbackData* cb) {
  if (!cb->functionReturnValue) return "";
  const CUresult r = *static_cast<const CUresult*>(cb->functionReturnValue);
  if (r == CUDA_SUCCESS) return "";
  const char* name = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) return "CUresult " + std::to_string(static_cast<int>(r));
  return name;
}

bool succeeded(const CUpti_CallbackData* cb) {
  return !cb->functionReturnValue || *static_cast<const CUresult*>(cb->functionReturnValue) == CUDA_SUCCESS;
}

template <class P>
const P* params(const CUpti_CallbackData* cb) {
  return static_cast<const P*>(cb->functionParams);
}

// A stream handle as the session labels it: the legacy default stream is 0 (also given as
// CU_STREAM_LEGACY), the calling thread's default stream is CU_STREAM_PER_THREAD (also 0 in a
// per-thread-stream call, the _ptsz and _ptds variants).
std::uint64_t stream_of(CUstream s, bool per_thread_call) {
  const auto h = reinterpret_cast<std::uint64_t>(s);
  if (h == reinterpret_cast<std::uint64_t>(CU_STREAM_LEGACY)) return legacy_stream;
  if (h == reinterpret_cast<std::uint64_t>(CU_STREAM_PER_THREAD)) return per_thread_stream;
  if (h == 0) return per_thread_call ? per_thread_stream : legacy_stream;
  return h;
}

// Every instantiate flavour starts with (CUgraphExec* phGraphExec, CUgraph hGraph).
struct instantiate_prefix {
  CUgraphExec* phGraphExec;
  CUgraph hGraph;
};
// Both update flavours start with (CUgraphExec hGraphExec, CUgraph hGraph); every call that sets
// an executable graph's node parameters starts with the executable graph.
struct exec_update_prefix {
  CUgraphExec hGraphExec;
  CUgraph hGraph;
};
struct exec_prefix {
  CUgraphExec hGraphExec;
};
// Every begin-capture flavour starts with the stream.
struct stream_prefix {
  CUstream hStream;
};
// Every event-record flavour starts with (CUevent hEvent, CUstream hStream).
struct event_record_prefix {
  CUevent hEvent;
  CUstream hStream;
};

using decoder = void (*)(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter);

// ---- graph calls

void on_launch(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  const auto* p = params<cuGraphLaunch_params>(cb);
  const auto exec = reinterpret_cast<std::uint64_t>(p->hGraph);
  if (enter) {
    the_session->launch_enter(exec, stream_of(p->hStream, id == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz));
  } else {
    the_session->launch_exit(exec, failure_of(cb));
  }
}

void on_upload(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  const auto* p = params<cuGraphUpload_params>(cb);
  const auto exec = reinterpret_cast<std::uint64_t>(p->hGraph);
  if (enter) {
    the_session->upload_enter(exec, stream_of(p->hStream, id == CUPTI_DRIVER_TRACE_CBID_cuGraphUpload_ptsz));
  } else {
    the_session->upload_exit(exec, failure_of(cb));
  }
}

void on_instantiate(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  const auto* p = params<instantiate_prefix>(cb);
  if (enter) {
    the_session->instantiate_enter(reinterpret_cast<std::uint64_t>(p->hGraph));
    return;
  }
  unsigned long long raw = 0;
  std::optional<std::uint64_t> upload_stream;
  if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags) {
    raw = params<cuGraphInstantiateWithFlags_params>(cb)->flags;
  } else if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams ||
             id == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz) {
    const auto* ip = params<cuGraphInstantiateWithParams_params>(cb)->instantiateParams;
    raw = ip ? ip->flags : 0;
    if (ip && (ip->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)) {
      upload_stream = stream_of(ip->hUploadStream, id == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz);
    }
  }
  profiler::instantiate_flags flags;
  flags.auto_free_on_launch = raw & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
  flags.upload = raw & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
  flags.device_launch = raw & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH;
  flags.use_node_priority = raw & CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
  const std::string failure = failure_of(cb);
  const auto exec = failure.empty() && p->phGraphExec ? reinterpret_cast<std::uint64_t>(*p->phGraphExec) : 0;
  the_session->instantiate_exit(exec, reinterpret_cast<std::uint64_t>(p->hGraph), failure, flags, upload_stream);
}

void on_trim(CUpti_CallbackId, const CUpti_CallbackData* cb, bool enter) {
  const int device = static_cast<int>(params<cuDeviceGraphMemTrim_params>(cb)->device);
  if (enter) {
    the_session->trim_enter(device);
  } else {
    the_session->trim_exit(device);
  }
}

void on_exec_destroy(CUpti_CallbackId, const CUpti_CallbackData* cb, bool enter) {
  if (enter) {
    the_session->exec_destroy(reinterpret_cast<std::uint64_t>(params<cuGraphExecDestroy_params>(cb)->hGraphExec));
  } else {
    the_session->exec_destroy_exit(succeeded(cb));
  }
}

// An executable graph updated in place with the parameters of another graph (cuGraphExecUpdate):
// where it succeeds, the executable graph is that graph's from then on.
void on_exec_update(CUpti_CallbackId, const CUpti_CallbackData* cb, bool enter) {
  const auto* p = params<exec_update_prefix>(cb);
  const auto exec = reinterpret_cast<std::uint64_t>(p->hGraphExec);
  if (enter) {
    the_session->exec_update_enter(exec);
  } else {
    the_session->exec_update_exit(exec, reinterpret_cast<std::uint64_t>(p->hGraph), failure_of(cb));
  }
}

// One node of an executable graph given other parameters (a kernel's arguments, a copy's
// addresses, a node enabled or not): counted, as no such call can change a memory node.
void on_node_params(CUpti_CallbackId, const CUpti_CallbackData* cb, bool enter) {
  if (enter || !succeeded(cb)) return;
  the_session->node_params_set(reinterpret_cast<std::uint64_t>(params<exec_prefix>(cb)->hGraphExec));
}

void on_graph_destroy(CUpti_CallbackId, const CUpti_CallbackData* cb, bool enter) {
  if (enter) the_session->graph_destroy(reinterpret_cast<std::uint64_t>(params<cuGraphDestroy_params>(cb)->hGraph));
}

// ---- captures

bool per_thread_capture(CUpti_CallbackId id) {
  return id == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz;
}

void on_begin_capture(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  const std::uint64_t stream = stream_of(params<stream_prefix>(cb)->hStream, per_thread_capture(id));
  if (enter) {
    the_session->capture_begin(stream);
  } else {
    the_session->capture_began(stream, succeeded(cb));
  }
}

void on_end_capture(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  if (enter) return;
  const auto* p = params<cuStreamEndCapture_params>(cb);
  const std::uint64_t graph = succeeded(cb) && p->phGraph && *p->phGraph ? reinterpret_cast<std::uint64_t>(*p->phGraph) : 0;
  the_session->capture_end(stream_of(p->hStream, per_thread_capture(id)), graph);
}

void on_mem_alloc(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  if (enter || !succeeded(cb)) return;
  if (id == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) {
    const auto* p = params<cuMemAlloc_v2_params>(cb);
    the_session->device_alloc(p->dptr ? static_cast<std::uint64_t>(*p->dptr) : 0, p->bytesize, std::nullopt);
    return;
  }
  const auto* p = params<cuMemCreate_params>(cb);
  std::optional<int> device;
  if (p->prop && p->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) device = p->prop->location.id;
  the_session->device_alloc(p->handle ? static_cast<std::uint64_t>(*p->handle) : 0, p->size, device);
}

void on_mem_free(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  if (enter || !succeeded(cb)) return;
  if (id == CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2) {
    the_session->device_free(params<cuMemFree_v2_params>(cb)->dptr, std::nullopt);
    return;
  }
  const auto* p = params<cuMemFreeAsync_params>(cb);
  the_session->device_free(p->dptr, stream_of(p->hStream, id == CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz));
}

void on_mem_release(CUpti_CallbackId, const CUpti_CallbackData* cb, bool enter) {
  if (enter || !succeeded(cb)) return;
  the_session->release(static_cast<std::uint64_t>(params<cuMemRelease_params>(cb)->handle));
}

// A stream made while the calling thread captures (NCCL makes one inside a captured collective):
// the driver's memory for it is the capture's.
void on_stream_create(CUpti_CallbackId, const CUpti_CallbackData* cb, bool enter) {
  if (enter) {
    the_session->stream_create_enter();
  } else {
    the_session->stream_create_exit(succeeded(cb));
  }
}

// ---- completions

void on_ctx_sync(CUpti_CallbackId, const CUpti_CallbackData* cb, bool enter) {
  if (!enter && succeeded(cb)) the_session->device_synchronized();
}

void on_stream_sync(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  // A synchronize that returned, or a query that reported idle (not CUDA_ERROR_NOT_READY).
  if (enter || !succeeded(cb)) return;
  const bool ptsz = id == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz || id == CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz;
  the_session->stream_synchronized(stream_of(params<stream_prefix>(cb)->hStream, ptsz));
}

void on_event_record(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  if (enter || !succeeded(cb)) return;
  const auto* p = params<event_record_prefix>(cb);
  const bool ptsz = id == CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz || id == CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz;
  the_session->event_recorded(reinterpret_cast<std::uint64_t>(p->hEvent), stream_of(p->hStream, ptsz));
}

void on_event_done(CUpti_CallbackId, const CUpti_CallbackData* cb, bool enter) {
  // cuEventSynchronize returned, or cuEventQuery reported done; both start with the event.
  if (enter || !succeeded(cb)) return;
  the_session->event_completed(reinterpret_cast<std::uint64_t>(params<cuEventSynchronize_params>(cb)->hEvent));
}

void on_event_destroy(CUpti_CallbackId, const CUpti_CallbackData* cb, bool enter) {
  if (enter) the_session->event_destroyed(reinterpret_cast<std::uint64_t>(params<cuEventDestroy_v2_params>(cb)->hEvent));
}

void on_copy(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  if (enter || !succeeded(cb)) return;
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds:
      the_session->copied(0, true, id == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds);
      return;
    default: {  // cuMemcpy: unified addressing, the direction from the destination
      const auto* p = params<cuMemcpy_params>(cb);
      the_session->copied(p->dst, std::nullopt, id == CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds);
    }
  }
}

// A context made (the runtime retains each device's primary context at its first call there):
// the device's memory is read before the program can allocate in it by any call. Every one of
// these calls takes the new context's address first (CUcontext* pctx).
void on_context(CUpti_CallbackId, const CUpti_CallbackData* cb, bool enter) {
  if (enter || !succeeded(cb)) return;
  const auto* pctx = *static_cast<CUcontext* const*>(cb->functionParams);
  if (pctx && *pctx) the_session->context_made(reinterpret_cast<std::uint64_t>(*pctx));
}

struct route {
  CUpti_CallbackId id;
  decoder decode;
};

#define GMEM_ROUTE(name, decode, ...) {CUPTI_DRIVER_TRACE_CBID_##name, decode},
#define GMEM_ROUTE0(name, decode) {CUPTI_DRIVER_TRACE_CBID_##name, decode},
const route routes[] = {GMEM_RECORD_ROUTES(GMEM_ROUTE, GMEM_ROUTE0)};
#undef GMEM_ROUTE
#undef GMEM_ROUTE0

// The decoders by callback id, looked up in a flat table.
constexpr std::size_t table_size = CUPTI_DRIVER_TRACE_CBID_SIZE;
decoder table[table_size] = {};

// nvtxRangePushA and nvtxMarkA take the message alone.
struct nvtx_message_a {
  const char* message;
};

// NVTX callbacks carry CUpti_NvtxData, not CUpti_CallbackData.
void on_nvtx(CUpti_CallbackId id, const CUpti_NvtxData* cb) {
  switch (id) {
    case CUPTI_CBID_NVTX_nvtxRangePushA: {
      const auto* p = static_cast<const nvtx_message_a*>(cb->functionParams);
      the_session->nvtx_push(p ? p->message : nullptr);
      return;
    }
    case CUPTI_CBID_NVTX_nvtxMarkA: {
      const auto* p = static_cast<const nvtx_message_a*>(cb->functionParams);
      the_session->nvtx_mark(p ? p->message : nullptr);
      return;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
    case CUPTI_CBID_NVTX_nvtxRangePushW:
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      the_session->nvtx_push("");  // keeps pushes and pops balanced; only ASCII names are read
      return;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      the_session->nvtx_pop();
      return;
    default:
      return;
  }
}

void CUPTIAPI callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (in_callback || !the_session) return;
  in_callback = true;
  try {
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && id < table_size && table[id]) {
      const auto* cb = static_cast<const CUpti_CallbackData*>(data);
      the_session->first_reading();  // the process's device memory before its first allocation
      table[id](id, cb, cb->callbackSite == CUPTI_API_ENTER);
    } else if (domain == CUPTI_CB_DOMAIN_NVTX) {
      on_nvtx(id, static_cast<const CUpti_NvtxData*>(data));
    }
  } catch (...) {
    // Never let the recorder take the application down.
  }
  in_callback = false;
}

void say(const std::string& line) { std::fprintf(stderr, "gmemprof record: %s\n", line.c_str()); }

// CUPTI's functions the recording calls, loaded only where it takes the driver's calls through
// CUPTI (--hook cupti). With the library's own interception the process never loads CUPTI: once
// loaded into a process that has a context (here: as the library NVTX loads for its ranges, in
// an NCCL program), CUPTI took 12 MiB of device memory on an H200, whichever library loaded it.
struct cupti_functions {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiEnableDomain) enable_domain = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiActivitySetAttribute) set_attribute = nullptr;
  std::string path;  ///< where it was loaded from
};

std::optional<cupti_functions> load_cupti() {
  void* h = dlopen(GMEM_CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) return std::nullopt;
  cupti_functions f;
  f.subscribe = reinterpret_cast<decltype(f.subscribe)>(dlsym(h, "cuptiSubscribe"));
  f.enable_domain = reinterpret_cast<decltype(f.enable_domain)>(dlsym(h, "cuptiEnableDomain"));
  f.enable_callback = reinterpret_cast<decltype(f.enable_callback)>(dlsym(h, "cuptiEnableCallback"));
  f.result_string = reinterpret_cast<decltype(f.result_string)>(dlsym(h, "cuptiGetResultString"));
  f.set_attribute = reinterpret_cast<decltype(f.set_attribute)>(dlsym(h, "cuptiActivitySetAttribute"));
  if (!f.subscribe || !f.enable_domain || !f.enable_callback || !f.result_string || !f.set_attribute) return std::nullopt;
  Dl_info where{};
  if (dladdr(reinterpret_cast<void*>(f.subscribe), &where) && where.dli_fname) f.path = where.dli_fname;
  return f;
}

// A word said to this library outside CUPTI's callback (the Python companion's exported
// gmem_record_say and capture words, NVTX's through its injection with --hook interpose): handled
// as a callback is, and never from inside one of ours. The session's handlers throw nothing.
template <typename Word>
void outside_callbacks(Word&& word) {
  if (in_callback || !the_session) return;
  in_callback = true;
  word(*the_session);
  in_callback = false;
}

}  // namespace
}  // namespace gmem::record::injected

namespace gmem::record::injected {

void driver_call(unsigned id, const CUpti_CallbackData* cb) { callback(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, id, cb); }

void nvtx_word(nvtx_kind kind, const char* message) {
  outside_callbacks([kind, message](session& s) {
    switch (kind) {
      case nvtx_kind::push: s.nvtx_push(message); break;
      case nvtx_kind::pop: s.nvtx_pop(); break;
      case nvtx_kind::mark: s.nvtx_mark(message); break;
    }
  });
}

bool start_session() {
  if (the_session) return false;
  for (const route& rt : routes) {
    if (rt.id < table_size) table[rt.id] = rt.decode;
  }
  const char* out = std::getenv("GMEM_RECORD_OUT");
  const char* names = std::getenv("GMEM_RECORD_NAME_FROM");
  const auto source = parse_name_source(names ? names : "nvtx");
  std::string path = out ? out : "gmem-record.json";
  const long pid = static_cast<long>(::getpid());
  // Every process of the command's tree that uses CUDA inherits the environment and writes its
  // own report, PATH.<pid>.json: `gmemprof record` names each one and merges them into PATH.
  const char* prefix = std::getenv("GMEM_RECORD_OUT_PREFIX");
  if (prefix) path = std::string(prefix) + "." + std::to_string(pid) + ".json";
  const char* d = std::getenv("GMEM_RECORD_DEVICE");
  the_session = new session(real_driver(), source.value_or(name_source::nvtx), path, d ? std::atoi(d) : -1);
  if (prefix) the_session->summarize_as(prefix);  // the name gmemprof record gives a lone report
  the_session->info().pid = pid;
  the_session->info().hook = interposing() ? "interpose" : "cupti";
  // A launcher's rank (torchrun sets RANK and LOCAL_RANK for each worker): the merged recording
  // names each process by it, so that two runs pair their processes rank by rank.
  if (const char* rank = std::getenv("RANK")) {
    the_session->info().rank = rank;
  } else if (const char* local = std::getenv("LOCAL_RANK")) {
    the_session->info().rank = local;
  }
  if (const char* c = std::getenv("GMEM_RECORD_COMMAND")) the_session->info().command = c;
  gmem::profiler::environment& env = the_session->environment();
  env.tool_version = GMEM_VERSION;
  env.git_commit = GMEM_GIT_COMMIT;
  env.command_line = process_command_line();
  env.date = iso_now();
  return true;
}

}  // namespace gmem::record::injected

namespace gmem::record::injected {

// CUPTI cannot be used: the program runs unchanged, told why (with `advice`), and its report
// says that nothing was recorded. InitializeInjection's status for it.
int nothing_recorded(const std::string& why, const std::string& advice) {
  say(why + "; nothing is recorded, the program runs unchanged" + advice);
  the_session->info().notes.push_back(why + "; nothing was recorded");
  install_exit_path();
  return 1;
}

}  // namespace gmem::record::injected

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  using namespace gmem::record;
  using namespace gmem::record::injected;
  // The library's own interception (interpose.cpp) takes the calls instead where it is on: CUDA
  // still loads this library through CUDA_INJECTION64_PATH when a program sets it itself.
  if (interposing() || !start_session()) return 1;
  const std::optional<cupti_functions> cupti = load_cupti();
  if (!cupti) {
    const char* error = dlerror();
    const std::string why = std::string("CUPTI (") + GMEM_CUPTI_SONAME + ") could not be loaded (" +
                            (error ? error : "?") + ")";
    return nothing_recorded(why, "; record with the default hook");
  }
  // NVTX ranges reach CUPTI only if NVTX is told where CUPTI is, before its first call.
  if (!cupti->path.empty()) setenv("NVTX_INJECTION64_PATH", cupti->path.c_str(), 0);
  // No activity is recorded: CUPTI need not pre-allocate device buffers for activity records in
  // each context it sees (three by default, 12 MiB on an H200), which the program would find
  // missing.
  std::size_t none = 0, size = sizeof none;
  cupti->set_attribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, &size, &none);
  CUpti_SubscriberHandle subscriber{};
  const CUptiResult r = cupti->subscribe(&subscriber, callback, nullptr);
  if (r != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cupti->result_string(r, &text);
    const std::string why = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
        ? "CUPTI is already in use by another tool (a profiler such as Nsight or the PyTorch "
          "profiler)"
        : std::string("CUPTI refused the subscription (") + (text ? text : "?") + ")";
    return nothing_recorded(why, "");
  }
  cupti->enable_domain(1, subscriber, CUPTI_CB_DOMAIN_NVTX);
  for (const route& rt : routes) cupti->enable_callback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, rt.id);
  install_exit_path();
  return 1;
}

// The Python companion's word, said to this library directly (ctypes, the library found loaded
// through CUDA_INJECTION64_PATH) rather than as an NVTX mark that CUPTI passes on: the same
// message, read by the same handler, without NVTX's and CUPTI's dispatch in the program's capture.
extern "C" __attribute__((visibility("default"))) void gmem_record_say(const char* message) {
  gmem::record::injected::outside_callbacks([message](gmem::record::session& s) { s.nvtx_mark(message); });
}

// The companion's word of every capture, with its fields: no JSON made in the program's Python
// nor parsed here (what "gmem:capture" says; session_companion.cpp).
extern "C" __attribute__((visibility("default"))) void gmem_record_next_capture(const char* previous_pool,
                                                                               const char* pool, int device,
                                                                               const char* site, const char* label) {
  gmem::record::injected::outside_callbacks(
      [&](gmem::record::session& s) { s.companion_next_capture(previous_pool, pool, device, site, label); });
}

// The Python companion's word at the interpreter's end when a KeyboardInterrupt was not caught:
// Python then raises SIGINT again after its teardown, and no C exit handler runs, so the report
// is written now (exit_path.cpp). NOTE is a line of the report's notes.
extern "C" __attribute__((visibility("default"))) void gmem_record_write_now(const char* note) {
  gmem::record::injected::outside_callbacks([note](gmem::record::session&) { gmem::record::injected::write_before_exit(note); });
}

// The driver calls this library subscribes to, by CUPTI callback id (up to CAPACITY of them into
// IDS; returns how many there are): tools/cupti_floor.py enables the same set with an empty
// callback, to measure what CUPTI's dispatch alone costs a program.
extern "C" __attribute__((visibility("default"))) int gmem_record_route_ids(unsigned* ids, int capacity) {
  using gmem::record::injected::routes;
  const int n = static_cast<int>(sizeof routes / sizeof routes[0]);
  for (int k = 0; k < n && k < capacity && ids; ++k) ids[k] = routes[k].id;
  return n;
}
