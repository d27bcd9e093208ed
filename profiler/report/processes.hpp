#pragma once
// Facts about the processes of a merged recording (a launcher's ranks: torchrun, vLLM's and
// SGLang's workers) that the check and the views both read. Plain C++.

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

/// A bill's rows in a check: "bill[device 0]", "bill[rank 1 device 1]".
[[nodiscard]] std::string bill_row_label(const graph_bill& b);

/// The bill of `r` for the process and device of `like` (another recording's), or null.
[[nodiscard]] const graph_bill* find_bill(const recording& r, const graph_bill& like);

/// Whether a bill has the framework's graph pools as a kind: seen (the Python companion named the
/// pools) and holding something the framework can show. PyTorch's cudaMallocAsync backend keeps
/// graph memory in the memory-node pool: its pools, seen and empty, are no kind of its bill.
[[nodiscard]] bool framework_pools_held(const graph_bill& b);

/// What a bill counts as graph memory: the memory-node pool retained, the framework's graph pools
/// retained and the executable graphs' state, each where the recording saw it.
[[nodiscard]] std::uint64_t graph_memory_bytes(const graph_bill& b);
/// The same with each kind at its own peak (the memory-node pool's high watermark, the framework
/// pools' most at once): what the graphs may need at once, at most; the kinds' peaks need not
/// fall together.
[[nodiscard]] std::uint64_t graph_memory_peaks_bytes(const graph_bill& b);

}  // namespace gmem::profiler
