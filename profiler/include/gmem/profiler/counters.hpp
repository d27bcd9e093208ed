#pragma once
// The four cudaGraphMemAttr counters of a device, trimming, and a sampler that keeps a
// timeline of samples marked with the phase they belong to.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

/// Reads used / reserved, current / high of `device`'s graph memory. Throws cuda_error.
[[nodiscard]] counters read_counters(int device);

/// Resets the used and reserved high watermarks of `device` to `value`. CUDA accepts only 0:
/// any other value throws usage_error before the call. Throws cuda_error.
void reset_high_watermarks(int device, std::uint64_t value = 0);

struct trim_result {
  std::uint64_t reserved_before = 0;
  std::uint64_t reserved_after = 0;
  double host_us = 0;  ///< time inside cudaDeviceGraphMemTrim
};

/// Synchronizes `device`, then trims its graph memory pool (cudaDeviceGraphMemTrim),
/// recording reserved memory before and after. Throws cuda_error.
trim_result trim(int device);

/// One reading of the counters.
struct sample {
  double t_us = 0;  ///< since the sampler was made
  std::string phase;
  counters values;
};

/// The background sampling interval gmem uses by default. Measured on an H100 (driver 580):
/// each sample reads four attributes, and at 1 ms a loop of 2 us graph launches slowed by 0.1%
/// to 8% from run to run; at this interval it stays under 1% (profiler_test.cu measures it).
inline constexpr std::chrono::milliseconds default_sampling_interval{10};

/// Keeps a timeline of counter samples. `mark` samples at phase boundaries; a background
/// thread can also sample at an interval (it reads the counters only: no synchronization).
class sampler {
 public:
  /// A sampler of `device`; takes no sample yet.
  explicit sampler(int device);
  /// Stops the background thread.
  ~sampler();
  sampler(const sampler&) = delete;
  sampler& operator=(const sampler&) = delete;

  /// Enters `phase` and takes a sample now. Throws cuda_error.
  void mark(const std::string& phase);
  /// Starts sampling every `interval` in a background thread (errors there end the thread
  /// and are reported by stop_background). Throws usage_error if already running.
  void start_background(std::chrono::microseconds interval = default_sampling_interval);
  /// Stops the background thread; throws cuda_error if it stopped on an error.
  void stop_background();
  /// A copy of the samples so far, in time order.
  [[nodiscard]] std::vector<sample> timeline() const;

 private:
  void take(const std::string& phase);

  int device_;
  std::chrono::steady_clock::time_point start_;
  mutable std::mutex mutex_;
  std::vector<sample> samples_;
  std::string phase_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::string thread_error_;
};

}  // namespace gmem::profiler
