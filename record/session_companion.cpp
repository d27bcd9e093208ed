// What the Python companion (record/companion) tells the recording, in messages that start with
// "gmem:": said directly (gmem_record_say, inject.cpp, which the companion finds through ctypes once
// CUDA has loaded this library), else as NVTX marks (the program's own torch.cuda.nvtx.mark reaches
// CUPTI's NVTX callback); and the process's device memory, first read when a context is made.
//   gmem:capture {"pool": "(0, 1)", "device": 0, "site": "model.py:42 in forward",
//                 "label": "cudagraph tree node 3",      before the thread's next capture begins
//                 "previous_pool": "(0, 2)"}             (pool "" where PyTorch makes one), with
//                                                        the pool PyTorch made for the thread's
//                                                        capture before it (optional)
//   gmem:captured {"pool": "(0, 2)", "device": 0,        the pool of the thread's last capture, said
//                  "bytes": N, "segments": [address, ...]} after capture_end, with PyTorch's figure
//                                                        for it then and its segments' addresses
//                                                        (without them: an earlier companion's)
//   gmem:warmup-begin {"pool": "(0, 1)", "device": 0}    a warm-up run into the pool begins
//   gmem:warmup-end {}                                   and ends
//   gmem:cost {"calls": N, "us": X}                      at the program's end: the companion's time
//                                                        in its wrappers, its marks included
//   gmem:end {"why": "...", "pools": [{"pool": "(0, 1)", "device": 0, "bytes": N,
//             "segments": [address, ...]}],              the program's end, PyTorch's own figures
//             "previous_pool": "(0, 3)"}                 and its segments' addresses (and the pool of
//                                                        the thread's last capture)
// A capture's "device" below 0 is the capturing thread's current device, read here.
// A message that is not such JSON is ignored: the program's own marks pass through untouched.
// The word of every capture also comes with its fields, without JSON (gmem_record_next_capture):
// what the companion says where the library exports it. The pool PyTorch made for a capture is
// told at the thread's next capture too, for a companion that cannot read the pool after it.
#include <algorithm>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/session_state.hpp"

namespace gmem::record {

using detail::here;
using detail::thread_state;

namespace {

using json = nlohmann::json;

std::string text_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int int_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int>() : 0;
}

// The addresses listed under "segments" into `out`; false (out untouched) where the list is
// missing or holds anything but unsigned integers.
bool addresses(const json& j, std::vector<std::uint64_t>& out) {
  const auto listed = j.find("segments");
  if (listed == j.end() || !listed->is_array() ||
      !std::all_of(listed->begin(), listed->end(), [](const json& a) { return a.is_number_unsigned(); })) {
    return false;
  }
  for (const json& a : *listed) out.push_back(a.get<std::uint64_t>());
  return true;
}

}  // namespace

void session::read_memory() noexcept {
  int device = 0;
  std::uint64_t used = 0;
  if (driver_.memory_used && driver_.memory_used(device, used)) rec_.on_memory_reading(device, used);
}

void session::first_reading() noexcept {
  if (forked_ || have_first_reading_.load(std::memory_order_relaxed)) return;
  try {
    int device = 0;
    std::uint64_t used = 0;
    if (!driver_.memory_used || !driver_.memory_used(device, used)) return;  // no context yet
    lock l(*this);
    if (have_first_reading_.exchange(true)) return;
    rec_.on_memory_reading(device, used);
  } catch (...) {
  }
}

void session::told_capture(thread_state& t, std::string pool, int device, std::string site, std::string label,
                           std::string previous_pool) {
  // Said before the capture begins: kept for it (capture_begin takes the lock and names both).
  t.capture_told = true;
  t.told_previous_pool = std::move(previous_pool);
  t.told_pool = std::move(pool);
  t.told_device = device;
  t.told_site = std::move(site);
  t.told_label = std::move(label);
}

void session::told_captured(const thread_state& t, const std::string& pool, int device) {
  // The pool of the thread's last capture, when PyTorch made it (the caller holds the lock). The
  // device is read only for a capture that took nothing: a pool that took memory has its own.
  if (t.last_captured == 0 || pool.empty()) return;
  const int on = t.last_capture_pool == recorder::no_pool ? told_device(device) : device;
  rec_.on_capture_pool_known(t.last_captured, t.last_capture_pool, pool, on);
}

