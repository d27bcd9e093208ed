// The recording session's handlers of captures, and of memory the capturing thread takes and frees.
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "record/session_state.hpp"

namespace gmem::record {

using detail::here;
using detail::thread_state;

namespace {

/// GMEM_RECORD_TRACE_MEMORY=1: one line on standard error for each device allocation, free and
/// release the recording sees, with the thread and what it was doing (a capture, a warm-up into
/// a named pool), for finding whose memory a bill line holds. Off unless asked.
// Read once as the library loads: a plain load on the paths every free takes, no guard.
const bool tracing_memory_on = [] {
  const char* v = std::getenv("GMEM_RECORD_TRACE_MEMORY");
  return v && *v && *v != '0';
}();

bool tracing_memory() noexcept { return tracing_memory_on; }

void trace_memory(const char* what, std::uint64_t handle, std::uint64_t bytes, const thread_state& t,
                  int open) noexcept {
  char line[320];
  const int n = std::snprintf(line, sizeof line,
                              "gmem-trace %s handle=0x%llx bytes=%llu thread=%ld capturing=0x%llx warmup=%s open=%d\n",
                              what, static_cast<unsigned long long>(handle), static_cast<unsigned long long>(bytes),
                              static_cast<long>(::syscall(SYS_gettid)),
                              static_cast<unsigned long long>(t.capturing_any ? t.capturing : 0),
                              t.warmup_pool.empty() ? "-" : t.warmup_pool.c_str(), open);
  if (n > 0) {
    [[maybe_unused]] const ssize_t w = ::write(2, line, static_cast<std::size_t>(std::min(n, static_cast<int>(sizeof line) - 1)));
  }
}

}  // namespace

void session::capture_begin(std::uint64_t stream) noexcept {
  if (forked_) return;
  try {
    const timed cost(*this, cost_part::capture);
    thread_state& t = here(this);
    lock l(*this);
    rec_.on_capture_begin(stream, t.nvtx.empty() ? "" : t.nvtx.back());
    t.captured_site = t.capture_told ? t.told_site : std::string();
    if (t.capture_told) {  // the companion said where this capture is made, and into which pool
      t.capture_told = false;
      if (!t.told_previous_pool.empty()) {  // and the pool PyTorch made for the capture before it
        told_captured(t, t.told_previous_pool, -1);
        t.told_previous_pool.clear();
      }
      // A device the companion left to the library: the capturing thread's, as the capture begins.
      rec_.on_capture_named(stream, t.told_pool, told_device(t.told_device), t.told_site, t.told_label);
    }
  } catch (...) {
  }
}

void session::open(const open_context& c) noexcept {
  try {
    lock l(*this);
    open_[&here(this)] = c;
    open_contexts_.store(static_cast<int>(open_.size()), std::memory_order_relaxed);
  } catch (...) {
  }
}

void session::close() noexcept {
  if (open_contexts_.load(std::memory_order_relaxed) == 0) return;
  try {
    lock l(*this);
    open_.erase(&here(this));
    open_contexts_.store(static_cast<int>(open_.size()), std::memory_order_relaxed);
  } catch (...) {
  }
}

void session::capture_began(std::uint64_t stream, bool ok) noexcept {
  thread_state& t = here(this);
  if (ok) {
    t.capturing = stream;
    t.capturing_any = true;
    open_context c;
    c.capture = true;
    c.stream = stream;
    open(c);
  }
}

void session::capture_end(std::uint64_t stream, std::uint64_t graph) noexcept {
  if (forked_) return;
  try {
    const timed cost(*this, cost_part::capture);
    thread_state& t = here(this);
    if (t.capturing_any) close();
    t.capturing = 0;
    t.capturing_any = false;
    t.last_captured = graph;
    t.last_capture_pool = recorder::no_pool;
    t.last_captured_record = recorder::no_pool;
    if (graph == 0) return;
    lock l(*this);
    t.last_capture_pool = rec_.on_capture_end(stream, graph);
  } catch (...) {
  }
}

void session::device_alloc(std::uint64_t handle, std::uint64_t bytes, std::optional<int> device) noexcept {
  if (forked_) return;
  try {
    thread_state& t = here(this);
    if (tracing_memory()) trace_memory("alloc", handle, bytes, t, open_contexts_.load(std::memory_order_relaxed));
    // Memory a capture takes, or a warm-up run the companion named: a private pool growing. On
    // a thread of neither, while exactly one is under way on another thread, it is that one's
    // (PyTorch's autograd engine runs the backward of a capture on its own thread).
    if (!t.capturing_any && t.warmup_pool.empty() && open_contexts_.load(std::memory_order_relaxed) == 0) return;
    const timed cost(*this, cost_part::memory);
    const int d = device ? *device : driver_.current_device();
    const double now = driver_.now_us();
    const bool address = !device;  // cuMemAlloc's pointer, not cuMemCreate's handle
    // Whose call took it, before the lock: a pool's segment (the framework's allocator), or a
    // library's buffer the bill's end tells apart from the pool's segments.
    const std::string library = driver_.calling_object ? driver_.calling_object() : std::string();
    lock l(*this);
    if (t.capturing_any) {
      rec_.on_capture_alloc(t.capturing, handle, bytes, d, now, address, library);
    } else if (!t.warmup_pool.empty()) {
      rec_.on_warmup_alloc(t.warmup_pool, d, handle, bytes, address, library);
    } else if (open_.size() == 1) {
      const open_context& c = open_.begin()->second;
      if (c.capture) {
        rec_.on_capture_alloc(c.stream, handle, bytes, d, now, address, library);
      } else {
        rec_.on_warmup_alloc(c.pool, d, handle, bytes, address, library);
      }
    }
  } catch (...) {
  }
}

void session::stream_create_enter() noexcept {
  if (forked_) return;
  thread_state& t = here(this);
  t.stream_reading = false;
  if (!t.capturing_any || !driver_.memory_used) return;
  try {
    const timed cost(*this, cost_part::memory);
    t.stream_reading = driver_.memory_used(t.stream_device, t.stream_used_before);
  } catch (...) {
  }
}

void session::stream_create_exit(bool ok) noexcept {
  thread_state& t = here(this);
  if (!t.stream_reading) return;
  t.stream_reading = false;
  if (forked_ || !ok || !t.capturing_any) return;
  try {
    const timed cost(*this, cost_part::memory);
    int device = 0;
    std::uint64_t used = 0;
    if (!driver_.memory_used(device, used) || device != t.stream_device || used <= t.stream_used_before) return;
    const std::string library = driver_.calling_object ? driver_.calling_object() : std::string();
    if (tracing_memory()) trace_memory("stream", 0, used - t.stream_used_before, t, open_contexts_.load(std::memory_order_relaxed));
    lock l(*this);
    rec_.on_capture_stream(t.capturing, device, used - t.stream_used_before, library);
  } catch (...) {
  }
}

void session::device_free(std::uint64_t address, std::optional<std::uint64_t> stream) noexcept {
  if (forked_) return;
  if (tracing_memory()) trace_memory(stream ? "free-async" : "free", address, 0, here(this), open_contexts_.load(std::memory_order_relaxed));
  // A stream-ordered free of an address no graph has held (the frees a capture makes into its
  // graph, the program's own): nothing to record, known without a clock or the lock.
  if (stream && !rec_.might_hold(address)) return;
  try {
    const timed cost(*this, cost_part::memory);
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
  if (tracing_memory()) trace_memory("release", handle, 0, here(this), open_contexts_.load(std::memory_order_relaxed));
  try {
    const timed cost(*this, cost_part::memory);
    const double now = driver_.now_us();
    lock l(*this);
    rec_.on_capture_memory_free(handle, now);
  } catch (...) {
  }
}

}  // namespace gmem::record
