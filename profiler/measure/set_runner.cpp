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

// One run of a set: the members' state between calls (which allocations each still holds,
// whether it was launched, uploaded or destroyed, the trims it has seen), the streams by label,
// and the recording made.
class set_run {
 public:
  set_run(std::vector<set_member>& members, int device) : members_(members), device_(device) {
    for (const set_member& m : members) {
      recorded_graph g;
      g.name = m.name;
      g.devices = {device};
      g.flags.auto_free_on_launch = m.auto_free;
      g.flags_known = true;
      rec_.graphs.push_back(std::move(g));
      live_.emplace_back(m.held.size(), false);
    }
    launched_.assign(members.size(), false);
    uploaded_.assign(members.size(), false);
    destroyed_.assign(members.size(), false);
    trims_seen_.assign(members.size(), 0);
  }

  // Step k of the sequence (numbered from 1 in errors).
  void step(const sequence_step& st, std::size_t k) {
    const std::string where = "step " + std::to_string(k + 1) + " (" + st.op + ")";
    const bool on_graph = st.graph >= 0 && static_cast<std::size_t>(st.graph) < members_.size();
    const std::size_t i = on_graph ? static_cast<std::size_t>(st.graph) : 0;
    if ((st.op == "launch" || st.op == "upload" || st.op == "free" || st.op == "destroy") &&
        (!on_graph || destroyed_[i])) {
      return;  // a call on a graph the set does not have any more
    }
    const std::string ctx = on_graph ? "graph '" + members_[i].name + "', " + where : where;
    if (st.op == "launch" || st.op == "upload") {
      launch_or_upload(st, i, ctx);
    } else if (st.op == "free") {
      free_held(st, i, ctx);
    } else if (st.op == "destroy") {
      GMEM_CUDA_TRY_CTX(cudaDeviceSynchronize(), ctx);
      members_[i].destroy();
      destroyed_[i] = true;
      rec_.sequence.push_back(st);
    } else if (st.op == "trim") {
      trim_pool(st);
    } else if (st.op == "sync") {
      GMEM_CUDA_TRY_CTX(cudaDeviceSynchronize(), ctx);
      rec_.sequence.push_back(st);
    } else if (st.op == "instantiate" && on_graph && destroyed_[i] && members_[i].instantiate) {
      members_[i].instantiate();  // a new executable graph: no mapping, never launched
      destroyed_[i] = launched_[i] = uploaded_[i] = false;
      trims_seen_[i] = trims_;
      rec_.sequence.push_back(st);
    } else if (st.op == "update" && on_graph && !destroyed_[i] && members_[i].instantiate &&
               std::none_of(live_[i].begin(), live_[i].end(), [](bool live) { return live; })) {
      // An update in place, replayed as a new executable graph of the skeleton: the updated one
      // has no mapping at its new graph's addresses, as a new one has none. Where an allocation
      // it left is live, the skeleton's addresses are taken: the step is skipped.
      GMEM_CUDA_TRY_CTX(cudaDeviceSynchronize(), ctx);
      members_[i].destroy();
      members_[i].instantiate();
      launched_[i] = uploaded_[i] = false;
      trims_seen_[i] = trims_;
      rec_.sequence.push_back(st);
    }
  }

  // Frees what the members still hold, once every call has run.
  void free_left() {
    GMEM_CUDA_TRY_CTX(cudaDeviceSynchronize(), "running a set of graphs");
    for (std::size_t i = 0; i < members_.size(); ++i) {
      for (std::size_t h = 0; h < members_[i].held.size(); ++h) {
        if (live_[i][h]) GMEM_CUDA_TRY_CTX(cudaFree(members_[i].held[h]), "freeing what graph '" + members_[i].name + "' left allocated");
        live_[i][h] = false;
      }
    }
  }

  // After a failed call: frees what is held and the streams, reporting nothing more.
  void release_after_failure() noexcept {
    (void)cudaDeviceSynchronize();
    for (std::size_t i = 0; i < members_.size(); ++i) {
      for (std::size_t h = 0; h < members_[i].held.size(); ++h) {
        if (live_[i][h]) (void)cudaFree(members_[i].held[h]);
      }
    }
    for (auto& [label, s] : streams_) (void)cudaStreamDestroy(s);
  }

  recording finish() {
    for (auto& [label, s] : streams_) GMEM_CUDA_TRY_CTX(cudaStreamDestroy(s), "running a set of graphs");
    return std::move(rec_);
  }

