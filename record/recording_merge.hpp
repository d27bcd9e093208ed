#pragma once
// The reports of the processes of one recorded command (a launcher, a shell, a parent and its
// CUDA children), merged into one. Plain C++, host-tested.

#include <string>
#include <utility>
#include <vector>

#include "gmem/profiler/report.hpp"

namespace gmem::record {

/// One process's report and where it was written.
struct process_report {
  std::string path;
  profiler::report report;
};

/// Every process's graphs in one report (processes ordered by pid, labelled p1, p2, ...): with
/// several, a graph is named "[p2 pid 4242] batch 256" and its identity "p2/<identity>" (stable
/// across runs of one command as long as its processes start in the same order), each pool
/// carries its process label, notes are prefixed with it, and `processes` lists every process
/// with its own report. The call sequence is left out of a merge of several (each process has its
/// own pool: `gmemprof replay --set` replays a process's own report). With one process, its
/// report as it is. The environment is the first process's that named a device. Throws nothing
/// but bad_alloc.
[[nodiscard]] profiler::report merge_recordings(std::vector<process_report> reports,
                                                const std::string& command);

}  // namespace gmem::record
