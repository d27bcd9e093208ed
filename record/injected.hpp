#pragma once
// The parts of the injected library (libgmem_record.so) that touch CUDA, CUPTI and the process:
// the driver behind the session (cupti_driver.cpp), the exit and signal path (exit_path.cpp) and
// CUPTI's callbacks (inject.cpp). Not part of gmem_record_core: nothing here is host-tested
// except through the session they drive.

#include "record/session.hpp"

namespace gmem::record::injected {

/// The process's session; leaked on purpose: it must outlive every static destructor at exit.
extern session* the_session;

/// The driver API behind a session: the process's own libcuda, no CUDA runtime.
[[nodiscard]] driver_api real_driver();

/// The command line of this process, from /proc/self/cmdline.
[[nodiscard]] std::string process_command_line();
/// Now, as an ISO 8601 UTC date.
[[nodiscard]] std::string iso_now();

/// Registers the report's writing at exit, the handlers of fatal signals (a partial report when
/// the default action follows) and the fork handler (a child records nothing).
void install_exit_path();

}  // namespace gmem::record::injected
