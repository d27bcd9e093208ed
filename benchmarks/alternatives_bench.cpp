// What the alternatives to graph memory nodes cost at the same sizes:
//  - floor/map: cuMemCreate + cuMemMap + cuMemSetAccess through the driver's virtual memory
//    API, the least that mapping the memory can cost (host time: the calls are synchronous);
//  - pool/*: stream-ordered cudaMallocFromPoolAsync + cudaFreeAsync, no graph, with the pool
//    trimmed before every sample (cold) or keeping its memory (warm);
//  - prealloc/steady_launch: a graph over memory allocated ahead with cudaMalloc (no memory
//    nodes): its launches are cheap and its footprint is the whole buffer, always.

#include <cuda.h>

#include <limits>

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

template <typename F>
void fetch(F*& fn, const char* symbol) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status{};
  GMEM_CUDA_TRY_CTX(cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &status),
                    std::string("looking up ") + symbol);
  if (status != cudaDriverEntryPointSuccess || !p) {
    throw unsupported_error(std::string("the driver has no ") + symbol);
  }
  fn = reinterpret_cast<F*>(p);
}

const vmm_api& vmm() {
  static const vmm_api api = [] {
    vmm_api a;
    fetch(a.create, "cuMemCreate");
    fetch(a.release, "cuMemRelease");
    fetch(a.reserve, "cuMemAddressReserve");
    fetch(a.address_free, "cuMemAddressFree");
    fetch(a.map, "cuMemMap");
    fetch(a.unmap, "cuMemUnmap");
    fetch(a.set_access, "cuMemSetAccess");
    fetch(a.granularity, "cuMemGetAllocationGranularity");
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

void register_alternative_benchmarks(const std::vector<std::uint64_t>& sizes) {
  const context& c = ctx();
  const int reps = c.quick ? 2 : 7;
  for (std::uint64_t bytes : sizes) {
    const std::string suffix = "/bytes:" + std::to_string(bytes) + "/allocs:1";
    benchmark::RegisterBenchmark(("floor/map" + suffix).c_str(),
                                 [bytes](benchmark::State& st) { floor_map(st, bytes); })
        ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(c.quick ? 2 : 3)
        ->Repetitions(reps)->ReportAggregatesOnly(true);
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
