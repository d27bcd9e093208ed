#include "record/handoff.hpp"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace gmem::record {
namespace {

void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Every 64th turn of a spin loop gives the CPU up to any other thread waiting for it: where the
// scheduler has put the helper and the program's thread on one CPU, neither spins through the
// other's time slice (the caller waiting for a reading the helper cannot take, or the helper
// spinning while the program works). Where the CPU is free, sched_yield returns at once.
void spin(unsigned k) noexcept {
  if ((k & 63) == 63) {
    sched_yield();
  } else {
    pause();
  }
}

}  // namespace

handoff::handoff(std::chrono::microseconds keep_spinning) : keep_spinning_(keep_spinning) {
  thread_ = std::thread([this] { helper(); });
}

handoff::~handoff() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void handoff::helper() noexcept {
  using clock = std::chrono::steady_clock;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_setname_np(pthread_self(), "gmem-readings");  // as top and /proc name it
  for (;;) {
    {  // asleep until a caller wakes it (the first state), or stopped
      std::unique_lock<std::mutex> l(sleep_mutex_);
      wake_.wait(l, [this] { return wake_asked_ || state_.load(std::memory_order_acquire) == stopped; });
      wake_asked_ = false;
      wake_pending_.store(false, std::memory_order_relaxed);
      int s = sleeping;
      state_.compare_exchange_strong(s, spinning, std::memory_order_acq_rel);  // unless stopped
    }
    auto until = clock::now() + keep_spinning_;
    for (unsigned k = 0;; ++k) {
      int s = state_.load(std::memory_order_acquire);
      if (s == stopped) return;
      // A call is begun only by taking it (its caller may take back one posted while the helper
      // slept, until it is begun).
      if (s == asked && state_.compare_exchange_strong(s, running, std::memory_order_acq_rel)) {
        const std::shared_ptr<void> job = job_;  // alive while it runs, whatever the caller does
        call_(job.get());
        handed_.fetch_add(1, std::memory_order_relaxed);
        state_.store(answered, std::memory_order_release);
        until = clock::now() + keep_spinning_;
        s = answered;
      }
      if (abandoned_.load(std::memory_order_acquire)) {  // a caller gave up on a call: no more
        job_.reset();  // no caller touches it once one gave up
        state_.store(stopped, std::memory_order_release);
        return;
      }
      if (s == answered) continue;
      if (s == sleeping) break;  // its caller took the call back before it was begun: asleep again
      // Asleep only from `spinning`: a call asked (or answered, not yet collected) keeps it up.
      if (s == spinning && (k & 63) == 0 && clock::now() >= until &&
          state_.compare_exchange_strong(s, sleeping, std::memory_order_acq_rel)) {
        break;
      }
      spin(k);
    }
  }
}

handoff::in_flight handoff::start(void (*call)(void*), const std::shared_ptr<void>& job) noexcept {
  return begin(call, job, true);
}

handoff::in_flight handoff::begin(void (*call)(void*), const std::shared_ptr<void>& job, bool post_while_asleep) noexcept {
  in_flight f;
  if (state_.load(std::memory_order_acquire) == stopped) return f;  // a forked child too
  std::unique_lock<std::mutex> turn(turn_, std::try_to_lock);
  if (!turn.owns_lock() || abandoned_.load(std::memory_order_acquire)) return f;  // another call
  call_ = call;
  job_ = job;
  int s = spinning;
  bool posted = state_.compare_exchange_strong(s, asked, std::memory_order_acq_rel);
  const bool asleep = !posted && s == sleeping;
  if (asleep && post_while_asleep) posted = state_.compare_exchange_strong(s, asked, std::memory_order_acq_rel);
  if (!posted) job_.reset();
  if (asleep) {
    declined_.fetch_add(1, std::memory_order_relaxed);
    if (!wake_pending_.exchange(true, std::memory_order_relaxed)) {
      {
        std::lock_guard<std::mutex> l(sleep_mutex_);
        wake_asked_ = true;
      }
      wake_.notify_one();
    }
  }
  if (!posted) return f;
  f.owner_ = this;
  f.taken_ = true;
  f.woken_ = asleep;
  f.turn_ = std::move(turn);
  return f;
}

// The helper answers every call it was asked before it stops or sleeps. A call posted while it
// slept is taken back where it has not begun it yet: the caller makes the call itself.
bool handoff::wait_for_answer(std::chrono::microseconds patience, bool take_back) noexcept {
  int s = asked;
  if (take_back && state_.compare_exchange_strong(s, sleeping, std::memory_order_acq_rel)) {
    job_.reset();
    taken_back_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const auto until = std::chrono::steady_clock::now() + patience;
  for (unsigned k = 1; state_.load(std::memory_order_acquire) != answered; ++k) {
    if ((k & 255) == 0 && std::chrono::steady_clock::now() >= until) {
      abandoned_.store(true, std::memory_order_release);
      return false;
    }
    spin(k);
  }
  job_.reset();
  state_.store(spinning, std::memory_order_release);
  return true;
}

bool handoff::run(void (*call)(void*), const std::shared_ptr<void>& job,
                  std::chrono::microseconds patience) noexcept {
  return begin(call, job, false).finish(patience);
}

handoff::in_flight::in_flight(in_flight&& o) noexcept
    : owner_(std::exchange(o.owner_, nullptr)),
      turn_(std::move(o.turn_)),
      taken_(std::exchange(o.taken_, false)),
      woken_(std::exchange(o.woken_, false)),
      done_(std::exchange(o.done_, false)) {}

handoff::in_flight& handoff::in_flight::operator=(in_flight&& o) noexcept {
  if (this != &o) {
    finish();
    owner_ = std::exchange(o.owner_, nullptr);
    turn_ = std::move(o.turn_);
    taken_ = std::exchange(o.taken_, false);
    woken_ = std::exchange(o.woken_, false);
    done_ = std::exchange(o.done_, false);
  }
  return *this;
}

handoff::in_flight::~in_flight() { finish(); }

bool handoff::in_flight::finish(std::chrono::microseconds patience) noexcept {
  if (owner_) {
    done_ = owner_->wait_for_answer(patience, woken_);
    owner_ = nullptr;
    turn_ = std::unique_lock<std::mutex>();  // the next call's turn
  }
  return done_;
}

void handoff::stop() noexcept {
  if (state_.load(std::memory_order_acquire) != stopped) {
    std::lock_guard<std::mutex> turn(turn_);  // no call in flight
    state_.store(stopped, std::memory_order_release);
  }
  {
    std::lock_guard<std::mutex> l(sleep_mutex_);
    wake_asked_ = true;
  }
  wake_.notify_one();
}

void handoff::forked() noexcept { state_.store(stopped, std::memory_order_release); }

}  // namespace gmem::record
