#include "gmem/user_object.hpp"

#include <cstdio>
#include <string>
#include <utility>

#include "gmem/capability.hpp"
#include "gmem/detail/release_queue.hpp"
#include "gmem/error.hpp"

namespace gmem {
namespace {

using release_fn = std::function<void()>;

// The driver's callback for user_object::deferred: it may neither call CUDA nor block, so it
// only hands the release to gmem's release thread. Nothing may escape into the driver.
void hand_over(void* p) noexcept {
  try {
    detail::release_queue::process().post([p] {
      const std::unique_ptr<release_fn> release(static_cast<release_fn*>(p));
      if (*release) (*release)();
    });
  } catch (...) {
    std::fprintf(stderr, "gmem: a deferred release could not be handed over; it is kept\n");
  }
}

// On the release thread, where CUDA calls are allowed.
void free_on_device(void* ptr, int device) noexcept {
  cudaError_t err = cudaSetDevice(device);
  if (err == cudaSuccess) err = cudaFree(ptr);
  if (err != cudaSuccess && err != cudaErrorCudartUnloading) {  // unloading: the process exits
    std::fprintf(stderr,
                 "gmem: freeing the outside buffer at %s on device %d failed with %s (%s)\n",
                 format_address(reinterpret_cast<std::uintptr_t>(ptr)).c_str(), device,
                 cudaGetErrorName(err), cudaGetErrorString(err));
  }
  (void)cudaGetLastError();
}

}  // namespace

user_object::user_object(void* ptr, void (*destroy)(void*)) {
  GMEM_CUDA_TRY_CTX(
      cudaUserObjectCreate(&handle_, ptr, destroy, 1, cudaUserObjectNoDestructorSync),
      "creating a user object of " + format_address(reinterpret_cast<std::uintptr_t>(ptr)));
}

user_object user_object::deferred(std::function<void()> release) {
  (void)detail::release_queue::process();  // started here, not on the driver's thread
  auto task = std::make_unique<release_fn>(std::move(release));
  user_object out(task.get(), hand_over);
  (void)task.release();  // the user object owns it now
  return out;
}

user_object::~user_object() {
  if (handle_) GMEM_CUDA_TRY_NOTHROW(cudaUserObjectRelease(handle_, 1));
}

user_object::user_object(user_object&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)) {}

user_object& user_object::operator=(user_object&& other) noexcept {
  if (this != &other) {
    if (handle_) GMEM_CUDA_TRY_NOTHROW(cudaUserObjectRelease(handle_, 1));
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

cudaUserObject_t user_object::release() noexcept { return std::exchange(handle_, nullptr); }

outside_buffer::outside_buffer(std::size_t bytes, int device, std::function<void()> after_free)
    : bytes_(bytes), device_(device) {
  const std::string what = "outside buffer of " + format_bytes(bytes) + " on device " +
                           std::to_string(device);
  if (bytes == 0) {
    throw usage_error("an outside buffer of 0 bytes: ask for at least 1 byte");
  }
  if (device < 0 || device >= device_count()) {
    throw usage_error("an " + what + ": this machine has " + std::to_string(device_count()) +
                      " device(s)");
  }
  int previous = 0;
  GMEM_CUDA_TRY(cudaGetDevice(&previous));
  GMEM_CUDA_TRY_CTX(cudaSetDevice(device), "allocating an " + what);
  const cudaError_t err = cudaMalloc(&ptr_, bytes);
  (void)cudaSetDevice(previous);
  if (err != cudaSuccess) {
    detail::throw_cuda_error(err, "cudaMalloc", __FILE__, __LINE__, "allocating an " + what);
  }
  try {
    owner_ = user_object::deferred([ptr = ptr_, device, after = std::move(after_free)] {
      free_on_device(ptr, device);
      if (after) after();
    });
  } catch (...) {
    (void)cudaFree(ptr_);
    throw;
  }
}

void wait_for_deferred_releases() { detail::release_queue::process().drain(); }

}  // namespace gmem
