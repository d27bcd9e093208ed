#include "gmem/error.hpp"

#include <cstdio>
#include <string>

namespace gmem::detail {

std::string cuda_error_message(cudaError_t code, const char* call, const char* file, int line,
                               const std::string& context) {
  std::string msg = "gmem: ";
  if (!context.empty()) msg += context + ": ";
  msg += std::string(call) + " failed with " + cudaGetErrorName(code) + " (" +
         cudaGetErrorString(code) + ") at " + file + ":" + std::to_string(line);
  return msg;
}

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line,
                      const std::string& context) {
  // Non-sticky errors stay in the runtime's last-error slot; clear it so that a later
  // cudaGetLastError check does not report this failure a second time.
  (void)cudaGetLastError();
  throw cuda_error(code, cuda_error_message(code, call, file, line, context));
}

void report_cuda_error_nothrow(cudaError_t code, const char* call, const char* file,
                               int line) noexcept {
  (void)cudaGetLastError();
  std::fprintf(stderr, "gmem: (in a destructor) %s failed with %s (%s) at %s:%d\n", call,
               cudaGetErrorName(code), cudaGetErrorString(code), file, line);
}

}  // namespace gmem::detail
