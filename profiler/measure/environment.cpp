#include "gmem/profiler/environment.hpp"

#include <ctime>
#include <fstream>
#include <regex>

#include "gmem/capability.hpp"
#include "gmem/error.hpp"
#include "gmem/graph.hpp"
#include "gmem/graph_exec.hpp"
#include "gmem/handles.hpp"
#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/device_info.hpp"

namespace gmem::profiler {

granularity_measurement measure_granularity(int device) {
  device_guard on(device);
  const trim_result before = trim(device);
  granularity_measurement m;
  {
    graph g("granularity probe");
    const auto a = g.add_alloc({1, device});
    (void)g.add_free(a.ptr, {a.node});
    stream s;
    graph_exec exec(g);
    exec.launch(s);
    s.synchronize();
    const counters after = read_counters(device);
    m.bytes = after.reserved_current - before.reserved_after;
  }
  (void)trim(device);
  m.method = "growth of cudaGraphMemAttrReservedMemCurrent when one 1-byte graph allocation is "
             "mapped into a trimmed pool";
  if (before.reserved_after != 0) {
    m.method += " (" + std::to_string(before.reserved_after) +
                " B stayed reserved after the trim: graph allocations were live)";
  }
  return m;
}

std::string driver_release() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  std::getline(in, line);
  std::smatch m;
  static const std::regex version(R"(\b(\d+\.\d+(\.\d+)?)\b)");
  return std::regex_search(line, m, version) ? m[1].str() : std::string();
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

environment collect_environment(int device, const std::string& command_line) {
  const device_capability& cap = probe_device(device);
  environment env;
  env.device_name = cap.name;
  env.device_index = device;
  env.cc_major = cap.cc_major;
  env.cc_minor = cap.cc_minor;
  env.total_memory_bytes = cap.total_memory;
  env.driver_version = cap.driver_version;
  env.driver_release = driver_release();
  env.runtime_version = cap.runtime_version;
  env.device_count = device_count();
  const granularity_measurement g = measure_granularity(device);
  env.granularity_bytes = g.bytes;
  env.granularity_method = g.method;
  env.tool_version = tool_version();
  env.git_commit = GMEM_GIT_COMMIT;
  env.command_line = command_line;
  env.date = utc_now();
  return env;
}

}  // namespace gmem::profiler
