#include "gmem/detail/release_queue.hpp"

#include <cstdio>
#include <exception>
#include <utility>

namespace gmem::detail {

release_queue::release_queue() : worker_([this] { run(); }) {}

release_queue::~release_queue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  worker_.join();
}

void release_queue::post(std::function<void()> task) noexcept {
  try {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
      ++posted_;
    }
    wake_.notify_one();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmem: a release could not be queued (%s); what it releases is kept\n",
                 e.what());
  }
}

void release_queue::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  const std::uint64_t target = posted_;
  progress_.wait(lock, [&] { return done_ >= target; });
}

std::uint64_t release_queue::posted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return posted_;
}

std::uint64_t release_queue::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void release_queue::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and nothing is left
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    try {
      task();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gmem: a deferred release failed: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "gmem: a deferred release failed with an unknown exception\n");
    }
    task = nullptr;  // what the task held goes before it counts as done
    lock.lock();
    ++done_;
    progress_.notify_all();
  }
}

release_queue& release_queue::process() {
  // Never destroyed: a user object's last reference may go while the process exits.
  static release_queue* const queue = new release_queue();
  return *queue;
}

}  // namespace gmem::detail
