#pragma once
// The two driver calls every memory node makes, through the driver's own entry points.
//
// Measured on H100 hosts (driver 580.159.04): the runtime's wrappers, cudaGraphAddMemAllocNode
// and cudaGraphAddMemFreeNode, built 1000 memory nodes more slowly than these
// (reports/bench/h100-processes-4a6eda7.json), by more than all of gmem's bookkeeping
// costs. Each call here asks the driver first; when the entry point is missing or the
// driver refuses (a dependency from another graph, an address it did not hand out...), it makes
// the runtime's own call, so that the result and the error (cudaGetLastError included) are
// exactly the runtime's. A refused call adds nothing, so making it twice changes nothing.
// The driver's calls need no current context (seen on an H100, driver 580.159.04: a thread that
// never made a runtime call added both nodes), so, unlike the runtime's, they leave a thread
// without one as it is; the thread's next runtime call binds the device's primary context.

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
