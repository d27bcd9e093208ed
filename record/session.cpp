// The recording session's handlers, by family. Per-thread state (the call in flight, NVTX
// ranges, the stream being captured, whether this thread holds the lock) lives in one
// thread_local record that belongs to one session at a time.
#include "record/session.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "gmem/profiler/analysis.hpp"

namespace gmem::record {
namespace {

struct pending_call {
  double t_us = 0;
  double start_us = 0;
  std::optional<counters> before;
  int device = -1;
  bool tracked = false;
  std::uint64_t stream = 0;
  recorder::launch_plan plan;
  profiler::graph_model model;
  bool has_memory_nodes = false;
  std::uint64_t epoch = 0;
  bool busy_at_enter = false;
  bool windowed = false;
  /// The counters of the call's graph's other devices, read before the call (a graph that
  /// allocates on several devices maps on each: issue 19).
  std::vector<std::pair<int, std::optional<counters>>> others;
};

struct thread_state {
  const session* owner = nullptr;
  pending_call pending;
  std::vector<std::string> nvtx;
  std::uint64_t capturing = 0;  ///< the stream this thread captures into (0: none)
  bool capturing_any = false;
  bool holding = false;         ///< this thread holds its session's lock
};

thread_local thread_state here_state;

thread_state& here(const session* s) {
  if (here_state.owner != s) {
    here_state = thread_state{};
    here_state.owner = s;
  }
  return here_state;
}

}  // namespace

// The session's lock, marked as this thread's while held: exit() on this thread (from a signal
// handler that interrupted a callback) must not wait for it.
struct session::lock {
  explicit lock(session& s) : s_(s), t_(here(&s)) {
    s_.mutex_.lock();
    t_.holding = true;
  }
  ~lock() {
    t_.holding = false;
    s_.mutex_.unlock();
  }
  lock(const lock&) = delete;
  lock& operator=(const lock&) = delete;

