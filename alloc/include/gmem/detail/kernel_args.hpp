#pragma once
// A kernel's arguments held as the driver takes them: the values, and an array of pointers to
// each (cudaKernelNodeParams::kernelParams). For the calls that add or change a kernel node.

#include <array>
#include <cstddef>
#include <tuple>
#include <utility>

namespace gmem::detail {

/// The arguments of a kernel taking `Params...`: built in place, neither copied nor moved (the
/// pointers point into it); alive for the call that hands get() to the driver, which copies
/// the values.
template <typename... Params>
class kernel_args {
 public:
  template <typename... Args>
  explicit kernel_args(Args&&... args) : values_(std::forward<Args>(args)...) {
    static_assert(sizeof...(Params) == sizeof...(Args), "kernel argument count mismatch");
    std::apply(
        [this](auto&... v) {
          [[maybe_unused]] std::size_t i = 0;
          ((pointers_[i++] = static_cast<void*>(&v)), ...);
        },
        values_);
  }
  kernel_args(const kernel_args&) = delete;
  kernel_args& operator=(const kernel_args&) = delete;

  [[nodiscard]] void** get() noexcept { return pointers_.data(); }

 private:
  std::tuple<Params...> values_;
  std::array<void*, sizeof...(Params) + 1> pointers_{};
};

}  // namespace gmem::detail
