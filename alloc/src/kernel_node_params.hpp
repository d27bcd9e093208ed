#pragma once
// The runtime's parameters of a kernel node, for the calls that add or change one.

#include <cuda_runtime_api.h>

namespace gmem::detail {

/// `func<<<grid, block, shared_bytes>>>` with `args` as for cudaLaunchKernel.
[[nodiscard]] inline cudaKernelNodeParams kernel_node_params(void* func, dim3 grid, dim3 block,
                                                             unsigned int shared_bytes,
                                                             void** args) {
  cudaKernelNodeParams p{};
  p.func = func;
  p.gridDim = grid;
  p.blockDim = block;
  p.sharedMemBytes = shared_bytes;
  p.kernelParams = args;
  return p;
}

}  // namespace gmem::detail
