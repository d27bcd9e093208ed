#include "gmem/profiler/counters.hpp"

#include <cuda_runtime_api.h>

#include "gmem/error.hpp"
#include "gmem/handles.hpp"

namespace gmem::profiler {
namespace {

std::uint64_t read_attr(int device, cudaGraphMemAttributeType attr, const char* name) {
  std::uint64_t value = 0;  // the attributes are 64-bit (cuuint64_t)
  GMEM_CUDA_TRY_CTX(cudaDeviceGetGraphMemAttribute(device, attr, &value),
                    std::string("reading ") + name + " of device " + std::to_string(device));
  return value;
}

}  // namespace

counters read_counters(int device) {
  counters c;
  c.used_current = read_attr(device, cudaGraphMemAttrUsedMemCurrent, "UsedMemCurrent");
  c.used_high = read_attr(device, cudaGraphMemAttrUsedMemHigh, "UsedMemHigh");
  c.reserved_current = read_attr(device, cudaGraphMemAttrReservedMemCurrent, "ReservedMemCurrent");
  c.reserved_high = read_attr(device, cudaGraphMemAttrReservedMemHigh, "ReservedMemHigh");
  return c;
}

void reset_high_watermarks(int device, std::uint64_t value) {
  if (value != 0) {
    throw usage_error("resetting the graph memory high watermarks of device " +
                      std::to_string(device) + " to " + std::to_string(value) +
                      ": CUDA only accepts 0 (a reset), not an arbitrary value");
  }
  std::uint64_t zero = 0;
  GMEM_CUDA_TRY_CTX(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrUsedMemHigh, &zero),
                    "resetting UsedMemHigh of device " + std::to_string(device));
  GMEM_CUDA_TRY_CTX(
      cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrReservedMemHigh, &zero),
      "resetting ReservedMemHigh of device " + std::to_string(device));
}

trim_result trim(int device) {
  trim_result r;
  device_guard on(device);
  GMEM_CUDA_TRY(cudaDeviceSynchronize());
  r.reserved_before = read_attr(device, cudaGraphMemAttrReservedMemCurrent, "ReservedMemCurrent");
  const auto t0 = std::chrono::steady_clock::now();
  GMEM_CUDA_TRY_CTX(cudaDeviceGraphMemTrim(device),
                    "trimming the graph memory of device " + std::to_string(device));
  const auto t1 = std::chrono::steady_clock::now();
  r.host_us = std::chrono::duration<double, std::micro>(t1 - t0).count();
  r.reserved_after = read_attr(device, cudaGraphMemAttrReservedMemCurrent, "ReservedMemCurrent");
  return r;
}

sampler::sampler(int device) : device_(device), start_(std::chrono::steady_clock::now()) {}

sampler::~sampler() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
}

void sampler::take(const std::string& phase) {
  // Read and stamp under the lock, so that samples from mark() and the background thread are
  // appended in time order.
  std::lock_guard<std::mutex> lock(mutex_);
  sample s;
  s.values = read_counters(device_);
  s.t_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_)
               .count();
  s.phase = phase;
  samples_.push_back(std::move(s));
}

void sampler::mark(const std::string& phase) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    phase_ = phase;
  }
  take(phase);
}

void sampler::start_background(std::chrono::microseconds interval) {
  if (running_.exchange(true)) {
    throw usage_error("sampler of device " + std::to_string(device_) +
                      ": the background thread is already running; stop it first");
  }
  if (thread_.joinable()) thread_.join();  // it stopped on an error: reap it
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_error_.empty()) {
      running_ = false;
      throw cuda_error(cudaErrorUnknown, "sampler background thread had stopped: " +
                                             thread_error_ + "; call stop_background first");
    }
  }
  thread_ = std::thread([this, interval] {
    try {
      GMEM_CUDA_TRY(cudaSetDevice(device_));
      auto next = std::chrono::steady_clock::now();
      while (running_) {
        std::string phase;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          phase = phase_;
        }
        take(phase);
        next += interval;
        std::this_thread::sleep_until(next);
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      thread_error_ = e.what();
      running_ = false;
    }
  });
}

void sampler::stop_background() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!thread_error_.empty()) {
    const std::string error = std::exchange(thread_error_, std::string());
    throw cuda_error(cudaErrorUnknown, "sampler background thread stopped: " + error);
  }
}

std::vector<sample> sampler::timeline() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return samples_;
}

}  // namespace gmem::profiler
