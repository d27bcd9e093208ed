#include "memory_node_calls.hpp"

#include <cuda.h>

#include <cstdint>

namespace gmem::detail {
namespace {

struct entry_points {
  decltype(&cuGraphAddMemAllocNode) add_alloc = nullptr;
  decltype(&cuGraphAddMemFreeNode) add_free = nullptr;
};

template <typename Fn>
void lookup(Fn*& fn, const char* symbol) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status{};
  const bool error_pending = cudaPeekAtLastError() != cudaSuccess;
  // Both calls kept the ABI of CUDA 11.4; 12.0 is the oldest version this lookup takes.
  const cudaError_t err = cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault,
                                                           &status);
  if (err == cudaSuccess && status == cudaDriverEntryPointSuccess) {
    fn = reinterpret_cast<Fn*>(p);
  } else if (err != cudaSuccess && !error_pending) {
    (void)cudaGetLastError();  // the runtime's calls serve: the lookup leaves no error behind
  }
}

/// Looked up once per process; a pointer left null means the runtime's call.
const entry_points& driver() {
  static const entry_points e = [] {
    entry_points found;
    lookup(found.add_alloc, "cuGraphAddMemAllocNode");
    lookup(found.add_free, "cuGraphAddMemFreeNode");
    return found;
  }();
  return e;
}

}  // namespace

cudaMemAllocNodeParams pinned_alloc_params(int device, std::size_t bytes) {
  cudaMemAllocNodeParams p{};
  p.poolProps.allocType = cudaMemAllocationTypePinned;
  p.poolProps.handleTypes = cudaMemHandleTypeNone;
  p.poolProps.location.type = cudaMemLocationTypeDevice;
  p.poolProps.location.id = device;
  p.bytesize = bytes;
  return p;
}

cudaError_t add_mem_alloc_node(cudaGraphNode_t* node, cudaGraph_t graph,
                               const cudaGraphNode_t* deps, std::size_t count, int device,
                               std::size_t bytes, void** dptr) {
  if (const auto add = driver().add_alloc) {
    CUDA_MEM_ALLOC_NODE_PARAMS p{};
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = device;
    p.bytesize = bytes;
    if (add(node, graph, deps, count, &p) == CUDA_SUCCESS) {
      *dptr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(p.dptr));
      return cudaSuccess;
    }
  }
  cudaMemAllocNodeParams p = pinned_alloc_params(device, bytes);
  const cudaError_t err = cudaGraphAddMemAllocNode(node, graph, deps, count, &p);
  *dptr = p.dptr;
  return err;
}

cudaError_t add_mem_free_node(cudaGraphNode_t* node, cudaGraph_t graph,
                              const cudaGraphNode_t* deps, std::size_t count, void* ptr) {
  if (const auto add = driver().add_free) {
    if (add(node, graph, deps, count, reinterpret_cast<std::uintptr_t>(ptr)) == CUDA_SUCCESS) {
      return cudaSuccess;
    }
  }
  return cudaGraphAddMemFreeNode(node, graph, deps, count, ptr);
}

}  // namespace gmem::detail
