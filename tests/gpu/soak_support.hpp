#pragma once
// What the soak programs (free_soak.cpp, launch_soak.cpp) share: the run's metadata from the
// command line and the device, the date, and the process's resident memory.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>

#include "gmem/error.hpp"

namespace gmem::soak {

/// The metadata a soak writes beside its figures.
struct run_info {
  std::string commit = "unknown";
  std::string command;
  std::string driver_version;  ///< the kernel driver's release, as given (--driver-version)
  std::string device;          ///< filled by describe_device
  int cuda_driver_api = 0;
  int cuda_runtime = 0;
};

/// Takes --commit, --command or --driver-version at argv[i] (and its value, advancing i);
/// false when argv[i] is none of them.
inline bool take_run_flag(int& i, int argc, char** argv, run_info& run) {
  const std::string a = argv[i];
  if (i + 1 >= argc) return false;
  if (a == "--commit") run.commit = argv[++i];
  else if (a == "--command") run.command = argv[++i];
  else if (a == "--driver-version") run.driver_version = argv[++i];
  else return false;
  return true;
}

/// Device 0's name and the CUDA versions. Throws cuda_error.
inline void describe_device(run_info& run) {
  cudaDeviceProp prop{};
  GMEM_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
  run.device = prop.name;
  GMEM_CUDA_TRY(cudaDriverGetVersion(&run.cuda_driver_api));
  GMEM_CUDA_TRY(cudaRuntimeGetVersion(&run.cuda_runtime));
}

/// "2026-11-22T21:40:35Z".
inline std::string utc_now() {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return date;
}

/// The process's resident memory (VmRSS), in KiB; -1 when /proc cannot tell.
inline long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

}  // namespace gmem::soak
