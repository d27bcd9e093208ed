// The recorder's bookkeeping of graphs and their calls. Folding of instances lives in
// recorder_fold.cpp, the completions the program sees in recorder_completions.cpp, launch
// classes in classify.cpp.
#include "record/recorder.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

#include "gmem/profiler/analysis.hpp"

namespace gmem::record {

const char* to_string(name_source s) noexcept {
  switch (s) {
    case name_source::nvtx: return "nvtx";
    case name_source::stream: return "stream";
    case name_source::sequence: return "sequence";
  }
  return "nvtx";
}

std::uint64_t granularity_from_text(const char* text) noexcept {
  if (!text || !*text) return 0;
  std::uint64_t v = 0;
  for (const char* c = text; *c; ++c) {
    if (*c < '0' || *c > '9' || v > (std::uint64_t{1} << 50)) return 0;
    v = v * 10 + static_cast<std::uint64_t>(*c - '0');
  }
  return v % 4096 == 0 ? v : 0;
}

std::optional<name_source> parse_name_source(const std::string& text) noexcept {
  if (text == "nvtx") return name_source::nvtx;
  if (text == "stream") return name_source::stream;
  if (text == "sequence") return name_source::sequence;
  return std::nullopt;
}

std::string recorder::make_name(name_source s, const std::string& nvtx, const std::string& stream,
                                std::uint64_t stream_sequence, std::uint64_t sequence,
                                const std::string& python_site, const std::string& framework_label) {
  if (s == name_source::nvtx && !nvtx.empty()) return nvtx;
  if (s == name_source::nvtx && !python_site.empty()) {
    return python_site + (framework_label.empty() ? "" : " (" + framework_label + ")");
  }
  if (s == name_source::nvtx && !framework_label.empty()) return framework_label;
  if (s != name_source::sequence && !stream.empty()) {
    return stream + " #" + std::to_string(stream_sequence);
  }
  return "graph " + std::to_string(sequence);
}

std::uint64_t recorder::stream_label(std::uint64_t handle) {
  const auto it = stream_labels_.find(handle);
  if (it != stream_labels_.end()) return it->second;
  const std::uint64_t label = stream_labels_.size() + 1;
  stream_labels_.emplace(handle, label);
  return label;
}

void recorder::on_capture_begin(std::uint64_t stream, const std::string& nvtx) {
  capture_nvtx_[stream] = nvtx;
  capturing_.erase(stream);
}

void recorder::on_capture_named(std::uint64_t stream, const std::string& pool, int device,
                                const std::string& python_site, const std::string& framework_label) {
  capture_origin& o = capturing_[stream];
  if (!pool.empty() && o.pool == no_pool) o.pool = pool_of(pool, device);
  o.python_site = python_site;
  // The label for the graph's name, and after a unit separator, what only `show --all` prints.
  const std::size_t detail = framework_label.find('\x1f');
  o.framework_label = framework_label.substr(0, detail);
  o.framework_detail = detail == std::string::npos ? std::string() : framework_label.substr(detail + 1);
}

void recorder::on_capture_alloc(std::uint64_t stream, std::uint64_t handle, std::uint64_t bytes, int device,
                                double t_us, bool address, const std::string& library) {
  capture_origin& o = capturing_[stream];
  capture_device_ = device;
  if (o.capture_allocations == 0) o.t_us = t_us;
  o.capture_bytes += bytes;
  ++o.capture_allocations;
  o.device = device;
  if (o.pool == no_pool) o.pool = pool_of("", device);  // unnamed: this capture's own
  took_capture_memory(handle, bytes, o.pool, false, address, stream, library);
}

void recorder::on_capture_stream(std::uint64_t stream, int device, std::uint64_t bytes, const std::string& library) {
  capture_origin& o = capturing_[stream];
  o.library_bytes += bytes;
  profiler::library_taker& t = costs_[device].takers[library_name(library)];
  t.bytes += bytes;
  ++t.streams;
}

bool recorder::on_capture_memory_free(std::uint64_t handle, double t_us) {
  const auto it = capture_memory_.find(handle);
  if (it == capture_memory_.end()) return false;
  if (it->second.pool < pools_.size()) {
    pool_state& p = pools_[it->second.pool];
    p.released += it->second.bytes;
    p.held -= std::min(p.held, it->second.bytes);
    std::uint64_t& all = costs_[p.device].framework_held;
    all -= std::min(all, it->second.bytes);
  }
  if (it->second.record < graphs_.size()) {
    graph_record& g = graphs_[it->second.record];
    g.released_bytes += it->second.bytes;
    const int device = g.devices.empty() ? 0 : g.devices.front();
    push_event(g, {t_us, "release", "", device, 0, std::nullopt, std::nullopt, 0, "", false, handle});
  }
  capture_memory_.erase(it);
  return true;
}

std::size_t recorder::on_capture_end(std::uint64_t stream, std::uint64_t graph) {
  const std::uint64_t label = stream_label(stream);
  capture_origin o;
  o.stream_label = label;
  o.stream_sequence = ++captures_per_stream_[label];
  const auto it = capture_nvtx_.find(stream);
  if (it != capture_nvtx_.end()) {
    o.nvtx = it->second;
    capture_nvtx_.erase(it);
  }
  const auto took = capturing_.find(stream);
  if (took != capturing_.end()) {
    o.capture_bytes = took->second.capture_bytes;
    o.capture_allocations = took->second.capture_allocations;
    o.device = took->second.device;
    o.t_us = took->second.t_us;
    o.pool = took->second.pool;
    o.python_site = took->second.python_site;
    o.framework_label = took->second.framework_label;
    o.framework_detail = took->second.framework_detail;
    o.library_bytes = took->second.library_bytes;
    capturing_.erase(took);
    for (auto& [handle, m] : capture_memory_) {
      if (m.graph == 0 && m.stream == stream) m.graph = graph;
    }
  }
  // A handle the driver gives again after cuGraphDestroy went unseen: the earlier capture's
  // memory is still the pool's, recorded before it is forgotten.
  const auto earlier = graph_origin_.find(graph);
  if (earlier != graph_origin_.end() && !earlier->second.instantiated) record_uninstantiated(graph, earlier->second);
  graph_origin_[graph] = o;
  return o.pool;
}

void recorder::point(double t_us, int device, const std::string& event, std::size_t graph, const counters& c) {
  last_[device] = c;
  if (timeline_.size() >= max_timeline) {
    timeline_truncated_ = true;
    return;
  }
  timeline_.push_back({t_us, device, event, graph, c});
}

std::int64_t recorder::push_event(graph_record& g, const graph_event& e) {
  if (g.events.size() >= max_events) {
    ++g.events_dropped;
    return -1;
  }
  g.events.push_back(e);
  return static_cast<std::int64_t>(g.events.size() - 1);
}

void recorder::log(sequence_entry e) {
  if (e.t_us < 0 && !sequence_.empty()) e.t_us = sequence_.back().t_us;
  // Every launch and upload numbers its stream's work, logged or not (a sync names an ordinal).
  if (e.op == 'L' || e.op == 'U') ++stream_work_[e.stream];
  if (!sequence_.empty()) {
    sequence_entry& last = sequence_.back();
    // A run of identical launches with nothing recorded about them (steady ones) counts once.
    if (e.op == 'L' && last.op == 'L' && e.event < 0 && last.event < 0 && last.graph == e.graph &&
        last.stream == e.stream) {
      ++last.count;
      return;
    }
  }
  if (sequence_.size() >= max_sequence) {
    sequence_truncated_ = true;
    return;
  }
  sequence_.push_back(e);
}

void recorder::on_instantiate_failed(const std::string& nvtx, double t_us, const std::string& result) {
  if (notes_.size() >= 64) return;
  char when[32];
  std::snprintf(when, sizeof when, "%.0f", t_us);
  notes_.push_back("an instantiation of a graph with memory nodes" +
                   (nvtx.empty() ? std::string() : " (NVTX range '" + nvtx + "')") +
                   " failed with " + result + " at " + when +
                   " us; the graph was not recorded (a graph with memory nodes may have one "
                   "executable graph at a time)");
}

std::vector<std::uint64_t> recorder::held_of(const profiler::graph_model& model) {
  // An allocation is held when no free node of the graph frees it: per address, the last
  // allocations in node order beyond the frees of that address. Sorted lists, not maps: this
  // runs at every instantiation, in the program's thread, over every memory node.
  std::vector<std::pair<std::uint64_t, std::size_t>> allocs;  // address, node
  std::vector<std::uint64_t> frees;
  std::size_t v = 0;  // the node's place in flatten()'s order
  profiler::for_each_node(model, [&](const profiler::model_node& n) {
    if (n.kind == profiler::node_kind::mem_alloc) allocs.emplace_back(n.address, v);
    if (n.kind == profiler::node_kind::mem_free) frees.push_back(n.address);
    ++v;
  });
  std::sort(allocs.begin(), allocs.end());
  std::sort(frees.begin(), frees.end());
  std::vector<std::pair<std::size_t, std::uint64_t>> held;  // node, address
  auto f = frees.begin();
  for (std::size_t i = 0; i < allocs.size();) {
    const std::uint64_t address = allocs[i].first;
    std::size_t end = i;
    while (end < allocs.size() && allocs[end].first == address) ++end;
    f = std::lower_bound(f, frees.end(), address);
    const auto freed_end = std::upper_bound(f, frees.end(), address);
    const auto freed = std::min(static_cast<std::size_t>(freed_end - f), end - i);
    for (std::size_t k = i + freed; k < end; ++k) held.emplace_back(allocs[k].second, address);
    f = freed_end;
    i = end;
  }
  std::sort(held.begin(), held.end());
  std::vector<std::uint64_t> out;
  out.reserve(held.size());
  for (const auto& [node, address] : held) out.push_back(address);
  return out;
}

void recorder::hold(std::size_t gi, std::vector<std::uint64_t> addresses) {
  graph_record& g = graphs_[gi];
  for (std::uint64_t a : g.held_addresses) {
    const auto it = held_.find(a);
    if (it != held_.end() && it->second == gi) held_.erase(it);
  }
  g.held_addresses = std::move(addresses);
  g.held_live.assign(g.held_addresses.size(), false);
  for (std::uint64_t a : g.held_addresses) {
    held_[a] = gi;
    ever_held_.add(a);
  }
}

void recorder::on_instantiate(std::uint64_t exec, std::uint64_t graph, profiler::graph_model model,
                              const std::string& nvtx, double t_us, double host_us,
                              const std::optional<counters>& before,
                              const std::optional<counters>& after,
                              const profiler::instantiate_flags& flags, stack_ref stack) {
  std::vector<int> devices;
  profiler::for_each_node(model, [&devices](const profiler::model_node& n) {
    if (n.kind == profiler::node_kind::mem_alloc) devices.push_back(n.device);
  });
  const auto origin = graph_origin_.find(graph);
  // A captured graph without memory nodes is a private-pool graph once some capture of the
  // process took memory from the device (an allocator that grows pools while capturing, as
  // PyTorch's native one does): a later capture into a shared pool may add nothing, and
  // that zero is its figure.
  // A capture the Python companion named a pool for is one, whether or not it took memory
  // (torch.compile's graph trees take it in warm-up runs: their captures may take nothing).
  const bool private_pool = devices.empty() && origin != graph_origin_.end() &&
                            (origin->second.capture_bytes > 0 || capture_device_ >= 0 ||
                             origin->second.pool < pools_.size());
  // A handle the driver gives again (its destroy unseen) is the new executable graph's.
  no_memory_execs_.erase(exec);
  if (devices.empty() && !private_pool) {
    ++no_memory_nodes_;
    no_memory_execs_.insert(exec);
    if (origin != graph_origin_.end()) origin->second.instantiated = true;
    return;
  }
  if (private_pool) {
    const capture_origin& o = origin->second;
    devices.push_back(o.capture_allocations ? o.device : o.pool < pools_.size() ? pools_[o.pool].device : capture_device_);
  }
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());

