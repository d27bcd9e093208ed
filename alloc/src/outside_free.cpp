#include "gmem/outside_free.hpp"

#include "gmem/detail/allocation_registry.hpp"
#include "gmem/error.hpp"
#include "gmem/handles.hpp"

namespace gmem {
namespace {

// The free is claimed in the registry before the driver call (refused with usage_error when
// the allocation already has a free), committed after it, given back when the driver refuses.
template <typename Call>
void free_outside(void* ptr, const std::string& how, const char* call_text, Call&& call) {
  const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(ptr);
  allocation_registry& registry = allocation_registry::global();
  const allocation_registry::outside_claim claim = registry.claim_outside_free(address, how);
  const cudaError_t err = call();
  if (err != cudaSuccess) {
    registry.unclaim_outside_free(claim);
    detail::throw_cuda_error(err, call_text, __FILE__, __LINE__,
                             "freeing the graph allocation at " + format_address(address) +
                                 " by " + how);
  }
  registry.commit_outside_free(claim);
}

}  // namespace

void free_in_stream(void* ptr, cudaStream_t s) {
  free_outside(ptr, "cudaFreeAsync in " + describe_stream(s) + " (gmem::free_in_stream)",
               "cudaFreeAsync", [&] { return cudaFreeAsync(ptr, s); });
}

void free_now(void* ptr) {
  free_outside(ptr, "cudaFree (gmem::free_now)", "cudaFree", [&] { return cudaFree(ptr); });
}

}  // namespace gmem
