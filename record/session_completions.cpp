// The recording session's handlers of completions the program sees: synchronizes, queries, events, synchronous copies.
#include "record/session_state.hpp"

namespace gmem::record {

using detail::here;
using detail::thread_state;

void session::device_synchronized() noexcept {
  if (forked_) return;
  try {
    const timed cost(*this, cost_part::completion);
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
    const timed cost(*this, cost_part::completion);
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
    const timed cost(*this, cost_part::completion);
    lock l(*this);
    rec_.on_event_record(event, label_of(stream));
    note_completions();
  } catch (...) {
  }
}

void session::event_completed(std::uint64_t event) noexcept {
  if (forked_ || !completions_matter_.load(std::memory_order_relaxed)) return;
  try {
    const timed cost(*this, cost_part::completion);
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
    const timed cost(*this, cost_part::completion);
    lock l(*this);
    rec_.on_event_destroy(event);
    note_completions();
  } catch (...) {
  }
}

void session::copied(std::uint64_t destination, std::optional<bool> to_host, bool per_thread) noexcept {
  if (forked_ || !completions_matter_.load(std::memory_order_relaxed)) return;
  try {
    const timed cost(*this, cost_part::completion);
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

}  // namespace gmem::record