  std::string capture_nvtx;
  if (origin != graph_origin_.end()) capture_nvtx = origin->second.nvtx;
  const std::string& graph_nvtx = capture_nvtx.empty() ? nvtx : capture_nvtx;
  const std::string kind = private_pool ? "private_pool" : "memory_nodes";
  // The Python site and the framework's label are part of the site (the native stack of a
  // Python program is the interpreter's, the same for every graph).
  const std::string python_site = origin != graph_origin_.end() ? origin->second.python_site + "|" + origin->second.framework_label : "";
  const std::uint64_t shape = shape_of(stack.get(), graph_nvtx + "|" + python_site, kind, flags, model);
  if (const std::optional<std::size_t> twin = revivable(shape)) {
    revive(*twin, exec, graph, model, t_us, host_us, before, after);
    return;
  }

  graph_record g;
  g.sequence = graphs_.size() + 1;
  g.shape = shape;
  g.kind = kind;
  g.instantiate_stack = std::move(stack);
  if (private_pool) {
    g.capture_bytes = origin->second.capture_bytes;
    g.capture_allocations = origin->second.capture_allocations;
    for (auto& [handle, m] : capture_memory_) {
      if (m.graph == graph && m.record == static_cast<std::size_t>(-1)) m.record = graphs_.size();
    }
    if (origin->second.pool < pools_.size()) pools_[origin->second.pool].graphs.push_back(graphs_.size());
  }
  std::uint64_t stream_sequence = 0;
  if (origin != graph_origin_.end()) {
    g.python_site = origin->second.python_site;
    g.framework_label = origin->second.framework_label;
    g.framework_detail = origin->second.framework_detail;
    g.stream = "stream " + std::to_string(origin->second.stream_label);
    g.library_bytes = origin->second.library_bytes;
    stream_sequence = origin->second.stream_sequence;
    origin->second.instantiated = true;
  }
  g.nvtx = graph_nvtx;
  std::string name = make_name(names_, g.nvtx, g.stream, stream_sequence, g.sequence, g.python_site, g.framework_label);
  // Two execs of one name (an NVTX range around a loop of captures) stay apart in reports.
  const int uses = ++name_uses_[name];
  g.plain_name = name;
  if (uses > 1) name += " (" + std::to_string(uses) + ")";
  g.name = name;
  g.model = std::move(model);
  g.model.name = g.name;
  g.devices = devices;
  g.trims_seen = trims_[devices.front()];
  g.flags = flags;
  graph_event e;
  e.t_us = t_us;
  e.kind = "instantiate";
  e.device = devices.front();
  e.host_us = host_us;
  e.before = before;
  e.after = after;
  g.events.push_back(e);
  const std::size_t gi = graphs_.size();
  if (after) point(t_us, e.device, "instantiate", gi, *after);
  execs_[exec] = gi;
  std::vector<std::uint64_t> held = held_of(g.model);
  graphs_.push_back(std::move(g));
  hold(gi, std::move(held));
}

