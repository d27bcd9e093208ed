// The recording session's handlers of graph calls: launches, uploads, instantiations, trims,
// destroys, updates in place and node parameters.
#include <algorithm>

#include "gmem/profiler/analysis.hpp"
#include "record/session_state.hpp"

namespace gmem::record {

using detail::here;
using detail::pending_call;
using detail::thread_state;

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
    // A launch of a graph the recording does not track (no memory nodes) stays one look-up: no
    // clock is read for it, and its cost is not counted.
    if (!p.tracked) return;
    p.stream = p.plan.stream;
    p.device = p.plan.device;
    p.before.reset();
    window_enter();
    p.others.clear();
    p.enter_cost_us = 0;  // a steady launch's enter is a few stores: only its exit is timed
    if (p.plan.read_counters) {
      const double t0 = driver_.now_us();
      p.before = driver_.read_counters(p.device);
      lock l(*this);
      read_other_devices_before(exec, p.device);
      p.start_us = driver_.now_us();
      p.enter_cost_us = p.start_us - t0;
    } else {
      p.start_us = driver_.now_us();
    }
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
    timed cost(*this, cost_part::launch, end_us, p.enter_cost_us);
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
    const double t0 = driver_.now_us();
    pending_call& p = here(this).pending;
    lock l(*this);
    p.tracked = rec_.tracks(exec);
    if (!p.tracked) {
      charge(cost_part::upload, driver_.now_us() - t0);
      return;
    }
    p.stream = label_of(stream);
    p.device = rec_.device_of(exec);
    window_enter();  // first: another thread's graph call made between the readings marks them
    p.have_used = driver_.memory_used && driver_.memory_used(p.used_device, p.used_before);
    p.before = driver_.read_counters(p.device);
    read_other_devices_before(exec, p.device);
    p.t_us = p.start_us = driver_.now_us();
    p.enter_cost_us = p.start_us - t0;
  } catch (...) {
  }
}

void session::upload_exit(std::uint64_t exec, const std::string& failure) noexcept {
  if (forked_) return;
  try {
    pending_call& p = here(this).pending;
    if (!p.tracked) return;
    p.tracked = false;
    const double end_us = driver_.now_us();
    timed cost(*this, cost_part::upload, end_us, p.enter_cost_us);
    const double host_us = end_us - p.start_us;
    const auto after = driver_.read_counters(p.device);
    int used_device = 0;
    std::uint64_t used_after = 0;
    const bool have_used = p.have_used && driver_.memory_used(used_device, used_after) && used_device == p.used_device;
    const bool concurrent = window_exit();
    lock l(*this);
    rec_.on_upload(exec, p.stream, p.t_us, host_us, p.before, after, failure, concurrent);
    if (failure.empty()) {
      record_other_devices(exec, p.device, p.t_us);
      // The upload maps the graph's memory (the pool's growth); the rest is the driver's state.
      std::optional<std::uint64_t> state;
      const std::uint64_t grew = p.before && after && after->reserved_current > p.before->reserved_current
                                     ? after->reserved_current - p.before->reserved_current
                                     : 0;
      if (have_used && !concurrent && used_after >= p.used_before + grew) state = used_after - p.used_before - grew;
      rec_.on_exec_state(exec, have_used ? used_device : p.device, state);
      if (have_used) rec_.on_memory_reading(used_device, used_after);
    }
    note_completions();
  } catch (...) {
  }
}

