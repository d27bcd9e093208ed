#include "gmem/profiler/graph_model.hpp"

namespace gmem::profiler {

const char* to_string(node_kind k) noexcept {
  switch (k) {
    case node_kind::kernel: return "kernel";
    case node_kind::memcpy: return "memcpy";
    case node_kind::memset: return "memset";
    case node_kind::host: return "host";
    case node_kind::child_graph: return "child_graph";
    case node_kind::empty: return "empty";
    case node_kind::event_record: return "event_record";
    case node_kind::event_wait: return "event_wait";
    case node_kind::mem_alloc: return "mem_alloc";
    case node_kind::mem_free: return "mem_free";
    case node_kind::conditional: return "conditional";
    case node_kind::other: return "other";
  }
  // Only reachable with a value cast from outside the enum; reports still get a name.
  return "other";
}

}  // namespace gmem::profiler