int recorder::device_of(std::uint64_t exec) const {
  const auto it = execs_.find(exec);
  return it == execs_.end() || graphs_[it->second].devices.empty() ? -1 : graphs_[it->second].devices.front();
}

std::vector<int> recorder::devices_of(std::uint64_t exec) const {
  const auto it = execs_.find(exec);
  return it == execs_.end() ? std::vector<int>{} : graphs_[it->second].devices;
}

void recorder::on_other_device(std::uint64_t exec, int device, double t_us, const std::optional<counters>& before,
                               const std::optional<counters>& after) {
  const auto it = execs_.find(exec);
  if (it == execs_.end()) return;
  graph_record& g = graphs_[it->second];
  if (g.events.empty() || g.events.back().t_us != t_us) return;
  graph_event e = g.events.back();
  e.device = device;
  e.before = before;
  e.after = after;
  push_event(g, e);
  if (after) point(t_us, device, e.kind + (e.cls.empty() ? "" : ":" + e.cls), it->second, *after);
}

launch_history recorder::history(std::uint64_t exec, std::uint64_t stream) const {
  launch_history h;
  const auto it = execs_.find(exec);
  if (it == execs_.end()) return h;
  const graph_record& g = graphs_[it->second];
  h.launched_before = g.launched;
  h.uploaded = g.uploaded;
  const auto t = g.devices.empty() ? trims_.end() : trims_.find(g.devices.front());
  h.trimmed_since_last = t != trims_.end() && t->second != g.trims_seen;
  h.stream_changed = g.last_stream != 0 && g.last_stream != stream;
  h.graph_memory = g.kind == "memory_nodes";
  return h;
}

