// Uses gmem::alloc and gmem::profiler from an installed gmem; runs without a GPU.
#include <cstdio>
#include <string>

#include <gmem/gmem.hpp>
#include <gmem/profiler/device_info.hpp>
#include <gmem/profiler/report_io.hpp>

int main() {
  // gmem::alloc: the request checks are plain C++.
  gmem::alloc_request request;
  request.bytes = 1 << 20;
  if (!gmem::is_plain_request(request, 1)) {
    std::puts("consumer: a 1 MiB request on device 0 should be plain");
    return 1;
  }
  // gmem::profiler: a report through its JSON and back (nlohmann is inside the library).
  gmem::profiler::report r;
  r.env.device_name = "consumer";
  gmem::profiler::scenario_result s;
  s.name = "package_test";
  s.analysis.requested_bytes = 4096;
  r.scenarios.push_back(s);
  const auto back =
      gmem::profiler::from_json_string(gmem::profiler::to_json_string(r), "consumer");
  if (back.scenarios.size() != 1 || back.scenarios[0].analysis.requested_bytes != 4096) {
    std::puts("consumer: the report did not survive its JSON");
    return 1;
  }
  std::printf("consumer: %s\n", gmem::profiler::tool_version().c_str());
  return 0;
}
