#include "gmem/outside_free.hpp"

#include "gmem/error.hpp"
#include "gmem/handles.hpp"

namespace gmem {

void free_in_stream(void* ptr, cudaStream_t s) {
  GMEM_CUDA_TRY_CTX(cudaFreeAsync(ptr, s),
                    "freeing the graph allocation at " +
                        format_address(reinterpret_cast<std::uintptr_t>(ptr)) + " in " +
                        describe_stream(s));
}

void free_now(void* ptr) {
  GMEM_CUDA_TRY_CTX(cudaFree(ptr), "freeing the graph allocation at " +
                                       format_address(reinterpret_cast<std::uintptr_t>(ptr)));
}

}  // namespace gmem
