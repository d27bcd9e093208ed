#include "gmem/handles.hpp"

#include <utility>

#include "gmem/capability.hpp"
#include "gmem/error.hpp"

namespace gmem {

std::string describe_stream(cudaStream_t s) {
  return s == nullptr ? std::string("the legacy default stream")
                      : "stream " + format_address(reinterpret_cast<std::uintptr_t>(s));
}

stream::stream(unsigned int flags) {
  GMEM_CUDA_TRY(cudaStreamCreateWithFlags(&handle_, flags));
}
stream::~stream() {
  if (handle_) GMEM_CUDA_TRY_NOTHROW(cudaStreamDestroy(handle_));
}
stream::stream(stream&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
stream& stream::operator=(stream&& other) noexcept {
  if (this != &other) {
    if (handle_) GMEM_CUDA_TRY_NOTHROW(cudaStreamDestroy(handle_));
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}
void stream::synchronize() const {
  GMEM_CUDA_TRY_CTX(cudaStreamSynchronize(handle_), "synchronizing " + describe_stream(handle_));
}

event::event(unsigned int flags) { GMEM_CUDA_TRY(cudaEventCreateWithFlags(&handle_, flags)); }
event::~event() {
  if (handle_) GMEM_CUDA_TRY_NOTHROW(cudaEventDestroy(handle_));
}
event::event(event&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
event& event::operator=(event&& other) noexcept {
  if (this != &other) {
    if (handle_) GMEM_CUDA_TRY_NOTHROW(cudaEventDestroy(handle_));
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}
void event::record(cudaStream_t s) const {
  GMEM_CUDA_TRY_CTX(cudaEventRecord(handle_, s), "recording an event in " + describe_stream(s));
}
void event::wait_in(cudaStream_t s) const {
  GMEM_CUDA_TRY_CTX(cudaStreamWaitEvent(s, handle_, 0),
                    "making " + describe_stream(s) + " wait for an event");
}
void event::synchronize() const { GMEM_CUDA_TRY(cudaEventSynchronize(handle_)); }

namespace {

void check_device_index(int device, const char* role) {
  const int count = device_count();
  if (device < 0 || device >= count) {
    throw usage_error(std::string("memory pool: ") + role + " device " + std::to_string(device) +
                      " is out of range (this machine has " + std::to_string(count) +
                      " CUDA device(s))");
  }
}

}  // namespace

mem_pool::mem_pool(int device, const std::vector<int>& peers) : device_(device) {
  check_device_index(device, "resident");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  GMEM_CUDA_TRY_CTX(cudaMemPoolCreate(&handle_, &props),
                    "creating a memory pool on device " + std::to_string(device));
  try {
    for (int peer : peers) set_access(peer);
  } catch (...) {
    GMEM_CUDA_TRY_NOTHROW(cudaMemPoolDestroy(handle_));
    throw;
  }
}
mem_pool::~mem_pool() {
  if (handle_) GMEM_CUDA_TRY_NOTHROW(cudaMemPoolDestroy(handle_));
}
mem_pool::mem_pool(mem_pool&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), device_(other.device_) {}
mem_pool& mem_pool::operator=(mem_pool&& other) noexcept {
  if (this != &other) {
    if (handle_) GMEM_CUDA_TRY_NOTHROW(cudaMemPoolDestroy(handle_));
    handle_ = std::exchange(other.handle_, nullptr);
    device_ = other.device_;
  }
  return *this;
}
void mem_pool::set_access(int peer, cudaMemAccessFlags flags) {
  check_device_index(peer, "peer");
  if (peer != device_ && flags != cudaMemAccessFlagsProtNone && !can_access_peer(peer, device_)) {
    throw usage_error("memory pool on device " + std::to_string(device_) + ": device " +
                      std::to_string(peer) + " cannot access it (cudaDeviceCanAccessPeer is 0)");
  }
  cudaMemAccessDesc desc{};
  desc.location.type = cudaMemLocationTypeDevice;
  desc.location.id = peer;
  desc.flags = flags;
  GMEM_CUDA_TRY_CTX(cudaMemPoolSetAccess(handle_, &desc, 1),
                    "setting device " + std::to_string(peer) + "'s access to the pool on device " +
                        std::to_string(device_));
}
cudaMemAccessFlags mem_pool::access(int peer) const {
  cudaMemLocation loc{};
  loc.type = cudaMemLocationTypeDevice;
  loc.id = peer;
  cudaMemAccessFlags flags{};
  GMEM_CUDA_TRY(cudaMemPoolGetAccess(&flags, handle_, &loc));
  return flags;
}

device_guard::device_guard(int device) {
  GMEM_CUDA_TRY(cudaGetDevice(&previous_));
  GMEM_CUDA_TRY_CTX(cudaSetDevice(device), "making device " + std::to_string(device) + " current");
}
device_guard::~device_guard() { GMEM_CUDA_TRY_NOTHROW(cudaSetDevice(previous_)); }

}  // namespace gmem