bool recorder::slow(std::uint64_t exec, double host_us) const {
  if (host_us < map_floor_us) return false;
  const auto it = execs_.find(exec);
  if (it == execs_.end()) return false;
  const graph_record& g = graphs_[it->second];
  return g.steady_count == 0 || host_us > slow_factor * g.steady_median_us;
}

namespace {

// The median of the ring of the last (up to) 32 values: follows a drifting steady cost,
// allocates nothing (it runs in the program's launches). For an even count it is the upper of
// the two middle values, not statistics.hpp's mean of them: one nth_element, no sort.
double recent_median(const std::array<double, 32>& ring, std::size_t n) {
  std::array<double, 32> last = ring;
  n = std::min<std::size_t>(n, last.size());
  const auto mid = last.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(last.begin(), mid, last.begin() + static_cast<std::ptrdiff_t>(n));
  return *mid;
}

// A steady launch's host time: kept (every one up to max_steady_samples, then a uniform sample:
// reservoir sampling with a fixed seed, so that a recording is repeatable), and the steady
// median refreshed at each of the first 16 and then every 64th.
void add_steady(graph_record& g, double host_us) {
  const std::uint64_t n = ++g.steady_count;
  g.steady_min_us = n == 1 ? host_us : std::min(g.steady_min_us, host_us);
  g.steady_max_us = n == 1 ? host_us : std::max(g.steady_max_us, host_us);
  g.recent[(n - 1) % g.recent.size()] = host_us;
  if (g.steady_host_us.size() < max_steady_samples) {
    g.steady_host_us.push_back(host_us);
  } else {
    // splitmix64 of the count: a uniform index in [0, n).
    std::uint64_t z = n * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const std::uint64_t k = z % n;
    if (k < max_steady_samples) g.steady_host_us[k] = host_us;
  }
  if (n <= 16 || n % 64 == 0) g.steady_median_us = recent_median(g.recent, n);
}

}  // namespace

