// How a launch is classified from the graph's history and the counters around the call.
#include "record/recorder.hpp"

namespace gmem::record {

const char* to_string(launch_class c) noexcept {
  switch (c) {
    case launch_class::first_launch: return "first_launch";
    case launch_class::first_launch_after_upload: return "first_launch_after_upload";
    case launch_class::steady: return "steady";
    case launch_class::remap_after_trim: return "remap_after_trim";
    case launch_class::remap_after_stream_switch: return "remap_after_stream_switch";
    case launch_class::remap_contention: return "remap_contention";
    case launch_class::slow_launch: return "slow_launch";
  }
  return "steady";
}

launch_class classify(const launch_history& h, const std::optional<counters>& before,
                      const std::optional<counters>& after, bool slow, bool concurrent) noexcept {
  if (!h.launched_before) {
    return h.uploaded ? launch_class::first_launch_after_upload : launch_class::first_launch;
  }
  // Growth another thread's call may have caused is no evidence of this call's mapping.
  const bool grew = !concurrent && before && after && after->reserved_current > before->reserved_current;
  if (!h.graph_memory) return slow ? launch_class::slow_launch : launch_class::steady;
  if (!grew && !slow) return launch_class::steady;
  if (h.trimmed_since_last) return launch_class::remap_after_trim;
  if (h.stream_changed) return launch_class::remap_after_stream_switch;
  // The pool grew inside the call: it mapped memory. Slow without growth proves nothing: a
  // launch waits for room in a full launch queue (tools/completion_cases.sh, C10), and the pool
  // model decides whether another graph's allocation had taken its memory.
  return grew ? launch_class::remap_contention : launch_class::slow_launch;
}

}  // namespace gmem::record
