#include "gmem/profiler/node_durations.hpp"

#include <cupti_activity.h>
#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <type_traits>
#include <mutex>
#include <utility>

#include "gmem/error.hpp"
#include "gmem/profiler/report.hpp"

namespace gmem::profiler {
namespace {

// CUPTI's entry points, loaded once. The library is the toolkit's (libcupti.so.13 for CUDA 13);
// not linked, so that gmem's libraries load where CUPTI is not installed.
struct cupti_api {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetGraphNodeId) node_id = nullptr;
  decltype(&cuptiGetGraphExecId) exec_id = nullptr;
  std::string missing;  ///< why it could not be loaded; empty when it was
};

const cupti_api& cupti() {
  static const cupti_api api = [] {
    cupti_api a;
    void* lib = nullptr;
    for (const char* name : {"libcupti.so.13", "libcupti.so", "/usr/local/cuda/lib64/libcupti.so.13",
                             "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"}) {
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    }
    if (!lib) {
      a.missing = "CUPTI (libcupti.so.13) could not be loaded; install the CUDA toolkit's CUPTI "
                  "or add its folder to LD_LIBRARY_PATH";
      return a;
    }
    const auto load = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      if (!fn && a.missing.empty()) a.missing = std::string("CUPTI lacks ") + symbol;
    };
    load(a.register_callbacks, "cuptiActivityRegisterCallbacks");
    load(a.enable, "cuptiActivityEnable");
    load(a.disable, "cuptiActivityDisable");
    load(a.flush_all, "cuptiActivityFlushAll");
    load(a.next_record, "cuptiActivityGetNextRecord");
    load(a.node_id, "cuptiGetGraphNodeId");
    load(a.exec_id, "cuptiGetGraphExecId");
    return a;
  }();
  return api;
}

// What the buffer callbacks collect: (exec graph id, node id, duration ns) of kernel records.
struct collected {
  std::mutex mu;
  std::vector<std::pair<std::pair<std::uint32_t, std::uint64_t>, double>> kernels;
};

collected& sink() {
  static collected c;
  return c;
}

constexpr std::size_t buffer_bytes = 1 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_bytes));
  *size = *buffer ? buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  collected& c = sink();
  std::lock_guard<std::mutex> lock(c.mu);
  const auto keep = [&c](const auto* r) {
    if (r->graphNodeId != 0 && r->end >= r->start) {
      c.kernels.push_back({{r->graphId, r->graphNodeId}, static_cast<double>(r->end - r->start)});
    }
  };
  while (cupti().next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      keep(reinterpret_cast<const CUpti_ActivityKernel10*>(record));
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      keep(reinterpret_cast<const CUpti_ActivityMemset4*>(record));
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      keep(reinterpret_cast<const CUpti_ActivityMemcpy6*>(record));
    }
  }
  std::free(buffer);
}

}  // namespace

std::optional<node_durations> measure_node_durations(cudaGraph_t g, int device,
                                                     const std::vector<void*>& unfreed,
                                                     std::string& why, int launches) {
  const cupti_api& api = cupti();
  if (!api.missing.empty()) {
    why = api.missing;
    return std::nullopt;
  }
  static const CUptiResult registered = api.register_callbacks(buffer_requested, buffer_completed);
  if (registered != CUPTI_SUCCESS) {
    why = "CUPTI refused activity buffers (error " + std::to_string(registered) +
          "): another tool in this process may own them";
    return std::nullopt;
  }
  const std::string ctx = "measuring the node durations of a graph";
  GMEM_CUDA_TRY_CTX(cudaSetDevice(device), ctx);
  std::size_t count = 0;
  GMEM_CUDA_TRY_CTX(cudaGraphGetNodes(g, nullptr, &count), ctx);
  std::vector<cudaGraphNode_t> nodes(count);
  if (count) GMEM_CUDA_TRY_CTX(cudaGraphGetNodes(g, nodes.data(), &count), ctx);
  // A node's id is (its graph's id << 32) | its number in that graph; an executable graph's
  // copy of a node keeps the number (measured on an H100, driver 580: README).
  std::map<std::uint32_t, std::size_t> index_of_number;
  for (std::size_t k = 0; k < count; ++k) {
    std::uint64_t id = 0;
    if (api.node_id(reinterpret_cast<CUgraphNode>(nodes[k]), &id) == CUPTI_SUCCESS) {
      index_of_number[static_cast<std::uint32_t>(id & 0xffffffffu)] = k;
    }
  }
  cudaGraphExec_t exec = nullptr;
  GMEM_CUDA_TRY_CTX(cudaGraphInstantiateWithFlags(
                        &exec, g, unfreed.empty() ? 0 : cudaGraphInstantiateFlagAutoFreeOnLaunch),
                    ctx);
  cudaStream_t stream = nullptr;
  const auto cleanup = [&] {
    if (stream) {
      for (void* p : unfreed) (void)cudaFreeAsync(p, stream);
      (void)cudaStreamSynchronize(stream);
      (void)cudaStreamDestroy(stream);
    }
    (void)cudaGraphExecDestroy(exec);
  };
  std::uint32_t exec_id = 0;
  std::vector<std::pair<std::pair<std::uint32_t, std::uint64_t>, double>> mine;
  constexpr CUpti_ActivityKind traced[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                           CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMCPY};
  try {
    GMEM_CUDA_TRY_CTX(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), ctx);
    if (api.exec_id(reinterpret_cast<CUgraphExec>(exec), &exec_id) != CUPTI_SUCCESS) {
      cleanup();
      why = "CUPTI gave no id for the executable graph";
      return std::nullopt;
    }
    if (api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
      cleanup();
      why = "CUPTI refused to trace kernels";
      return std::nullopt;
    }
    (void)api.enable(CUPTI_ACTIVITY_KIND_MEMSET);  // memset and copy nodes weigh too, if traced
    (void)api.enable(CUPTI_ACTIVITY_KIND_MEMCPY);
    for (int i = 0; i < launches; ++i) GMEM_CUDA_TRY_CTX(cudaGraphLaunch(exec, stream), ctx);
    GMEM_CUDA_TRY_CTX(cudaStreamSynchronize(stream), ctx);
  } catch (...) {
    for (auto kind : traced) (void)api.disable(kind);
    cleanup();
    throw;
  }
  for (auto kind : traced) (void)api.disable(kind);
  (void)api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cleanup();
  {
    collected& c = sink();
    std::lock_guard<std::mutex> lock(c.mu);
    for (auto& k : c.kernels) {
      if (k.first.first == exec_id) mine.push_back(k);
    }
    c.kernels.clear();
  }
  node_durations out;
  out.launches = launches;
  out.top_level_us.assign(count, 0.0);
  // Per node: the median of its records' durations over the launches (a kernel, memset or
  // copy node runs one per launch).
  std::map<std::size_t, std::vector<double>> per_node;
  for (const auto& [key, ns] : mine) {
    ++out.kernel_records;
    const auto it = index_of_number.find(static_cast<std::uint32_t>(key.second & 0xffffffffu));
    if (it == index_of_number.end()) {
      ++out.unplaced_records;
      continue;
    }
    per_node[it->second].push_back(ns / 1e3);
  }
  for (auto& [k, us] : per_node) out.top_level_us[k] = summarize_samples(std::move(us)).median_us;
  return out;
}

}  // namespace gmem::profiler
