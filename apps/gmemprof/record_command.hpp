#pragma once
// `gmemprof record`: runs a command with the recording library injected, passes its exit
// status through, and prints what was recorded.

#include <iosfwd>
#include <string>
#include <vector>

namespace gmem::record {

struct record_options {
  std::string out_path = "gmem-record.json";
  int device = -1;  ///< -1: every device
  std::string name_from = "nvtx";
  /// How the library takes the program's driver calls: "cupti" (CUDA_INJECTION64_PATH, CUPTI's
  /// callbacks) or "interpose" (LD_PRELOAD, its own wrappers of the driver's entry points,
  /// without CUPTI's cost on every driver call). Empty: $GMEM_RECORD_HOOK, else "interpose" where
  /// its preloaded half (libgmem_record_preload.so, x86-64 builds) is beside the library, else
  /// "cupti".
  std::string hook;
  /// The injected library; empty: found next to gmemprof (or $GMEM_RECORD_LIBRARY).
  std::string library;
  /// After a signal sent to gmemprof record was passed to the command, how long the command has
  /// to end before it is killed (SIGKILL).
  double grace_s = 30;
  /// Tests: record as if a GPU were usable (the command stands in for a recorded program and
  /// writes its own PATH.<pid>.json).
  bool assume_gpu = false;
};

/// Where `gmemprof record` finds the recording library (`asked`, GMEM_RECORD_LIBRARY, beside
/// gmemprof, the build tree, the install's library folder) and whether it loads here: "PATH
/// (loads)", "PATH (does not load here: why)", or "not found (...)". Throws nothing.
[[nodiscard]] std::string describe_recording_library(const std::string& asked = "");

/// Why nothing can be recorded on this machine ("no NVIDIA driver: libcuda.so.1 not found"),
/// or empty when a CUDA device is there; `device_count` receives the count. Throws nothing.
[[nodiscard]] std::string gpu_unavailable_reason(int& device_count);

/// Runs `command` (argv, not empty) with recording set up, waits for it and returns its exit
/// status (128 + n when a signal n ended it, 127 when it could not be started). Without a GPU
/// or the library it runs the command unrecorded and says why in one line on `err`. Bad
/// options (an unwritable --out, a device that does not exist) return 2 before it runs.
/// SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this process while the command runs are passed to
/// the command (its process group, where this process is not a terminal's foreground job); it
/// then has `options.grace_s` to end before SIGKILL, and what its processes wrote is collected
/// into a report marked partial with why.
int run_record(const record_options& options, const std::vector<std::string>& command,
               std::ostream& out, std::ostream& err);

/// The hook a recording takes the driver's calls through: `asked` (--hook, else
/// $GMEM_RECORD_HOOK) where not empty, else "interpose" where `preload` (the preloaded half of the
/// library's own interception, beside the library) exists, else "cupti".
std::string chosen_hook(const std::string& asked, const std::string& preload);

/// What run_record does once the command ended: each process of it wrote PATH.<pid>.json; one is
/// renamed to `out_path`, several are merged into it (each kept beside it); then the summary
/// lines go to `err`: the recording library's (PATH.<pid>.json.summary, for a lone report of its
/// size), else those of the report read again. Removes the summaries. Throws nothing.
/// `hook` ("cupti" or "interpose") says what may have missed a process's calls. `stopped`, where
/// not empty, says why the command ended early (a signal gmemprof passed on): the report is
/// marked partial with it.
void collect_recordings(const std::string& out_path, const std::vector<std::string>& command, std::ostream& err,
                        const std::string& hook = "cupti", const std::string& stopped = "");

}  // namespace gmem::record
