#pragma once
// The recording session's state per thread and its lock (record/session*.cpp only). Per-thread
// state (the call in flight, NVTX ranges, the stream being captured, whether this thread holds
// the lock) lives in one thread_local record that belongs to one session at a time.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "record/session.hpp"

namespace gmem::record::detail {

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
  /// allocates on several devices maps on each).
  std::vector<std::pair<int, std::optional<counters>>> others;
  /// The device memory in use before the call (an instantiation or an upload: the driver's
  /// state for the executable graph is what it took beyond a pool's growth).
  bool have_used = false;
  bool reading_open = false;  ///< a reading started and not yet answered (session::start_reading)
  int used_device = 0;
  std::uint64_t used_before = 0;
  /// What the enter callback cost (charged with the exit's: one call, one charge).
  double enter_cost_us = 0;
  double enter_memory_us = 0;    ///< an instantiation's cuMemGetInfo before it
  double enter_counters_us = 0;  ///< and its counters before it
};

struct thread_state {
  const session* owner = nullptr;
  pending_call pending;
  std::vector<std::string> nvtx;
  std::uint64_t capturing = 0;  ///< the stream this thread captures into (0: none)
  bool capturing_any = false;
  bool holding = false;         ///< this thread holds its session's lock
  /// The allocator's pool a warm-up run on this thread takes memory into (the companion's
  /// "gmem:warmup-begin"), empty when none, and its device.
  std::string warmup_pool;
  int warmup_device = 0;
  /// The companion's word about the next capture this thread begins ("gmem:capture", said
  /// before it begins, with the pool of the capture before it where PyTorch made that one), and
  /// the graph of the last capture it ended, with the framework pool that capture took memory into
  /// (named by the next word, or by "gmem:captured" or the end).
  bool capture_told = false;
  std::string told_pool, told_site, told_label, told_previous_pool;
  int told_device = 0;
  std::uint64_t last_captured = 0;
  std::size_t last_capture_pool = recorder::no_pool;
  /// The graph record that capture became where this thread instantiated it (PyTorch destroys
  /// the captured graph inside capture_end, before the companion's word after it).
  std::size_t last_captured_record = recorder::no_pool;
  /// The Python site the companion named for this thread's last capture ("" where it named none).
  std::string captured_site;
  /// An executable graph being destroyed while state is outstanding: the memory in use before.
  bool destroy_reading = false;
  int destroy_device = 0;
  std::uint64_t destroy_used_before = 0;
  /// A stream being made while this thread captures: the device's used memory before the call.
  bool stream_reading = false;
  int stream_device = 0;
  std::uint64_t stream_used_before = 0;
};

/// This thread's state for session `s` (reset when the thread last served another session).
thread_state& here(const session* s);

}  // namespace gmem::record::detail

namespace gmem::record {

// The session's lock, marked as this thread's while held: exit() on this thread (from a signal
// handler that interrupted a callback) must not wait for it.
struct session::lock {
  explicit lock(session& s) : s_(s), t_(detail::here(&s)) {
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
  detail::thread_state& t_;
};

// Charges a part of what recording costs the time from construction to destruction.
// `carried_us`: time the same call spent earlier (in its enter callback).
struct session::timed {
  timed(session& s, cost_part part) : s_(s), part_(part), start_us_(s.driver_.now_us()) {}
  timed(session& s, cost_part part, double start_us, double carried_us = 0)
      : s_(s), part_(part), start_us_(start_us - carried_us) {}
  ~timed() { s_.charge(part_, s_.driver_.now_us() - start_us_); }
  timed(const timed&) = delete;
  timed& operator=(const timed&) = delete;

 private:
  session& s_;
  cost_part part_;
  double start_us_;
};

}  // namespace gmem::record
