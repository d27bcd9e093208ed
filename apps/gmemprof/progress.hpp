#pragma once
// gmemprof run's progress line on stderr: "[n/N] scenario: summary (elapsed 3.1 s)". Quiet for
// runs shorter than a second, and when stderr is not a terminal unless asked (--progress).

#include <chrono>
#include <iosfwd>
#include <string>

namespace gmem::profiler {

class progress_printer {
 public:
  /// Prints to `err` when `enabled`; lines arriving in the first `quiet_for` are held back.
  progress_printer(std::ostream& err, bool enabled,
                   std::chrono::milliseconds quiet_for = std::chrono::milliseconds(1000));
  /// Called by the runner with each line; prefixes the elapsed time since construction.
  void operator()(const std::string& line);

  /// True when stderr (fd 2) is a terminal.
  [[nodiscard]] static bool stderr_is_terminal() noexcept;

 private:
  std::ostream* err_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::milliseconds quiet_for_;
};

}  // namespace gmem::profiler
