#pragma once
// Work shared among threads inside the recorded program (the recording's end): helper threads
// that block every signal (the program's handlers run on its own threads only) and are named
// for top and /proc; a helper that cannot be started leaves its share to the others.

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <system_error>
#include <thread>
#include <vector>

namespace gmem::record {

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
        pthread_setname_np(pthread_self(), "gmem-analysis");
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

}  // namespace gmem::record
