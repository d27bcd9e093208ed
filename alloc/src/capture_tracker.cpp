#include "gmem/detail/capture_tracker.hpp"

#include <algorithm>

#include "gmem/usage_error.hpp"

namespace gmem {
namespace {

std::string stream_name(stream_handle s) {
  return s == 0 ? std::string("the legacy default stream") : "stream " + format_address(s);
}

}  // namespace

capture_tracker::capture_tracker(stream_handle origin, std::string graph_name)
    : origin_(origin), graph_name_(std::move(graph_name)) {}

bool capture_tracker::in_capture(stream_handle stream) const {
  return stream == origin_ || std::find(forked_.begin(), forked_.end(), stream) != forked_.end();
}

void capture_tracker::fork(stream_handle from, stream_handle stream) {
  const std::string where = "capture of graph '" + graph_name_ + "': fork of " +
                            stream_name(stream) + " from " + stream_name(from);
  if (!in_capture(from)) {
    throw usage_error(where + ": " + stream_name(from) +
                      " is not part of the capture; fork from the origin stream or a stream "
                      "already forked");
  }
  if (in_capture(stream)) {
    throw usage_error(where + ": " + stream_name(stream) +
                      " is already part of the capture; fork each stream once");
  }
  forked_.push_back(stream);
}

void capture_tracker::join(stream_handle stream, stream_handle into) {
  const std::string where = "capture of graph '" + graph_name_ + "': join of " +
                            stream_name(stream) + " into " + stream_name(into);
  const auto it = std::find(forked_.begin(), forked_.end(), stream);
  if (it == forked_.end()) {
    throw usage_error(where + ": " + stream_name(stream) +
                      " was not forked into the capture (or was already joined)");
  }
  if (into == stream || !in_capture(into)) {
    throw usage_error(where + ": " + stream_name(into) +
                      " is not another stream of the capture; join into the origin stream");
  }
  forked_.erase(it);
}

void capture_tracker::check_in_capture(stream_handle stream, const std::string& what) const {
  if (!in_capture(stream)) {
    throw usage_error("capture of graph '" + graph_name_ + "': " + what + " in " +
                      stream_name(stream) + ", which is not part of the capture; use the origin " +
                      stream_name(origin_) + " or fork the stream from it first");
  }
}

std::string capture_tracker::unjoined_message() const {
  std::string names;
  for (std::size_t i = 0; i < forked_.size(); ++i) {
    names += (i ? ", " : "") + stream_name(forked_[i]);
  }
  return "capture of graph '" + graph_name_ + "' on origin " + stream_name(origin_) +
         " ended with " + std::to_string(forked_.size()) + " forked stream(s) not joined back: " +
         names +
         ". The capture was ended and its graph discarded; every stream is usable again. Join "
         "each forked stream into the origin (capture::join) before capture::end";
}

}  // namespace gmem
