#include "gmem/profiler/skeleton_replay.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gmem/error.hpp"
#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/diagnostics.hpp"

namespace gmem::profiler {
namespace {

// Owns what one replay made, so that an error midway leaves nothing behind.
struct replay_objects {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaStream_t stream = nullptr;
  ~replay_objects() {
    if (exec) (void)cudaGraphExecDestroy(exec);
    if (graph) (void)cudaGraphDestroy(graph);
    if (stream) (void)cudaStreamDestroy(stream);
  }
};

}  // namespace

replay_result replay(const skeleton& s, int device) {
  validate(s);
  const std::string ctx = "replaying the skeleton of graph '" + s.name + "'";
  GMEM_CUDA_TRY_CTX(cudaSetDevice(device), ctx);
  (void)trim(device);
  const std::uint64_t before = read_counters(device).reserved_current;
  reset_high_watermarks(device);

  replay_objects o;
  GMEM_CUDA_TRY_CTX(cudaStreamCreateWithFlags(&o.stream, cudaStreamNonBlocking), ctx);
  GMEM_CUDA_TRY_CTX(cudaGraphCreate(&o.graph, 0), ctx);
  const std::size_t n = s.nodes.size();
  std::vector<cudaGraphNode_t> made(n, nullptr);
  std::vector<void*> address(n, nullptr);
  std::vector<bool> freed(n, false);
  std::vector<cudaGraphNode_t> deps;
  for (std::size_t v = 0; v < n; ++v) {
    const skeleton_node& node = s.nodes[v];
    deps.clear();
    for (std::size_t d : node.deps) deps.push_back(made[d]);
    const std::string at = ctx + ", creating node #" + std::to_string(v) +
                           (node.label.empty() ? std::string() : " (" + node.label + ")");
    if (node.kind == skeleton_kind::alloc) {
      cudaMemAllocNodeParams p{};
      p.poolProps.allocType = cudaMemAllocationTypePinned;
      p.poolProps.location.type = cudaMemLocationTypeDevice;
      p.poolProps.location.id = node.device;
      std::vector<cudaMemAccessDesc> access;
      for (int peer : node.peers) {
        cudaMemAccessDesc a{};
        a.location.type = cudaMemLocationTypeDevice;
        a.location.id = peer;
        a.flags = cudaMemAccessFlagsProtReadWrite;
        access.push_back(a);
      }
      p.accessDescs = access.empty() ? nullptr : access.data();
      p.accessDescCount = access.size();
      p.bytesize = node.bytes;
      GMEM_CUDA_TRY_CTX(cudaGraphAddMemAllocNode(&made[v], o.graph, deps.data(), deps.size(), &p), at);
      address[v] = p.dptr;
    } else if (node.kind == skeleton_kind::free) {
      GMEM_CUDA_TRY_CTX(cudaGraphAddMemFreeNode(&made[v], o.graph, deps.data(), deps.size(),
                                                address[node.frees]),
                        at);
      freed[node.frees] = true;
    } else {
      GMEM_CUDA_TRY_CTX(cudaGraphAddEmptyNode(&made[v], o.graph, deps.data(), deps.size()), at);
    }
  }
  for (const auto& [from, to] : s.late_edges) {
    GMEM_CUDA_TRY_CTX(cudaGraphAddDependencies(o.graph, &made[from], &made[to], nullptr, 1),
                      ctx + ", adding the late edge " + std::to_string(from) + " -> " + std::to_string(to));
  }
  replay_result r;
  std::set<void*> distinct;
  for (std::size_t v = 0; v < n; ++v) {
    if (s.nodes[v].kind == skeleton_kind::alloc) distinct.insert(address[v]);
  }
  r.distinct_addresses = distinct.size();
  GMEM_CUDA_TRY_CTX(cudaGraphInstantiateWithFlags(&o.exec, o.graph, 0), ctx);
  const auto t0 = std::chrono::steady_clock::now();
  GMEM_CUDA_TRY_CTX(cudaGraphLaunch(o.exec, o.stream), ctx);
  GMEM_CUDA_TRY_CTX(cudaStreamSynchronize(o.stream), ctx);
  r.first_launch_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const counters after = read_counters(device);
  r.reserved_bytes = after.reserved_high > before ? after.reserved_high - before : 0;
  r.used_bytes = after.used_high;
  for (std::size_t v = 0; v < n; ++v) {
    if (s.nodes[v].kind == skeleton_kind::alloc && !freed[v]) {
      GMEM_CUDA_TRY_CTX(cudaFree(address[v]), ctx + ", freeing what the graph left allocated");
    }
  }
  GMEM_CUDA_TRY_CTX(cudaGraphExecDestroy(o.exec), ctx);
  o.exec = nullptr;
  GMEM_CUDA_TRY_CTX(cudaGraphDestroy(o.graph), ctx);
  o.graph = nullptr;
  GMEM_CUDA_TRY_CTX(cudaDeviceSynchronize(), ctx);
  const std::uint64_t kept = read_counters(device).reserved_current;
  r.reserved_after_destroy = kept > before ? kept - before : 0;
  const trim_result t = trim(device);
  r.reserved_after_trim = t.reserved_after > before ? t.reserved_after - before : 0;
  return r;
}

advice_report measure_advice(const skeleton& s, const graph_analysis& a, std::uint64_t granularity,
                             std::uint64_t min_saving, int device, bool untrimmed) {
  advice_report out;
  out.graph = s.name;
  out.bounds = bounds_of(s, a, granularity);
  const replay_result base = replay(s, device);
  out.baseline_bytes = base.reserved_bytes;
  out.baseline_first_launch_ms = base.first_launch_ms;
  const auto measured = [&](const candidate_change& c) {
    measured_advice m;
    m.kind = c.kind;
    m.where = c.where;
    m.predicted_bytes = c.predicted_bytes;
    m.measured_bytes = replay(c.changed, device).reserved_bytes;
    m.saving_bytes = m.measured_bytes < out.baseline_bytes ? out.baseline_bytes - m.measured_bytes : 0;
    return m;
  };
  for (const candidate_change& c : candidate_changes(s, a, granularity)) {
    measured_advice m = measured(c);
    if (c.kind == "combined") {
      out.combined = m;
      out.combined_reaches_order_free_bound = m.measured_bytes <= out.bounds.order_free_bytes;
    } else if (m.saving_bytes >= std::max<std::uint64_t>(min_saving, 1)) {
      out.advice.push_back(std::move(m));
    }
  }
  const std::uint64_t held = base.reserved_after_destroy - std::min(base.reserved_after_destroy, base.reserved_after_trim);
  if (untrimmed && held >= std::max<std::uint64_t>(min_saving, 1)) {
    measured_advice m;
    m.kind = "trim";
    m.where = "after the last launch of graph '" + s.name + "' and cudaGraphExecDestroy, call "
              "cudaDeviceGraphMemTrim(" + std::to_string(device) + "): the driver keeps the "
              "reservation of a destroyed graph until then";
    m.predicted_bytes = 0;
    m.measured_bytes = base.reserved_after_trim;
    m.saving_bytes = held;
    out.advice.push_back(std::move(m));
  }
  std::stable_sort(out.advice.begin(), out.advice.end(),
                   [](const measured_advice& l, const measured_advice& r) { return l.saving_bytes > r.saving_bytes; });
  return out;
}

std::string describe(const advice_report& r) {
  std::ostringstream o;
  o << "graph '" << r.graph << "': reserved " << describe_bytes(r.baseline_bytes)
    << " replayed; order-free bound " << describe_bytes(r.bounds.order_free_bytes)
    << ", creation-order bound " << describe_bytes(r.bounds.creation_order_bytes) << "; binding: "
    << r.bounds.binding << "\n";
  if (r.advice.empty()) o << "  no change measured to save memory\n";
  for (const measured_advice& m : r.advice) {
    o << "  [" << m.kind << "] saves " << describe_bytes(m.saving_bytes) << " measured (reserved "
      << describe_bytes(m.measured_bytes) << " after the change; predicted "
      << describe_bytes(m.predicted_bytes) << "): " << m.where << "\n";
  }
  o << "  all changes together: reserved " << describe_bytes(r.combined.measured_bytes)
    << (r.combined_reaches_order_free_bound ? " (reaches the order-free bound)" : " (above the order-free bound)")
    << ": " << r.combined.where << "\n";
  return o.str();
}

}  // namespace gmem::profiler
