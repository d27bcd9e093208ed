#include "gmem/error.hpp"

#include <cstdio>
#include <string>

namespace gmem::detail {

namespace {

// gmem's source file relative to its tree ("alloc/src/handles.cpp"): __FILE__ is the path the
// build used, which names the machine it was built on.
std::string source_place(const char* file, int line) {
  std::string f = file;
  for (const char* top : {"/alloc/", "/profiler/", "/record/", "/python/", "/benchmarks/", "/tests/"}) {
    const std::size_t at = f.rfind(top);
    if (at != std::string::npos) {
      f = f.substr(at + 1);
      break;
    }
  }
  return f + ":" + std::to_string(line);
}

}  // namespace

std::string cuda_error_message(cudaError_t code, const char* call, const std::string& context) {
  std::string msg = "gmem: ";
  if (!context.empty()) msg += context + ": ";
  msg += std::string(call) + " failed with " + cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")";
  return msg;
}

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line,
                      const std::string& context) {
  // Non-sticky errors stay in the runtime's last-error slot; clear it so that a later
  // cudaGetLastError check does not report this failure a second time.
  (void)cudaGetLastError();
  throw cuda_error(code, cuda_error_message(code, call, context), source_place(file, line));
}

void report_cuda_error_nothrow(cudaError_t code, const char* call, const char* file,
                               int line) noexcept {
  (void)cudaGetLastError();
  std::fprintf(stderr, "gmem: (in a destructor) %s failed with %s (%s)\n", call, cudaGetErrorName(code),
               cudaGetErrorString(code));
  (void)file;
  (void)line;
}

}  // namespace gmem::detail