void session::instantiate_enter(std::uint64_t graph) noexcept {
  if (forked_) return;
  try {
    pending_call& p = here(this).pending;
    // Set before anything can fail: a handler that fails leaves an untracked call, unmeasured.
    p.have_used = false;
    p.tracked = false;
    p.has_memory_nodes = false;
    p.before.reset();
    p.device = driver_.current_device();
    // The driver's state for the executable graph, whatever its nodes: the device memory in use
    // around the call. The window opens first, so that another thread's graph call made between
    // the readings marks them; the graph is read while the first reading is taken.
    window_enter();
    const double t0 = driver_.now_us();
    start_reading();
    const double t1 = driver_.now_us();
    p.model = profiler::graph_model{};
    p.tracked = driver_.read_graph(graph, p.model, p.has_memory_nodes);
    std::vector<int> devices;  // the recorder's order: its first (lowest) device is the primary
    if (p.has_memory_nodes) {
      profiler::for_each_node(p.model, [&devices](const profiler::model_node& n) {
        if (n.kind == profiler::node_kind::mem_alloc) devices.push_back(n.device);
      });
      std::sort(devices.begin(), devices.end());
      devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
      if (!devices.empty()) p.device = devices.front();
    }
    p.others.clear();
    const double t2 = driver_.now_us();
    charge(cost_part::instantiate_graph_read, t2 - t1);
    p.have_used = finish_reading(p.used_device, p.used_before);
    const double t3 = driver_.now_us();
    p.enter_memory_us = t1 - t0 + t3 - t2;  // the reading's start, and the wait for its answer
    if (p.tracked && p.has_memory_nodes) {
      p.before = driver_.read_counters(p.device);
      for (std::size_t k = 1; k < devices.size(); ++k) {
        p.others.emplace_back(devices[k], driver_.read_counters(devices[k]));
      }
    }
    p.t_us = p.start_us = driver_.now_us();
    p.enter_counters_us = p.start_us - t3;
  } catch (...) {
    close_reading();
  }
}

void session::instantiate_exit(std::uint64_t exec, std::uint64_t graph, const std::string& failure,
                               const profiler::instantiate_flags& flags,
                               std::optional<std::uint64_t> upload_stream) noexcept {
  if (forked_) return;
  try {
    thread_state& t = here(this);
    pending_call& p = t.pending;
    const double end_us = driver_.now_us();
    const double host_us = end_us - p.start_us;
    std::optional<counters> after;
    if (p.tracked && p.has_memory_nodes) after = driver_.read_counters(p.device);
    const double t1 = driver_.now_us();
    if (p.tracked && p.has_memory_nodes) charge(cost_part::instantiate_counters, t1 - end_us + p.enter_counters_us);
    // The reading after the call is taken while the graph is recorded (which allocates nothing
    // on the device): the window closes once it is answered.
    if (p.have_used) start_reading();
    const double t2 = driver_.now_us();
    // Recorded unless the call failed or the graph is on a device the recording leaves out: the
    // driver's state for it, and the reading.
    bool kept = failure.empty();
    const bool tracked = p.tracked;
    double record_us = 0;  // the recorder's own work, its lock's waits too
    if (tracked) {
      p.tracked = false;
      // The call stack before the lock: a few microseconds, once per graph.
      stack_ref stack;
      if (failure.empty() && driver_.call_stack) {
        const timed stack_cost(*this, cost_part::instantiate_stack);
        stack = stack_of(t.last_captured == graph ? t.captured_site : std::string());
      }
      const double r0 = driver_.now_us();
      lock l(*this);
      const std::string nvtx = t.nvtx.empty() ? "" : t.nvtx.back();
      if (!failure.empty()) {
        if (p.has_memory_nodes) rec_.on_instantiate_failed(nvtx, p.t_us, failure);
      } else if (device_filter_ >= 0 && p.has_memory_nodes && p.device != device_filter_) {
        kept = false;
      } else {
        describe(p.device);
        rec_.on_instantiate(exec, graph, std::move(p.model), nvtx, p.t_us, host_us, p.before, after, flags,
                            std::move(stack));
        if (graph == t.last_captured) t.last_captured_record = rec_.record_of_exec(exec);
        if (p.has_memory_nodes) record_other_devices(exec, p.device, p.t_us);
        if (upload_stream && flags.upload) rec_.mark_uploaded(exec, label_of(*upload_stream));
      }
      record_us = driver_.now_us() - r0;
    }
    const double t3 = driver_.now_us();
    int used_device = 0;
    std::uint64_t used_after = 0;
    const bool have_used = p.have_used && finish_reading(used_device, used_after) && used_device == p.used_device;
    const bool concurrent = window_exit();  // an instantiation maps memory only with the upload flag
    if (reads_memory()) charge(cost_part::instantiate_memory, driver_.now_us() - t3 + t2 - t1 + p.enter_memory_us);
    if (!kept) {
      if (tracked) charge(cost_part::instantiate_record, record_us);
      return;
    }
    // What the driver took beyond the pool's growth (an instantiation with the upload flag maps
    // the graph's memory in the call): its own state for the executable graph.
    std::optional<std::uint64_t> state;
    if (have_used && !concurrent) {
      const std::uint64_t grew = p.before && after && after->reserved_current > p.before->reserved_current
                                     ? after->reserved_current - p.before->reserved_current
                                     : 0;
      if (used_after >= p.used_before + grew) state = used_after - p.used_before - grew;
    }
    const double r1 = driver_.now_us();
    {
      lock l(*this);
      rec_.on_exec_state(exec, have_used ? used_device : p.device, state);
      if (have_used) rec_.on_memory_reading(used_device, used_after);
      note_completions();
    }
    charge(cost_part::instantiate_record, record_us + driver_.now_us() - r1);
  } catch (...) {
    close_reading();
    window_exit();  // else every later reading would count as overlapped
  }
}

