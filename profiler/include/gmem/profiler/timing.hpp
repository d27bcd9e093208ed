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

/// A fixed graph of one 4-byte memset node on its own stream, owned by the profiler: its launch,
/// timed beside every sample of a phase, measures how fast this process launches at that moment.
/// The hosts the GPUs are lent on run a whole process's API calls (instantiate, upload, launch)
/// at 1 or about 1.6 times the fastest for seconds at a time (reports/check-quality/), and
/// `gmemprof check` compares times relative to it where it explains the trials' spread.
class reference_launch {
 public:
  /// Builds and instantiates the graph on the current device and launches it once. Throws
  /// cuda_error.
  reference_launch();
  ~reference_launch();
  reference_launch(const reference_launch&) = delete;
  reference_launch& operator=(const reference_launch&) = delete;

  /// Three launches: the least host time of cudaGraphLaunch, and the least wall time until its
  /// stream was done.
  [[nodiscard]] timed sample() const;

 private:
  void release() noexcept;

  cudaStream_t stream_ = nullptr;
  void* buffer_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

/// When a phase's samples have settled: once `min_reps` samples are recorded, the phase stops
/// as soon as its last `min_reps` host times and wall times each lie within `spread` of their
/// median ((max - min) <= spread x median); `reps` stays the most it takes.
struct settling {
  int min_reps = 0;  ///< 0: every phase takes `reps` samples
  double spread = 0.10;
};

/// Runs `warmups` unrecorded and up to `reps` recorded samples of `plan` (fewer where `settle`
/// says they settled), each followed (after its cleanup) by a reference_launch sample, recorded
/// as the launch cost's `reference_host` and `reference_wall` (none, count 0, where the
/// reference could not be built: no device memory left for its 4 bytes). Throws what the plan's
/// steps throw.
[[nodiscard]] launch_cost measure_phase(const phase_plan& plan, int warmups, int reps, const settling& settle = {});

/// Samples of several phases taken in turn from one reset: a cold executable graph is
/// instantiated, uploaded and launched once, and the instantiation, the upload and the launch
/// are each one phase's sample, as if each had had its own reset. `reset` runs untimed before
/// the first step, `cleanup` after the last. A step with no phase runs (a later step needs it)
/// and is not recorded.
struct chain_plan {
  struct step {
    std::string phase;  ///< empty: runs, not recorded
    std::function<timed()> sample;
  };
  std::function<void()> reset;
  std::vector<step> steps;
  std::function<void()> cleanup;
};

/// Runs `chains` in turn: `warmups` unrecorded rounds of each, then rounds of the chains whose
/// phases still take samples, until each phase has `reps` samples or has settled (`settle`, as
/// measure_phase). A phase stops recording once it is done while its chain runs on for the
/// others. One reference_launch sample is timed after each round's cleanup and recorded beside
/// each phase sampled in that round. Returns one launch cost per phase, in the order the chains
/// first name them. Throws usage_error for a phase named twice in one chain; throws what the
/// steps throw.
[[nodiscard]] std::vector<launch_cost> measure_chains(const std::vector<chain_plan>& chains, int warmups, int reps,
                                                      const settling& settle = {});

/// Whether the last `n` of `samples` lie within `spread` of their median (false for fewer).
[[nodiscard]] bool settled(const std::vector<double>& samples, int n, double spread);

}  // namespace gmem::profiler