 private:
  session& s_;
  thread_state& t_;
};

session::session(const driver_api& driver, name_source names, std::string out_path, int device_filter)
    : driver_(driver), rec_(names), out_path_(std::move(out_path)), device_filter_(device_filter) {}

std::uint64_t session::label_of(std::uint64_t stream) {
  if (rec_.knows_stream(stream)) return rec_.stream_label(stream);
  const std::uint64_t label = rec_.stream_label(stream);
  // Whether a synchronous copy completes its work: asked once per stream.
  rec_.set_blocking(label, stream == legacy_stream || stream == per_thread_stream ||
                               (driver_.stream_blocking && driver_.stream_blocking(stream)));
  return label;
}

void session::window_enter() noexcept {
  pending_call& p = here(this).pending;
  p.windowed = true;
  p.epoch = calls_started_.fetch_add(1, std::memory_order_relaxed) + 1;
  p.busy_at_enter = calls_in_flight_.fetch_add(1, std::memory_order_relaxed) > 0;
}

bool session::window_exit() noexcept {
  pending_call& p = here(this).pending;
  if (!p.windowed) return false;
  p.windowed = false;
  const bool busy_at_exit = calls_in_flight_.fetch_sub(1, std::memory_order_relaxed) > 1;
  return p.busy_at_enter || busy_at_exit || calls_started_.load(std::memory_order_relaxed) != p.epoch;
}

void session::read_other_devices_before(std::uint64_t exec, int primary) {
  pending_call& p = here(this).pending;
  p.others.clear();
  for (int d : rec_.devices_of(exec)) {
    if (d != primary) p.others.emplace_back(d, driver_.read_counters(d));
  }
}

void session::record_other_devices(std::uint64_t exec, int primary, double t_us) {
  pending_call& p = here(this).pending;
  for (int d : rec_.devices_of(exec)) {
    if (d == primary) continue;
    std::optional<counters> before;
    for (const auto& [device, c] : p.others) {
      if (device == d) before = c;
    }
    if (!before) before = rec_.last_counters(d);
    rec_.on_other_device(exec, d, t_us, before, driver_.read_counters(d));
  }
  p.others.clear();
}

void session::describe(int device) {
  if (have_env_) return;
  have_env_ = driver_.describe && driver_.describe(device, env_, granularity_);
}

// ---------------------------------------------------------------------------------------------
// Graph calls.

void session::launch_enter(std::uint64_t exec, std::uint64_t stream) noexcept {
  if (forked_) return;
  try {
    thread_state& t = here(this);
    pending_call& p = t.pending;
    {
      lock l(*this);
      if (rec_.tracks(exec)) label_of(stream);
      p.plan = rec_.plan_launch(exec, stream);
    }
    p.tracked = p.plan.tracked;
    if (!p.tracked) return;
    p.stream = p.plan.stream;
    p.device = p.plan.device;
    p.before.reset();
    window_enter();
    p.others.clear();
    if (p.plan.read_counters) {
      p.before = driver_.read_counters(p.device);
      lock l(*this);
      read_other_devices_before(exec, p.device);
    }
    p.start_us = driver_.now_us();
  } catch (...) {
  }
}

void session::launch_exit(std::uint64_t exec, const std::string& failure) noexcept {
  if (forked_) return;
  try {
    pending_call& p = here(this).pending;
    if (!p.tracked) return;
    p.tracked = false;
    const double end_us = driver_.now_us();
    const double host_us = end_us - p.start_us;
    std::optional<counters> after;
    if (p.before || !failure.empty() || host_us >= map_floor_us) {
      after = driver_.read_counters(p.device);  // inside the window, before it closes
    }
    const bool concurrent = window_exit();
    lock l(*this);
    std::optional<counters> before = p.before;
    if (!before && after) before = rec_.last_counters(p.device);
    const bool grew = before && after && after->reserved_current > before->reserved_current;
    if (failure.empty() && !p.before && !grew && rec_.on_steady_launch(p.plan, host_us, p.start_us)) return;
    if (!grew && failure.empty() && !p.before && !rec_.slow(exec, host_us)) {
      before.reset();  // steady: nothing mapped, nothing to keep
      after.reset();
    }
    rec_.on_launch(exec, p.stream, p.start_us, host_us, before, after, failure, concurrent);
    if (after && failure.empty()) record_other_devices(exec, p.device, p.start_us);
    note_completions();
  } catch (...) {
  }
}

void session::upload_enter(std::uint64_t exec, std::uint64_t stream) noexcept {
  if (forked_) return;
  try {
    pending_call& p = here(this).pending;
    lock l(*this);
    p.tracked = rec_.tracks(exec);
    if (!p.tracked) return;
    p.stream = label_of(stream);
    p.device = rec_.device_of(exec);
    window_enter();
    p.before = driver_.read_counters(p.device);
    read_other_devices_before(exec, p.device);
    p.t_us = p.start_us = driver_.now_us();
  } catch (...) {
  }
}

void session::upload_exit(std::uint64_t exec, const std::string& failure) noexcept {
  if (forked_) return;
  try {
    pending_call& p = here(this).pending;
    if (!p.tracked) return;
    p.tracked = false;
    const double host_us = driver_.now_us() - p.start_us;
    const auto after = driver_.read_counters(p.device);
    const bool concurrent = window_exit();
    lock l(*this);
    rec_.on_upload(exec, p.stream, p.t_us, host_us, p.before, after, failure, concurrent);
    if (failure.empty()) record_other_devices(exec, p.device, p.t_us);
    note_completions();
  } catch (...) {
  }
}

void session::instantiate_enter(std::uint64_t graph) noexcept {
  if (forked_) return;
  try {
    pending_call& p = here(this).pending;
    p.model = profiler::graph_model{};
    p.has_memory_nodes = false;
    p.tracked = driver_.read_graph(graph, p.model, p.has_memory_nodes);
    p.before.reset();
    p.device = driver_.current_device();
    std::vector<int> devices;  // the recorder's order: its first (lowest) device is the primary
    if (p.has_memory_nodes) {
      for (const auto& n : profiler::flatten(p.model).nodes) {
        if (n.kind == profiler::node_kind::mem_alloc) devices.push_back(n.device);
      }
      std::sort(devices.begin(), devices.end());
      devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
      if (!devices.empty()) p.device = devices.front();
    }
    p.others.clear();
    if (p.tracked && p.has_memory_nodes) {
      window_enter();
      p.before = driver_.read_counters(p.device);
      for (std::size_t k = 1; k < devices.size(); ++k) {
        p.others.emplace_back(devices[k], driver_.read_counters(devices[k]));
      }
    }
    p.t_us = p.start_us = driver_.now_us();
  } catch (...) {
  }
}

void session::instantiate_exit(std::uint64_t exec, std::uint64_t graph, const std::string& failure,
                               const profiler::instantiate_flags& flags,
                               std::optional<std::uint64_t> upload_stream) noexcept {
  if (forked_) return;
  try {
    thread_state& t = here(this);
    pending_call& p = t.pending;
    const double host_us = driver_.now_us() - p.start_us;
    if (!p.tracked) {
      window_exit();
      return;
    }
    p.tracked = false;
    std::optional<counters> after;
    if (p.has_memory_nodes) after = driver_.read_counters(p.device);
    window_exit();  // an instantiation maps memory only with the upload flag
    // The call stack before the lock: a few microseconds, once per graph.
    std::vector<std::string> stack;
    if (failure.empty() && driver_.call_stack) stack = driver_.call_stack();
    lock l(*this);
    const std::string nvtx = t.nvtx.empty() ? "" : t.nvtx.back();
    if (!failure.empty()) {
      if (p.has_memory_nodes) rec_.on_instantiate_failed(nvtx, p.t_us, failure);
      return;
    }
    if (device_filter_ >= 0 && p.has_memory_nodes && p.device != device_filter_) return;
    describe(p.device);
    rec_.on_instantiate(exec, graph, std::move(p.model), nvtx, p.t_us, host_us, p.before, after, flags,
                        std::move(stack));
    if (p.has_memory_nodes) record_other_devices(exec, p.device, p.t_us);
    if (upload_stream && flags.upload) {
      rec_.mark_uploaded(exec, label_of(*upload_stream));
    }
    note_completions();
  } catch (...) {
  }
}

void session::trim_enter(int device) noexcept {
  if (forked_) return;
  try {
    pending_call& p = here(this).pending;
    window_enter();
    p.before = driver_.read_counters(device);
    p.t_us = p.start_us = driver_.now_us();
  } catch (...) {
  }
}

void session::trim_exit(int device) noexcept {
  if (forked_) return;
  try {
    pending_call& p = here(this).pending;
    const double host_us = driver_.now_us() - p.start_us;
    const auto after = driver_.read_counters(device);
    window_exit();
    lock l(*this);
    if (p.before && after) rec_.on_trim(device, p.t_us, host_us, *p.before, *after);
  } catch (...) {
  }
}

void session::exec_destroy(std::uint64_t exec) noexcept {
  if (forked_) return;
  try {
    lock l(*this);
    rec_.on_exec_destroy(exec, driver_.now_us());
  } catch (...) {
  }
}

void session::graph_destroy(std::uint64_t graph) noexcept {
  if (forked_) return;
  try {
    lock l(*this);
    rec_.on_graph_destroy(graph);
  } catch (...) {
  }
}

// ---------------------------------------------------------------------------------------------
// Captures.

void session::capture_begin(std::uint64_t stream) noexcept {
  if (forked_) return;
  try {
    thread_state& t = here(this);
    lock l(*this);
    rec_.on_capture_begin(stream, t.nvtx.empty() ? "" : t.nvtx.back());
  } catch (...) {
  }
}

void session::capture_began(std::uint64_t stream, bool ok) noexcept {
  thread_state& t = here(this);
  if (ok) {
    t.capturing = stream;
    t.capturing_any = true;
  }
}

void session::capture_end(std::uint64_t stream, std::uint64_t graph) noexcept {
  if (forked_) return;
  try {
    thread_state& t = here(this);
    t.capturing = 0;
    t.capturing_any = false;
    if (graph == 0) return;
    lock l(*this);
    rec_.on_capture_end(stream, graph);
  } catch (...) {
  }
}

void session::device_alloc(std::uint64_t handle, std::uint64_t bytes, std::optional<int> device) noexcept {
  if (forked_) return;
  try {
    thread_state& t = here(this);
    if (!t.capturing_any) return;  // memory a capture takes: a private pool growing
    const int d = device ? *device : driver_.current_device();
    const double now = driver_.now_us();
    lock l(*this);
    rec_.on_capture_alloc(t.capturing, handle, bytes, d, now);
  } catch (...) {
  }
}

void session::device_free(std::uint64_t address, std::optional<std::uint64_t> stream) noexcept {
  if (forked_) return;
  try {
    const double now = driver_.now_us();
    lock l(*this);
    // An allocation a graph left allocated, freed outside it: its granules are free again.
    if (!stream && rec_.on_capture_memory_free(address, now)) return;
    if (!rec_.is_held(address)) return;
    rec_.on_free(address, stream ? label_of(*stream) : 0, now);
  } catch (...) {
  }
}

void session::release(std::uint64_t handle) noexcept {
  if (forked_) return;
  try {
    const double now = driver_.now_us();
    lock l(*this);
    rec_.on_capture_memory_free(handle, now);
  } catch (...) {
  }
}

// ---------------------------------------------------------------------------------------------
// Completions.

void session::device_synchronized() noexcept {
  if (forked_) return;
  try {
    const double now = driver_.now_us();
    lock l(*this);
    rec_.on_sync(0, now);
    note_completions();
  } catch (...) {
  }
}

void session::stream_synchronized(std::uint64_t stream) noexcept {
  if (forked_ || !completions_matter_.load(std::memory_order_relaxed)) return;
  try {
    const double now = driver_.now_us();
    lock l(*this);
    rec_.on_sync(label_of(stream), now);
    note_completions();
  } catch (...) {
  }
}

void session::event_recorded(std::uint64_t event, std::uint64_t stream) noexcept {
  if (forked_ || !completions_matter_.load(std::memory_order_relaxed)) return;
  try {
    lock l(*this);
    rec_.on_event_record(event, label_of(stream));
    note_completions();
  } catch (...) {
  }
}

void session::event_completed(std::uint64_t event) noexcept {
  if (forked_ || !completions_matter_.load(std::memory_order_relaxed)) return;
  try {
    const double now = driver_.now_us();
    lock l(*this);
    rec_.on_event_complete(event, now);
    note_completions();
  } catch (...) {
  }
}

void session::event_destroyed(std::uint64_t event) noexcept {
  if (forked_ || !completions_matter_.load(std::memory_order_relaxed)) return;
  try {
    lock l(*this);
    rec_.on_event_destroy(event);
    note_completions();
  } catch (...) {
  }
}

void session::copied(std::uint64_t destination, std::optional<bool> to_host, bool per_thread) noexcept {
  if (forked_ || !completions_matter_.load(std::memory_order_relaxed)) return;
  try {
    // A copy between device buffers returns before it runs: it completes nothing.
    const bool host = to_host ? *to_host : driver_.is_host_pointer && driver_.is_host_pointer(destination);
    if (!host) return;
    const double now = driver_.now_us();
    lock l(*this);
    rec_.on_sync_copy(label_of(per_thread ? per_thread_stream : legacy_stream), per_thread, now);
    note_completions();
  } catch (...) {
  }
}

// ---------------------------------------------------------------------------------------------
// NVTX.

void session::nvtx_push(const char* message) noexcept {
  try {
    here(this).nvtx.emplace_back(message ? message : "");
  } catch (...) {
  }
}

void session::nvtx_pop() noexcept {
  thread_state& t = here(this);
  if (!t.nvtx.empty()) t.nvtx.pop_back();
}

// ---------------------------------------------------------------------------------------------
// Writing.

bool session::write(bool partial, const std::string& reason, bool analyse, std::string* why) noexcept {
  if (out_path_.empty()) return false;
  try {
    rec_.finish();
    info_.partial = partial;
    info_.partial_reason = reason;
    assemble_options options;
    options.analyse = analyse;
    const profiler::report rep = assemble(rec_, env_, granularity_, info_, options);
    write_recording(rep, out_path_);
    written_ = true;
    return true;
  } catch (const std::exception& e) {
    if (why) *why = "the report could not be written to '" + out_path_ + "': " + e.what();
  } catch (...) {
    if (why) *why = "the report could not be written to '" + out_path_ + "'";
  }
  return false;
}

namespace {

// Takes `m` within `wait_s` seconds, or gives up: a thread stuck inside a callback must not hang
// the program's exit.
bool try_lock_for(std::mutex& m, double wait_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (!m.try_lock()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace

bool session::write_at_exit(std::string* why, double wait_s) noexcept {
  if (forked_) return false;
  thread_state& t = here(this);
  if (t.holding) {
    if (why) {
      *why = "exit() was called while this thread was inside a CUDA call being recorded (from a "
             "signal handler?): the recorder's state is not whole, so no report is written";
    }
    return false;
  }
  if (!try_lock_for(mutex_, wait_s)) {
    if (why) *why = "another thread held the recorder for more than its wait at exit: no report is written";
    return false;
  }
  t.holding = true;
  const bool ok = write(false, "", true, why);
  t.holding = false;
  mutex_.unlock();
  return ok;
}

bool session::write_on_signal(int signal, const char* signal_name, double wait_s) noexcept {
  if (forked_) return false;
  if (!try_lock_for(mutex_, wait_s)) return false;
  const bool ok = write(true, "signal " + std::to_string(signal) + " (" + (signal_name ? signal_name : "?") + ")",
                        false, nullptr);
  mutex_.unlock();
  return ok;
}

}  // namespace gmem::record
