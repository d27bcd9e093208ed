// The recording library's side of its own interception of the driver's calls (`gmemprof record
// --hook interpose`), the alternative to CUPTI, whose attachment alone slows every driver call a
// capture makes (docs/benchmarks.md, "Without CUPTI"). The wrappers themselves live in the small
// preloaded library (preload.cpp), which loads this one once the program looks libcuda's entry
// points up, and hands each call here as CUPTI's callback would (inject.cpp's decoders). NVTX
// loads this library for ranges and marks (NVTX_INJECTION64_PATH).
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

#include "record/hook.hpp"
#include "record/injected.hpp"

namespace {

using namespace gmem::record::injected;
using gmem::record::interposing;

// ---- NVTX

// Each thread's depth of ranges, which NVTX's push and pop return.
thread_local int nvtx_depth = 0;

void NVTX_API nvtx_mark_a(const char* message) { nvtx_word(nvtx_kind::mark, message); }
int NVTX_API nvtx_push_a(const char* message) {
  nvtx_word(nvtx_kind::push, message);
  return nvtx_depth++;
}
// Pushes of other kinds keep pushes and pops balanced; only ASCII names are read (as CUPTI's
// callbacks are, inject.cpp).
int NVTX_API nvtx_push_ex(const nvtxEventAttributes_t*) {
  nvtx_word(nvtx_kind::push, "");
  return nvtx_depth++;
}
int NVTX_API nvtx_push_w(const wchar_t*) {
  nvtx_word(nvtx_kind::push, "");
  return nvtx_depth++;
}
int NVTX_API nvtx_pop() {
  nvtx_word(nvtx_kind::pop, nullptr);
  return nvtx_depth > 0 ? --nvtx_depth : -1;
}
int NVTX_API nvtx_domain_push_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t*) {
  nvtx_word(nvtx_kind::push, "");
  return nvtx_depth++;
}
int NVTX_API nvtx_domain_pop(nvtxDomainHandle_t) { return nvtx_pop(); }

void set_slot(NvtxFunctionTable table, unsigned size, unsigned slot, void* fn) {
  if (table && slot < size && table[slot]) *table[slot] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

// NVTX's loader calls this when NVTX_INJECTION64_PATH names this library (`gmemprof record
// --hook interpose` sets it): ranges and marks reach the session without CUPTI.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  if (!interposing() || !get) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (!callbacks || !callbacks->GetModuleFunctionTable) return 0;
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned core_size = 0, core2_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size)) return 0;
  set_slot(core, core_size, NVTX_CBID_CORE_MarkA, reinterpret_cast<void*>(&nvtx_mark_a));
  set_slot(core, core_size, NVTX_CBID_CORE_RangePushA, reinterpret_cast<void*>(&nvtx_push_a));
  set_slot(core, core_size, NVTX_CBID_CORE_RangePushEx, reinterpret_cast<void*>(&nvtx_push_ex));
  set_slot(core, core_size, NVTX_CBID_CORE_RangePushW, reinterpret_cast<void*>(&nvtx_push_w));
  set_slot(core, core_size, NVTX_CBID_CORE_RangePop, reinterpret_cast<void*>(&nvtx_pop));
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size)) {
    set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, reinterpret_cast<void*>(&nvtx_domain_push_ex));
    set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, reinterpret_cast<void*>(&nvtx_domain_pop));
  }
  return 1;
}

// The preloaded library's two words (preload.cpp): the driver is up (cuInit returned), and a
// driver call at its enter or exit.
extern "C" __attribute__((visibility("default"))) void gmem_record_interposed_start() {
  if (!interposing()) return;
  try {
    // Which hook took the calls is each bill's (own.hook): the default needs no note of its own.
    if (!start_session()) return;
    install_exit_path();
  } catch (...) {
    // Never let the recorder take the application down: nothing is recorded.
  }
}

extern "C" __attribute__((visibility("default"))) void gmem_record_interposed_call(unsigned id,
                                                                                 const CUpti_CallbackData* cb) {
  driver_call(id, cb);
}