stack_ref session::stack_of(const std::string& python_site) {
  if (python_site.empty()) return make_stack(driver_.call_stack());
  {
    std::lock_guard<std::mutex> l(site_stacks_mutex_);
    const auto it = site_stacks_.find(python_site);
    if (it != site_stacks_.end()) return it->second;
  }
  stack_ref stack = make_stack(driver_.call_stack());
  std::lock_guard<std::mutex> l(site_stacks_mutex_);
  if (site_stacks_.size() < 4096) site_stacks_.emplace(python_site, stack);
  return stack;
}

void session::trim_enter(int device) noexcept {
  if (forked_) return;
  try {
    const double t0 = driver_.now_us();
    pending_call& p = here(this).pending;
    window_enter();
    p.before = driver_.read_counters(device);
    p.t_us = p.start_us = driver_.now_us();
    p.enter_cost_us = p.start_us - t0;
  } catch (...) {
  }
}

void session::trim_exit(int device) noexcept {
  if (forked_) return;
  try {
    pending_call& p = here(this).pending;
    const double end_us = driver_.now_us();
    timed cost(*this, cost_part::trim, end_us, p.enter_cost_us);
    const double host_us = end_us - p.start_us;
    const auto after = driver_.read_counters(device);
    window_exit();
    lock l(*this);
    if (p.before && after) rec_.on_trim(device, p.t_us, host_us, *p.before, *after);
  } catch (...) {
  }
}

void session::exec_destroy(std::uint64_t exec) noexcept {
  if (forked_) return;
  thread_state& t = here(this);
  t.destroy_reading = false;
  try {
    timed cost(*this, cost_part::destroy);
    bool outstanding = false;
    {
      lock l(*this);
      rec_.on_exec_destroy(exec, driver_.now_us());
      outstanding = rec_.exec_state_outstanding();
    }
    // Only while some executable graph's state is still counted: what the destroy gives back
    // comes off it (the driver keeps a piece while any graph in it lives).
    if (outstanding && driver_.memory_used) {
      window_enter();
      t.destroy_reading = driver_.memory_used(t.destroy_device, t.destroy_used_before);
      if (!t.destroy_reading) window_exit();
    }
  } catch (...) {
  }
}

void session::exec_destroy_exit(bool ok) noexcept {
  thread_state& t = here(this);
  if (!t.destroy_reading) return;
  t.destroy_reading = false;
  try {
    timed cost(*this, cost_part::destroy);
    int device = 0;
    std::uint64_t used = 0;
    const bool read = driver_.memory_used(device, used) && device == t.destroy_device;
    const bool concurrent = window_exit();
    if (forked_ || !ok) return;
    lock l(*this);
    std::optional<std::uint64_t> released;
    if (read && !concurrent) released = used < t.destroy_used_before ? t.destroy_used_before - used : 0;
    rec_.on_exec_state_released(device, released);
    if (read) rec_.on_memory_reading(device, used);
  } catch (...) {
  }
}

