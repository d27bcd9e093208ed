#pragma once
// The two driver calls every memory node makes, through the driver's own entry points.
//
// Measured on an H100 host (driver 580.159.04): the runtime's wrappers of
// cudaGraphAddMemAllocNode and cudaGraphAddMemFreeNode cost about 85 ns a call over the
// driver's cuGraphAddMemAllocNode and cuGraphAddMemFreeNode, a tenth of the node's build
// (issue 20). Each call here asks the driver first; when the entry point is missing or the
// driver refuses (no context current on this thread, a bad dependency...), it makes the
// runtime's own call, so that the result, the error (cudaGetLastError included) and the
// binding of the thread's context are exactly the runtime's. A refused call adds nothing, so
// making it twice changes nothing.

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gmem::detail {

/// The runtime's parameters of an alloc node of `bytes` of pinned memory on `device`, with no
/// peer access.
cudaMemAllocNodeParams pinned_alloc_params(int device, std::size_t bytes);

/// cudaGraphAddMemAllocNode of `bytes` of pinned memory on `device` with no peer access;
/// the allocation's address goes to `*dptr`.
cudaError_t add_mem_alloc_node(cudaGraphNode_t* node, cudaGraph_t graph,
                               const cudaGraphNode_t* deps, std::size_t count, int device,
                               std::size_t bytes, void** dptr);

/// cudaGraphAddMemFreeNode of `ptr`.
cudaError_t add_mem_free_node(cudaGraphNode_t* node, cudaGraph_t graph,
                              const cudaGraphNode_t* deps, std::size_t count, void* ptr);

}  // namespace gmem::detail
