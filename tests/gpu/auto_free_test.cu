// AutoFreeOnLaunch: the guide's single-producer / multiple-consumer loop, and the relaunch
// the driver refuses without it.
#include "gpu_test_support.cuh"

namespace gmem::test {
namespace {

using AutoFree = GpuTest;

constexpr int n = 512;
constexpr std::size_t bytes = n * sizeof(int);

TEST_F(AutoFree, SingleProducerMultipleConsumerLoop) {
  stream s;
  device_ints counter(1, 0), sum1(n, 0), sum2(n, 0);

  capture producer_capture(s, "producer");
  int* data1 = static_cast<int*>(producer_capture.malloc_async(bytes));
  int* data2 = static_cast<int*>(producer_capture.malloc_async(bytes));
  produce_from_counter<<<1, 128, 0, s>>>(counter.get(), data1, data2, n);
  graph producer_graph = producer_capture.end();
  ASSERT_EQ(producer_graph.ledger().unfreed().size(), 2u);
  instantiate_options auto_free;
  auto_free.auto_free_on_launch = true;
  graph_exec producer(producer_graph, auto_free);

  capture c1(s, "consumer 1");
  accumulate<<<blocks_for(n), threads(), 0, s>>>(data1, sum1.get(), n);
  graph_exec consumer1(c1.end());
  capture c2(s, "consumer 2");
  accumulate<<<blocks_for(n), threads(), 0, s>>>(data2, sum2.get(), n);
  graph_exec consumer2(c2.end());

  // Iterations 0..5; consumer 2 runs on odd ones.
  long long expect1 = 0, expect2 = 0;
  int consumer2_runs = 0;
  for (int it = 0; it < 6; ++it) {
    producer.launch(s);  // frees the previous iteration's data1/data2 first
    consumer1.launch(s);
    expect1 += 1000LL * it;
    if (it % 2 == 1) {
      consumer2.launch(s);
      expect2 += 2000LL * it;
      ++consumer2_runs;
    }
  }
  free_in_stream(data1, s);
  free_in_stream(data2, s);
  s.synchronize();
  EXPECT_EQ(producer.launch_count(), 6);
  EXPECT_EQ(counter.to_host()[0], 6);
  const auto h1 = sum1.to_host(), h2 = sum2.to_host();
  for (int i : {0, 1, n - 1}) {
    EXPECT_EQ(h1[i], expect1 + 6LL * i) << i;
    EXPECT_EQ(h2[i], expect2 + 1LL * consumer2_runs * i) << i;
  }
}

TEST_F(AutoFree, RelaunchWithUnfreedAllocationsIsRefusedNamingThemAndWorksOnceFreed) {
  graph g("leaky producer");
  const auto a = g.add_alloc({bytes, 0});
  const auto b = g.add_alloc({3u << 20, 0});
  graph_exec exec(g);  // no AutoFreeOnLaunch
  stream s;
  exec.launch(s);
  try {
    exec.launch(s);
    FAIL() << "the driver must refuse the relaunch";
  } catch (const cuda_error& e) {
    EXPECT_EQ(e.code(), cudaErrorInvalidValue) << e.what();
    const std::string msg = e.what();
    EXPECT_NE(msg.find("2 allocation(s) unfreed"), std::string::npos) << msg;
    EXPECT_NE(msg.find(format_address(reinterpret_cast<std::uintptr_t>(a.ptr))),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("3145728 B (3.0 MiB) at " +
                       format_address(reinterpret_cast<std::uintptr_t>(b.ptr))),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("auto_free_on_launch"), std::string::npos) << msg;
  }
  EXPECT_EQ(exec.launch_count(), 1);
  free_in_stream(a.ptr, s);
  free_in_stream(b.ptr, s);
  exec.launch(s);  // usable again
  free_in_stream(a.ptr, s);
  free_in_stream(b.ptr, s);
  s.synchronize();
  EXPECT_EQ(exec.launch_count(), 2);
}

}  // namespace
}  // namespace gmem::test
