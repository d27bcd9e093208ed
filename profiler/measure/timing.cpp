#include "gmem/profiler/timing.hpp"

#include <chrono>

#include "gmem/error.hpp"
#include "measure/nvtx_range.hpp"

namespace gmem::profiler {

timed time_call(const std::function<void()>& api_call, cudaStream_t s) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  api_call();
  const auto t1 = clock::now();
  GMEM_CUDA_TRY(cudaStreamSynchronize(s));
  const auto t2 = clock::now();
  return {std::chrono::duration<double, std::micro>(t1 - t0).count(),
          std::chrono::duration<double, std::micro>(t2 - t0).count()};
}

launch_cost measure_phase(const phase_plan& plan, int warmups, int reps) {
  const nvtx_range range(plan.phase);
  std::vector<double> host, wall;
  for (int i = 0; i < warmups + reps; ++i) {
    if (plan.reset) plan.reset();
    const timed t = plan.sample();
    if (plan.cleanup) plan.cleanup();
    if (i >= warmups) {
      host.push_back(t.host_us);
      wall.push_back(t.wall_us);
    }
  }
  launch_cost c;
  c.phase = plan.phase;
  c.warmups = static_cast<std::size_t>(warmups);
  c.host = summarize_samples(host);
  c.wall = summarize_samples(wall);
  return c;
}

}  // namespace gmem::profiler
