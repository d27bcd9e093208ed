#pragma once
// The processes of a merged recording side by side (a launcher's ranks: torchrun, vLLM's and
// SGLang's workers): each process's and device's bill in one row, and where they differ, by kind
// and by graph. Shared by `gmemprof show` and record's summary. Plain C++.

#include <cstdint>
#include <string>
#include <vector>

#include "gmem/profiler/recording.hpp"

namespace gmem::profiler {

/// The process label a merged recording gives a graph's name ("[rank 0 pid 42] step" -> "rank 0");
/// empty for a recording of one process.
[[nodiscard]] std::string process_of(const recorded_graph& g);

/// The processes of a merged recording that share a device with another of its processes (ranks
/// on one GPU): their calls wait on each other's driver work.
[[nodiscard]] std::vector<std::string> processes_sharing_a_device(const recording& rec);

/// What a bill counts as graph memory: the memory-node pool retained, the framework's graph pools
/// retained and the executable graphs' state, each where the recording saw it.
[[nodiscard]] std::uint64_t graph_memory_bytes(const graph_bill& b);

/// The bills of several processes (or devices) as one table, a row each, then what differs
/// between the process with the most graph memory and the one with the least: each kind's
/// difference, the graphs that cost more there (matched by identity without the process's
/// label) and those it has alone. Empty for fewer than two bills.
[[nodiscard]] std::vector<std::string> processes_side_by_side(const recording& rec);

}  // namespace gmem::profiler
