#pragma once
// CUDA user objects as owning RAII handles, and a device buffer outside every graph whose
// lifetime the graphs that use it share.
//
// A user object is a reference-counted pointer with a destructor callback. A graph that
// retains one keeps it alive, and so do the graph's clones and its executable graphs (each
// takes its own references); a launch not yet finished keeps the references of an executable
// graph destroyed or updated meanwhile until it ends. When the last reference goes the driver
// runs the callback, later and on a thread it shares for its own work: there is no CUDA call
// that waits for it, and the callback may not call CUDA or block. A release that must call
// CUDA (cudaFree) is handed to gmem's release thread, which may (user_object::deferred).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>

namespace gmem {

class user_object {
 public:
  /// An empty handle.
  user_object() noexcept = default;

  /// Creates a user object of `ptr` whose last release runs `destroy(ptr)` on the driver's
  /// thread: `destroy` must not call CUDA nor block. The handle holds one reference.
  /// Throws cuda_error (then `destroy` is not called).
  user_object(void* ptr, void (*destroy)(void*));

  /// A user object owning `object`: its last release deletes it on the driver's thread, so
  /// T's destructor must not call CUDA nor block. Throws cuda_error (then `object` is deleted).
  template <typename T>
  static user_object owning(std::unique_ptr<T> object) {
    T* raw = object.get();
    user_object out(raw, [](void* p) { delete static_cast<T*>(p); });
    (void)object.release();  // the user object owns it now
    return out;
  }

  /// A user object whose last release runs `release` on gmem's release thread, where CUDA
  /// calls are allowed: the driver's callback only hands it over. Throws cuda_error.
  static user_object deferred(std::function<void()> release);

  /// Releases the reference the handle holds, if it holds one.
  ~user_object();
  user_object(user_object&& other) noexcept;
  user_object& operator=(user_object&& other) noexcept;
  user_object(const user_object&) = delete;
  user_object& operator=(const user_object&) = delete;

  [[nodiscard]] cudaUserObject_t get() const noexcept { return handle_; }
  [[nodiscard]] explicit operator bool() const noexcept { return handle_ != nullptr; }

  /// Gives up the handle's reference without releasing it (for a raw call that takes it over,
  /// such as cudaGraphRetainUserObject with cudaGraphUserObjectMove) and leaves it empty.
  [[nodiscard]] cudaUserObject_t release() noexcept;

 private:
  cudaUserObject_t handle_ = nullptr;
};

/// A device buffer outside every graph (cudaMalloc on `device`), shared by the graphs that use
/// it: a graph that retains owner() keeps it, as do its executable graphs and launches in
/// flight; the buffer's own handle keeps one reference until it is destroyed or gives it away
/// (`g.retain(std::move(buf.owner()))`). When the last reference goes, cudaFree runs on gmem's
/// release thread, then `after_free` there (to signal a waiting thread, or count).
class outside_buffer {
 public:
  /// Allocates `bytes` on `device`. Throws usage_error for 0 bytes, cuda_error.
  explicit outside_buffer(std::size_t bytes, int device = 0,
                          std::function<void()> after_free = {});

  [[nodiscard]] void* get() const noexcept { return ptr_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] int device() const noexcept { return device_; }
  /// The user object that owns the buffer: `g.retain(buf.owner())` for each graph that uses
  /// it; empty once its reference was moved away.
  [[nodiscard]] const user_object& owner() const noexcept { return owner_; }
  [[nodiscard]] user_object& owner() noexcept { return owner_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = 0;
  user_object owner_;
};

/// Waits until every release handed to gmem's release thread so far has run (the driver hands
/// one over at some time after the last reference went: wait for that first, for example on
/// what `after_free` signals). Not from a release itself.
void wait_for_deferred_releases();

}  // namespace gmem
