#include "gmem/profiler/phase_driver.hpp"

#include <algorithm>
#include <utility>

#include "gmem/error.hpp"
#include "gmem/handles.hpp"
#include "gmem/usage_error.hpp"
#include "gmem/profiler/counters.hpp"

namespace gmem::profiler {

const std::vector<std::string>& all_phases() {
  static const std::vector<std::string> phases{phase::instantiate,
                                               phase::upload,
                                               phase::first_launch_after_upload,
                                               phase::first_launch_no_upload,
                                               phase::steady_launch,
                                               phase::launch_after_stream_switch,
                                               phase::upload_then_launch_other_stream,
                                               phase::launch_after_trim,
                                               phase::launch_with_unfreed_contention};
  return phases;
}

void check_phases(const std::vector<std::string>& phases) {
  for (const auto& p : phases) {
    const auto& all = all_phases();
    if (std::find(all.begin(), all.end(), p) == all.end()) {
      std::string valid;
      for (const auto& a : all) valid += (valid.empty() ? "" : ", ") + a;
      throw usage_error("unknown profiling phase '" + p + "'; valid phases: " + valid);
    }
  }
}

namespace {

/// One executable graph of the graph under test, and whether allocations it left unfreed are
/// live. Frees them (untimed) so that the next launch is allowed and samples stay comparable.
class exec_driver {
 public:
  exec_driver(cudaGraph_t g, std::string name, bool auto_free, std::vector<void*> unfreed)
      : graph_(g), name_(std::move(name)), auto_free_(auto_free), unfreed_(std::move(unfreed)) {}
  ~exec_driver() {
    if (live_) {
      live_ = false;
      (void)cudaDeviceSynchronize();
      for (void* p : unfreed_) GMEM_CUDA_TRY_NOTHROW(cudaFreeAsync(p, nullptr));
    }
    if (exec_) GMEM_CUDA_TRY_NOTHROW(cudaGraphExecDestroy(exec_));
  }
  exec_driver(const exec_driver&) = delete;
  exec_driver& operator=(const exec_driver&) = delete;

  void instantiate(cudaStream_t upload_stream = nullptr, bool upload = false) {
    destroy();
    cudaGraphInstantiateParams p{};
    if (auto_free_) p.flags |= cudaGraphInstantiateFlagAutoFreeOnLaunch;
    if (upload) {
      p.flags |= cudaGraphInstantiateFlagUpload;
      p.uploadStream = upload_stream;
    }
    GMEM_CUDA_TRY_CTX(cudaGraphInstantiateWithParams(&exec_, graph_, &p),
                      "instantiating graph '" + name_ + "' for profiling");
  }
  void ensure() {
    if (!exec_) instantiate();
  }
  void upload(cudaStream_t s) {
    GMEM_CUDA_TRY_CTX(cudaGraphUpload(exec_, s), "uploading graph '" + name_ + "'");
  }
  /// Launches; the caller settles first (untimed) unless AutoFreeOnLaunch frees for it.
  void launch(cudaStream_t s) {
    if (live_ && !auto_free_) {
      throw usage_error("profiling graph '" + name_ +
                        "': relaunch before its unfreed allocations were freed");
    }
    GMEM_CUDA_TRY_CTX(cudaGraphLaunch(exec_, s), "launching graph '" + name_ + "'");
    live_ = !unfreed_.empty();
  }
  /// Frees what the last launch left unfreed (after the work in `s`), and waits.
  void settle(cudaStream_t s) {
    if (!live_) return;
    live_ = false;  // first: a failed free must not be retried (that would free twice)
    for (void* p : unfreed_) GMEM_CUDA_TRY(cudaFreeAsync(p, s));
    GMEM_CUDA_TRY(cudaStreamSynchronize(s));
  }
  void destroy() {
    if (live_) {
      GMEM_CUDA_TRY(cudaDeviceSynchronize());
      settle(nullptr);
    }
    if (exec_) {
      const cudaGraphExec_t e = std::exchange(exec_, nullptr);
      GMEM_CUDA_TRY(cudaGraphExecDestroy(e));
    }
  }

