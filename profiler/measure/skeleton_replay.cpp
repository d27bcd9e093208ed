#include "gmem/profiler/skeleton_replay.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gmem/error.hpp"
#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/critical_path.hpp"
#include "gmem/profiler/diagnostics.hpp"
#include "measure/skeleton_build.hpp"
#include "gmem/profiler/size_text.hpp"

namespace gmem::profiler {
namespace {

using detail::build;
using detail::built_graph;
using detail::context_of;

// A replay's setting: the device selected, its pool trimmed, the high watermarks reset, what
// was reserved before, and a stream of its own.
struct replay_session {
  std::uint64_t before = 0;
  cudaStream_t stream = nullptr;
  replay_session(int device, const std::string& ctx) {
    GMEM_CUDA_TRY_CTX(cudaSetDevice(device), ctx);
    (void)trim(device);
    before = read_counters(device).reserved_current;
    reset_high_watermarks(device);
    GMEM_CUDA_TRY_CTX(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), ctx);
  }
  replay_session(const replay_session&) = delete;
  replay_session& operator=(const replay_session&) = delete;
  ~replay_session() {
    if (stream) (void)cudaStreamDestroy(stream);
  }
};


std::uint64_t above(std::uint64_t value, std::uint64_t before) { return value > before ? value - before : 0; }

}  // namespace

replay_result replay(const skeleton& s, int device, const replay_options& options) {
  validate(s);
  const std::string ctx = context_of(s);
  replay_session st(device, ctx);
  const std::uint64_t before = st.before;
  built_graph b = build(s, options.auto_free_on_launch ? cudaGraphInstantiateFlagAutoFreeOnLaunch : 0);
  replay_result r;
  r.distinct_addresses = b.distinct_addresses;
  const auto t0 = std::chrono::steady_clock::now();
  GMEM_CUDA_TRY_CTX(cudaGraphLaunch(b.exec, st.stream), ctx);
  GMEM_CUDA_TRY_CTX(cudaStreamSynchronize(st.stream), ctx);
  r.first_launch_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (int i = 1; i < options.launches; ++i) GMEM_CUDA_TRY_CTX(cudaGraphLaunch(b.exec, st.stream), ctx);
  GMEM_CUDA_TRY_CTX(cudaStreamSynchronize(st.stream), ctx);
  const counters after = read_counters(device);
  r.reserved_bytes = above(after.reserved_high, before);
  r.used_bytes = after.used_high;
  r.unfreed_allocations = b.unfreed.size();
  b.finish(ctx);
  GMEM_CUDA_TRY_CTX(cudaDeviceSynchronize(), ctx);
  r.reserved_after_destroy = above(read_counters(device).reserved_current, before);
  r.reserved_after_trim = above(trim(device).reserved_after, before);
  return r;
}

std::uint64_t replay_in_one_stream(const std::vector<skeleton>& graphs, int device) {
  for (const skeleton& s : graphs) validate(s);
  const std::string ctx = "replaying " + std::to_string(graphs.size()) + " graphs in one stream";
  replay_session st(device, ctx);
  std::vector<built_graph> built;
  built.reserve(graphs.size());
  for (const skeleton& s : graphs) built.push_back(build(s, 0));
  for (std::size_t i = 0; i < built.size(); ++i) {
    GMEM_CUDA_TRY_CTX(cudaGraphLaunch(built[i].exec, st.stream), context_of(graphs[i]));
  }
  GMEM_CUDA_TRY_CTX(cudaStreamSynchronize(st.stream), ctx);
  const std::uint64_t reserved = above(read_counters(device).reserved_high, st.before);
  for (std::size_t i = 0; i < built.size(); ++i) built[i].finish(context_of(graphs[i]));
  GMEM_CUDA_TRY_CTX(cudaDeviceSynchronize(), ctx);
  (void)trim(device);
  return reserved;
}

