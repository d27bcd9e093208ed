#pragma once
// The processes of a merged recording side by side (a launcher's ranks: torchrun, vLLM's and
// SGLang's workers): each process's and device's bill in one row, and where they differ, by kind
// and by graph. Shared by `gmemprof show` and record's summary. Plain C++.

#include <string>
#include <vector>

#include "gmem/profiler/recording.hpp"

namespace gmem::profiler {

/// The bills of several processes (or devices) as one table, a row each, then what differs
/// between the process with the most graph memory and the one with the least: each kind's
/// difference, the graphs that cost more there (matched by identity without the process's
/// label) and those it has alone. Empty for fewer than two bills.
[[nodiscard]] std::vector<std::string> processes_side_by_side(const recording& rec);

}  // namespace gmem::profiler