void recorder::launched(graph_record& g, std::uint64_t stream) {
  if (!g.held_addresses.empty()) {
    g.held_live.assign(g.held_addresses.size(), true);
    ++epoch_;  // its outputs now occupy granules other graphs may have mapped
  }
  if (stream != last_call_stream_) ++epoch_;  // another stream may run beside the last call's
  last_call_stream_ = stream;
  g.epoch = epoch_;
}

recorder::launch_plan recorder::plan_launch(std::uint64_t exec, std::uint64_t stream_handle) {
  launch_plan p;
  const auto it = execs_.find(exec);
  if (it == execs_.end()) return p;
  p.tracked = true;
  p.stream = stream_label(stream_handle);
  const graph_record& g = graphs_[it->second];
  p.device = g.devices.front();
  const auto t = trims_.find(p.device);
  const bool trimmed = t != trims_.end() && t->second != g.trims_seen;
  p.read_counters = !g.launched || g.uploaded || trimmed || (g.last_stream != 0 && g.last_stream != p.stream);
  p.graph = it->second;
  return p;
}

bool recorder::on_steady_launch(const launch_plan& plan, double host_us, double t_us) {
  if (!plan.tracked || plan.read_counters || host_us >= map_floor_us ||
      plan.graph >= graphs_.size()) {
    return false;
  }
  graph_record& g = graphs_[plan.graph];
  // Nothing that plan_launch looked at may have changed since (another thread's trim or launch
  // of this graph between the two calls): then on_launch classifies it.
  const auto t = trims_.find(plan.device);
  if (g.steady_count == 0 || g.last_stream != plan.stream ||
      (t != trims_.end() && t->second != g.trims_seen)) {
    return false;
  }
  ++g.launches;
  add_steady(g, host_us);
  launched(g, plan.stream);
  log({'L', plan.graph, plan.stream, -1, 1, 0, -1, t_us});
  return true;
}

void recorder::mark_uploaded(std::uint64_t exec, std::uint64_t stream) {
  const auto it = execs_.find(exec);
  if (it == execs_.end()) return;
  graph_record& g = graphs_[it->second];
  g.uploaded = true;
  g.last_stream = stream;
  // The instantiation mapped the memory (its event holds the counters around it).
  const std::int64_t ev = g.events.empty() || g.events.back().kind != "instantiate"
                              ? -1
                              : static_cast<std::int64_t>(g.events.size() - 1);
  ++epoch_;
  log({'U', it->second, stream, -1, 1, 0, ev, ev < 0 ? -1 : g.events[static_cast<std::size_t>(ev)].t_us});
}

void recorder::on_upload(std::uint64_t exec, std::uint64_t stream, double t_us, double host_us,
                         const std::optional<counters>& before,
                         const std::optional<counters>& after, const std::string& failure,
                         bool concurrent) {
  const auto it = execs_.find(exec);
  if (it == execs_.end()) return;
  graph_record& g = graphs_[it->second];
  graph_event e{t_us, "upload", "", g.devices.front(), host_us, before, after, stream, failure, concurrent, 0};
  if (!failure.empty()) {
    ++g.failed_calls;
    push_event(g, e);
    return;
  }
  g.uploaded = true;
  g.last_stream = stream;
  g.trims_seen = trims_[g.devices.front()];
  ++epoch_;  // it maps granules other graphs may have mapped
  log({'U', it->second, stream, -1, 1, 0, push_event(g, e), t_us});
  if (after) point(t_us, e.device, "upload", it->second, *after);
}

