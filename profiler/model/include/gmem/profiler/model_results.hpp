#pragma once
// What the graph model's analysis gives back: an allocation's lifetime, the analysis's summary of
// a graph, a diagnostic. The model's own result types; the report (report.hpp) holds them.

#include <cstddef>
#include <cstdint>
#include <string>

namespace gmem::profiler {

/// One allocation's lifetime, in a topological order of the graph's nodes (child graphs inlined,
/// ties by node index): the steps at which its alloc and free nodes run. What the HTML view's
/// lifetime chart draws (execution order across, addresses down). An optional report section
/// (since gmem 0.2; reports without it still read, with no lifetimes).
struct allocation_lifetime {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint64_t alloc_step = 0;
  std::int64_t free_step = -1;  ///< -1 when the graph does not free it
};

struct analysis_summary {
  std::size_t alloc_nodes = 0;
  std::size_t free_nodes = 0;
  std::size_t unfreed_allocations = 0;
  std::uint64_t requested_bytes = 0;
  std::size_t distinct_addresses = 0;
  /// allocations / distinct virtual addresses (1 = no virtual-address reuse).
  double va_reuse_ratio = 0;
  std::uint64_t lower_bound_bytes = 0;          ///< heaviest antichain, bytes as requested
  std::uint64_t lower_bound_rounded_bytes = 0;  ///< same, each allocation rounded up to granularity
  std::uint64_t used_high_bytes = 0;
  std::uint64_t reserved_high_bytes = 0;
  /// requested_bytes / reserved_high_bytes: how many times physical memory was reused.
  double physical_reuse_ratio = 0;
  /// reserved_high_bytes / lower_bound_rounded_bytes (1 = the driver reserved only what the
  /// graph must have).
  double bound_ratio = 0;
};

/// Something the analysis found that a user can act on.
struct diagnostic {
  std::string code;      ///< stable identifier, e.g. "unfreed_allocation"
  std::string severity;  ///< "info", "warning"
  std::string message;   ///< words a user can act on
  std::uint64_t bytes = 0;  ///< memory involved (excess or unfreed), 0 when not applicable
};

}  // namespace gmem::profiler
