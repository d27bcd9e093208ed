#pragma once
// The bill of a recording, as text: what CUDA graphs cost each device of each process, by
// kind, each kind in its own terms and only the kinds the recording saw (docs/record.md, "The
// bill"). Shared by `gmemprof show`, record's summary and the page. Plain C++.

#include <string>
#include <vector>

#include "gmem/profiler/recording.hpp"

namespace gmem::profiler {

/// The bill's lines for one device: a heading, then a line per kind seen (memory-node pool,
/// framework graph pools, executable-graph state), the rest as not graph memory and the
/// process's change, each within text_width (a kind's words continue under its figures).
/// Throws nothing but std::bad_alloc.
[[nodiscard]] std::vector<std::string> bill_lines(const graph_bill& b);

}  // namespace gmem::profiler
