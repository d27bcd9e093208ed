// A stand-in for the recording library in the preload test (preload_test.cpp): the two words the
// preloaded interception says to it (record/preload.cpp), kept in order with the parameters each
// call carried, as CUPTI's callback data lays them out.
#include <cupti.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {
struct word {
  unsigned id;
  bool enter;
  std::uintptr_t params[3];
  int result;
};
std::vector<word> words;
int starts = 0;
}  // namespace

extern "C" {
__attribute__((visibility("default"))) void gmem_record_interposed_start() { ++starts; }

__attribute__((visibility("default"))) void gmem_record_interposed_call(unsigned id, const CUpti_CallbackData* cb) {
  word w{id, cb->callbackSite == CUPTI_API_ENTER, {0, 0, 0}, -1};
  // The fake's entry points take up to two arguments, each in a pointer-sized slot of CUPTI's
  // struct (an int padded to it); cuStreamBeginCapture takes one, cuCtxSynchronize none.
  const std::size_t n = id == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize      ? 0
                        : id == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture ? 1
                                                                             : 2;
  if (cb->functionParams && n) std::memcpy(w.params, cb->functionParams, n * sizeof(std::uintptr_t));
  if (cb->functionReturnValue) w.result = *static_cast<const int*>(cb->functionReturnValue);
  words.push_back(w);
}

__attribute__((visibility("default"))) int fake_recording_starts() { return starts; }
__attribute__((visibility("default"))) std::size_t fake_recording_words() { return words.size(); }
__attribute__((visibility("default"))) void fake_recording_word(std::size_t k, unsigned* id, int* enter,
                                                                std::uintptr_t* a, std::uintptr_t* b, int* result) {
  const word& w = words.at(k);
  *id = w.id;
  *enter = w.enter;
  *a = w.params[0];
  *b = w.params[1];
  *result = w.result;
}
}