 private:
  cudaStream_t stream_of(const std::string& label) {
    auto it = streams_.find(label);
    if (it == streams_.end()) {
      cudaStream_t s = nullptr;
      GMEM_CUDA_TRY_CTX(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "running a set of graphs");
      it = streams_.emplace(label, s).first;
    }
    return it->second;
  }

  double us_since(clock_type::time_point t) const { return std::chrono::duration<double, std::micro>(t - t0_).count(); }

  // A launch step of count n runs min(n, 2) launches; each launch and upload is an event with
  // the counters around it, classified as the recorder classifies it.
  void launch_or_upload(const sequence_step& st, std::size_t i, const std::string& ctx) {
    const cudaStream_t s = stream_of(st.stream);
    const std::uint64_t repeat = st.op == "launch" ? std::min<std::uint64_t>(st.count, 2) : 1;
    for (std::uint64_t n = 0; n < repeat; ++n) {
      recorded_event e;
      e.kind = st.op;
      e.device = device_;
      e.stream = st.stream;
      e.before = read_counters(device_);
      const auto start = clock_type::now();
      if (st.op == "launch") {
        GMEM_CUDA_TRY_CTX(cudaGraphLaunch(members_[i].exec, s), ctx);
      } else {
        GMEM_CUDA_TRY_CTX(cudaGraphUpload(members_[i].exec, s), ctx);
      }
      e.host_us = us_since(clock_type::now()) - us_since(start);
      e.t_us = us_since(start);
      e.after = read_counters(device_);
      GMEM_CUDA_TRY_CTX(cudaStreamSynchronize(s), ctx);
      if (st.op == "launch") {
        const bool grew = e.after->reserved_current > e.before->reserved_current;
        if (!launched_[i]) {
          e.cls = uploaded_[i] ? "first_launch_after_upload" : "first_launch";
        } else if (grew || e.host_us >= remap_floor_us) {
          e.cls = trims_seen_[i] != trims_ ? "remap_after_trim" : "remap_contention";
        } else {
          e.cls = "steady";
        }
        launched_[i] = true;
        trims_seen_[i] = trims_;
        live_[i].assign(members_[i].held.size(), true);
        ++rec_.graphs[i].launches;
      } else {
        uploaded_[i] = true;
      }
      rec_.graphs[i].events.push_back(e);
      sequence_step done = st;
      done.count = 1;
      done.event = static_cast<std::int64_t>(rec_.graphs[i].events.size() - 1);
      rec_.sequence.push_back(done);
      rec_.timeline.push_back({e.t_us, device_, e.kind + (e.cls.empty() ? "" : ":" + e.cls), members_[i].name, *e.after});
    }
  }

  // Frees the member's held allocation `st.held` (all of them where -1) that it still holds.
  void free_held(const sequence_step& st, std::size_t i, const std::string& ctx) {
    const cudaStream_t s = stream_of(st.stream);
    for (std::size_t h = 0; h < members_[i].held.size(); ++h) {
      if (!live_[i][h] || (st.held >= 0 && static_cast<std::size_t>(st.held) != h)) continue;
      GMEM_CUDA_TRY_CTX(cudaFreeAsync(members_[i].held[h], s), ctx);
      live_[i][h] = false;
    }
    GMEM_CUDA_TRY_CTX(cudaStreamSynchronize(s), ctx);
    rec_.sequence.push_back(st);
  }

  void trim_pool(const sequence_step& st) {
    (void)trim(device_);
    ++trims_;
    recording::point p;
    p.t_us = us_since(clock_type::now());
    p.device = device_;
    p.event = "trim";
    p.values = read_counters(device_);
    rec_.timeline.push_back(p);
    sequence_step done = st;
    done.device = device_;
    rec_.sequence.push_back(done);
  }

  std::vector<set_member>& members_;
  const int device_;
  recording rec_;
  std::map<std::string, cudaStream_t> streams_;
  std::vector<std::vector<bool>> live_;
  std::vector<bool> launched_, uploaded_, destroyed_;
  std::uint64_t trims_ = 0;
  std::vector<std::uint64_t> trims_seen_;
  const clock_type::time_point t0_ = clock_type::now();
};

}  // namespace

recording run_set(std::vector<set_member>& members, const std::vector<sequence_step>& steps, int device) {
  GMEM_CUDA_TRY_CTX(cudaSetDevice(device), "running a set of graphs");
  (void)trim(device);
  reset_high_watermarks(device);
  set_run run(members, device);
  try {
    for (std::size_t k = 0; k < steps.size(); ++k) run.step(steps[k], k);
    run.free_left();
  } catch (...) {
    run.release_after_failure();
    throw;
  }
  return run.finish();
}

}  // namespace gmem::profiler::detail
