#pragma once
// Errors from CUDA calls, and the macros that check them.

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "gmem/usage_error.hpp"

namespace gmem {

/// A CUDA call failed. what() holds the call, the error name and string and, where gmem knows
/// it, which object was involved and what to do; where() the place in gmem's source that made
/// the call ("alloc/src/handles.cpp:120"), for a bug report: not part of what() (a user reads
/// what(), and gmem's source paths mean nothing there).
class cuda_error : public std::runtime_error {
 public:
  cuda_error(cudaError_t code, const std::string& message, std::string where = {})
      : std::runtime_error(message), code_(code), where_(std::move(where)) {}
  [[nodiscard]] cudaError_t code() const noexcept { return code_; }
  [[nodiscard]] const std::string& where() const noexcept { return where_; }

 private:
  cudaError_t code_;
  std::string where_;
};

namespace detail {
/// Builds the message of a failed CUDA call (the call, the error, the context; no source place).
[[nodiscard]] std::string cuda_error_message(cudaError_t code, const char* call, const std::string& context);
/// Throws cuda_error for `code` (also clearing the runtime's last error so later checks start
/// clean).
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line,
                                   const std::string& context);
/// Reports a failed call made in a destructor on stderr; never throws.
void report_cuda_error_nothrow(cudaError_t code, const char* call, const char* file,
                               int line) noexcept;
}  // namespace detail

}  // namespace gmem

/// Runs a CUDA runtime call and throws gmem::cuda_error if it fails.
#define GMEM_CUDA_TRY(call) GMEM_CUDA_TRY_CTX(call, std::string{})

/// Like GMEM_CUDA_TRY, with `context` (a std::string) saying which object was involved.
#define GMEM_CUDA_TRY_CTX(call, context)                                              \
  do {                                                                                \
    const cudaError_t gmem_status_ = (call);                                          \
    if (gmem_status_ != cudaSuccess) {                                                \
      ::gmem::detail::throw_cuda_error(gmem_status_, #call, __FILE__, __LINE__, context); \
    }                                                                                 \
  } while (0)

/// For destructors and other noexcept paths: reports a failure on stderr, never throws.
#define GMEM_CUDA_TRY_NOTHROW(call)                                                       \
  do {                                                                                    \
    const cudaError_t gmem_status_ = (call);                                              \
    if (gmem_status_ != cudaSuccess) {                                                    \
      ::gmem::detail::report_cuda_error_nothrow(gmem_status_, #call, __FILE__, __LINE__); \
    }                                                                                     \
  } while (0)
