#include "report/processes.hpp"

#include <algorithm>
#include <map>

namespace gmem::profiler {

std::string process_of(const recorded_graph& g) {
  if (g.name.empty() || g.name.front() != '[') return "";
  const auto end = g.name.find(" pid ");
  return end == std::string::npos ? "" : g.name.substr(1, end - 1);
}

std::vector<std::string> processes_sharing_a_device(const recording& rec) {
  std::map<int, std::vector<std::string>> by_device;
  for (const auto& b : rec.bills) {
    if (!b.process.empty()) by_device[b.device].push_back(b.process);
  }
  std::vector<std::string> out;
  for (const auto& [device, processes] : by_device) {
    if (processes.size() > 1) out.insert(out.end(), processes.begin(), processes.end());
  }
  return out;
}

std::string bill_row_label(const graph_bill& b) {
  return "bill[" + (b.process.empty() ? std::string() : b.process + " ") + "device " + std::to_string(b.device) + "]";
}

const graph_bill* find_bill(const recording& r, const graph_bill& like) {
  const auto it = std::find_if(r.bills.begin(), r.bills.end(), [&](const graph_bill& x) {
    return x.device == like.device && x.process == like.process;
  });
  return it == r.bills.end() ? nullptr : &*it;
}

bool framework_pools_held(const graph_bill& b) {
  return b.framework_seen && (b.framework_retained_bytes != 0 || b.framework_peak_bytes != 0 ||
                              b.framework_warmup_bytes != 0 || b.framework_capture_bytes != 0 ||
                              b.framework_snapshot_bytes > 0);
}

std::uint64_t graph_memory_bytes(const graph_bill& b) {
  return (b.node_pool_seen ? b.node_pool_retained_bytes : 0) + (b.framework_seen ? b.framework_retained_bytes : 0) +
         b.library_bytes + (b.exec_state_measured ? b.exec_state_bytes : 0);
}

std::uint64_t graph_memory_peaks_bytes(const graph_bill& b) {
  return (b.node_pool_seen ? std::max(b.node_pool_high_bytes, b.node_pool_retained_bytes) : 0) +
         (b.framework_seen ? std::max(b.framework_peak_bytes, b.framework_retained_bytes) : 0) + b.library_bytes +
         (b.exec_state_measured ? b.exec_state_bytes + b.exec_state_released_bytes : 0);
}

}  // namespace gmem::profiler
