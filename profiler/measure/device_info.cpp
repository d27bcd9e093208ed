#include "gmem/profiler/device_info.hpp"

#include <cstdio>
#include <ostream>
#include <sstream>

#include "gmem/usage_error.hpp"

namespace gmem::profiler {

std::string tool_version() {
  return std::string("gmem ") + GMEM_VERSION + " (commit " + GMEM_GIT_COMMIT + ")";
}

std::string describe_device(const device_capability& cap) {
  std::ostringstream out;
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f GiB",
                static_cast<double>(cap.total_memory) / (1024.0 * 1024.0 * 1024.0));
  out << "device " << cap.device << ": " << cap.name << "\n"
      << "  compute capability: " << cap.cc_major << "." << cap.cc_minor << "\n"
      << "  total memory:       " << mem << " (" << cap.total_memory << " B)\n"
      << "  driver version:     " << format_cuda_version(cap.driver_version) << " ("
      << cap.driver_version << ")\n"
      << "  runtime version:    " << format_cuda_version(cap.runtime_version) << " ("
      << cap.runtime_version << ")\n"
      << "  memory pools:       " << (cap.memory_pools_supported ? "yes" : "no") << "\n"
      << "  graph memory nodes: "
      << (cap.graph_mem_nodes_supported ? std::string("supported")
                                        : "not supported: " + cap.unsupported_reason)
      << "\n";
  return out.str();
}

int run_info(std::ostream& out, std::ostream& err, std::optional<int> device) {
  if (const auto why = gpu_unavailable_reason()) {
    out << "gmemprof info: " << *why << "; nothing to report on this machine.\n";
    return 3;
  }
  const int count = device_count();
  if (device && (*device < 0 || *device >= count)) {
    err << "gmemprof info: device " << *device << " is out of range: this machine has " << count
        << " CUDA device(s), 0.." << count - 1 << "\n";
    return 2;
  }
  out << tool_version() << "\n";
  const int first = device.value_or(0);
  const int last = device.value_or(count - 1);
  for (int d = first; d <= last; ++d) out << describe_device(probe_device(d));
  return 0;
}

}  // namespace gmem::profiler
