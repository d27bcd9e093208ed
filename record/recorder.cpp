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

const char* to_string(launch_class c) noexcept {
  switch (c) {
    case launch_class::first_launch: return "first_launch";
    case launch_class::first_launch_after_upload: return "first_launch_after_upload";
    case launch_class::steady: return "steady";
    case launch_class::remap_after_trim: return "remap_after_trim";
    case launch_class::remap_after_stream_switch: return "remap_after_stream_switch";
    case launch_class::remap_contention: return "remap_contention";
  }
  return "steady";
}

launch_class classify(const launch_history& h, const std::optional<counters>& before,
                      const std::optional<counters>& after, bool slow) noexcept {
  if (!h.launched_before) {
    return h.uploaded ? launch_class::first_launch_after_upload : launch_class::first_launch;
  }
  const bool mapped = before && after && after->reserved_current > before->reserved_current;
  if (!mapped && !slow) return launch_class::steady;
  if (h.trimmed_since_last) return launch_class::remap_after_trim;
  if (h.stream_changed) return launch_class::remap_after_stream_switch;
  // Slow without growth: it mapped granules already in the pool, which another graph's
  // allocation had taken from it (measured: 19 to 240 us on an H100, steady launches at most
  // 14 us; the pool probe's cases P1, P2, P18).
  return launch_class::remap_contention;
}

std::string recorder::make_name(name_source s, const std::string& nvtx, const std::string& stream,
                                std::uint64_t stream_sequence, std::uint64_t sequence) {
  if (s == name_source::nvtx && !nvtx.empty()) return nvtx;
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

void recorder::on_capture_alloc(std::uint64_t stream, std::uint64_t handle, std::uint64_t bytes, int device,
                                double t_us) {
  capture_origin& o = capturing_[stream];
  capture_device_ = device;
  if (o.capture_allocations == 0) o.t_us = t_us;
  o.capture_bytes += bytes;
  ++o.capture_allocations;
  o.device = device;
  capture_memory m;
  m.bytes = bytes;
  m.stream = stream;
  capture_memory_[handle] = m;
}

bool recorder::on_capture_memory_free(std::uint64_t handle, double t_us) {
  const auto it = capture_memory_.find(handle);
  if (it == capture_memory_.end()) return false;
  if (it->second.record < graphs_.size()) {
    graph_record& g = graphs_[it->second.record];
    g.released_bytes += it->second.bytes;
    push_event(g, {t_us, "release", "", g.devices.front(), 0, std::nullopt, std::nullopt, 0, "", false, handle});
  }
  capture_memory_.erase(it);
  return true;
}

void recorder::on_capture_end(std::uint64_t stream, std::uint64_t graph) {
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
    capturing_.erase(took);
    for (auto& [handle, m] : capture_memory_) {
      if (m.graph == 0 && m.stream == stream) m.graph = graph;
    }
  }
  graph_origin_[graph] = o;
}

void recorder::point(double t_us, int device, const std::string& event, const std::string& graph,
                     const counters& c) {
  last_[device] = c;
  if (timeline_.size() >= max_timeline) {
    timeline_truncated_ = true;
    return;
  }
  timeline_.push_back({t_us, device, event, graph, c});
}

std::uint64_t recorder::shape_of(const graph_record& g) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the site and the structure
  const auto mix = [&h](const std::string& text) {
    for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
  };
  for (const std::string& frame : g.instantiate_stack) mix(frame);
  mix(g.nvtx);
  for (const auto& n : g.model.nodes) mix(std::to_string(static_cast<int>(n.kind)) + ":" + std::to_string(n.bytes));
  for (const auto& [a, b] : g.model.edges) mix(std::to_string(a) + ">" + std::to_string(b));
  mix(std::to_string(g.model.children.size()));
  return h;
}

void recorder::on_graph_destroy(std::uint64_t graph) { graph_origin_.erase(graph); }

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

