#pragma once
// Owning, move-only RAII types for CUDA streams, events and memory pools.
// Destructors never throw; moves are noexcept.

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

namespace gmem {

/// An owned CUDA stream (non-blocking with respect to the legacy default stream by default).
class stream {
 public:
  /// Creates a stream on the current device. Throws cuda_error.
  explicit stream(unsigned int flags = cudaStreamNonBlocking);
  ~stream();
  stream(stream&& other) noexcept;
  stream& operator=(stream&& other) noexcept;
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  [[nodiscard]] cudaStream_t get() const noexcept { return handle_; }
  operator cudaStream_t() const noexcept { return handle_; }  // NOLINT: used like the handle
  /// Waits for all work in the stream. Throws cuda_error.
  void synchronize() const;

 private:
  cudaStream_t handle_ = nullptr;
};

/// An owned CUDA event (timing disabled by default: cheapest for ordering).
class event {
 public:
  /// Creates an event. Throws cuda_error.
  explicit event(unsigned int flags = cudaEventDisableTiming);
  ~event();
  event(event&& other) noexcept;
  event& operator=(event&& other) noexcept;
  event(const event&) = delete;
  event& operator=(const event&) = delete;

  [[nodiscard]] cudaEvent_t get() const noexcept { return handle_; }
  operator cudaEvent_t() const noexcept { return handle_; }  // NOLINT: used like the handle
  /// Records the event in `s`. Throws cuda_error.
  void record(cudaStream_t s) const;
  /// Makes `s` wait for the event. Throws cuda_error.
  void wait_in(cudaStream_t s) const;
  /// Waits on the host for the event. Throws cuda_error.
  void synchronize() const;

 private:
  cudaEvent_t handle_ = nullptr;
};

/// An owned, explicitly created memory pool resident on one device.
class mem_pool {
 public:
  /// Creates a pool of pinned memory resident on `device`, readable and writable from each of
  /// `peers` (cudaMemPoolSetAccess). Throws usage_error for bad devices, cuda_error otherwise.
  explicit mem_pool(int device, const std::vector<int>& peers = {});
  ~mem_pool();
  mem_pool(mem_pool&& other) noexcept;
  mem_pool& operator=(mem_pool&& other) noexcept;
  mem_pool(const mem_pool&) = delete;
  mem_pool& operator=(const mem_pool&) = delete;

  [[nodiscard]] cudaMemPool_t get() const noexcept { return handle_; }
  [[nodiscard]] int device() const noexcept { return device_; }
  /// Gives (or with cudaMemAccessFlagsProtNone, takes away) `peer`'s access to the pool.
  /// Captured allocations record the access the pool has at capture time. Throws cuda_error.
  void set_access(int peer, cudaMemAccessFlags flags = cudaMemAccessFlagsProtReadWrite);
  /// The access `peer` has now. Throws cuda_error.
  [[nodiscard]] cudaMemAccessFlags access(int peer) const;

 private:
  cudaMemPool_t handle_ = nullptr;
  int device_ = 0;
};

/// A device made current for the lifetime of the guard, restoring the previous one after.
class device_guard {
 public:
  /// Throws cuda_error.
  explicit device_guard(int device);
  ~device_guard();
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int previous_ = 0;
};

/// "stream 0x..." for messages.
[[nodiscard]] std::string describe_stream(cudaStream_t s);

}  // namespace gmem