void session::companion_next_capture(const char* previous_pool, const char* pool, int device, const char* site,
                                     const char* label) noexcept {
  if (forked_) return;
  try {
    const timed cost(*this, cost_part::companion);
    told_capture(here(this), pool ? pool : "", device, site ? site : "", label ? label : "",
                 previous_pool ? previous_pool : "");
  } catch (...) {
  }
}

void session::context_made(std::uint64_t context) noexcept {
  if (forked_ || !driver_.context_memory_used) return;
  try {
    int device = 0;
    std::uint64_t used = 0;
    if (!driver_.context_memory_used(context, device, used)) return;
    lock l(*this);
    if (rec_.has_memory_reading(device)) return;  // a context retained again, or made again
    rec_.on_memory_reading(device, used);
    have_first_reading_.store(true);
  } catch (...) {
  }
}

void session::nvtx_mark(const char* message) noexcept {
  if (forked_ || !message || std::strncmp(message, "gmem:", 5) != 0) return;
  try {
    const timed cost(*this, cost_part::companion);
    const std::string m(message + 5);
    const std::size_t space = m.find(' ');
    const std::string verb = m.substr(0, space);
    const json body = json::parse(space == std::string::npos ? "{}" : m.substr(space + 1), nullptr, false);
    if (!body.is_object()) return;
    thread_state& t = here(this);
    if (verb == "capture") {
      told_capture(t, text_of(body, "pool"), int_of(body, "device"), text_of(body, "site"), text_of(body, "label"),
                   text_of(body, "previous_pool"));
    } else if (verb == "captured") {
      std::vector<std::uint64_t> segments;
      const auto bytes = body.find("bytes");
      const bool read = bytes != body.end() && bytes->is_number_unsigned() && addresses(body, segments);
      lock l(*this);
      if (!read) {
        told_captured(t, text_of(body, "pool"), int_of(body, "device"));
      } else if (t.last_captured != 0) {
        rec_.on_pool_after_capture(t.last_captured, t.last_captured_record, t.last_capture_pool, text_of(body, "pool"),
                                   told_device(int_of(body, "device")), bytes->get<std::uint64_t>(), std::move(segments));
      }
    } else if (verb == "warmup-begin") {
      t.warmup_pool = text_of(body, "pool");
      t.warmup_device = int_of(body, "device");
      open_context c;
      c.pool = t.warmup_pool;
      c.device = t.warmup_device;
      if (!c.pool.empty()) open(c);
    } else if (verb == "warmup-end") {
      if (!t.warmup_pool.empty()) close();
      t.warmup_pool.clear();
    } else if (verb == "cost") {  // the companion's own time, its marks included
      const auto calls = body.find("calls");
      const auto us = body.find("us");
      if (calls != body.end() && calls->is_number_unsigned() && us != body.end() && us->is_number()) {
        lock l(*this);
        companion_calls_ = calls->get<std::uint64_t>();
        companion_us_ = us->get<double>();
      }
    } else if (verb == "end") {
      lock l(*this);
      told_captured(t, text_of(body, "previous_pool"), -1);
      std::map<int, counters> now;
      for (const graph_record& g : rec_.graphs()) {
        for (int d : g.devices) now.emplace(d, counters{});
      }
      for (auto& [d, c] : now) {
        if (const auto read = driver_.read_counters(d)) c = *read;
      }
      const auto pools = body.find("pools");
      if (pools != body.end() && pools->is_array()) {
        for (const json& p : *pools) {
          const auto bytes = p.find("bytes");
          if (!p.is_object() || bytes == p.end() || !bytes->is_number_unsigned()) continue;
          std::vector<std::uint64_t> segments;
          const bool known = addresses(p, segments);
          rec_.on_pool_snapshot(text_of(p, "pool"), int_of(p, "device"), bytes->get<std::uint64_t>(),
                                known ? &segments : nullptr);
        }
      }
      read_memory();
      const std::string why = text_of(body, "why");
      rec_.end_bill(why.empty() ? "the program's end, as its Python companion saw it" : why, now);
    }
  } catch (...) {
  }
}

}  // namespace gmem::record
