#pragma once
// A short call run on a helper thread while the caller waits spinning: the recording library's
// two cuMemGetInfo readings around each instantiation cost a serving warm-up two to three times
// their own time when taken on the program's thread (the kernel's and the driver's work evict
// what the interpreter had in its core's caches), and no more than their own time when taken on
// another core (docs/benchmarks.md, "Record at scale"). The caller stays blocked until the
// call is done, so a reading still falls exactly where the caller asked for it. The helper blocks
// every signal: the program's signals go to its own threads as without it. It is named
// "gmem-readings". Both spin loops give the CPU up every 64th turn (sched_yield), so that where
// the scheduler puts the helper and the caller on one CPU neither spins through the other's time.
//
// The caller may also start a call and finish it later (start(), then in_flight::finish()), doing
// work of its own meanwhile: the recording library reads the graph while the reading before the
// instantiation is taken, and records it while the reading after it is taken.
//
// A call the helper has not finished within the caller's patience is left to it: the caller
// goes on (and makes the call itself), the call's data stay alive with the helper (shared), and
// the handoff stops for good once that call returns: a driver that blocked the helper costs the
// program one wait, never a hang.
//
// The helper spins only while calls keep coming (a burst of instantiations), for `keep_spinning`
// after the last one, then sleeps. Through a warm-up's captures it never sleeps, a second CPU busy
// throughout: a helper that slept after each instantiation and was woken as the next capture ended
// cost the capturing thread more (measured: docs/benchmarks.md, "A helper that sleeps between
// captures"). A call run() makes while it sleeps is not taken: run() wakes it
// and answers false, and the caller makes the call itself (the first of a burst, or a lone one).
// A call start() makes while it sleeps is posted and the helper woken: the caller's own work
// covers the wake-up (a model-sized graph is read in 60 us, its capture taking the helper past its
// 2 ms of spinning since the last instantiation), and finish() takes the call back if the helper
// has not begun it by then (it answers false, nothing ran, and the caller makes the call itself).
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

  /// A call started on the helper thread, until finish() (or its destruction, which finishes it
  /// with the default patience). Move-only; the thread that started it finishes it.
  class in_flight {
   public:
    in_flight() = default;
    in_flight(in_flight&& o) noexcept;
    in_flight& operator=(in_flight&& o) noexcept;
    ~in_flight();
    in_flight(const in_flight&) = delete;
    in_flight& operator=(const in_flight&) = delete;
    /// Whether the helper took the call (false: nothing runs; the caller makes the call itself).
    [[nodiscard]] bool taken() const noexcept { return taken_; }
    /// Waits until the helper has run the call: true once it has returned; false where it was not
    /// taken, or has not returned within `patience` (the helper keeps its data until it has, then
    /// stops). Later calls answer the same.
    /// A call posted while the helper slept, and not begun by it yet, is taken back: false,
    /// nothing ran.
    bool finish(std::chrono::microseconds patience = std::chrono::seconds(1)) noexcept;

   private:
    friend class handoff;
    handoff* owner_ = nullptr;  // set from start() until finish()
    std::unique_lock<std::mutex> turn_;
    bool taken_ = false, woken_ = false, done_ = false;
  };

  /// Starts `call(job.get())` on the helper thread and returns at once. Where the helper is asleep
  /// the call is posted and the helper woken (finish() takes it back if the helper has not begun
  /// it). Not taken (nothing run) where the handoff is stopped, or busy with another thread's
  /// call. `call` must not throw. Throws nothing.
  [[nodiscard]] in_flight start(void (*call)(void*), const std::shared_ptr<void>& job) noexcept;
  /// start() and finish(patience): true once the helper has run the call, false where it did not
  /// take it or it did not return within `patience`.
  bool run(void (*call)(void*), const std::shared_ptr<void>& job,
           std::chrono::microseconds patience = std::chrono::seconds(1)) noexcept;
  /// The helper ends after the call it may be running; run() answers false from then on.
  void stop() noexcept;
  /// In a child made by fork(), which has no helper thread: run() answers false for good.
  void forked() noexcept;
  /// Calls the helper has run, and calls it was asked while asleep (for tests and reports).
  [[nodiscard]] std::uint64_t handed() const noexcept { return handed_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t declined() const noexcept { return declined_.load(std::memory_order_relaxed); }
  /// Calls posted while the helper slept and taken back by their callers before it began them.
  [[nodiscard]] std::uint64_t taken_back() const noexcept { return taken_back_.load(std::memory_order_relaxed); }

 private:
  enum state : int { sleeping, spinning, asked, running, answered, stopped };
  void helper() noexcept;
  in_flight begin(void (*call)(void*), const std::shared_ptr<void>& job, bool post_while_asleep) noexcept;
  bool wait_for_answer(std::chrono::microseconds patience, bool take_back) noexcept;

  const std::chrono::microseconds keep_spinning_;
  std::atomic<int> state_{sleeping};
  void (*call_)(void*) = nullptr;
  std::shared_ptr<void> job_;  // the asked call's data, held by the helper while it runs
  std::atomic<bool> abandoned_{false};
  std::mutex turn_;  // one call at a time, held by its in_flight
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  bool wake_asked_ = false;  // under sleep_mutex_
  std::atomic<bool> wake_pending_{false};
  std::atomic<std::uint64_t> handed_{0}, declined_{0}, taken_back_{0};
  std::thread thread_;
};

}  // namespace gmem::record
