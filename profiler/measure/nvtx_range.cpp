#include "measure/nvtx_range.hpp"

#include <cstdlib>
#include <cstring>

#if GMEM_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace gmem::profiler {

#if GMEM_NVTX
namespace {

nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t d = nvtxDomainCreateA("gmem");
  return d;
}

}  // namespace

bool nvtx_enabled() noexcept {
  static const bool on = [] {
    const char* v = std::getenv("GMEM_NVTX");
    return !(v && (!std::strcmp(v, "0") || !std::strcmp(v, "off") || !std::strcmp(v, "OFF")));
  }();
  return on;
}

nvtx_range::nvtx_range(const std::string& name) noexcept {
  if (!nvtx_enabled()) return;
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name.c_str();
  nvtxDomainRangePushEx(domain(), &a);
  pushed_ = true;
}

nvtx_range::~nvtx_range() {
  if (pushed_) nvtxDomainRangePop(domain());
}
#else
bool nvtx_enabled() noexcept { return false; }
nvtx_range::nvtx_range(const std::string&) noexcept {}
nvtx_range::~nvtx_range() = default;
#endif

}  // namespace gmem::profiler
