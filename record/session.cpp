// The recording session: its state per thread, its lock, the windows of concurrent calls, and
// how the report is written at exit and on a fatal signal. The handlers by family are in
// session_graph_calls.cpp, session_captures.cpp and session_completions.cpp.
#include "record/session.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "record/recording_summary.hpp"
#include "record/session_state.hpp"

namespace gmem::record {
namespace detail {

thread_state& here(const session* s) {
  thread_local thread_state state;
  if (state.owner != s) {
    state = thread_state{};
    state.owner = s;
  }
  return state;
}

}  // namespace detail

using detail::here;
using detail::pending_call;
using detail::thread_state;

session::session(const driver_api& driver, name_source names, std::string out_path, int device_filter)
    : driver_(driver), rec_(names), out_path_(std::move(out_path)), device_filter_(device_filter) {}

std::uint64_t session::label_of(std::uint64_t stream) {
  const std::uint64_t label = rec_.stream_label(stream);
  if (rec_.knows_blocking(label)) return label;
  // Whether a synchronous copy completes its work: asked once per stream, once the driver can say.
  std::optional<bool> blocking = true;
  if (stream != legacy_stream && stream != per_thread_stream) {
    blocking = driver_.stream_blocking ? driver_.stream_blocking(stream) : std::optional<bool>(false);
  }
  if (blocking) rec_.set_blocking(label, *blocking);
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

bool session::reads_memory() const noexcept {
  return driver_.memory_used || (driver_.start_memory_reading && driver_.finish_memory_reading);
}

void session::start_reading() noexcept {
  if (!driver_.start_memory_reading || !driver_.finish_memory_reading) return;
  driver_.start_memory_reading();
  here(this).pending.reading_open = true;
}

bool session::finish_reading(int& device, std::uint64_t& used) noexcept {
  pending_call& p = here(this).pending;
  if (driver_.start_memory_reading && driver_.finish_memory_reading) {
    p.reading_open = false;
    return driver_.finish_memory_reading(device, used);
  }
  return driver_.memory_used && driver_.memory_used(device, used);
}

void session::close_reading() noexcept {
  if (!here(this).pending.reading_open) return;
  int device = 0;
  std::uint64_t used = 0;
  finish_reading(device, used);
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
// What recording costs the program.

const char* to_string(cost_part part) {
  switch (part) {
    case cost_part::instantiate_graph_read: return "instantiate: graph read";
    case cost_part::instantiate_memory: return "instantiate: cuMemGetInfo";
    case cost_part::instantiate_counters: return "instantiate: counters";
    case cost_part::instantiate_stack: return "instantiate: call stack";
    case cost_part::instantiate_record: return "instantiate: recorder";
    case cost_part::launch: return "launch";
    case cost_part::upload: return "upload";
    case cost_part::capture: return "capture begin and end";
    case cost_part::memory: return "allocations and frees";
    case cost_part::completion: return "completions";
    case cost_part::trim: return "trim";
    case cost_part::destroy: return "destroy";
    case cost_part::update: return "update";
    case cost_part::node_params: return "node parameters";
    case cost_part::companion: return "companion marks";
    case cost_part::count: break;
  }
  return "?";
}

void session::charge(cost_part part, double us) noexcept {
  const auto k = static_cast<std::size_t>(part);
  if (k >= cost_ns_.size()) return;
  cost_calls_[k].fetch_add(1, std::memory_order_relaxed);
  if (us > 0) cost_ns_[k].fetch_add(static_cast<std::uint64_t>(us * 1e3 + 0.5), std::memory_order_relaxed);
}

std::vector<profiler::record_cost> session::cost() const {
  std::vector<profiler::record_cost> out;
  for (std::size_t k = 0; k < cost_ns_.size(); ++k) {
    const std::uint64_t calls = cost_calls_[k].load(std::memory_order_relaxed);
    if (calls == 0) continue;
    profiler::record_cost c;
    c.part = to_string(static_cast<cost_part>(k));
    c.calls = calls;
    c.us = static_cast<double>(cost_ns_[k].load(std::memory_order_relaxed)) / 1e3;
    out.push_back(std::move(c));
  }
  // The companion's Python time beyond its marks (their time in this library is the marks' part).
  if (companion_calls_ > 0) {
    const double marks_us = static_cast<double>(cost_ns_[static_cast<std::size_t>(cost_part::companion)].load()) / 1e3;
    out.push_back({profiler::companion_cost_part, "", companion_calls_, std::max(0.0, companion_us_ - marks_us)});
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writing.

bool session::write(bool partial, const std::string& reason, bool analyse, std::string* why,
                    const std::string& note) noexcept {
  if (out_path_.empty()) return false;
  try {
    using clock = std::chrono::steady_clock;
    const auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
    const auto started = clock::now();
    rec_.finish();
    if (analyse) read_memory();  // at exit: the last reading, where a context is still current
    info_.partial = partial;
    info_.partial_reason = reason;
    info_.cost = cost();
    recording_info info = info_;  // this report's note is this report's alone
    if (!note.empty()) info.notes.push_back(note);
    assemble_options options;
    options.analyse = analyse;
    end_times times;
    options.threads_used = &times.threads;
    times.finish_s = since(started);
    const auto t0 = clock::now();
    profiler::report rep = assemble(rec_, env_, granularity_, info, options);
    times.analysis_s = since(t0);
    std::uint64_t bytes = 0;
    // A fatal signal's report stays on the writer thread, as its analysis does.
    kept_.trees.clear();
    profiler::report back = write_recording(rep, out_path_, bytes, &times, analyse ? 0 : 1, &kept_);
    written_ = true;
    end_ = times;
    if (!summary_as_.empty()) {
      try {
        // The summary's lines are part of the end: its line is made again with their time.
        const auto t3 = clock::now();
        std::vector<std::string> lines = summary_lines(back, summary_as_, &times);
        const std::string without = end_line(times);
        times.summary_s = since(t3);
        std::replace(lines.begin(), lines.end(), without, end_line(times));
        end_ = times;
        write_summary(lines, bytes, out_path_ + ".summary");
      } catch (const std::exception&) {  // gmemprof reads the report itself (the summary's size tells)
      }
    }
    // Kept, not freed: the program is ending (at exit, or on a fatal signal), and freeing a
    // model's 2000 graphs' report and its read-back took 70 to 90 ms of its exit (their JSON
    // trees, kept by write_recording, a tenth of the end of 16,000 rounds). The injected
    // session is never destroyed, so the process's end returns the memory at once.
    kept_.trees.push_back(std::make_shared<profiler::report>(std::move(rep)));
    kept_.trees.push_back(std::make_shared<profiler::report>(std::move(back)));
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

bool session::write_at_exit(std::string* why, double wait_s, const std::string& note) noexcept {
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
  const bool ok = write(false, "", true, why, note);
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
