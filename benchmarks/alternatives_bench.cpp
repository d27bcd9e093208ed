// What the alternatives to graph memory nodes cost at the same sizes:
//  - floor/map: cuMemCreate + cuMemMap + cuMemSetAccess through the driver's virtual memory
//    API, the least that mapping the memory can cost (host time: the calls are synchronous);
//    floor/map_recycled: the same, each sample right after the same size was created, mapped
//    and released (the physical memory the driver just got back), and _after_500ms half a
//    second after that release; floor/map_fresh: memory the
//    process never mapped before, measured first, every mapping held until the sweep ends;
//  - pool/*: stream-ordered cudaMallocFromPoolAsync + cudaFreeAsync, no graph, with the pool
//    trimmed before every sample (cold) or keeping its memory (warm);
//  - prealloc/steady_launch: a graph over memory allocated ahead with cudaMalloc (no memory
//    nodes): its launches are cheap and its footprint is the whole buffer, always.

#include <cuda.h>

#include <chrono>
#include <limits>
#include <thread>

#include "benchmarks.hpp"
#include "bench_support.hpp"

namespace gmem::bench {
namespace {

/// The driver's virtual memory API, fetched at run time so that the binary does not link
/// libcuda (it must start, and skip, on machines without a driver).
struct vmm_api {
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
};

const vmm_api& vmm() {
  static const vmm_api api = [] {
    vmm_api a;
    fetch_driver_entry(a.create, "cuMemCreate");
    fetch_driver_entry(a.release, "cuMemRelease");
    fetch_driver_entry(a.reserve, "cuMemAddressReserve");
    fetch_driver_entry(a.address_free, "cuMemAddressFree");
    fetch_driver_entry(a.map, "cuMemMap");
    fetch_driver_entry(a.unmap, "cuMemUnmap");
    fetch_driver_entry(a.set_access, "cuMemSetAccess");
    fetch_driver_entry(a.granularity, "cuMemGetAllocationGranularity");
    return a;
  }();
  return api;
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    throw cuda_error(cudaErrorUnknown, std::string("gmem bench: ") + what + " failed with CUresult " +
                                           std::to_string(static_cast<int>(r)));
  }
}

void floor_map(benchmark::State& state, std::uint64_t bytes) {
  const vmm_api& api = vmm();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ctx().device;
  std::size_t gran = 0;
  check(api.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
  const std::size_t size = (bytes + gran - 1) / gran * gran;
  CUdeviceptr va = 0;
  check(api.reserve(&va, size, 0, 0, 0), "cuMemAddressReserve");  // like a node's address: ahead
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  double total = 0;
  for (auto _ : state) {
    CUmemGenericAllocationHandle h{};
    const double s = host_seconds([&] {
      check(api.create(&h, size, &prop, 0), "cuMemCreate");
      check(api.map(va, size, 0, h, 0), "cuMemMap");
      check(api.set_access(va, size, &access, 1), "cuMemSetAccess");
    });
    state.SetIterationTime(s);
    total += s;
    check(api.unmap(va, size), "cuMemUnmap");
    check(api.release(h), "cuMemRelease");
  }
  check(api.address_free(va, size), "cuMemAddressFree");
  report(state, total, bytes, 1, size);
}

// One mapping through the virtual memory API, and its undoing.
struct vmm_mapping {
  CUmemGenericAllocationHandle handle{};
  CUdeviceptr va = 0;
  std::size_t size = 0;
};

vmm_mapping map_new(const vmm_api& api, const CUmemAllocationProp& prop, std::size_t size) {
  vmm_mapping m;
  m.size = size;
  check(api.reserve(&m.va, size, 0, 0, 0), "cuMemAddressReserve");
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(api.create(&m.handle, size, &prop, 0), "cuMemCreate");
  check(api.map(m.va, size, 0, m.handle, 0), "cuMemMap");
  check(api.set_access(m.va, size, &access, 1), "cuMemSetAccess");
  return m;
}

void unmap(const vmm_api& api, const vmm_mapping& m) {
  check(api.unmap(m.va, m.size), "cuMemUnmap");
  check(api.release(m.handle), "cuMemRelease");
  check(api.address_free(m.va, m.size), "cuMemAddressFree");
}

CUmemAllocationProp device_prop(std::size_t bytes, std::size_t* size) {
  const vmm_api& api = vmm();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ctx().device;
  std::size_t gran = 0;
  check(api.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
  *size = (bytes + gran - 1) / gran * gran;
  return prop;
}

// Recycled: the driver got the same amount back just before each sample (pause_ms 0), or that
// long before it.
void floor_map_recycled(benchmark::State& state, std::uint64_t bytes, int pause_ms) {
  const vmm_api& api = vmm();
  std::size_t size = 0;
  const CUmemAllocationProp prop = device_prop(bytes, &size);
  double total = 0;
  for (auto _ : state) {
    unmap(api, map_new(api, prop, size));  // untimed: the memory released just before
    if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    vmm_mapping m;
    const double s = host_seconds([&] { m = map_new(api, prop, size); });
    state.SetIterationTime(s);
    total += s;
    unmap(api, m);
  }
  report(state, total, bytes, 1, size);
}

// Fresh: physical memory this process never mapped. Measured before any other benchmark, each
// mapping kept until the last sample of the sweep, so that no sample reuses another's memory.
std::vector<vmm_mapping>& fresh_held() {
  static std::vector<vmm_mapping> held;
  return held;
}
int& fresh_left() {
  static int left = 0;
  return left;
}

void floor_map_fresh(benchmark::State& state, std::uint64_t bytes) {
  const vmm_api& api = vmm();
  std::size_t size = 0;
  const CUmemAllocationProp prop = device_prop(bytes, &size);
  double total = 0;
  for (auto _ : state) {
    vmm_mapping m;
    const double s = host_seconds([&] { m = map_new(api, prop, size); });
    state.SetIterationTime(s);
    total += s;
    fresh_held().push_back(m);
  }
  report(state, total, bytes, 1, size);
  if (--fresh_left() == 0) {  // the sweep's last sample: give it all back for the benchmarks after
    for (const vmm_mapping& m : fresh_held()) unmap(api, m);
    fresh_held().clear();
  }
}

void pool_malloc_free(benchmark::State& state, std::uint64_t bytes, bool warm) {
  mem_pool pool(ctx().device);
  std::uint64_t threshold = warm ? std::numeric_limits<std::uint64_t>::max() : 0;
  GMEM_CUDA_TRY(cudaMemPoolSetAttribute(pool.get(), cudaMemPoolAttrReleaseThreshold, &threshold));
  stream s;
  gpu_timer timer;
  const auto cycle = [&] {
    void* p = nullptr;
    GMEM_CUDA_TRY(cudaMallocFromPoolAsync(&p, bytes, pool.get(), s));
    GMEM_CUDA_TRY(cudaMemsetAsync(p, 1, std::min<std::uint64_t>(bytes, 4096), s));
    GMEM_CUDA_TRY(cudaFreeAsync(p, s));
  };
  if (warm) {
    cycle();
    s.synchronize();
  }
  double host_total = 0;
  std::uint64_t footprint = 0;
  for (auto _ : state) {
    if (!warm) GMEM_CUDA_TRY(cudaMemPoolTrimTo(pool.get(), 0));
    const auto r = timer.time(s, cycle);
    state.SetIterationTime(r.gpu_s);
    host_total += r.host_s;
    std::uint64_t reserved = 0;
    GMEM_CUDA_TRY(cudaMemPoolGetAttribute(pool.get(), cudaMemPoolAttrReservedMemHigh, &reserved));
    footprint = std::max(footprint, reserved);
  }
  report(state, host_total, bytes, 1, footprint);
}

void prealloc_steady(benchmark::State& state, std::uint64_t bytes) {
  void* buffer = nullptr;
  GMEM_CUDA_TRY(cudaMalloc(&buffer, bytes));
  {
    graph g("prealloc");
    (void)g.add_memset({}, buffer, 1, std::min<std::uint64_t>(bytes, 4096));
    graph_exec exec(g);
    stream s;
    gpu_timer timer;
    exec.launch(s);
    s.synchronize();
    double host_total = 0;
    for (auto _ : state) {
      const auto r = timer.time(s, [&] { exec.launch(s); });
      state.SetIterationTime(r.gpu_s);
      host_total += r.host_s;
    }
    report(state, host_total, bytes, 1, bytes);  // the buffer is held all the time
  }
  GMEM_CUDA_TRY(cudaFree(buffer));
}

}  // namespace

void register_fresh_floor_benchmarks(const std::vector<std::uint64_t>& sizes) {
  // Fresh memory can be measured once per process and amount: one sample per size, two sizes'
  // worth of memory kept where it fits (their sum, held together), else one.
  std::uint64_t sum = 0;
  for (std::uint64_t b : sizes) sum += b;
  const int reps = 2 * sum + (std::uint64_t{1} << 30) < ctx().free_memory ? 2 : 1;
  benchmark::AddCustomContext("fresh_floor_samples", std::to_string(reps) + " per size");
  fresh_left() = reps * static_cast<int>(sizes.size());
  for (std::uint64_t bytes : sizes) {
    const std::string suffix = "/bytes:" + std::to_string(bytes) + "/allocs:1";
    benchmark::RegisterBenchmark(("floor/map_fresh" + suffix).c_str(),
                                 [bytes](benchmark::State& st) { floor_map_fresh(st, bytes); })
        ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1)->Repetitions(reps)
        ->ReportAggregatesOnly(true);
  }
}

void register_alternative_benchmarks(const std::vector<std::uint64_t>& sizes) {
  const context& c = ctx();
  const int reps = c.quick ? 2 : 7;
  for (std::uint64_t bytes : sizes) {
    const std::string suffix = "/bytes:" + std::to_string(bytes) + "/allocs:1";
    benchmark::RegisterBenchmark(("floor/map" + suffix).c_str(),
                                 [bytes](benchmark::State& st) { floor_map(st, bytes); })
        ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(c.quick ? 2 : 3)
        ->Repetitions(reps)->ReportAggregatesOnly(true);
    for (int pause_ms : {0, 500}) {
      benchmark::RegisterBenchmark(
          ((pause_ms ? "floor/map_recycled_after_500ms" : "floor/map_recycled") + suffix).c_str(),
          [bytes, pause_ms](benchmark::State& st) { floor_map_recycled(st, bytes, pause_ms); })
          ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(c.quick ? 2 : 3)
          ->Repetitions(pause_ms ? (c.quick ? 2 : 3) : reps)->ReportAggregatesOnly(true);
    }
    for (bool warm : {false, true}) {
      benchmark::RegisterBenchmark(
          ((warm ? "pool/malloc_free_warm" : "pool/malloc_free_cold") + suffix).c_str(),
          [bytes, warm](benchmark::State& st) { pool_malloc_free(st, bytes, warm); })
          ->UseManualTime()->Unit(benchmark::kMicrosecond)
          ->Iterations(warm ? (c.quick ? 50 : 200) : (c.quick ? 2 : 3))->Repetitions(reps)
          ->ReportAggregatesOnly(true);
    }
    benchmark::RegisterBenchmark(("prealloc/steady_launch" + suffix).c_str(),
                                 [bytes](benchmark::State& st) { prealloc_steady(st, bytes); })
        ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(c.quick ? 50 : 200)
        ->Repetitions(reps)->ReportAggregatesOnly(true);
  }
}

}  // namespace gmem::bench
