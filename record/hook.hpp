#pragma once
// Which way the recording takes the driver's calls in this process: `gmemprof record --hook`
// sets GMEM_RECORD_HOOK for the command. Read by both halves of the library's own interception
// (preload.cpp, preloaded; interpose.cpp and inject.cpp, in libgmem_record.so).

#include <cstdlib>
#include <cstring>

namespace gmem::record {

/// Whether the library takes the driver's calls itself (GMEM_RECORD_HOOK=interpose) instead of
/// through CUPTI; read once.
inline bool interposing() {
  static const bool on = [] {
    const char* v = std::getenv("GMEM_RECORD_HOOK");
    return v && std::strcmp(v, "interpose") == 0;
  }();
  return on;
}

}  // namespace gmem::record
