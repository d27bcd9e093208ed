#pragma once
// The names of the signals the recording and gmemprof record handle, one list for both: the
// injected library names the signal a partial report was written on, gmemprof record the signal
// it passed to its command.

#include <signal.h>

namespace gmem::record {

/// "SIGTERM", ... for the signals recording handles; "?" for any other.
[[nodiscard]] inline const char* signal_name(int sig) noexcept {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    default: return "?";
  }
}

}  // namespace gmem::record
