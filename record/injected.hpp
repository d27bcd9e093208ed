#pragma once
// The parts of the injected library (libgmem_record.so) that touch CUDA, CUPTI and the process:
// the driver behind the session (cupti_driver.cpp), the exit and signal path (exit_path.cpp),
// CUPTI's callbacks (inject.cpp) and the library's own interception of the driver's entry
// points, the alternative to CUPTI (interpose.cpp). Not part of gmem_record_core: nothing here
// is host-tested except through the session they drive.

#include <cupti.h>

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

/// Registers the report's writing at exit, the handlers of signals (a partial report where the
/// default action follows; a signal the program handles is passed on, nothing written) and the
/// fork handler (a child records nothing).
void install_exit_path();

/// Writes the report now, analysed, as at exit, with `note` among its notes: the program is
/// ending where no C exit handler will run (Python raises SIGINT again after its teardown when a
/// KeyboardInterrupt was not caught). A later exit writes it again, once.
void write_before_exit(const char* note);

/// Makes the process's session from the environment `gmemprof record` sets (its report's path,
/// the names' source, the device, the command), once: false where one exists already.
bool start_session();

/// A driver call by CUPTI's callback id, with CUPTI's callback data (enter or exit, the call's
/// parameters as CUPTI lays them out, its result at exit): what CUPTI's callback hands the
/// session, whoever took the call.
void driver_call(unsigned id, const CUpti_CallbackData* cb);

/// An NVTX word (a range pushed or popped, a mark) as the session reads it.
enum class nvtx_kind { push, pop, mark };
void nvtx_word(nvtx_kind kind, const char* message);

}  // namespace gmem::record::injected
