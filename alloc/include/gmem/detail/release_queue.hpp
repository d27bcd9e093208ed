#pragma once
// A thread of gmem's own that runs releases handed to it from places where they may not run.
// A CUDA user object's destructor callback runs on a thread the driver shares for its own
// work, and may neither call CUDA nor block (the runtime API's rule for cudaUserObjectCreate,
// as for cudaLaunchHostFunc); it may signal another thread, if that thread does not hold up
// work scheduled through CUDA. The callback posts here; the queue's thread makes the CUDA calls
// (cudaFree of an outside buffer). Plain C++ (no CUDA): tested without a GPU.
//
// Invariants:
//  - post() takes the queue's lock only to append, and never waits for a task: the driver's
//    thread is held up for no longer than a push;
//  - the worker runs tasks one at a time, in the order posted, with the lock released: a task
//    that waits on the device (cudaFree waits for work in flight) holds up only this thread,
//    and no CUDA work waits for this thread (the dependency runs one way);
//  - a task that throws is reported on stderr and the worker goes on;
//  - done() counts tasks run; drain() waits until every task posted before it has run.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace gmem::detail {

class release_queue {
 public:
  /// Starts the worker thread.
  release_queue();
  /// Runs what is still queued, then stops the worker.
  ~release_queue();
  release_queue(const release_queue&) = delete;
  release_queue& operator=(const release_queue&) = delete;

  /// Queues `task` for the worker; never throws, never waits for a task (a task that cannot be
  /// queued for lack of memory is dropped and reported on stderr).
  void post(std::function<void()> task) noexcept;

  /// Waits until every task posted before this call has run. Not from a task.
  void drain();

  /// Tasks posted and tasks run so far.
  [[nodiscard]] std::uint64_t posted() const;
  [[nodiscard]] std::uint64_t done() const;

  /// The worker's thread id (to tell where a task ran).
  [[nodiscard]] std::thread::id worker_id() const noexcept { return worker_.get_id(); }

  /// The process's queue: made on first use and never destroyed, since user objects may be
  /// released while the process exits, after static destructors ran (tasks still queued at exit
  /// are not run: the process's memory goes with it).
  static release_queue& process();

 private:
  void run();

  mutable std::mutex mu_;
  std::condition_variable wake_;       ///< the worker: a task or the stop arrived
  std::condition_variable progress_;   ///< drain(): a task finished
  std::deque<std::function<void()>> tasks_;
  std::uint64_t posted_ = 0;
  std::uint64_t done_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace gmem::detail
