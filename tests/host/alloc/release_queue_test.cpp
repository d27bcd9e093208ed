// gmem's release thread: what a user object's destructor callback hands over runs there, in
// order, and the callback never waits for it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

#include "gmem/detail/release_queue.hpp"

namespace {

using gmem::detail::release_queue;
using namespace std::chrono_literals;

TEST(ReleaseQueue, RunsTasksInTheOrderPostedOnItsOwnThread) {
  release_queue q;
  std::vector<int> order;
  std::vector<std::thread::id> threads;
  for (int i = 0; i < 5; ++i) {
    q.post([&, i] {
      order.push_back(i);
      threads.push_back(std::this_thread::get_id());
    });
  }
  q.drain();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  for (const auto& id : threads) {
    EXPECT_NE(id, std::this_thread::get_id());
    EXPECT_EQ(id, q.worker_id());
  }
  EXPECT_EQ(q.posted(), 5u);
  EXPECT_EQ(q.done(), 5u);
}

TEST(ReleaseQueue, PostNeverWaitsForATaskThatIsRunning) {
  release_queue q;
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::atomic<int> ran{0};
  q.post([gate, &ran] {
    gate.wait();  // a release waiting on the device, say
    ++ran;
  });
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) q.post([&ran] { ++ran; });
  const auto posting = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(posting, 1s);  // 100 posts while the worker is stuck: no post waited for it
  EXPECT_EQ(ran.load(), 0);
  go.set_value();
  q.drain();
  EXPECT_EQ(ran.load(), 101);
}

TEST(ReleaseQueue, ATaskThatThrowsIsReportedAndTheNextStillRuns) {
  release_queue q;
  std::atomic<bool> second{false};
  testing::internal::CaptureStderr();  // before the worker can run the task
  q.post([] { throw std::runtime_error("cudaFree failed"); });
  q.post([&second] { second = true; });
  q.drain();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(second.load());
  EXPECT_NE(err.find("a deferred release failed: cudaFree failed"), std::string::npos) << err;
  EXPECT_EQ(q.done(), 2u);
}

TEST(ReleaseQueue, DestroyingTheQueueRunsWhatIsStillQueued) {
  std::atomic<int> ran{0};
  {
    release_queue q;
    std::promise<void> go;
    std::shared_future<void> gate = go.get_future().share();
    q.post([gate] { gate.wait(); });
    for (int i = 0; i < 10; ++i) q.post([&ran] { ++ran; });
    go.set_value();
  }
  EXPECT_EQ(ran.load(), 10);
}

TEST(ReleaseQueue, DrainFromManyThreadsReturnsOnceTheirTasksRan) {
  release_queue q;
  std::atomic<int> ran{0};
  std::vector<std::thread> posters;
  for (int t = 0; t < 4; ++t) {
    posters.emplace_back([&] {
      for (int i = 0; i < 50; ++i) q.post([&ran] { ++ran; });
      q.drain();
      EXPECT_GE(ran.load(), 50);
    });
  }
  for (auto& p : posters) p.join();
  q.drain();
  EXPECT_EQ(ran.load(), 200);
}

TEST(ReleaseQueue, TheProcessQueueIsOneAndAlwaysThere) {
  release_queue& a = release_queue::process();
  release_queue& b = release_queue::process();
  EXPECT_EQ(&a, &b);
  std::atomic<bool> ran{false};
  a.post([&ran] { ran = true; });
  a.drain();
  EXPECT_TRUE(ran.load());
}

}  // namespace
