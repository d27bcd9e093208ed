#pragma once
// A short call run on a helper thread while the caller waits spinning: the recording library's
// two cuMemGetInfo readings around each instantiation cost a serving warm-up two to three times
// their own time when taken on the program's thread (the kernel's and the driver's work evict
// what the interpreter had in its core's caches), and no more than their own time when taken on
// another core (H100; docs/benchmarks.md, "Record at scale"). The caller stays blocked until the
// call is done, so a reading still falls exactly where the caller asked for it. The helper blocks
// every signal: the program's signals go to its own threads as without it.
//
// A call the helper has not finished within the caller's patience is left to it: the caller
// goes on (and makes the call itself), the call's data stay alive with the helper (shared), and
// the handoff stops for good once that call returns: a driver that blocked the helper costs the
// program one wait, never a hang.
//
// The helper spins only while calls keep coming (a burst of instantiations), for `keep_spinning`
// after the last one, then sleeps. A call made while it sleeps is not taken: run() wakes it and
// answers false, and the caller makes the call itself (the first of a burst, or a lone one).
// Plain C++, no CUDA: host-tested.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace gmem::record {

class handoff {
 public:
  explicit handoff(std::chrono::microseconds keep_spinning);
  /// Stops the helper (stop()) and waits for it.
  ~handoff();
  handoff(const handoff&) = delete;
  handoff& operator=(const handoff&) = delete;

  /// Runs `call(job.get())` on the helper thread and returns true once it has returned; false,
  /// with nothing run, where the helper is asleep (it is woken for the next call) or stopped;
  /// false too where the call has not returned within `patience` (the helper keeps `job` until
  /// it has, then stops). One call at a time: concurrent callers take turns. `call` must not
  /// throw. Throws nothing.
  bool run(void (*call)(void*), const std::shared_ptr<void>& job,
           std::chrono::microseconds patience = std::chrono::seconds(1)) noexcept;
  /// The helper ends after the call it may be running; run() answers false from then on.
  void stop() noexcept;
  /// In a child made by fork(), which has no helper thread: run() answers false for good.
  void forked() noexcept;
  /// Calls the helper has run, and calls it was asked while asleep (for tests and reports).
  [[nodiscard]] std::uint64_t handed() const noexcept { return handed_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t declined() const noexcept { return declined_.load(std::memory_order_relaxed); }

 private:
  enum state : int { sleeping, spinning, asked, answered, stopped };
  void helper() noexcept;

  const std::chrono::microseconds keep_spinning_;
  std::atomic<int> state_{sleeping};
  void (*call_)(void*) = nullptr;
  std::shared_ptr<void> job_;  // the asked call's data, held by the helper while it runs
  std::atomic<bool> abandoned_{false};
  std::mutex turn_;  // one caller at a time
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  bool wake_asked_ = false;  // under sleep_mutex_
  std::atomic<bool> wake_pending_{false};
  std::atomic<std::uint64_t> handed_{0}, declined_{0};
  std::thread thread_;
};

}  // namespace gmem::record
