// The recording library's handoff (record/handoff.hpp): a call run on a helper thread while the
// caller waits (or works, between start and finish); run() is taken only while the helper spins
// (a sleeping helper declines and is woken), start() posts to a sleeping helper and wakes it, and
// finish() takes back a posted call not yet begun; callers on many threads each get their own call's
// answer, and a start while another thread's call is in flight is not taken; stopped and forked
// helpers decline at once; a call the helper does not finish in the caller's patience is left to
// it, and the handoff stops once it returns. Runs under ThreadSanitizer too (tools/sanitize.sh).
#include "record/handoff.hpp"

#include <gtest/gtest.h>

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace {

using gmem::record::handoff;
using namespace std::chrono_literals;

struct job {
  int in = 0;
  int out = 0;
  std::thread::id ran_on;
};

void twice(void* p) {
  auto* j = static_cast<job*>(p);
  j->out = 2 * j->in;
  j->ran_on = std::this_thread::get_id();
}

// Calls run() until the helper takes one (it is woken by the first declined call), for 2 s at
// most; the job's answer is the helper's.
bool handed_within_2s(handoff& h, void (*call)(void*), const std::shared_ptr<void>& j) {
  const auto until = std::chrono::steady_clock::now() + 2s;
  while (std::chrono::steady_clock::now() < until) {
    if (h.run(call, j)) return true;
    std::this_thread::sleep_for(100us);
  }
  return false;
}

bool handed_within_2s(handoff& h, const std::shared_ptr<job>& j) { return handed_within_2s(h, twice, j); }

TEST(Handoff, ASleepingHelperDeclinesAndWakesThenRunsTheCallOnItsThreadWhileTheCallerWaits) {
  handoff h(200ms);
  const auto j = std::make_shared<job>();
  j->in = 21;
  EXPECT_FALSE(h.run(twice, j));  // asleep at first: the caller makes the call itself
  EXPECT_EQ(j->out, 0);
  EXPECT_GE(h.declined(), 1u);
  ASSERT_TRUE(handed_within_2s(h, j));
  EXPECT_EQ(j->out, 42);  // done when run() returned
  EXPECT_NE(j->ran_on, std::this_thread::get_id());
  // Spinning now: the next calls are taken at once.
  for (int k = 0; k < 100; ++k) {
    const auto next = std::make_shared<job>();
    next->in = k;
    ASSERT_TRUE(h.run(twice, next)) << k;
    EXPECT_EQ(next->out, 2 * k);
  }
  EXPECT_GE(h.handed(), 101u);
}

// A started call runs while the caller works; finish() waits for it and gives its answer. While
// one thread's call is in flight another thread's start is not taken (it reads for itself) rather
// than waiting for the first caller's work.
struct gated_job {
  std::atomic<bool> ran{false};
};

void mark_ran(void* p) { static_cast<gated_job*>(p)->ran = true; }

TEST(Handoff, AStartedCallRunsWhileTheCallerWorksAndAnotherThreadsStartIsNotTakenMeanwhile) {
  handoff h(1s);
  ASSERT_TRUE(handed_within_2s(h, std::make_shared<job>()));
  const auto j = std::make_shared<gated_job>();
  handoff::in_flight call = h.start(mark_ran, j);
  ASSERT_TRUE(call.taken());
  const auto until = std::chrono::steady_clock::now() + 2s;
  while (!j->ran && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  EXPECT_TRUE(j->ran.load());  // run on the helper before the caller asked for its answer
  bool other_taken = true;
  std::thread other([&] {
    const auto o = std::make_shared<job>();
    o->in = 4;
    other_taken = h.start(twice, o).taken();
  });
  other.join();
  EXPECT_FALSE(other_taken);  // the turn is this caller's until it finishes
  EXPECT_TRUE(call.finish());
  EXPECT_TRUE(call.finish());  // the same answer again
  EXPECT_TRUE(call.taken());
  const auto next = std::make_shared<job>();
  next->in = 8;
  EXPECT_TRUE(h.run(twice, next));  // the turn is free again
  EXPECT_EQ(next->out, 16);
}

// A call started while the helper sleeps is posted and the helper woken: the caller's own work
// (a model-sized graph's read) covers the wake-up, and the helper's answer is the call's.
TEST(Handoff, ACallStartedWhileTheHelperSleepsIsPostedAndRunOnceItWakes) {
  handoff h(200ms);  // asleep until a first call
  const auto j = std::make_shared<gated_job>();
  handoff::in_flight call = h.start(mark_ran, j);
  ASSERT_TRUE(call.taken());
  const auto until = std::chrono::steady_clock::now() + 2s;
  while (!j->ran && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(100us);
  EXPECT_TRUE(j->ran.load());  // run on the helper, woken, while the caller worked
  EXPECT_TRUE(call.finish());
  EXPECT_EQ(h.handed(), 1u);
  EXPECT_EQ(h.declined(), 1u);  // it was asleep when asked
  EXPECT_EQ(h.taken_back(), 0u);
}

// A posted call the helper has not begun when its caller finishes is taken back: it never runs,
// finish() answers false and the caller makes the call itself. Run where the caller finishes at
// once, on fresh (sleeping) helpers: each call is either taken back or run, never both, never
// neither; and the helper never begins one after its caller took it back.
TEST(Handoff, APostedCallNotBegunIsTakenBackAndNeverRuns) {
  int taken_back = 0, ran = 0;
  for (int k = 0; k < 200; ++k) {
    handoff h(1ms);
    const auto j = std::make_shared<gated_job>();
    handoff::in_flight call = h.start(mark_ran, j);
    ASSERT_TRUE(call.taken());
    const bool answered = call.finish();
    ASSERT_EQ(answered, j->ran.load()) << k;
    ASSERT_EQ(h.taken_back(), answered ? 0u : 1u) << k;
    answered ? ++ran : ++taken_back;
    std::this_thread::sleep_for(answered ? 0ms : 2ms);  // time for a wrongly begun call to show
    ASSERT_EQ(answered, j->ran.load()) << k;
    // Asleep again or spinning: the next call is answered by the helper either way.
    const auto next = std::make_shared<job>();
    next->in = k;
    ASSERT_TRUE(handed_within_2s(h, next)) << k;
    EXPECT_EQ(next->out, 2 * k);
  }
  EXPECT_EQ(taken_back + ran, 200);
  EXPECT_GT(taken_back, 0);  // the wake-up takes microseconds; finish() follows start() at once
}

// A call started and never finished by hand is finished when it goes out of scope.
TEST(Handoff, AnUnfinishedCallIsFinishedWhenItGoesOutOfScope) {
  handoff h(1s);
  ASSERT_TRUE(handed_within_2s(h, std::make_shared<job>()));
  const auto j = std::make_shared<job>();
  j->in = 3;
  {
    handoff::in_flight call = h.start(twice, j);
    ASSERT_TRUE(call.taken());
    handoff::in_flight moved = std::move(call);
    EXPECT_FALSE(call.taken());
  }
  EXPECT_EQ(j->out, 6);
  const auto next = std::make_shared<job>();
  next->in = 5;
  EXPECT_TRUE(h.run(twice, next));
  EXPECT_EQ(next->out, 10);
}

// The program's signals go to its own threads: a process-directed signal the program blocks in
// every thread of its own (to sigwait for it) must not land on the helper.
void read_signal_mask(void* p) {
  auto* mask = static_cast<sigset_t*>(p);
  pthread_sigmask(SIG_BLOCK, nullptr, mask);
}

TEST(Handoff, TheHelperBlocksEverySignal) {
  handoff h(200ms);
  const auto mask = std::make_shared<sigset_t>();
  sigemptyset(mask.get());
  ASSERT_TRUE(handed_within_2s(h, read_signal_mask, mask));
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGCHLD, SIGPIPE}) EXPECT_EQ(sigismember(mask.get(), sig), 1) << sig;
}

// Named, so that a user who sees a busy thread in top knows whose it is.
void read_thread_name(void* p) { pthread_getname_np(pthread_self(), static_cast<char*>(p), 16); }

TEST(Handoff, TheHelperThreadIsNamedForTheReadings) {
  handoff h(200ms);
  const auto name = std::shared_ptr<char[]>(new char[16]());
  ASSERT_TRUE(handed_within_2s(h, read_thread_name, std::shared_ptr<void>(name, name.get())));
  EXPECT_STREQ(name.get(), "gmem-readings");
}

TEST(Handoff, AHelperGoesBackToSleepOnceCallsStopComing) {
  handoff h(1ms);
  const auto j = std::make_shared<job>();
  ASSERT_TRUE(handed_within_2s(h, j));
  const std::uint64_t declined = h.declined();
  std::this_thread::sleep_for(200ms);  // far past its 1 ms of spinning
  j->in = 5;
  EXPECT_FALSE(h.run(twice, j));
  EXPECT_EQ(h.declined(), declined + 1);
  ASSERT_TRUE(handed_within_2s(h, j));  // woken again
  EXPECT_EQ(j->out, 10);
}

TEST(Handoff, CallersOnManyThreadsEachGetTheirOwnAnswer) {
  handoff h(1s);
  ASSERT_TRUE(handed_within_2s(h, std::make_shared<job>()));  // up: it stays so while calls come
  std::atomic<int> wrong{0}, handed{0}, declined{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 2000; ++k) {
        const auto j = std::make_shared<job>();
        j->in = t * 100000 + k;
        if (h.run(twice, j)) {
          ++handed;
          if (j->out != 2 * j->in) ++wrong;
        } else {
          ++declined;
          if (j->out != 0) ++wrong;  // declined: nothing was run
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(handed.load() + declined.load(), 8000);
  EXPECT_EQ(static_cast<std::uint64_t>(handed.load()) + 1, h.handed());
  EXPECT_GT(handed.load(), 0);
}

TEST(Handoff, AStoppedOrForkedHelperDeclinesAtOnce) {
  handoff h(100ms);
  const auto j = std::make_shared<job>();
  ASSERT_TRUE(handed_within_2s(h, j));
  h.stop();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(h.run(twice, j));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 100ms);
  handoff child(100ms);
  ASSERT_TRUE(handed_within_2s(child, j));
  child.forked();  // a child of fork() has no helper thread: nothing waits for one
  EXPECT_FALSE(child.run(twice, j));
}

// A call that blocks the helper (a driver waiting on something the caller holds) is left to it
// after the caller's patience; its data stay alive with the helper, which stops once it returns.
struct blocking_job {
  std::atomic<bool> release{false};
  std::atomic<bool> done{false};
};

void wait_for_release(void* p) {
  auto* b = static_cast<blocking_job*>(p);
  while (!b->release.load()) std::this_thread::sleep_for(1ms);
  b->done = true;
}

TEST(Handoff, ACallNotDoneInTheCallersPatienceIsLeftToTheHelperWhichThenStops) {
  handoff h(500ms);
  ASSERT_TRUE(handed_within_2s(h, std::make_shared<job>()));
  auto blocking = std::make_shared<blocking_job>();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(h.run(wait_for_release, blocking, std::chrono::microseconds(20000)));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 20ms);
  EXPECT_LT(waited, 1s);
  std::weak_ptr<blocking_job> alive = blocking;
  blocking_job* b = blocking.get();
  blocking.reset();  // the caller has gone on: the helper keeps the job
  EXPECT_FALSE(alive.expired());
  EXPECT_FALSE(h.run(twice, std::make_shared<job>()));  // declined while it is blocked
  b->release = true;
  const auto until = std::chrono::steady_clock::now() + 2s;
  while (!alive.expired() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(alive.expired());  // done, and let go by the helper
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(h.run(twice, std::make_shared<job>()));  // stopped for good
}

}  // namespace
