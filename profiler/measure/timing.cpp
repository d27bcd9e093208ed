#include "gmem/profiler/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>

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

reference_launch::reference_launch() {
  try {
    GMEM_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    GMEM_CUDA_TRY(cudaMalloc(&buffer_, sizeof(std::uint32_t)));
    GMEM_CUDA_TRY(cudaGraphCreate(&graph_, 0));
    cudaMemsetParams p{};
    p.dst = buffer_;
    p.value = 0;
    p.elementSize = sizeof(std::uint32_t);
    p.width = 1;
    p.height = 1;
    cudaGraphNode_t node = nullptr;
    GMEM_CUDA_TRY(cudaGraphAddMemsetNode(&node, graph_, nullptr, 0, &p));
    GMEM_CUDA_TRY(cudaGraphInstantiate(&exec_, graph_, 0));
    (void)sample();  // the first launch uploads the graph
  } catch (...) {
    release();
    throw;
  }
}

reference_launch::~reference_launch() { release(); }

void reference_launch::release() noexcept {
  if (exec_) (void)cudaGraphExecDestroy(exec_);
  if (graph_) (void)cudaGraphDestroy(graph_);
  if (buffer_) (void)cudaFree(buffer_);
  if (stream_) (void)cudaStreamDestroy(stream_);
  exec_ = nullptr;
  graph_ = nullptr;
  buffer_ = nullptr;
  stream_ = nullptr;
}

timed reference_launch::sample() const {
  // The fastest of three: the first launch after a phase's cleanup (a trim, an executable graph
  // of 8 GiB destroyed) can wait for the driver's deferred work, 4 to 10 times the usual on an
  // H100 (reports/check-quality/), which is not the process's speed.
  timed best;
  for (int i = 0; i < 3; ++i) {
    const timed t = time_call([this] { GMEM_CUDA_TRY(cudaGraphLaunch(exec_, stream_)); }, stream_);
    if (i == 0 || t.host_us < best.host_us) best.host_us = t.host_us;
    if (i == 0 || t.wall_us < best.wall_us) best.wall_us = t.wall_us;
  }
  return best;
}

bool settled(const std::vector<double>& samples, int n, double spread) {
  if (n <= 0 || samples.size() < static_cast<std::size_t>(n)) return false;
  std::vector<double> last(samples.end() - n, samples.end());
  std::sort(last.begin(), last.end());
  const double median = n % 2 ? last[n / 2] : 0.5 * (last[n / 2 - 1] + last[n / 2]);
  return last.back() - last.front() <= spread * median;
}

launch_cost measure_phase(const phase_plan& plan, int warmups, int reps, const settling& settle) {
  const nvtx_range range(plan.phase);
  // Without room for the reference's 4 bytes (a device filled by the caller's program), the
  // phase is measured as before, without a reference: the check then judges its times as
  // measured. cudaMalloc's out-of-memory error is not sticky; it is cleared.
  std::optional<reference_launch> reference;
  try {
    reference.emplace();
  } catch (const cuda_error&) {
    (void)cudaGetLastError();
  }
  std::vector<double> host, wall, ref_host, ref_wall;
  for (int i = 0; i < warmups + reps; ++i) {
    if (plan.reset) plan.reset();
    const timed t = plan.sample();
    if (plan.cleanup) plan.cleanup();
    const timed r = reference ? reference->sample() : timed{};
    if (i >= warmups) {
      host.push_back(t.host_us);
      wall.push_back(t.wall_us);
      if (reference) {
        ref_host.push_back(r.host_us);
        ref_wall.push_back(r.wall_us);
      }
      // A cold sample re-instantiates and maps the graph (12 ms and 2 GiB for 1000 allocations
      // on an H100): once its times agree, more of them say nothing new.
      if (settle.min_reps > 0 && settled(host, settle.min_reps, settle.spread) &&
          settled(wall, settle.min_reps, settle.spread)) {
        break;
      }
    }
  }
  launch_cost c;
  c.phase = plan.phase;
  c.warmups = static_cast<std::size_t>(warmups);
  c.host = summarize_samples(host);
  c.wall = summarize_samples(wall);
  c.reference_host = summarize_samples(ref_host);
  c.reference_wall = summarize_samples(ref_wall);
  return c;
}

}  // namespace gmem::profiler