void recorder::on_launch(std::uint64_t exec, std::uint64_t stream, double t_us, double host_us,
                         const std::optional<counters>& before,
                         const std::optional<counters>& after, const std::string& failure,
                         bool concurrent) {
  const auto it = execs_.find(exec);
  if (it == execs_.end()) return;
  if (!failure.empty()) {  // refused: nothing ran, nothing about the graph's history changed
    graph_record& g = graphs_[it->second];
    ++g.failed_calls;
    push_event(g, {t_us, "launch", "failed", g.devices.front(), host_us, before, after, stream,
                   failure, concurrent, 0});
    return;
  }
  const launch_history h = history(exec, stream);
  launch_class c = classify(h, before, after, slow(exec, host_us), concurrent);
  graph_record& g = graphs_[it->second];
  // A slow relaunch of a graph whose memory nothing could have taken since its last launch (no
  // launch of a graph holding outputs, no other stream, no upload) is a slow launch: the launch
  // queue was full or the host busy. It is counted with the steady ones.
  const bool untouched = c == launch_class::slow_launch && g.epoch == epoch_ && last_call_stream_ == stream;
  ++g.launches;
  g.launched = true;
  g.uploaded = false;
  g.last_stream = stream;
  g.trims_seen = trims_[g.devices.front()];
  launched(g, stream);
  if (untouched || (c == launch_class::steady && !(h.trimmed_since_last || h.stream_changed))) {
    if (untouched) ++g.slow_launches;
    add_steady(g, host_us);
    if (after) last_[g.devices.front()] = *after;
    log({'L', it->second, stream, -1, 1, 0, -1, t_us});
    return;
  }
  // A steady launch recorded for its history (after a trim or a stream switch, it mapped
  // nothing) gets a class of its own: "steady" is the aggregate of the untracked ones.
  std::string cls = to_string(c);
  if (c == launch_class::steady) cls = h.trimmed_since_last ? "steady_after_trim" : "steady_after_stream_switch";
  graph_event e{t_us, "launch", cls, g.devices.front(), host_us, before, after, stream, "",
                concurrent, 0};
  log({'L', it->second, stream, -1, 1, 0, push_event(g, e), t_us});
  if (after) point(t_us, e.device, "launch:" + cls, it->second, *after);
}

void recorder::on_trim(int device, double t_us, double host_us, const counters& before,
                       const counters& after) {
  ++trims_[device];
  for (auto& g : graphs_) {
    if (g.destroyed || std::find(g.devices.begin(), g.devices.end(), device) == g.devices.end()) {
      continue;
    }
    push_event(g, {t_us, "trim", "", device, host_us, before, after, 0, "", false, 0});
  }
  log({'T', 0, 0, device, 1, 0, -1, t_us});
  point(t_us, device, "trim", static_cast<std::size_t>(-1), after);
}

void recorder::on_exec_destroy(std::uint64_t exec, double t_us) {
  const auto it = execs_.find(exec);
  if (it == execs_.end()) {
    no_memory_execs_.erase(exec);  // the driver may give its handle to another executable graph
    return;
  }
  const std::size_t gi = it->second;
  execs_.erase(it);
  graph_record& g = graphs_[gi];
  g.destroyed = true;
  log({'D', gi, 0, -1, 1, 0, -1, t_us});
  destroyed_shapes_[g.shape].push_back(gi);
}

bool recorder::on_free(std::uint64_t address, std::uint64_t stream, double t_us) {
  const auto it = held_.find(address);
  if (it == held_.end()) return false;
  const std::size_t gi = it->second;
  graph_record& g = graphs_[gi];
  auto k = std::find(g.held_addresses.begin(), g.held_addresses.end(), address);
  std::int64_t held = k == g.held_addresses.end() ? -1 : k - g.held_addresses.begin();
  if (held < 0) {
    // An allocation the graph before an update left live: the same held allocation by order,
    // at the old graph's address, which no launch makes again.
    k = std::find(g.replaced_held.begin(), g.replaced_held.end(), address);
    if (k != g.replaced_held.end()) {
      held = k - g.replaced_held.begin();
      *k = 0;
      held_.erase(it);
    }
  }
  const auto slot = static_cast<std::size_t>(held);
  if (held >= 0 && slot < g.held_live.size()) g.held_live[slot] = false;
  const int device = g.devices.empty() ? 0 : g.devices.front();
  const std::int64_t ev = push_event(g, {t_us, "free", "", device, 0, std::nullopt, std::nullopt,
                                         stream, "", false, address});
  sequence_entry e{'F', gi, stream, -1, 1, address, ev, t_us};
  e.held = held;
  log(e);
  return true;
}

std::optional<counters> recorder::last_counters(int device) const {
  const auto it = last_.find(device);
  if (it == last_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gmem::record
