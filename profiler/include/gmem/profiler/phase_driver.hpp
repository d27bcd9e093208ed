#pragma once
// The launch phases of one graph, each as what makes a sample of it what its name says: an
// untimed reset, the timed API call and the stream its work goes into, an untimed cleanup.
// profile_graph times them into reports (host and wall time); gmem_bench times the same steps
// with CUDA events. One place decides what "cold", "after a trim" or "contended" means.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gmem::profiler {

/// The launch-cost phases, by their names in reports.
namespace phase {
inline constexpr const char* instantiate = "instantiate";
inline constexpr const char* upload = "upload";
inline constexpr const char* first_launch_after_upload = "first_launch_after_upload";
inline constexpr const char* first_launch_no_upload = "first_launch_no_upload";
inline constexpr const char* steady_launch = "steady_launch";
inline constexpr const char* launch_after_stream_switch = "launch_after_stream_switch";
inline constexpr const char* upload_then_launch_other_stream = "upload_then_launch_other_stream";
inline constexpr const char* launch_after_trim = "launch_after_trim";
inline constexpr const char* launch_with_unfreed_contention = "launch_with_unfreed_contention";
}  // namespace phase

/// Every phase, in the order reports list them (profile_graph samples the cold ones first,
/// from shared resets: phase_driver::cold_chains).
[[nodiscard]] const std::vector<std::string>& all_phases();

/// Throws usage_error naming the valid phases if `phases` holds an unknown one.
void check_phases(const std::vector<std::string>& phases);

/// One phase of one graph, ready to sample: reset(), then time call() (its work goes into
/// `stream`), then cleanup(). reset and cleanup may be empty.
struct phase_step {
  std::function<void()> reset;
  std::function<void()> call;
  cudaStream_t stream = nullptr;
  std::function<void()> cleanup;
};

/// Cold phases sampled from one reset: the reset destroys the executable graph and
/// trims the pool, and each step starts where the one before ended (instantiated, then
/// uploaded, then launched). A step with no phase runs untimed in the report (a later step
/// needs it). What each sample measures is what its phase's own step measures.
struct phase_chain {
  struct step {
    std::string phase;  ///< empty: runs, not recorded
    std::function<void()> call;
    cudaStream_t stream = nullptr;
  };
  std::function<void()> reset;
  std::vector<step> steps;
  std::function<void()> cleanup;
};

/// Drives the executable graphs of one graph through the phases. It instantiates its own (the
/// graph itself is not changed or destroyed), on streams of its own, on the current device.
/// Allocations a launch leaves unfreed are freed untimed before the next launch, unless
/// AutoFreeOnLaunch frees them. Not copyable or movable: the steps refer to it.
class phase_driver {
 public:
  struct options {
    bool auto_free_on_launch = false;
    /// What one launch leaves unfreed (from the graph's analysis).
    std::vector<void*> unfreed;
    /// Bytes the other graph holds in launch_with_unfreed_contention: at least the graph's
    /// reservation, so that the relaunch must remap.
    std::uint64_t contention_bytes = 0;
  };

  /// Throws usage_error if `g` is null.
  phase_driver(cudaGraph_t g, std::string name, int device, options opts);
  ~phase_driver();
  phase_driver(const phase_driver&) = delete;
  phase_driver& operator=(const phase_driver&) = delete;

  /// The steps of `phase` (valid while the driver lives). Throws usage_error for an unknown
  /// phase.
  [[nodiscard]] phase_step step(const std::string& phase);

  /// Whether `phase` starts from a fresh executable graph over a trimmed pool: instantiate,
  /// upload, first_launch_after_upload, first_launch_no_upload, upload_then_launch_other_stream.
  [[nodiscard]] static bool is_cold(const std::string& phase);
  /// The chains that sample the cold phases of `phases` (the others are ignored), each cold
  /// phase in at least one: one instantiation feeds the instantiate sample and a launch's, one
  /// upload the upload sample and a launch's, so the five cold phases take three resets where
  /// they took five. Empty where `phases` has no cold phase. Valid while the driver lives.
  [[nodiscard]] std::vector<phase_chain> cold_chains(const std::vector<std::string>& phases);

  /// Destroys the executable graph, trims the pool, instantiates and launches once, and waits:
  /// the launch then holds the graph's footprint. Throws cuda_error.
  void launch_cold();
  /// Frees what the last launch left unfreed (untimed) and waits.
  void settle();
  /// Waits for the device, frees, and destroys the executable graph and the contention graph.
  void finish();

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace gmem::profiler
