#pragma once
// Timing of graph phases: host time inside an API call, and wall time from the call to the
// completion of the stream's work.

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

/// One timed sample, in microseconds.
struct timed {
  double host_us = 0;  ///< inside the API call
  double wall_us = 0;  ///< from the call to the end of cudaStreamSynchronize(s)
};

/// Times `api_call` (which enqueues work into `s`): host time of the call, and wall time until
/// `s` is synchronized. Throws cuda_error.
timed time_call(const std::function<void()>& api_call, cudaStream_t s);

/// How one phase is measured: `reset` runs untimed before every sample (warm-ups included) to
/// make a cold sample really cold; `sample` takes one measurement; `cleanup` runs untimed after.
struct phase_plan {
  std::string phase;
  std::function<void()> reset;
  std::function<timed()> sample;
  std::function<void()> cleanup;
};

/// Runs `warmups` unrecorded and `reps` recorded samples of `plan`. Throws what they throw.
[[nodiscard]] launch_cost measure_phase(const phase_plan& plan, int warmups, int reps);

}  // namespace gmem::profiler
