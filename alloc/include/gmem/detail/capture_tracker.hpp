#pragma once
// Bookkeeping of one stream capture: which streams were forked from the origin stream and
// joined back. Plain C++ (no CUDA): streams are identified by opaque handles.
//
// Invariants: the origin is never in the forked set; a stream is joined only after it was
// forked; `unjoined()` lists forked streams in fork order.

#include <cstdint>
#include <string>
#include <vector>

namespace gmem {

using stream_handle = std::uintptr_t;

class capture_tracker {
 public:
  capture_tracker(stream_handle origin, std::string graph_name);

  /// Records a fork of `stream` from a stream already in the capture. Throws usage_error if
  /// `from` is not in the capture, or `stream` is the origin or already forked.
  void fork(stream_handle from, stream_handle stream);

  /// Records that `stream` joined back into `into`. Throws usage_error if `stream` was not
  /// forked (or was already joined) or `into` is not in the capture.
  void join(stream_handle stream, stream_handle into);

  /// Throws usage_error unless `stream` is the origin or a forked, unjoined stream; `what`
  /// names the operation (e.g. "cudaMallocAsync of 4096 B").
  void check_in_capture(stream_handle stream, const std::string& what) const;

  [[nodiscard]] bool in_capture(stream_handle stream) const;
  [[nodiscard]] const std::vector<stream_handle>& unjoined() const noexcept { return forked_; }
  [[nodiscard]] stream_handle origin() const noexcept { return origin_; }
  [[nodiscard]] const std::string& graph_name() const noexcept { return graph_name_; }

  /// The error message for ending the capture with the unjoined streams still forked.
  [[nodiscard]] std::string unjoined_message() const;

 private:
  stream_handle origin_;
  std::string graph_name_;
  std::vector<stream_handle> forked_;
};

}  // namespace gmem
