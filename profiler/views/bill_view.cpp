#include "views/bill_view.hpp"

#include "gmem/profiler/size_text.hpp"
#include "report/processes.hpp"
#include "views/text_layout.hpp"

namespace gmem::profiler {

namespace {

// Each line within the terminal's width: a kind's words continue under its figures (column 27),
// the heading's under itself.
std::vector<std::string> wrapped(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const std::string& line : lines) {
    const std::size_t lead = line.find_first_not_of(' ');
    append_lines(out, wrap(line.substr(lead), std::string(lead, ' '), std::string(lead ? 27 : 4, ' ')));
  }
  return out;
}

}  // namespace

std::vector<std::string> bill_lines(const graph_bill& b) {
  std::vector<std::string> out;
  std::string head = "what CUDA graphs cost device " + std::to_string(b.device);
  if (!b.process.empty()) head += " of process " + b.process;
  out.push_back(head + " (at " + b.end + "):");
  if (b.node_pool_seen) {
    out.push_back("  graph memory-node pool   " + size_text(b.node_pool_retained_bytes) + " retained, " +
                  size_text(b.node_pool_high_bytes) + " at its high watermark");
  }
  if (framework_pools_held(b)) {
    std::string line = "  framework graph pools    " + size_text(b.framework_retained_bytes) + " retained";
    if (b.framework_snapshot_bytes >= 0) {
      line += " (the framework's own figure: " + size_text(static_cast<std::uint64_t>(b.framework_snapshot_bytes)) + ")";
    }
    line += "; taken by ";
    line += b.framework_named ? "warm-up runs " + size_text(b.framework_warmup_bytes) + ", captures " : "captures ";
    line += size_text(b.framework_capture_bytes) + ", at most " + size_text(b.framework_peak_bytes) + " at once";
    if (!b.framework_named) line += " (warm-ups unseen: the Python companion names them)";
    if (b.framework_checked_captures != 0) {
      const std::string n = plural(b.framework_checked_captures, "capture", "captures");
      line += b.framework_differing_captures == 0
                  ? "; equal to the framework's figure after each of " + n
                  : "; differs from the framework's figure after " + std::to_string(b.framework_differing_captures) +
                        " of " + n + " (show --all lists them)";
    }
    out.push_back(line);
  }
  if (b.library_allocations + b.library_streams != 0) {
    std::string line = "  libraries at capture     " + size_text(b.library_bytes);
    std::string by;
    for (const library_taker& t : b.library_takers) {
      by += by.empty() ? ": " : ", ";
      by += t.library + " " + size_text(t.bytes);
      std::string what;
      if (t.allocations) what = plural(t.allocations, "allocation", "allocations");
      if (t.streams) what += (what.empty() ? "" : " and ") + plural(t.streams, "stream", "streams") + " made in a capture";
      by += " (" + what + ")";
    }
    out.push_back(line + by +
                  "; taken by warm-up runs and captures outside the framework's pools, alive at the end");
  }
  if (b.exec_state_measured) {
    std::string line = "  executable-graph state   " + size_text(b.exec_state_bytes) + " for " +
                       std::to_string(b.exec_state_instantiations) + " instantiation(s) and upload(s), outside every pool";
    if (b.exec_state_unmeasured) line += "; " + std::to_string(b.exec_state_unmeasured) + " more not measured (another thread's call overlapped)";
    if (b.exec_state_destroys != 0) {
      line += "; " + plural(b.exec_state_destroys, "destroy", "destroys") + " of executable graphs gave back " +
              size_text(b.exec_state_released_bytes);
    }
    if (b.exec_state_destroys_unmeasured != 0) {
      line += "; " + plural(b.exec_state_destroys_unmeasured, "destroy", "destroys") + " not measured (overlapped)";
    }
    out.push_back(line);
  }
  if (b.node_pool_seen || framework_pools_held(b) || b.library_allocations + b.library_streams != 0 || b.exec_state_measured) {
    const std::uint64_t end = graph_memory_bytes(b), peaks = graph_memory_peaks_bytes(b);
    out.push_back("  graph memory in all      " + size_text(end) + " at the end" +
                  (peaks > end ? "; " + size_text(peaks) + " with each kind at its peak (at most what they took at once)"
                               : " and at each kind's peak"));
  }
  if (b.own_apart) {
    out.push_back("  gmem's own               " + size_text(b.own_bytes) +
                  " (the recording makes no context, module, stream or allocation)");
  } else if (b.own_hook == "cupti") {
    out.push_back("  gmem's own               not told apart: CUPTI's own device memory shares the driver's "
                  "pieces with the executable-graph state, which may be that much off (the default hook takes none)");
  }
  if (b.process_measured) {
    out.push_back("  not graph memory         " + signed_size_text(b.not_graph_bytes) +
                  " (the program's other allocations: weights, activations, libraries' workspaces)");
    out.push_back("  the process's change     " + signed_size_text(b.process_delta_bytes) +
                  " (cuMemGetInfo, from before its first allocation)");
  }
  return wrapped(out);
}

}  // namespace gmem::profiler