void session::exec_update_enter(std::uint64_t exec) noexcept {
  if (forked_) return;
  try {
    pending_call& p = here(this).pending;
    p.tracked = false;  // before anything can fail: the exit then records the update unmeasured
    // An executable graph the recording does not track stays one look-up here: no clock is read
    // for it (XLA updates its command buffers as often as it launches them); its exit counts it.
    {
      lock l(*this);
      if (!rec_.tracks(exec)) return;
      p.device = rec_.device_of(exec);
    }
    const double t0 = driver_.now_us();
    p.tracked = true;
    // The counters are read with the lock released, as at a launch.
    window_enter();
    p.before = driver_.read_counters(p.device);
    {
      lock l(*this);
      read_other_devices_before(exec, p.device);
    }
    p.t_us = p.start_us = driver_.now_us();
    p.enter_cost_us = p.start_us - t0;
  } catch (...) {
  }
}

void session::exec_update_exit(std::uint64_t exec, std::uint64_t graph, const std::string& failure) noexcept {
  if (forked_) return;
  try {
    thread_state& t = here(this);
    pending_call& p = t.pending;
    const bool tracked = p.tracked;
    p.tracked = false;
    if (!tracked) {
      // An executable graph the recording does not track: counted, taken or refused, where it
      // has no memory nodes, and where the update took, the graph it now runs counts as
      // instantiated (its capture is not one left unused). No clock is read, as at its enter.
      lock l(*this);
      // A tracked one here is an update whose enter failed before it was marked: stamped now,
      // so that its thread's events stay in time order.
      const double t_us = rec_.tracks(exec) ? driver_.now_us() : 0;
      rec_.on_exec_update(exec, graph, std::nullopt, "", t_us, 0, std::nullopt, std::nullopt, failure);
      return;
    }
    const double end_us = driver_.now_us();
    timed cost(*this, cost_part::update, end_us, p.enter_cost_us);
    const double host_us = end_us - p.start_us;
    const std::optional<counters> after = driver_.read_counters(p.device);
    const bool concurrent = window_exit();
    // The new graph is read only where the update took (a refused one changes nothing), after
    // the counters' window: its read maps nothing.
    std::optional<profiler::graph_model> model;
    if (failure.empty()) {
      profiler::graph_model m;
      bool has_alloc = false;
      if (driver_.read_graph(graph, m, has_alloc)) model = std::move(m);
    }
    lock l(*this);
    const std::string nvtx = t.nvtx.empty() ? "" : t.nvtx.back();
    rec_.on_exec_update(exec, graph, std::move(model), nvtx, p.t_us, host_us, p.before, after, failure, concurrent);
    if (failure.empty()) {
      record_other_devices(exec, p.device, p.t_us);
      if (graph == t.last_captured) t.last_captured_record = rec_.record_of_exec(exec);
    }
    note_completions();
  } catch (...) {
    window_exit();  // else every later reading would count as overlapped
  }
}

void session::node_params_set(std::uint64_t exec) noexcept {
  if (forked_) return;
  try {
    // A call on an executable graph the recording does not track stays a look-up and a count
    // (where it has no memory nodes): no clock is read for it, and its cost is not counted (as at
    // a launch).
    lock l(*this);
    if (!rec_.tracks(exec)) {
      rec_.on_untracked_node_params_set(exec);
      return;
    }
    timed cost(*this, cost_part::node_params);
    rec_.on_node_params_set(exec);
  } catch (...) {
  }
}

void session::graph_destroy(std::uint64_t graph) noexcept {
  if (forked_) return;
  try {
    timed cost(*this, cost_part::destroy);
    lock l(*this);
    rec_.on_graph_destroy(graph);
  } catch (...) {
  }
}

}  // namespace gmem::record