 private:
  cudaGraph_t graph_;
  std::string name_;
  bool auto_free_;
  std::vector<void*> unfreed_;
  cudaGraphExec_t exec_ = nullptr;
  bool live_ = false;
};

/// A graph with one unfreed allocation of `bytes` on `device`: launched between two launches of
/// the graph under test, it holds physical memory that graph may have used.
class blocker {
 public:
  blocker(std::size_t bytes, int device) {
    GMEM_CUDA_TRY(cudaGraphCreate(&graph_, 0));
    cudaMemAllocNodeParams p{};
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.poolProps.location.id = device;
    p.bytesize = std::max<std::size_t>(bytes, 1);
    cudaGraphNode_t node = nullptr;
    try {
      GMEM_CUDA_TRY_CTX(cudaGraphAddMemAllocNode(&node, graph_, nullptr, 0, &p),
                        "building the contention graph");
      ptr_ = p.dptr;
      GMEM_CUDA_TRY(cudaGraphInstantiate(&exec_, graph_, 0));
    } catch (...) {
      GMEM_CUDA_TRY_NOTHROW(cudaGraphDestroy(graph_));
      throw;
    }
  }
  ~blocker() {
    if (held_) {  // a sample threw before cleanup: do not leave the memory mapped
      (void)cudaDeviceSynchronize();
      GMEM_CUDA_TRY_NOTHROW(cudaFreeAsync(ptr_, nullptr));
      (void)cudaDeviceSynchronize();
    }
    if (exec_) GMEM_CUDA_TRY_NOTHROW(cudaGraphExecDestroy(exec_));
    if (graph_) GMEM_CUDA_TRY_NOTHROW(cudaGraphDestroy(graph_));
  }
  blocker(const blocker&) = delete;
  blocker& operator=(const blocker&) = delete;
  void hold(cudaStream_t s) {
    GMEM_CUDA_TRY(cudaGraphLaunch(exec_, s));
    held_ = true;
    GMEM_CUDA_TRY(cudaStreamSynchronize(s));
  }
  void release(cudaStream_t s) {
    held_ = false;
    GMEM_CUDA_TRY(cudaFreeAsync(ptr_, s));
    GMEM_CUDA_TRY(cudaStreamSynchronize(s));
  }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  void* ptr_ = nullptr;
  bool held_ = false;
};

}  // namespace

struct phase_driver::state {
  state(cudaGraph_t g, std::string name, int dev, options o)
      : device(dev),
        contention_bytes(o.contention_bytes),
        auto_free(o.auto_free_on_launch),
        exec(g, std::move(name), o.auto_free_on_launch, std::move(o.unfreed)) {}

  int device;
  std::uint64_t contention_bytes;
  bool auto_free;
  exec_driver exec;
  stream s, other;
  std::unique_ptr<blocker> hog;

