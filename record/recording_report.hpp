#pragma once
// A recording as a report: what the recorder holds, analysed (each graph's own figures, each
// device's pool) and written. Plain C++ (no CUDA).

#include <cstdint>
#include <string>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/report.hpp"
#include "gmem/profiler/report_io.hpp"
#include "record/recorder.hpp"

namespace gmem::record {

/// How the recording ended and in what process.
struct recording_info {
  bool partial = false;
  std::string partial_reason;  ///< "signal 15 (SIGTERM)", ...
  std::string command;         ///< the recorded command line
  long pid = 0;
  std::string rank;                ///< RANK, else LOCAL_RANK, where the launcher set one
  std::vector<std::string> notes;  ///< one line each, e.g. CUPTI was taken
  std::vector<profiler::record_cost> cost;  ///< what recording cost the program, by part
  /// How the driver's calls were taken: "interpose" (the library's own interception) or "cupti".
  std::string hook;
};

/// How much analysis a report gets.
struct assemble_options {
  /// Seconds of per-graph analysis at the most (GMEM_RECORD_ANALYSIS_BUDGET_S, default 30):
  /// the graphs past it keep their skeletons (analysis_deferred). Negative: read the variable.
  double budget_s = -1;
  /// false: no analysis at all, skeletons only and no pool model (a fatal signal's report,
  /// written while the process waits to die: bounded in time by the graphs' size alone).
  bool analyse = true;
  /// Threads that analyse the graphs (each graph alone, independent of the others): 0 reads
  /// GMEM_RECORD_ANALYSIS_THREADS, else the CPUs the process may run on, at most 8. 1: on the
  /// calling thread only. The figures are the same for any number.
  unsigned threads = 0;
  /// Where given, receives the threads the analysis was shared among.
  unsigned* threads_used = nullptr;
};

/// The report of a recording: one scenario_result per graph (name = graph name, parameter
/// source="recorded"; counters after each recorded event; launch costs per class, host time
/// only; analysis and diagnostics from the model: the graph's own figures, its reservation the
/// reuse model's prediction for the graph alone; its skeleton), and the "recorded" section: the
/// events, each device's pool (growth by graph, high watermark and its attribution, set
/// diagnostics), the call sequence. `granularity` is the reservation granularity of the graphs'
/// device. Call recorder::finish() first.
[[nodiscard]] profiler::report assemble(const recorder& r, const profiler::environment& env,
                                        std::uint64_t granularity, const recording_info& info = {},
                                        const assemble_options& options = {});

/// A graph's identity, stable across runs of one program (gmemprof check matches graphs by it):
/// "nvtx:" and the NVTX range, "python:" and the Python site (with the framework's label), else
/// "site:" and a hash of the instantiation's call stack (offsets within functions or objects, not
/// addresses) and the graph's structure (node kinds, edges and, with `sizes`, allocation sizes).
/// Without sizes it is the graph's site: a graph whose held output grew keeps it. The hash is the
/// same as every earlier gmem's, so that baselines keep matching.
[[nodiscard]] std::string graph_identity(const graph_record& g, const profiler::flat_graph& flat, bool sizes);

/// The status message of a graph whose analysis at exit was deferred past the budget.
[[nodiscard]] std::string deferred_message(double budget_s);

/// What the recording's end took, in seconds, part by part: the program's exit waits for it.
struct end_times {
  double finish_s = 0;     ///< the recorder's last readings (the device's memory at the end)
  double analysis_s = 0;   ///< assemble(): each graph's analysis, the pools' model, the bills
  unsigned threads = 1;    ///< the threads the graphs' analysis was shared among
  double text_s = 0;       ///< the report's JSON text
  double read_back_s = 0;  ///< reading that text back as gmemprof reads it
  double write_s = 0;      ///< writing it atomically (written, synced, renamed)
  double summary_s = 0;    ///< the lines gmemprof record prints about it (none: 0)
  [[nodiscard]] double total_s() const { return finish_s + analysis_s + text_s + read_back_s + write_s + summary_s; }
};

/// Writes the recording atomically to `path`, after reading it back as gmemprof would from the
/// text it is about to write (a report gmemprof cannot read is never written), and returns what
/// was read back; `bytes` receives the file's size, `times` (where given) the text's, the
/// read-back's and the write's time. The scenarios are made and read on up to `threads` threads
/// (0: as many as the analysis's, assemble_options::threads). `keep`, where given, takes the
/// JSON trees of the text and of the read-back rather than freeing them. Throws
/// profiler::report_error (unwritable, or invalid naming what the reader refused).
profiler::report write_recording(const profiler::report& rep, const std::string& path, std::uint64_t& bytes,
                                 end_times* times = nullptr, unsigned threads = 0,
                                 profiler::kept_trees* keep = nullptr);

}  // namespace gmem::record
