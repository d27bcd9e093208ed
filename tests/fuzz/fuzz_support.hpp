#pragma once
// What every fuzz target shares: the input as a file (the commands under test read files, as
// gmemprof does), and invariants that end the run as a crash when they break.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace gmem::fuzz {

/// A file of this process that holds `text`; rewritten on every call.
inline std::string as_file(const std::string& text, const char* name) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/gmem-fuzz-" +
                           std::to_string(::getpid()) + "-" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

/// Breaks the run (libFuzzer saves the input) when `ok` is false.
inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "gmem fuzz invariant broken: %s\n", what);
    std::abort();
  }
}

/// Exit codes gmemprof's commands may return.
inline bool is_exit_code(int rc) { return rc == 0 || rc == 1 || rc == 2; }

}  // namespace gmem::fuzz