  // The resets the phases share.
  void fresh() {  // no executable graph, the pool trimmed: where a cold sample starts
    exec.destroy();
    (void)trim(device);
  }
  void cold() {  // a fresh executable graph over a trimmed pool
    fresh();
    exec.instantiate();
  }
  void cold_uploaded() {  // the same, uploaded (the upload finished)
    cold();
    exec.upload(s);
    GMEM_CUDA_TRY(cudaStreamSynchronize(s));
  }
  void launched_once() {  // one finished, settled launch into s: mapped, its memory idle
    exec.ensure();
    exec.settle(s);
    exec.launch(s);
    GMEM_CUDA_TRY(cudaStreamSynchronize(s));
    exec.settle(s);
  }
  void settle_all() {
    GMEM_CUDA_TRY(cudaDeviceSynchronize());
    exec.destroy();
  }
};

phase_driver::phase_driver(cudaGraph_t g, std::string name, int device, options opts) {
  if (g == nullptr) {
    throw usage_error("driving the phases of graph '" + name + "': the graph is null");
  }
  s_ = std::make_unique<state>(g, std::move(name), device, std::move(opts));
}

phase_driver::~phase_driver() = default;

phase_step phase_driver::step(const std::string& p) {
  check_phases({p});
  state* st = s_.get();
  const auto launch_in = [st](cudaStream_t stream) {
    return [st, stream] { st->exec.launch(stream); };
  };
  const auto settle_all = [st] { st->settle_all(); };
  const auto cold = [st] { st->cold(); };
  const auto cold_uploaded = [st] { st->cold_uploaded(); };
  if (p == phase::instantiate) return {[st] { st->fresh(); }, [st] { st->exec.instantiate(); }, st->s, {}};
  if (p == phase::upload) return {cold, [st] { st->exec.upload(st->s); }, st->s, {}};
  if (p == phase::first_launch_after_upload) {
    return {cold_uploaded, launch_in(st->s), st->s, settle_all};
  }
  if (p == phase::first_launch_no_upload) return {cold, launch_in(st->s), st->s, settle_all};
  if (p == phase::steady_launch) {
    // With AutoFreeOnLaunch the steady state includes the automatic free of the previous
    // launch's allocations; without it they are freed untimed first.
    return {[st] {
              st->exec.ensure();
              if (!st->auto_free) st->exec.settle(st->s);
            },
            launch_in(st->s), st->s, {}};
  }
  if (p == phase::launch_after_stream_switch) {
    // Each sample launches into the stream the previous launch did not use.
    return {[st] {
              st->exec.ensure();
              st->exec.settle(st->other);
              st->launched_once();
            },
            launch_in(st->other), st->other, {}};
  }
  if (p == phase::upload_then_launch_other_stream) {
    return {cold_uploaded, launch_in(st->other), st->other, settle_all};
  }
  if (p == phase::launch_after_trim) {
    return {[st] {
              st->launched_once();
              (void)trim(st->device);
            },
            launch_in(st->s), st->s, {}};
  }
  // launch_with_unfreed_contention, the guide's case: the graph relaunches while another
  // graph's unfreed allocation holds the physical memory the graph is mapped to. A graph that
  // merely allocates gets fresh memory (measured: an idle graph keeps its mapping), so the
  // other graph first owns the memory, frees it, the graph launches onto it, and the other
  // graph allocates it back.
  if (!st->hog) st->hog = std::make_unique<blocker>(st->contention_bytes, st->device);
  return {[st] {
            st->exec.ensure();
            st->exec.settle(st->s);
            (void)trim(st->device);
            st->hog->hold(st->s);
            st->hog->release(st->s);
            st->exec.launch(st->s);
            GMEM_CUDA_TRY(cudaStreamSynchronize(st->s));
            st->exec.settle(st->s);
            st->hog->hold(st->s);
          },
          launch_in(st->s), st->s,
          [st] {
            st->exec.settle(st->s);
            st->hog->release(st->s);
          }};
}

bool phase_driver::is_cold(const std::string& p) {
  return p == phase::instantiate || p == phase::upload || p == phase::first_launch_after_upload ||
         p == phase::first_launch_no_upload || p == phase::upload_then_launch_other_stream;
}

std::vector<phase_chain> phase_driver::cold_chains(const std::vector<std::string>& phases) {
  check_phases(phases);
  const auto wanted = [&](const char* p) { return std::find(phases.begin(), phases.end(), p) != phases.end(); };
  const auto named = [&](const char* p) { return std::string(wanted(p) ? p : ""); };
  state* st = s_.get();
  const phase_chain::step instantiate{named(phase::instantiate), [st] { st->exec.instantiate(); }, st->s};
  const phase_chain::step upload{named(phase::upload), [st] { st->exec.upload(st->s); }, st->s};
  const auto launch_in = [st](const char* p, cudaStream_t stream) {
    return phase_chain::step{p, [st, stream] { st->exec.launch(stream); }, stream};
  };
  // The reset of the instantiate phase, and the cleanup of a first launch: as step() has them.
  const auto reset = [st] { st->fresh(); };
  const auto settle_all = [st] { st->settle_all(); };
  std::vector<phase_chain> chains;
  if (wanted(phase::first_launch_no_upload)) {
    chains.push_back({reset, {instantiate, launch_in(phase::first_launch_no_upload, st->s)}, settle_all});
  }
  if (wanted(phase::first_launch_after_upload)) {
    chains.push_back({reset, {instantiate, upload, launch_in(phase::first_launch_after_upload, st->s)}, settle_all});
  }
  if (wanted(phase::upload_then_launch_other_stream)) {
    chains.push_back(
        {reset, {instantiate, upload, launch_in(phase::upload_then_launch_other_stream, st->other)}, settle_all});
  }
  const auto sampled = [&](const char* p) {
    for (const phase_chain& c : chains) {
      for (const phase_chain::step& s : c.steps) {
        if (s.phase == p) return true;
      }
    }
    return false;
  };
  if (wanted(phase::upload) && !sampled(phase::upload)) chains.push_back({reset, {instantiate, upload}, {}});
  if (wanted(phase::instantiate) && !sampled(phase::instantiate)) chains.push_back({reset, {instantiate}, {}});
  return chains;
}

void phase_driver::launch_cold() {
  s_->cold();
  s_->exec.launch(s_->s);
  GMEM_CUDA_TRY(cudaStreamSynchronize(s_->s));
}

void phase_driver::settle() { s_->exec.settle(s_->s); }

void phase_driver::finish() {
  s_->settle_all();
  s_->hog.reset();
  GMEM_CUDA_TRY(cudaDeviceSynchronize());
}

}  // namespace gmem::profiler
