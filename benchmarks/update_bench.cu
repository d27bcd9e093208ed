// Updating an executable graph that holds memory nodes, against instantiating the new graph.
// Two graphs of the same shape (N chains alloc -> kernel -> free, the kernels' arguments
// differ); each iteration moves an executable graph to the other graph, by an update
// (graph_exec::update with gmem's checks, or the raw cudaGraphExecUpdate) or by destroying it
// and instantiating the other graph (gmem, raw). Manual time is the update's or the
// instantiation's host time (they do no GPU work); the counters give the graph memory pool's
// reserved and used bytes after it and after the first launch that follows, that launch's GPU
// and host time, and a second launch's GPU time (the steady cost, for comparison).

#include <cuda_runtime.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "benchmarks.hpp"
#include "gmem/profiler/counters.hpp"

namespace gmem::bench {
namespace {

__global__ void touch(int* p, int value) {
  if (threadIdx.x == 0) p[0] = value;
}

/// `allocs` independent chains alloc(bytes) -> touch(value + i) -> free.
graph make_update_graph(const std::string& name, std::uint64_t bytes, int allocs, int value) {
  graph g(name);
  for (int i = 0; i < allocs; ++i) {
    const graph_allocation a = g.add_alloc({bytes, ctx().device});
    const cudaGraphNode_t k =
        g.add_kernel({a.node}, touch, dim3(1), dim3(32), 0, static_cast<int*>(a.ptr), value + i);
    (void)g.add_free(a.ptr, {k});
  }
  return g;
}

enum class way { gmem_update, raw_update, gmem_instantiate, raw_instantiate };

const char* way_name(way w) {
  switch (w) {
    case way::gmem_update: return "gmem_update";
    case way::raw_update: return "raw_update";
    case way::gmem_instantiate: return "gmem_instantiate";
    case way::raw_instantiate: return "raw_instantiate";
  }
  return "unknown";
}

/// The executable graph a benchmark moves between the two graphs, through gmem or raw.
class subject {
 public:
  subject(way w, const graph& first) : way_(w) { make(first); }
  ~subject() { drop(); }
  subject(const subject&) = delete;
  subject& operator=(const subject&) = delete;

  /// What is not timed before the move: an instantiation first destroys the executable graph.
  void prepare() {
    if (way_ == way::gmem_instantiate || way_ == way::raw_instantiate) drop();
  }
  /// The timed move to `target`.
  void move_to(const graph& target) {
    switch (way_) {
      case way::gmem_update: exec_->update(target); break;
      case way::raw_update: {
        cudaGraphExecUpdateResultInfo info{};
        GMEM_CUDA_TRY_CTX(cudaGraphExecUpdate(raw_, target.get(), &info),
                          "the raw update (result " + std::to_string(info.result) + ")");
        break;
      }
      case way::gmem_instantiate:
      case way::raw_instantiate: make(target); break;
    }
  }
  void launch(cudaStream_t s) {
    if (exec_) {
      exec_->launch(s);
    } else {
      GMEM_CUDA_TRY(cudaGraphLaunch(raw_, s));
    }
  }

 private:
  void make(const graph& g) {
    if (way_ == way::gmem_update || way_ == way::gmem_instantiate) {
      exec_.emplace(g);
    } else {
      GMEM_CUDA_TRY(cudaGraphInstantiate(&raw_, g.get(), 0));
    }
  }
  void drop() noexcept {
    exec_.reset();
    if (raw_) GMEM_CUDA_TRY_NOTHROW(cudaGraphExecDestroy(raw_));
    raw_ = nullptr;
  }

  way way_;
  std::optional<graph_exec> exec_;
  cudaGraphExec_t raw_ = nullptr;
};

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

void run_update(benchmark::State& state, way w, std::uint64_t bytes, int allocs) {
  const int dev = ctx().device;
  (void)profiler::trim(dev);
  const graph a = make_update_graph("update A", bytes, allocs, 1000);
  const graph b = make_update_graph("update B", bytes, allocs, 2000);
  stream s;
  gpu_timer timer;
  std::vector<double> op_us, first_gpu_us, first_host_us, second_gpu_us, reserved_op, used_op,
      reserved_launch, used_launch;
  try {
    subject exec(w, a);
    exec.launch(s);  // a launched executable graph, its memory mapped: the state an update meets
    s.synchronize();
    const graph* targets[2] = {&b, &a};
    int next = 0;
    for (auto _ : state) {
      const graph& target = *targets[next];
      next ^= 1;
      exec.prepare();
      const double op = host_seconds([&] { exec.move_to(target); });
      const profiler::counters after_op = profiler::read_counters(dev);
      const gpu_timer::result first = timer.time(s, [&] { exec.launch(s); });
      const profiler::counters after_launch = profiler::read_counters(dev);
      const gpu_timer::result second = timer.time(s, [&] { exec.launch(s); });
      state.SetIterationTime(op);
      op_us.push_back(1e6 * op);
      first_gpu_us.push_back(1e6 * first.gpu_s);
      first_host_us.push_back(1e6 * first.host_s);
      second_gpu_us.push_back(1e6 * second.gpu_s);
      reserved_op.push_back(static_cast<double>(after_op.reserved_current));
      used_op.push_back(static_cast<double>(after_op.used_current));
      reserved_launch.push_back(static_cast<double>(after_launch.reserved_current));
      used_launch.push_back(static_cast<double>(after_launch.used_current));
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  s.synchronize();
  state.counters["op_host_us"] = median_of(op_us);
  state.counters["first_launch_gpu_us"] = median_of(first_gpu_us);
  state.counters["first_launch_host_us"] = median_of(first_host_us);
  state.counters["second_launch_gpu_us"] = median_of(second_gpu_us);
  state.counters["reserved_after_op_bytes"] = median_of(reserved_op);
  state.counters["used_after_op_bytes"] = median_of(used_op);
  state.counters["reserved_after_first_launch_bytes"] = median_of(reserved_launch);
  state.counters["used_after_first_launch_bytes"] = median_of(used_launch);
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["allocs"] = allocs;
  (void)profiler::trim(dev);
}

}  // namespace

void register_update_benchmarks(const std::vector<std::pair<std::uint64_t, int>>& shapes) {
  const context& c = ctx();
  for (const auto& [bytes, allocs] : shapes) {
    for (const way w :
         {way::gmem_update, way::raw_update, way::gmem_instantiate, way::raw_instantiate}) {
      const std::string name = std::string("update/") + way_name(w) +
                               "/bytes:" + std::to_string(bytes) +
                               "/allocs:" + std::to_string(allocs);
      auto* bm = benchmark::RegisterBenchmark(
          name.c_str(), [w, bytes = bytes, allocs = allocs](benchmark::State& st) {
            run_update(st, w, bytes, allocs);
          });
      bm->UseManualTime()->Unit(benchmark::kMicrosecond);
      bm->Iterations(c.quick ? 10 : 20)->Repetitions(c.quick ? 2 : 5);
      bm->ReportAggregatesOnly(true);
    }
  }
}

}  // namespace gmem::bench