void recorder::on_instantiate(std::uint64_t exec, std::uint64_t graph, profiler::graph_model model,
                              const std::string& nvtx, double t_us, double host_us,
                              const std::optional<counters>& before,
                              const std::optional<counters>& after,
                              const profiler::instantiate_flags& flags) {
  std::vector<int> devices;
  std::map<std::uint64_t, int> balance;  // address -> allocations minus frees
  for (const auto& n : profiler::flatten(model).nodes) {
    if (n.kind == profiler::node_kind::mem_alloc) {
      devices.push_back(n.device);
      ++balance[n.address];
    } else if (n.kind == profiler::node_kind::mem_free) {
      --balance[n.address];
    }
  }
  const auto origin_of = graph_origin_.find(graph);
  // A captured graph without memory nodes is a private-pool graph once some capture of the
  // process took memory from the device (an allocator that grows pools while capturing, as
  // PyTorch's native one does): a later capture into a shared pool may add nothing, and
  // that zero is its figure (issue 22).
  const bool private_pool = devices.empty() && origin_of != graph_origin_.end() &&
                            (origin_of->second.capture_bytes > 0 || capture_device_ >= 0);
  if (devices.empty() && !private_pool) {
    ++no_memory_nodes_;
    return;
  }
  if (private_pool) {
    devices.push_back(origin_of->second.capture_allocations ? origin_of->second.device : capture_device_);
  }
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());

  graph_record g;
  g.sequence = graphs_.size() + 1;
  if (private_pool) {
    g.kind = "private_pool";
    g.capture_bytes = origin_of->second.capture_bytes;
    g.capture_allocations = origin_of->second.capture_allocations;
    for (auto& [handle, m] : capture_memory_) {
      if (m.graph == graph && m.record == static_cast<std::size_t>(-1)) m.record = graphs_.size();
    }
  }
  std::uint64_t stream_sequence = 0;
  const auto origin = graph_origin_.find(graph);
  if (origin != graph_origin_.end()) {
    g.stream = "stream " + std::to_string(origin->second.stream_label);
    stream_sequence = origin->second.stream_sequence;
    g.nvtx = origin->second.nvtx;
  }
  if (g.nvtx.empty()) g.nvtx = nvtx;
  std::string name = make_name(names_, g.nvtx, g.stream, stream_sequence, g.sequence);
  // Two execs of one name (an NVTX range around a loop of captures) stay apart in reports.
  const int uses = ++name_uses_[name];
  if (uses > 1) name += " (" + std::to_string(uses) + ")";
  g.name = name;
  g.model = std::move(model);
  g.model.name = g.name;
  g.devices = devices;
  g.trims_seen = trims_[devices.front()];
  g.flags = flags;
  for (const auto& [address, n] : balance) {
    if (n > 0) g.held_addresses.push_back(address);
  }
  for (std::uint64_t address : g.held_addresses) held_[address] = graphs_.size();

  graph_event e;
  e.t_us = t_us;
  e.kind = "instantiate";
  e.device = devices.front();
  e.host_us = host_us;
  e.before = before;
  e.after = after;
  g.events.push_back(e);
  if (after) point(t_us, e.device, "instantiate", g.name, *after);
  execs_[exec] = graphs_.size();
  graphs_.push_back(std::move(g));
}

int recorder::device_of(std::uint64_t exec) const {
  const auto it = execs_.find(exec);
  return it == execs_.end() ? -1 : graphs_[it->second].devices.front();
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
  if (after) point(t_us, device, e.kind + (e.cls.empty() ? "" : ":" + e.cls), g.name, *after);
}

launch_history recorder::history(std::uint64_t exec, std::uint64_t stream) const {
  launch_history h;
  const auto it = execs_.find(exec);
  if (it == execs_.end()) return h;
  const graph_record& g = graphs_[it->second];
  h.launched_before = g.launched;
  h.uploaded = g.uploaded;
  const auto t = trims_.find(g.devices.front());
  h.trimmed_since_last = t != trims_.end() && t->second != g.trims_seen;
  h.stream_changed = g.last_stream != 0 && g.last_stream != stream;
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
// allocates nothing.
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
  log({'L', plan.graph, plan.stream, -1, 1, 0, -1, t_us});
  return true;
}

void recorder::set_instantiate_stack(std::uint64_t exec, std::vector<std::string> frames) {
  const auto it = execs_.find(exec);
  if (it != execs_.end()) graphs_[it->second].instantiate_stack = std::move(frames);
}

