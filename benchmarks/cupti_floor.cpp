// What CUPTI's callback dispatch alone costs a program, apart from anything the
// recorder does. tools/cupti_floor.py loads this library into a capturing program and switches
// a CUPTI subscription on and off between blocks of captures: none, a subscription with nothing
// enabled, the recording library's own set of driver callbacks (gmem_record_route_ids) with an
// empty callback, that set with NVTX, that set with the two cuMemGetInfo readings the recorder
// takes around each instantiation, and every driver call. The callback counts what it is given, per callback
// id, so that the script can say how many callbacks each capture costs.
#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "benchmarks/unavoidable_work.hpp"

namespace {

constexpr unsigned driver_ids = CUPTI_DRIVER_TRACE_CBID_SIZE;
std::atomic<std::uint64_t> driver_calls[driver_ids];
std::atomic<std::uint64_t> nvtx_calls{0};
CUpti_SubscriberHandle subscriber = nullptr;
bool read_memory = false;
bool unavoidable_work = false;  // GMEM_FLOOR_WORK=1, at cuInit

bool instantiation(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz:
      return true;
    default:
      return false;
  }
}

void CUPTIAPI callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    nvtx_calls.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || id >= driver_ids) return;
  driver_calls[id].fetch_add(1, std::memory_order_relaxed);
  if (unavoidable_work && id == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags) {
    const auto* cb = static_cast<const CUpti_CallbackData*>(data);
    if (cb->callbackSite == CUPTI_API_ENTER) {
      gmem_experiment::before_instantiation(static_cast<const cuGraphInstantiateWithFlags_params*>(cb->functionParams)->hGraph);
    } else {
      gmem_experiment::after_instantiation();
    }
    return;
  }
  if (read_memory && instantiation(id)) {
    std::size_t free_bytes = 0, total = 0;
    cuMemGetInfo(&free_bytes, &total);  // as the recorder reads before and after the call
  }
}

}  // namespace

// Subscribes with the driver callbacks IDS[0..N) enabled (none for N == 0, every driver call for
// N < 0: what one callback costs, and how many driver calls a capture makes), the NVTX domain when
// NVTX, and the two readings around instantiations when READ_MEMORY. Returns CUPTI's result (0:
// subscribed). Any earlier subscription is ended first.
extern "C" __attribute__((visibility("default"))) int floor_start(const unsigned* ids, int n, int nvtx,
                                                                  int memory) {
  if (subscriber) {
    cuptiUnsubscribe(subscriber);
    subscriber = nullptr;
  }
  read_memory = memory != 0;
  const CUptiResult r = cuptiSubscribe(&subscriber, callback, nullptr);
  if (r != CUPTI_SUCCESS) {
    subscriber = nullptr;
    return static_cast<int>(r);
  }
  if (n < 0) cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  for (int k = 0; k < n; ++k) cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, ids[k]);
  if (nvtx) cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_NVTX);
  return 0;
}

// Ends the subscription (CUPTI's callbacks off: the program's calls take the driver's plain path).
extern "C" __attribute__((visibility("default"))) void floor_stop() {
  if (subscriber) cuptiUnsubscribe(subscriber);
  subscriber = nullptr;
}

// Callbacks given so far for driver callback ID (entries and exits both), or NVTX callbacks for
// ID == -1; RESET sets the count back to 0 after reading it.
extern "C" __attribute__((visibility("default"))) unsigned long long floor_calls(int id, int reset) {
  std::atomic<std::uint64_t>* c = id < 0 ? &nvtx_calls : id < static_cast<int>(driver_ids) ? &driver_calls[id] : nullptr;
  if (!c) return 0;
  return reset ? c->exchange(0) : c->load();
}

// CUPTI's name for driver callback ID ("cuGraphLaunch"), or an empty string.
extern "C" __attribute__((visibility("default"))) const char* floor_name(int id) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, static_cast<std::uint32_t>(id), &name) != CUPTI_SUCCESS) return "";
  return name ? name : "";
}

// The number of driver callback ids.
extern "C" __attribute__((visibility("default"))) int floor_driver_ids() { return static_cast<int>(driver_ids); }

// Loaded through CUDA_INJECTION64_PATH, as the recording library is: a subscription made at
// cuInit, before the program's first context, and kept until floor_start or floor_stop. With
// GMEM_FLOOR_INIT=one it enables one driver callback (cuGraphInstantiateWithFlags), with =every
// every driver call's, otherwise none. With =one and GMEM_FLOOR_WORK=1, the callback does around
// each instantiation what a recording cannot defer (unavoidable_work.hpp), as interpose_floor.cpp's
// wrappers do: the same work under CUPTI's attachment and without it.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  if (subscriber) return 1;
  if (cuptiSubscribe(&subscriber, callback, nullptr) != CUPTI_SUCCESS) {
    subscriber = nullptr;
    return 1;
  }
  const char* what = std::getenv("GMEM_FLOOR_INIT");
  const std::string w = what ? what : "";
  const char* work = std::getenv("GMEM_FLOOR_WORK");
  unavoidable_work = w == "one" && work && std::string(work) == "1";
  if (w == "one") cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags);
  if (w == "every") cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  return 1;
}