measured_advice measure_one_stream(const std::vector<skeleton>& graphs,
                                   const std::vector<std::string>& streams,
                                   std::uint64_t reserved_as_launched, std::uint64_t granularity,
                                   int device) {
  measured_advice m;
  m.kind = "one_stream";
  std::string names;
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    names += (i ? ", '" : "'") + graphs[i].name + "'" + (i < streams.size() ? " (" + streams[i] + ")" : "");
  }
  m.where = "launch graphs " + names + " into one stream, in this order, or make each launch's "
            "stream wait on an event recorded after the previous launch (cudaEventRecord, "
            "cudaStreamWaitEvent): the driver maps a graph's memory at launch and shares it "
            "only with launches ordered before it";
  m.predicted_bytes = 0;
  for (const skeleton& s : graphs) m.predicted_bytes = std::max(m.predicted_bytes, predict_reuse(s, granularity).rounded_bytes);
  m.measured_bytes = replay_in_one_stream(graphs, device);
  m.saving_bytes = above(reserved_as_launched, m.measured_bytes);
  return m;
}

advice_report measure_advice(const skeleton& s, const graph_analysis& a, std::uint64_t granularity,
                             std::uint64_t min_saving, int device, bool untrimmed,
                             const advice_pricing* pricing) {
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
    m.saving_bytes = above(out.baseline_bytes, m.measured_bytes);
    m.added_dependencies = c.added_edges.size();
    if (pricing && !c.added_edges.empty()) {
      m.predicted_launch_us = critical_path_us(pricing->flat, pricing->duration_us, c.added_edges);
      m.predicted_price_us = *m.predicted_launch_us - pricing->critical_path_us;
    }
    return m;
  };
  const std::uint64_t enough = std::max<std::uint64_t>(min_saving, 1);
  const auto keep = [&](measured_advice m) {
    (m.saving_bytes >= enough ? out.advice : out.tried).push_back(std::move(m));
  };
  // The plan first: the least footprint an ordering reaches, measured as a whole.
  if (const std::optional<plan_result> plan = plan_changes(s, granularity)) keep(measured(plan->change));
  for (const candidate_change& c : candidate_changes(s, a, granularity)) {
    measured_advice m = measured(c);
    if (c.kind == "combined") {
      out.combined = m;
      out.combined_reaches_order_free_bound = m.measured_bytes <= out.bounds.order_free_bytes;
    } else {
      keep(std::move(m));
    }
  }
  if (base.unfreed_allocations > 0) {
    // AutoFreeOnLaunch: the graph relaunched without freeing what it leaves allocated.
    measured_advice m;
    m.kind = "auto_free_on_launch";
    m.where = "instantiate graph '" + s.name + "' with cudaGraphInstantiateFlagAutoFreeOnLaunch "
              "instead of freeing what it leaves allocated before each relaunch";
    m.predicted_bytes = out.bounds.as_created_bytes;  // the skeleton as it is
    m.measured_bytes = replay(s, device, {true, 2}).reserved_bytes;
    m.saving_bytes = above(out.baseline_bytes, m.measured_bytes);
    keep(std::move(m));
  }
  const std::uint64_t held = above(base.reserved_after_destroy, base.reserved_after_trim);
  if (untrimmed && held >= enough) {
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
  o << "graph '" << r.graph << "': reserved " << size_text(r.baseline_bytes)
    << " replayed; order-free bound " << size_text(r.bounds.order_free_bytes)
    << ", creation-order bound " << size_text(r.bounds.creation_order_bytes) << "; binding: "
    << r.bounds.binding << "\n";
  if (r.advice.empty()) o << "  no change measured to save memory\n";
  for (const measured_advice& m : r.advice) {
    o << "  [" << m.kind << "] saves " << size_text(m.saving_bytes) << " measured (reserved "
      << size_text(m.measured_bytes) << " after the change; predicted "
      << size_text(m.predicted_bytes) << "): " << m.where << "\n";
  }
  for (const measured_advice& m : r.tried) {
    o << "  tried, saves less than a granule: [" << m.kind << "] reserved "
      << size_text(m.measured_bytes) << "\n";
  }
  o << "  all changes together: reserved " << size_text(r.combined.measured_bytes)
    << (r.combined_reaches_order_free_bound ? " (reaches the order-free bound)" : " (above the order-free bound)")
    << ": " << r.combined.where << "\n";
  return o.str();
}

}  // namespace gmem::profiler
