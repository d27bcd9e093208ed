#include "gmem/profiler/profile.hpp"

#include <algorithm>
#include <memory>
#include <utility>

#include "gmem/capability.hpp"
#include "gmem/error.hpp"
#include "gmem/handles.hpp"
#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/environment.hpp"
#include "gmem/profiler/graph_reader.hpp"
#include "gmem/profiler/timing.hpp"

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

}  // namespace

scenario_result profile_graph(cudaGraph_t g, const std::string& name,
                              const profile_options& options) {
  const std::vector<std::string> phases = options.phases.empty() ? all_phases() : options.phases;
  check_phases(phases);
  if (options.reps < 1 || options.warmups < 0) {
    throw usage_error("profiling graph '" + name + "': reps must be at least 1 and warmups at "
                      "least 0");
  }
  const int dev = options.device;
  require_graph_mem_nodes(dev);
  device_guard on(dev);
  const std::uint64_t granularity =
      options.granularity ? options.granularity : measure_granularity(dev).bytes;

  scenario_result r;
  r.name = name;
  const graph_model model = read_graph(g, name);
  const graph_analysis a = analyse(model, granularity);
  if (a.foreign_frees > 0) {
    throw usage_error("profiling graph '" + name + "': it frees " +
                      std::to_string(a.foreign_frees) +
                      " allocation(s) another graph made, so it cannot be launched again and "
                      "again on its own; profile the graphs together (gmemprof run's "
                      "outside_free_graph scenario shows how) or the allocating graph alone");
  }
  std::vector<void*> unfreed;
  for (std::size_t i : a.unfreed) {
    unfreed.push_back(reinterpret_cast<void*>(a.allocations[i].address));
  }

  stream s, other;
  exec_driver exec(g, name, options.auto_free_on_launch, unfreed);
  auto record = [&](const std::string& p) {
    r.counters_after_phase.push_back({p, read_counters(dev)});
  };

  // Footprint: one launch from a trimmed pool with reset watermarks.
  exec.destroy();
  (void)trim(dev);
  reset_high_watermarks(dev);
  exec.instantiate();
  exec.launch(s);
  GMEM_CUDA_TRY(cudaStreamSynchronize(s));
  record("footprint");
  const counters footprint = r.counters_after_phase.back().values;
  exec.settle(s);

  const auto launch_in = [&](cudaStream_t st) {
    return time_call([&] { exec.launch(st); }, st);
  };
  const auto cold = [&] {
    exec.destroy();
    (void)trim(dev);
    exec.instantiate();
  };
  const auto settle_all = [&] {
    GMEM_CUDA_TRY(cudaDeviceSynchronize());
    exec.destroy();
  };
  // A cold, uploaded executable graph (the upload finished).
  const auto cold_uploaded = [&] {
    cold();
    exec.upload(s);
    GMEM_CUDA_TRY(cudaStreamSynchronize(s));
  };
  // One finished, settled launch into `s`: the graph is mapped and its memory idle.
  const auto launched_once = [&] {
    exec.ensure();
    exec.settle(s);
    exec.launch(s);
    GMEM_CUDA_TRY(cudaStreamSynchronize(s));
    exec.settle(s);
  };
  std::unique_ptr<blocker> hog;

  for (const std::string& p : phases) {
    phase_plan plan;
    plan.phase = p;
    if (p == phase::instantiate) {
      plan.reset = [&] {
        exec.destroy();
        (void)trim(dev);
      };
      plan.sample = [&] { return time_call([&] { exec.instantiate(); }, s); };
    } else if (p == phase::upload) {
      plan.reset = cold;
      plan.sample = [&] { return time_call([&] { exec.upload(s); }, s); };
    } else if (p == phase::first_launch_after_upload) {
      plan.reset = cold_uploaded;
      plan.sample = [&] { return launch_in(s); };
      plan.cleanup = settle_all;
    } else if (p == phase::first_launch_no_upload) {
      plan.reset = cold;
      plan.sample = [&] { return launch_in(s); };
      plan.cleanup = settle_all;
    } else if (p == phase::steady_launch) {
      // With AutoFreeOnLaunch the steady state includes the automatic free of the previous
      // launch's allocations; without it they are freed untimed first.
      plan.reset = [&] {
        exec.ensure();
        if (!options.auto_free_on_launch) exec.settle(s);
      };
      plan.sample = [&] { return launch_in(s); };
    } else if (p == phase::launch_after_stream_switch) {
      // Each sample launches into the stream the previous launch did not use.
      plan.reset = [&] {
        exec.ensure();
        exec.settle(other);
        launched_once();
      };
      plan.sample = [&] { return launch_in(other); };
    } else if (p == phase::upload_then_launch_other_stream) {
      plan.reset = cold_uploaded;
      plan.sample = [&] { return launch_in(other); };
      plan.cleanup = settle_all;
    } else if (p == phase::launch_after_trim) {
      plan.reset = [&] {
        launched_once();
        (void)trim(dev);
      };
      plan.sample = [&] { return launch_in(s); };
    } else if (p == phase::launch_with_unfreed_contention) {
      // The guide's case: the graph relaunches while another graph's unfreed allocation holds
      // the physical memory the graph is mapped to. A blocker graph that merely allocates gets
      // fresh memory (measured: an idle graph keeps its mapping), so the blocker first owns the
      // memory, frees it, the graph launches onto it, and the blocker allocates it back.
      if (!hog) {
        hog = std::make_unique<blocker>(
            std::max<std::uint64_t>(a.lower_bound_rounded_bytes, granularity), dev);
      }
      plan.reset = [&] {
        exec.ensure();
        exec.settle(s);
        (void)trim(dev);
        hog->hold(s);
        hog->release(s);
        exec.launch(s);
        GMEM_CUDA_TRY(cudaStreamSynchronize(s));
        exec.settle(s);
        hog->hold(s);
      };
      plan.sample = [&] { return launch_in(s); };
      plan.cleanup = [&] {
        exec.settle(s);
        hog->release(s);
      };
    }
    r.launch_costs.push_back(measure_phase(plan, options.warmups, options.reps));
    exec.settle(s);
    record(p);
  }

  settle_all();
  hog.reset();
  GMEM_CUDA_TRY(cudaDeviceSynchronize());
  runtime_facts facts;
  facts.graph_name = name;
  facts.auto_free_on_launch = options.auto_free_on_launch;
  facts.launches = {{name, "stream 1"}};
  facts.graphs_destroyed = true;  // its executable graphs are gone; the graph stays the caller's
  facts.reserved_after_destroy = read_counters(dev).reserved_current;
  facts.reserved_high = footprint.reserved_high;
  facts.excess_ratio_threshold = options.excess_ratio_threshold;
  record("destroyed");
  (void)trim(dev);
  record("trimmed");

  r.analysis = summarize(a, footprint.used_high, footprint.reserved_high);
  r.diagnostics = diagnose(flatten(model), a, facts);
  return r;
}

scenario_result profile_graph(const graph& g, const profile_options& options) {
  if (!g.get() || !g.shared_ledger()) {
    throw usage_error("profiling an empty gmem::graph (moved from, or moved into a parent)");
  }
  if (g.ledger().live_execs() > 0 && g.ledger().has_memory_nodes()) {
    throw usage_error("profiling graph '" + g.name() +
                      "': it has a live executable graph, and a graph with memory nodes may "
                      "have only one; destroy it first (the profiler instantiates its own)");
  }
  return profile_graph(g.get(), g.name(), options);
}

report make_report(std::vector<scenario_result> scenarios, int device,
                   const std::string& command_line) {
  report rep;
  rep.env = collect_environment(device, command_line);
  rep.scenarios = std::move(scenarios);
  return rep;
}

}  // namespace gmem::profiler
