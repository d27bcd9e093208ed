#include "measure/set_runner.hpp"

#include <algorithm>
#include <chrono>
#include <map>

#include "gmem/error.hpp"
#include "gmem/profiler/counters.hpp"

namespace gmem::profiler::detail {
namespace {

using clock_type = std::chrono::steady_clock;

// A relaunch this slow mapped memory even when the pool did not grow (measured: remaps took 19
// to 240 us on an H100, steady launches at most 14 us; record mode uses the same floor).
constexpr double remap_floor_us = 50;

}  // namespace

recording run_set(std::vector<set_member>& members, const std::vector<sequence_step>& steps, int device) {
  GMEM_CUDA_TRY_CTX(cudaSetDevice(device), "running a set of graphs");
  (void)trim(device);
  reset_high_watermarks(device);
  recording rec;
  for (const set_member& m : members) {
    recorded_graph g;
    g.name = m.name;
    g.devices = {device};
    g.flags.auto_free_on_launch = m.auto_free;
    g.flags_known = true;
    rec.graphs.push_back(std::move(g));
  }
  std::map<std::string, cudaStream_t> streams;
  const auto stream_of = [&](const std::string& label) {
    auto it = streams.find(label);
    if (it == streams.end()) {
      cudaStream_t s = nullptr;
      GMEM_CUDA_TRY_CTX(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "running a set of graphs");
      it = streams.emplace(label, s).first;
    }
    return it->second;
  };
  std::vector<std::vector<bool>> live(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) live[i].assign(members[i].held.size(), false);
  std::vector<bool> launched(members.size(), false), uploaded(members.size(), false),
      destroyed(members.size(), false);
  std::uint64_t trims = 0;
  std::vector<std::uint64_t> trims_seen(members.size(), 0);
  const auto t0 = clock_type::now();
  const auto us_since = [&](clock_type::time_point t) {
    return std::chrono::duration<double, std::micro>(t - t0).count();
  };
  try {
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const sequence_step& st = steps[k];
      const std::string where = "step " + std::to_string(k + 1) + " (" + st.op + ")";
      const bool on_graph = st.graph >= 0 && static_cast<std::size_t>(st.graph) < members.size();
      const std::size_t i = on_graph ? static_cast<std::size_t>(st.graph) : 0;
      if ((st.op == "launch" || st.op == "upload" || st.op == "free" || st.op == "destroy") &&
          (!on_graph || destroyed[i])) {
        continue;  // a call on a graph the set does not have any more
      }
      const std::string ctx = on_graph ? "graph '" + members[i].name + "', " + where : where;
      if (st.op == "launch" || st.op == "upload") {
        const cudaStream_t s = stream_of(st.stream);
        const std::uint64_t repeat = st.op == "launch" ? std::min<std::uint64_t>(st.count, 2) : 1;
        for (std::uint64_t n = 0; n < repeat; ++n) {
          recorded_event e;
          e.kind = st.op;
          e.device = device;
          e.stream = st.stream;
          e.before = read_counters(device);
          const auto start = clock_type::now();
          if (st.op == "launch") {
            GMEM_CUDA_TRY_CTX(cudaGraphLaunch(members[i].exec, s), ctx);
          } else {
            GMEM_CUDA_TRY_CTX(cudaGraphUpload(members[i].exec, s), ctx);
          }
          e.host_us = us_since(clock_type::now()) - us_since(start);
          e.t_us = us_since(start);
          e.after = read_counters(device);
          GMEM_CUDA_TRY_CTX(cudaStreamSynchronize(s), ctx);
          if (st.op == "launch") {
            const bool grew = e.after->reserved_current > e.before->reserved_current;
            if (!launched[i]) {
              e.cls = uploaded[i] ? "first_launch_after_upload" : "first_launch";
            } else if (grew || e.host_us >= remap_floor_us) {
              e.cls = trims_seen[i] != trims ? "remap_after_trim" : "remap_contention";
            } else {
              e.cls = "steady";
            }
            launched[i] = true;
            trims_seen[i] = trims;
            live[i].assign(members[i].held.size(), true);
            ++rec.graphs[i].launches;
          } else {
            uploaded[i] = true;
          }
          rec.graphs[i].events.push_back(e);
          sequence_step done = st;
          done.count = 1;
          done.event = static_cast<std::int64_t>(rec.graphs[i].events.size() - 1);
          rec.sequence.push_back(done);
          rec.timeline.push_back({e.t_us, device, e.kind + (e.cls.empty() ? "" : ":" + e.cls), members[i].name, *e.after});
        }
      } else if (st.op == "free") {
        const cudaStream_t s = stream_of(st.stream);
        for (std::size_t h = 0; h < members[i].held.size(); ++h) {
          if (!live[i][h] || (st.held >= 0 && static_cast<std::size_t>(st.held) != h)) continue;
          GMEM_CUDA_TRY_CTX(cudaFreeAsync(members[i].held[h], s), ctx);
          live[i][h] = false;
        }
        GMEM_CUDA_TRY_CTX(cudaStreamSynchronize(s), ctx);
        rec.sequence.push_back(st);
      } else if (st.op == "destroy") {
        GMEM_CUDA_TRY_CTX(cudaDeviceSynchronize(), ctx);
        members[i].destroy();
        destroyed[i] = true;
        rec.sequence.push_back(st);
      } else if (st.op == "trim") {
        const trim_result t = trim(device);
        ++trims;
        recording::point p;
        p.t_us = us_since(clock_type::now());
        p.device = device;
        p.event = "trim";
        p.values = read_counters(device);
        rec.timeline.push_back(p);
        (void)t;
        sequence_step done = st;
        done.device = device;
        rec.sequence.push_back(done);
      } else if (st.op == "sync") {
        GMEM_CUDA_TRY_CTX(cudaDeviceSynchronize(), ctx);
        rec.sequence.push_back(st);
      } else if (st.op == "instantiate" && on_graph && destroyed[i] && members[i].instantiate) {
        members[i].instantiate();  // a new executable graph: no mapping, never launched
        destroyed[i] = launched[i] = uploaded[i] = false;
        trims_seen[i] = trims;
        rec.sequence.push_back(st);
      }
    }
    GMEM_CUDA_TRY_CTX(cudaDeviceSynchronize(), "running a set of graphs");
    for (std::size_t i = 0; i < members.size(); ++i) {
      for (std::size_t h = 0; h < members[i].held.size(); ++h) {
        if (live[i][h]) GMEM_CUDA_TRY_CTX(cudaFree(members[i].held[h]), "freeing what graph '" + members[i].name + "' left allocated");
        live[i][h] = false;
      }
    }
  } catch (...) {
    (void)cudaDeviceSynchronize();
    for (std::size_t i = 0; i < members.size(); ++i) {
      for (std::size_t h = 0; h < members[i].held.size(); ++h) {
        if (live[i][h]) (void)cudaFree(members[i].held[h]);
      }
    }
    for (auto& [label, s] : streams) (void)cudaStreamDestroy(s);
    throw;
  }
  for (auto& [label, s] : streams) GMEM_CUDA_TRY_CTX(cudaStreamDestroy(s), "running a set of graphs");
  return rec;
}

}  // namespace gmem::profiler::detail
