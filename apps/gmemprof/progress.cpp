#include "gmemprof/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <ostream>

namespace gmem::profiler {

progress_printer::progress_printer(std::ostream& err, bool enabled,
                                   std::chrono::milliseconds quiet_for)
    : err_(&err), enabled_(enabled), start_(std::chrono::steady_clock::now()),
      quiet_for_(quiet_for) {}

void progress_printer::operator()(const std::string& line) {
  if (!enabled_) return;
  const auto elapsed = std::chrono::steady_clock::now() - start_;
  if (elapsed < quiet_for_) return;
  char when[32];
  std::snprintf(when, sizeof when, "%7.1f s  ",
                std::chrono::duration<double>(elapsed).count());
  *err_ << "gmemprof run: " << when << line << "\n" << std::flush;
}

bool progress_printer::stderr_is_terminal() noexcept { return ::isatty(2) == 1; }

}  // namespace gmem::profiler
