#include "gmem/profiler/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmem/error.hpp"
#include "gmem/usage_error.hpp"
#include "measure/nvtx_range.hpp"
#include "gmem/profiler/statistics.hpp"

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
  return last.back() - last.front() <= spread * median_of_sorted(last);
}

std::vector<launch_cost> measure_chains(const std::vector<chain_plan>& chains, int warmups, int reps,
                                       const settling& settle) {
  struct series {
    std::vector<double> host, wall, ref_host, ref_wall;
    std::size_t warmups = 0;
    bool done = false;
  };
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<std::string> phases;
  std::vector<series> all;
  std::vector<std::vector<std::size_t>> at(chains.size());  // per chain and step: its series, or none
  std::string name;
  for (std::size_t k = 0; k < chains.size(); ++k) {
    for (const chain_plan::step& st : chains[k].steps) {
      std::size_t i = none;
      if (!st.phase.empty()) {
        i = static_cast<std::size_t>(std::find(phases.begin(), phases.end(), st.phase) - phases.begin());
        if (std::find(at[k].begin(), at[k].end(), i) != at[k].end()) {
          throw usage_error("measuring phase '" + st.phase + "': it is named twice in one chain of samples");
        }
        if (i == phases.size()) {
          phases.push_back(st.phase);
          all.emplace_back();
          name += (name.empty() ? "" : " + ") + st.phase;
        }
        all[i].warmups += static_cast<std::size_t>(std::max(warmups, 0));
        all[i].done = reps < 1;
      }
      at[k].push_back(i);
    }
  }
  const nvtx_range range(name);
  // Without room for the reference's 4 bytes (a device filled by the caller's program), the
  // phases are measured as before, without a reference: the check then judges their times as
  // measured. cudaMalloc's out-of-memory error is not sticky; it is cleared.
  std::optional<reference_launch> reference;
  try {
    reference.emplace();
  } catch (const cuda_error&) {
    (void)cudaGetLastError();
  }
  const auto round = [&](std::size_t k, bool recorded) {
    const chain_plan& c = chains[k];
    if (c.reset) c.reset();
    std::vector<std::pair<std::size_t, timed>> got;
    for (std::size_t i = 0; i < c.steps.size(); ++i) {
      const timed t = c.steps[i].sample();  // every step runs: the next one starts where it ends
      if (recorded && at[k][i] != none && !all[at[k][i]].done) got.emplace_back(at[k][i], t);
    }
    if (c.cleanup) c.cleanup();
    const timed r = reference ? reference->sample() : timed{};
    for (const auto& [i, t] : got) {
      series& s = all[i];
      s.host.push_back(t.host_us);
      s.wall.push_back(t.wall_us);
      if (reference) {
        s.ref_host.push_back(r.host_us);
        s.ref_wall.push_back(r.wall_us);
      }
      // A cold sample re-instantiates and maps the graph (12 ms and 2 GiB for 1000 allocations
      // on an H100): once its times agree, more of them say nothing new.
      s.done = s.host.size() >= static_cast<std::size_t>(reps) ||
               (settle.min_reps > 0 && settled(s.host, settle.min_reps, settle.spread) &&
                settled(s.wall, settle.min_reps, settle.spread));
    }
  };
  for (int w = 0; w < warmups; ++w) {
    for (std::size_t k = 0; k < chains.size(); ++k) round(k, false);
  }
  const auto wanted = [&](std::size_t k) {
    return std::any_of(at[k].begin(), at[k].end(), [&](std::size_t i) { return i != none && !all[i].done; });
  };
  // In turn, skipping chains whose phases are done; every recorded round records a sample of a
  // phase not done, and a phase is done at `reps` samples: this ends.
  for (std::size_t next = 0;;) {
    std::size_t k = 0;
    while (k < chains.size() && !wanted((next + k) % chains.size())) ++k;
    if (k == chains.size()) break;
    round((next + k) % chains.size(), true);
    next = (next + k + 1) % chains.size();
  }
  std::vector<launch_cost> costs;
  for (std::size_t i = 0; i < phases.size(); ++i) {
    launch_cost c;
    c.phase = phases[i];
    c.warmups = all[i].warmups;
    c.host = summarize_samples(all[i].host);
    c.wall = summarize_samples(all[i].wall);
    c.reference_host = summarize_samples(all[i].ref_host);
    c.reference_wall = summarize_samples(all[i].ref_wall);
    costs.push_back(std::move(c));
  }
  return costs;
}

launch_cost measure_phase(const phase_plan& plan, int warmups, int reps, const settling& settle) {
  if (plan.phase.empty()) throw usage_error("measuring a phase with no name: name it (it is the report's phase)");
  return measure_chains({{plan.reset, {{plan.phase, plan.sample}}, plan.cleanup}}, warmups, reps, settle).front();
}

}  // namespace gmem::profiler