void recorder::mark_uploaded(std::uint64_t exec, std::uint64_t stream) {
  const auto it = execs_.find(exec);
  if (it == execs_.end()) return;
  graph_record& g = graphs_[it->second];
  g.uploaded = true;
  g.last_stream = stream;
  // The instantiation mapped the memory (its event holds the counters around it).
  log({'U', it->second, stream, -1, 1, 0, g.events.empty() ? -1 : 0, g.events.empty() ? -1 : g.events[0].t_us});
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
  log({'U', it->second, stream, -1, 1, 0, push_event(g, e), t_us});
  if (after) point(t_us, e.device, "upload", g.name, *after);
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
  const launch_class c = classify(h, before, after, slow(exec, host_us));
  graph_record& g = graphs_[it->second];
  ++g.launches;
  g.launched = true;
  g.uploaded = false;
  g.last_stream = stream;
  g.trims_seen = trims_[g.devices.front()];
  if (c == launch_class::steady && !(h.trimmed_since_last || h.stream_changed)) {
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
  if (after) point(t_us, e.device, "launch:" + cls, g.name, *after);
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
  point(t_us, device, "trim", "", after);
}

void recorder::on_exec_destroy(std::uint64_t exec, double t_us) {
  const auto it = execs_.find(exec);
  if (it == execs_.end()) return;
  const std::size_t gi = it->second;
  execs_.erase(it);
  graph_record& g = graphs_[gi];
  g.destroyed = true;
  log({'D', gi, 0, -1, 1, 0, -1, t_us});
  // A program that makes the same graph again and again (the same site, the same structure)
  // keeps one record of it, with a count, so that the recorder's memory stays flat.
  const std::uint64_t shape = shape_of(g);
  const auto twin = destroyed_shapes_.find(shape);
  if (twin == destroyed_shapes_.end() || gi + 1 != graphs_.size() || twin->second == gi) {
    destroyed_shapes_.emplace(shape, gi);
    return;
  }
  graph_record& into = graphs_[twin->second];
  const std::int64_t base = static_cast<std::int64_t>(into.events.size());
  into.instances += g.instances;
  into.launches += g.launches;
  into.failed_calls += g.failed_calls;
  for (const graph_event& e : g.events) {
    if (into.events.size() < max_events) {
      into.events.push_back(e);
    } else {
      ++into.events_dropped;
    }
  }
  into.events_dropped += g.events_dropped;
  const double lo = into.steady_count ? std::min(into.steady_min_us, g.steady_min_us) : g.steady_min_us;
  const double hi = into.steady_count ? std::max(into.steady_max_us, g.steady_max_us) : g.steady_max_us;
  for (double us : g.steady_host_us) add_steady(into, us);
  into.steady_count += g.steady_count - g.steady_host_us.size();  // the ones a sample left out
  if (into.steady_count) into.steady_min_us = lo, into.steady_max_us = hi;
  for (std::uint64_t address : g.held_addresses) held_[address] = twin->second;
  for (auto e = sequence_.rbegin(); e != sequence_.rend() && e->graph == gi; ++e) {
    e->graph = twin->second;
    e->event = e->event >= 0 && base + e->event < static_cast<std::int64_t>(into.events.size()) ? base + e->event : -1;
  }
  if (--name_uses_[g.name] <= 0) name_uses_.erase(g.name);
  graphs_.pop_back();
}

bool recorder::on_free(std::uint64_t address, std::uint64_t stream, double t_us) {
  const auto it = held_.find(address);
  if (it == held_.end()) return false;
  graph_record& g = graphs_[it->second];
  const std::int64_t ev = push_event(g, {t_us, "free", "", g.devices.front(), 0, std::nullopt, std::nullopt,
                                         stream, "", false, address});
  log({'F', it->second, stream, -1, 1, address, ev, t_us});
  return true;
}

void recorder::on_sync(std::uint64_t stream, double t_us) {
  if (graphs_.empty()) return;
  if (!sequence_.empty() && sequence_.back().op == 'S' && sequence_.back().stream == stream) return;
  log({'S', 0, stream, -1, 1, 0, -1, t_us});
}

std::optional<counters> recorder::last_counters(int device) const {
  const auto it = last_.find(device);
  if (it == last_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gmem::record
