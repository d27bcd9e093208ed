#pragma once
// NVTX ranges (NVTX3, header-only, from the CUDA toolkit) around the profiler's scenarios and
// phases, in the domain "gmem", so that an Nsight Systems capture of `gmemprof run` shows
// which scenario and phase each driver call belongs to.
//
// Off by a switch: at build time with -DGMEM_NVTX=OFF (the ranges compile to nothing), at run
// time with the environment variable GMEM_NVTX=0 (read once). Without a tool attached, NVTX
// calls return at once; the cost per range is measured by gmem_nvtx_cost (README).

#include <string>

namespace gmem::profiler {

/// False when built with GMEM_NVTX=OFF or when the environment sets GMEM_NVTX=0.
[[nodiscard]] bool nvtx_enabled() noexcept;

/// Pushes a range named `name` in the "gmem" domain for its lifetime (nothing when disabled).
class nvtx_range {
 public:
  explicit nvtx_range(const std::string& name) noexcept;
  ~nvtx_range();
  nvtx_range(const nvtx_range&) = delete;
  nvtx_range& operator=(const nvtx_range&) = delete;

 private:
  bool pushed_ = false;
};

}  // namespace gmem::profiler
