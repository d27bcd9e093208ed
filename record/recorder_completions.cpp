// Completions the program saw: a synchronize, a query that reported idle or done, an event
// synchronize, a synchronous copy to the host. The pool model lets launches in other streams
// share the granules of work known complete (the driver shares them once the work is done:
// tools/completion_cases.sh, C1-C3 and C7 on an H100). A stream that waits on an event is
// ordered after it but does not share (C4): waits are not completions.
//
// Launches and uploads number their stream's work (recorder::log); an event remembers the
// number its stream had reached when it was recorded. A completion is logged only when it
// completes tracked work not yet known complete, so that a program that queries events in a
// loop (PyTorch's caching allocator does) adds nothing to the sequence.
#include <iterator>

#include "record/recorder.hpp"

namespace gmem::record {

void recorder::complete(std::uint64_t stream, std::int64_t upto, double t_us) {
  const auto work = stream_work_.find(stream);
  if (work == stream_work_.end()) return;
  const std::uint64_t reached = upto < 0 ? work->second : static_cast<std::uint64_t>(upto);
  std::uint64_t& known = complete_upto_[stream];
  if (reached <= known) return;
  known = reached;
  for (auto it = events_.begin(); it != events_.end();) {  // events that stand for nothing new now
    it = it->second.stream == stream && it->second.ordinal <= known ? events_.erase(it) : std::next(it);
  }
  sequence_entry e{'S', 0, stream, -1, 1, 0, -1, t_us};
  e.upto = upto < 0 || reached >= work->second ? -1 : upto;
  log(e);
}

void recorder::on_sync(std::uint64_t stream, double t_us) {
  if (stream != 0) {
    complete(stream, -1, t_us);
    return;
  }
  bool pending = false;
  for (const auto& [label, n] : stream_work_) pending = pending || n > complete_upto_[label];
  if (!pending) return;
  for (const auto& [label, n] : stream_work_) complete_upto_[label] = n;
  events_.clear();
  log({'S', 0, 0, -1, 1, 0, -1, t_us});
}

bool recorder::awaiting_completion() const {
  if (!events_.empty()) return true;
  for (const auto& [label, n] : stream_work_) {
    const auto known = complete_upto_.find(label);
    if (n > (known == complete_upto_.end() ? 0 : known->second)) return true;
  }
  return false;
}

void recorder::on_event_record(std::uint64_t event, std::uint64_t stream) {
  const auto work = stream_work_.find(stream);
  if (work == stream_work_.end() || work->second <= complete_upto_[stream]) {
    events_.erase(event);  // nothing tracked before it runs: its completion says nothing new
    return;
  }
  events_[event] = {stream, work->second};
}

void recorder::on_event_complete(std::uint64_t event, double t_us) {
  const auto it = events_.find(event);
  if (it == events_.end()) return;
  complete(it->second.stream, static_cast<std::int64_t>(it->second.ordinal), t_us);
}

void recorder::on_sync_copy(std::uint64_t per_thread_label, bool per_thread, double t_us) {
  if (per_thread) {
    complete(per_thread_label, -1, t_us);
    return;
  }
  // The legacy default stream waits for every blocking stream's work before the copy, and the
  // copy returns when it is done (C7); non-blocking streams go on (C8).
  for (const auto& [label, blocking] : blocking_) {
    if (blocking) complete(label, -1, t_us);
  }
}

}  // namespace gmem::record
