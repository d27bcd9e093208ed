// The bill: what CUDA graphs cost a process's device besides the graph memory pool, as the
// recorder sees it. The framework's graph pools: device memory the application's allocator took
// while a capture was active on the thread (and, named by the Python companion, in warm-up runs
// into a graph pool), less what it gave back; the executable graphs' own state, outside every
// pool (cuMemGetInfo around each instantiation and upload); the process's device memory from the
// first reading to the bill's end. docs/record.md, "The bill".
#include <algorithm>

#include "record/recorder.hpp"

namespace gmem::record {

std::string library_name(const std::string& object) {
  if (object.empty()) return "unknown";
  static const std::pair<const char*, const char*> known[] = {
      {"libnccl", "NCCL"},         {"librccl", "RCCL"},        {"libcublas", "cuBLAS"},    {"libcudnn", "cuDNN"},
      {"libcufft", "cuFFT"},       {"libcusparse", "cuSPARSE"}, {"libcusolver", "cuSOLVER"}, {"libcurand", "cuRAND"},
      {"libnvshmem", "NVSHMEM"},   {"libc10_cuda", "PyTorch"},  {"libtorch", "PyTorch"},    {"libtriton", "Triton"},
      {"libxla", "XLA"},           {"xla_extension", "XLA"},    {"libjax", "XLA"},          {"libcupy", "CuPy"},
      {"libnvinfer", "TensorRT"},  {"libpython", "Python"}};
  for (const auto& [prefix, name] : known) {
    if (object.rfind(prefix, 0) == 0) return name;
  }
  // "libfoo.so.1.2" -> "libfoo.so"; a module ("_C.cpython-311-x86_64-linux-gnu.so") as it is.
  const std::size_t so = object.find(".so.");
  return so == std::string::npos ? object : object.substr(0, so + 3);
}

std::size_t recorder::pool_of(const std::string& id, int device) {
  if (!id.empty()) {
    const auto it = pool_index_.find({id, device});
    if (it != pool_index_.end()) return it->second;
    pool_index_.emplace(std::make_pair(id, device), pools_.size());
  }
  pool_state p;
  p.id = id;
  p.device = device;
  pools_.push_back(std::move(p));
  return pools_.size() - 1;
}

void recorder::pool_took(std::size_t pool, std::uint64_t bytes, bool warmup) {
  pool_state& p = pools_[pool];
  (warmup ? p.warmup : p.capture) += bytes;
  p.held += bytes;
  ++alloc_seq_;
  if (p.held > p.peak) {
    p.peak = p.held;
    p.peak_seq = alloc_seq_;
  }
  device_costs& c = costs_[p.device];
  c.framework_held += bytes;
  if (c.framework_held > c.framework_peak) {
    c.framework_peak = c.framework_held;
    c.framework_peak_seq = alloc_seq_;
  }
}

void recorder::took_capture_memory(std::uint64_t handle, std::uint64_t bytes, std::size_t pool, bool warmup,
                                   bool address, std::uint64_t stream, const std::string& library) {
  pool_took(pool, bytes, warmup);
  capture_memory m;
  m.bytes = bytes;
  m.stream = stream;
  m.pool = pool;
  m.warmup = warmup;
  m.address = address;
  m.seq = alloc_seq_;
  m.library = library;
  capture_memory_[handle] = m;
}

void recorder::separate_library_memory(std::size_t only) {
  for (auto& [handle, m] : capture_memory_) {
    if (m.pool >= pools_.size() || !m.address || (only != no_pool && m.pool != only)) continue;
    pool_state& p = pools_[m.pool];
    // Judged only by a segment list read after it was taken (a later one may hold a new segment).
    if (!p.segments_known || m.seq > p.segments_seq ||
        std::binary_search(p.segments.begin(), p.segments.end(), handle)) {
      continue;
    }
    // Not a segment of the pool: the allocator did not make it. Alive now, it was alive at every
    // peak made after it was taken, so those peaks come down by its bytes.
    (m.warmup ? p.warmup : p.capture) -= std::min(m.warmup ? p.warmup : p.capture, m.bytes);
    p.held -= std::min(p.held, m.bytes);
    if (m.seq <= p.peak_seq) p.peak -= std::min(p.peak, m.bytes);
    p.peak = std::max(p.peak, p.held);
    device_costs& c = costs_[p.device];
    c.framework_held -= std::min(c.framework_held, m.bytes);
    if (m.seq <= c.framework_peak_seq) c.framework_peak -= std::min(c.framework_peak, m.bytes);
    c.framework_peak = std::max(c.framework_peak, c.framework_held);
    profiler::library_taker& t = c.takers[library_name(m.library)];
    t.bytes += m.bytes;
    ++t.allocations;
    if (m.record < graphs_.size()) {
      graph_record& g = graphs_[m.record];
      g.capture_bytes -= std::min(g.capture_bytes, m.bytes);
      if (!m.warmup) g.library_bytes += m.bytes;
    }
    m.pool = no_pool;
  }
}

void recorder::on_capture_pool_known(std::uint64_t graph, std::size_t took, const std::string& pool, int device) {
  if (pool.empty()) return;
  if (took >= pools_.size()) {
    // It took nothing: its pool is named all the same while the graph lives (a graph
    // instantiated in capture_end was counted, not recorded).
    const auto origin = graph_origin_.find(graph);
    if (origin != graph_origin_.end() && origin->second.pool >= pools_.size()) {
      origin->second.pool = pool_of(pool, device);
    }
    return;
  }
  // The pool the capture took memory into, named even once the graph is gone (PyTorch destroys
  // it in capture_end, once instantiated; the driver may give its handle to another graph), on
  // that pool's device.
  pool_state& from = pools_[took];
  if (from.merged) return;
  device = from.device;
  if (!from.id.empty()) return;  // named already
  const auto named = pool_index_.find({pool, device});
  if (named == pool_index_.end()) {
    from.id = pool;
    pool_index_.emplace(std::make_pair(pool, device), took);
    return;
  }
  // A pool another capture or warm-up named already (a shared pool): this capture's memory is
  // that pool's.
  const std::size_t k = took, into = named->second;
  pool_state& to = pools_[into];
  to.warmup += from.warmup;
  to.capture += from.capture;
  to.released += from.released;
  to.held += from.held;
  to.peak = std::max(to.peak, to.held);
  to.graphs.insert(to.graphs.end(), from.graphs.begin(), from.graphs.end());
  from = pool_state{};
  from.merged = true;
  for (auto& [handle, m] : capture_memory_) {
    if (m.pool == k) m.pool = into;
  }
  for (auto& [g, origin_of] : graph_origin_) {
    if (origin_of.pool == k) origin_of.pool = into;
  }
}

void recorder::on_warmup_alloc(const std::string& pool, int device, std::uint64_t handle, std::uint64_t bytes,
                               bool address, const std::string& library) {
  took_capture_memory(handle, bytes, pool_of(pool, device), true, address, 0, library);
}

void recorder::on_pool_snapshot(const std::string& pool, int device, std::uint64_t bytes,
                                const std::vector<std::uint64_t>* segments) {
  pool_state& p = pools_[pool_of(pool, device)];
  p.snapshot = static_cast<std::int64_t>(bytes);
  if (!segments) return;
  p.segments = *segments;
  std::sort(p.segments.begin(), p.segments.end());
  p.segments_known = true;
  p.segments_seq = alloc_seq_;
}

void recorder::on_pool_after_capture(std::uint64_t graph, std::size_t record, std::size_t took, const std::string& pool,
                                     int device, std::uint64_t bytes, std::vector<std::uint64_t> segments) {
  if (pool.empty()) return;
  // A pool that took memory is on its own device, whatever the word said.
  if (took < pools_.size()) device = pools_[took].device;
  on_capture_pool_known(graph, took, pool, device);
  const std::size_t k = pool_of(pool, device);
  pool_state& p = pools_[k];
  p.segments = std::move(segments);
  std::sort(p.segments.begin(), p.segments.end());
  p.segments_known = true;
  p.segments_seq = alloc_seq_;
  separate_library_memory(k);  // only this pool's list is new
  profiler::pool_check check;
  if (record < graphs_.size()) {
    graph_record& g = graphs_[record];
    check.graph = g.name;
    // Warm-up runs and the capture since the pool's previous capture: what this shape added.
    const std::uint64_t before = pools_[k].checks.empty() ? 0 : pools_[k].checks.back().framework_bytes;
    g.pool_added += static_cast<std::int64_t>(bytes) - static_cast<std::int64_t>(before);
    g.pool_added_known = true;
  }
  check.retained_bytes = pools_[k].held;
  check.framework_bytes = bytes;
  pools_[k].checks.push_back(std::move(check));
}

void recorder::on_exec_state(std::uint64_t exec, int device, std::optional<std::uint64_t> bytes) {
  device_costs& c = costs_[device];
  const auto it = execs_.find(exec);
  graph_record* g = it == execs_.end() ? nullptr : &graphs_[it->second];
  if (!bytes) {
    ++c.exec_unmeasured;
    if (g) g->exec_state_bytes = -1;
    return;
  }
  ++c.exec_measured;
  c.exec_bytes += *bytes;
  if (g && g->exec_state_bytes >= 0) g->exec_state_bytes += static_cast<std::int64_t>(*bytes);
}

bool recorder::exec_state_outstanding() const {
  return std::any_of(costs_.begin(), costs_.end(),
                     [](const auto& c) { return c.second.exec_bytes > c.second.exec_released; });
}

void recorder::on_exec_state_released(int device, std::optional<std::uint64_t> bytes) {
  device_costs& c = costs_[device];
  if (!bytes) {
    ++c.exec_destroys_unmeasured;
    return;
  }
  ++c.exec_destroys;
  c.exec_released += std::min(*bytes, c.exec_bytes - c.exec_released);
}

void recorder::on_memory_reading(int device, std::uint64_t used) {
  device_costs& c = costs_[device];
  if (!c.have_memory) c.first_used = used;
  c.have_memory = true;
  c.last_used = used;
}

void recorder::end_bill(const std::string& why, const std::map<int, counters>& counters) {
  separate_library_memory();
  bill_end e;
  e.why = why;
  e.node_pool = counters;
  e.pools = pools_;
  e.costs = costs_;
  end_ = std::move(e);
}

void recorder::bills(std::vector<profiler::graph_bill>& bills, std::vector<profiler::framework_pool>& pools,
                     const std::vector<profiler::recorded_pool>& node_pools) const {
  const std::vector<pool_state>& at_end = end_ ? end_->pools : pools_;
  const std::map<int, device_costs>& costs = end_ ? end_->costs : costs_;
  for (std::size_t k = 0; k < at_end.size(); ++k) {
    const pool_state& p = at_end[k];
    if (p.merged || pools_[k].merged) continue;
    profiler::framework_pool out;
    for (std::size_t gi : pools_[k].graphs) out.graphs.push_back(graphs_[gi].name);
    out.id = !p.id.empty() ? p.id : out.graphs.empty() ? "capture never instantiated" : "capture of '" + out.graphs.front() + "'";
    out.device = p.device;
    out.warmup_bytes = p.warmup;
    out.capture_bytes = p.capture;
    out.released_bytes = p.released;
    out.retained_bytes = p.held;
    out.peak_bytes = p.peak;
    out.snapshot_bytes = pools_[k].snapshot;
    out.after_captures = pools_[k].checks;
    pools.push_back(std::move(out));
  }
  std::map<int, bool> devices;
  for (const auto& [d, c] : costs) devices[d] = true;
  for (const auto& p : at_end) devices[p.device] = true;
  for (const auto& p : node_pools) devices[p.device] = true;
  for (const auto& entry : devices) {
    const int device = entry.first;  // a name, not a structured binding: the lambdas below capture it
    profiler::graph_bill b;
    b.device = device;
    b.end = end_ ? end_->why : "the end of the recording (exit)";
    for (const auto& p : node_pools) {
      if (p.device != device || !p.process.empty()) continue;
      b.node_pool_seen = p.high_bytes > 0 || std::any_of(graphs_.begin(), graphs_.end(), [&](const graph_record& g) {
                           return g.kind == "memory_nodes" && std::find(g.devices.begin(), g.devices.end(), device) != g.devices.end();
                         });
      b.node_pool_high_bytes = p.high_bytes;
      b.node_pool_retained_bytes = p.end_bytes;
    }
    if (end_) {
      const auto c = end_->node_pool.find(device);
      if (c != end_->node_pool.end()) b.node_pool_retained_bytes = c->second.reserved_current;
    }
    bool snapshots = true;
    std::int64_t snapshot = 0;
    for (std::size_t k = 0; k < at_end.size(); ++k) {
      const pool_state& p = at_end[k];
      if (p.device != device || p.merged || pools_[k].merged) continue;
      b.framework_seen = true;
      b.framework_named = b.framework_named || !p.id.empty();
      b.framework_warmup_bytes += p.warmup;
      b.framework_capture_bytes += p.capture;
      b.framework_retained_bytes += p.held;
      for (const profiler::pool_check& check : pools_[k].checks) {
        ++b.framework_checked_captures;
        if (check.retained_bytes != check.framework_bytes) ++b.framework_differing_captures;
      }
      if (pools_[k].snapshot < 0) {
        snapshots = false;
      } else {
        snapshot += pools_[k].snapshot;
      }
    }
    b.framework_snapshot_bytes = b.framework_seen && snapshots ? snapshot : -1;
    const auto c = costs.find(device);
    if (c != costs.end()) {
      b.framework_peak_bytes = c->second.framework_peak;
      for (const auto& [library, t] : c->second.takers) {
        b.library_takers.push_back(t);
        b.library_takers.back().library = library;
        b.library_bytes += t.bytes;
        b.library_allocations += t.allocations;
        b.library_streams += t.streams;
      }
      std::stable_sort(b.library_takers.begin(), b.library_takers.end(),
                       [](const profiler::library_taker& x, const profiler::library_taker& y) { return x.bytes > y.bytes; });
      b.exec_state_measured = c->second.exec_measured + c->second.exec_unmeasured > 0;
      b.exec_state_bytes = c->second.exec_bytes - c->second.exec_released;
      b.exec_state_released_bytes = c->second.exec_released;
      b.exec_state_destroys = c->second.exec_destroys;
      b.exec_state_destroys_unmeasured = c->second.exec_destroys_unmeasured;
      b.exec_state_instantiations = c->second.exec_measured;
      b.exec_state_unmeasured = c->second.exec_unmeasured;
      if (c->second.have_memory) {
        b.process_measured = true;
        b.process_delta_bytes = static_cast<std::int64_t>(c->second.last_used) - static_cast<std::int64_t>(c->second.first_used);
        b.not_graph_bytes = b.process_delta_bytes - static_cast<std::int64_t>(b.node_pool_retained_bytes) -
                            static_cast<std::int64_t>(b.framework_retained_bytes) -
                            static_cast<std::int64_t>(b.library_bytes) - static_cast<std::int64_t>(b.exec_state_bytes);
      }
    }
    bills.push_back(b);
  }
}

}  // namespace gmem::record
