#pragma once
// Work shared among threads: helper threads that block every signal (inside a recorded program,
// its handlers run on its own threads only) and are named for top and /proc; a helper that
// cannot be started leaves its share to the others.

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <system_error>
#include <thread>
#include <vector>

namespace gmem::profiler {

/// Calls fn(i) once for each i in `items`, on up to `threads` threads, the calling one among
/// them; returns when every call has returned. `fn` must not throw.
template <class F>
void for_each_on_threads(const std::vector<std::size_t>& items, unsigned threads, const F& fn) {
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t k = next.fetch_add(1); k < items.size(); k = next.fetch_add(1)) fn(items[k]);
  };
  const std::size_t helpers_wanted =
      threads > 1 && items.size() > 1 ? std::min<std::size_t>(threads - 1, items.size() - 1) : 0;
  std::vector<std::thread> helpers;
  helpers.reserve(helpers_wanted);
  // Helpers start with every signal blocked (a thread inherits its creator's mask), so that no
  // signal reaches one between its start and its work; the calling thread's mask is restored.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  for (std::size_t t = 0; t < helpers_wanted; ++t) {
    try {
      helpers.emplace_back([&work] {
        pthread_setname_np(pthread_self(), "gmem-worker");
        work();
      });
    } catch (const std::system_error&) {
      break;  // no more threads for this process: the ones started do the rest
    }
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  work();
  for (std::thread& h : helpers) h.join();
}

/// The CPUs this process may run on, at most `at_most` (1 where the affinity cannot be read).
inline unsigned cpus_to_use(unsigned at_most) {
  unsigned cpus = 1;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
  return std::min(cpus, at_most);
}

/// Runs work(0), ..., work(n - 1), each exactly once, perhaps several at once on threads of the
/// caller's choosing, and returns when every one has returned; `work` throws nothing. A report's
/// writing and reading share its scenarios among them, the pool analysis its graphs' layouts
/// (each made alone); what they make is the same whatever runs them.
using for_each_index = std::function<void(std::size_t n, const std::function<void(std::size_t)>& work)>;

/// work(0), ..., work(n - 1) through `each`; on this thread, in order, where none is given.
inline void run_each(const for_each_index& each, std::size_t n, const std::function<void(std::size_t)>& work) {
  if (each && n > 1) {
    each(n, work);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) work(i);
}

/// run_each of work that may throw: each index's exception (null where work(i) returned), so
/// that the caller throws the one a run in order would have stopped at, whatever order the
/// threads took.
inline std::vector<std::exception_ptr> run_each_keeping_errors(const for_each_index& each, std::size_t n,
                                                               const std::function<void(std::size_t)>& work) {
  std::vector<std::exception_ptr> failed(n);
  run_each(each, n, [&](std::size_t i) {
    try {
      work(i);
    } catch (...) {
      failed[i] = std::current_exception();
    }
  });
  return failed;
}

/// Throws the first exception `errors` holds, if any.
inline void rethrow_first(const std::vector<std::exception_ptr>& errors) {
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

/// How many runs run_ranges makes of n indexes: up to 64, of `least` indexes or more each.
inline std::size_t run_count(std::size_t n, std::size_t least) {
  return std::max<std::size_t>(1, std::min<std::size_t>(64, n / std::max<std::size_t>(1, least)));
}

/// work(r, from, to) for each run r of run_count(n, least) runs of consecutive indexes [from, to)
/// that cover 0 .. n - 1 in order, through `each`; throws the first run's exception, if any.
inline void run_ranges(const for_each_index& each, std::size_t n, std::size_t least,
                       const std::function<void(std::size_t r, std::size_t from, std::size_t to)>& work) {
  const std::size_t runs = run_count(n, least);
  rethrow_first(run_each_keeping_errors(each, runs, [&](std::size_t r) { work(r, n * r / runs, n * (r + 1) / runs); }));
}

/// work(0), ..., work(n - 1) through `each` in run_ranges' runs, each run in order; throws the
/// exception a run of all in order would have stopped at: the first run's that failed, the first
/// of its indexes that threw.
inline void run_in_runs(const for_each_index& each, std::size_t n, std::size_t least,
                        const std::function<void(std::size_t)>& work) {
  run_ranges(each, n, least, [&](std::size_t, std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) work(i);
  });
}

/// A for_each_index on up to `threads` threads (for_each_on_threads).
inline for_each_index on_threads(unsigned threads) {
  return [threads](std::size_t n, const std::function<void(std::size_t)>& work) {
    std::vector<std::size_t> items(n);
    for (std::size_t i = 0; i < n; ++i) items[i] = i;
    for_each_on_threads(items, threads, work);
  };
}

}  // namespace gmem::profiler
