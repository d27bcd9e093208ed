#include "gmemprof/record_command.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <utility>
#include <algorithm>

#include "gmem/profiler/environment.hpp"
#include "gmem/profiler/report_io.hpp"
#include "record/recorder.hpp"
#include "record/recording_merge.hpp"
#include "record/recording_summary.hpp"
#include "record/signal_names.hpp"

namespace gmem::record {
namespace {

namespace fs = std::filesystem;

#ifndef GMEM_RECORD_LIBDIR_FROM_BIN
#define GMEM_RECORD_LIBDIR_FROM_BIN "../lib"
#endif

std::string find_library(const std::string& asked) {
  if (!asked.empty()) return asked;
  if (const char* env = std::getenv("GMEM_RECORD_LIBRARY")) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path dir = exe.parent_path();
  // Beside gmemprof, in the build tree, and where `cmake --install` puts it (the install's
  // library folder as seen from its bin folder: lib/, or lib/x86_64-linux-gnu under /usr).
  for (const fs::path& p : {dir / "libgmem_record.so", dir / ".." / "record" / "libgmem_record.so",
                            dir / GMEM_RECORD_LIBDIR_FROM_BIN / "libgmem_record.so",
                            dir / ".." / "lib" / "libgmem_record.so"}) {
    if (fs::exists(p, ec)) return fs::canonical(p, ec).string();
  }
  return "";
}

// The Python companion's folder (record/companion): beside the library in the build tree,
// share/gmem/companion in an install; GMEM_RECORD_COMPANION_DIR names another, and
// GMEM_RECORD_COMPANION=0 none. Empty when none is found.
std::string find_companion(const std::string& library) {
  const char* off = std::getenv("GMEM_RECORD_COMPANION");
  if (off && std::string(off) == "0") return "";
  if (const char* dir = std::getenv("GMEM_RECORD_COMPANION_DIR")) return dir;
  std::error_code ec;
  const fs::path lib = fs::path(library).parent_path();
  for (const fs::path& p : {lib / "companion", lib / ".." / "share" / "gmem" / "companion",
                            lib / ".." / ".." / "share" / "gmem" / "companion"}) {
    if (fs::exists(p / "sitecustomize.py", ec)) return fs::canonical(p, ec).string();
  }
  return "";
}

// PATH.<pid>.json files a recorded command's processes wrote (or left from an earlier run).
std::vector<std::pair<long, std::string>> process_reports(const std::string& out_path) {
  std::vector<std::pair<long, std::string>> found;
  std::error_code ec;
  const fs::path out(out_path);
  const std::string stem = out.filename().string() + ".";
  for (const auto& e : fs::directory_iterator(out.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= stem.size() + 5 || name.compare(0, stem.size(), stem) != 0 ||
        name.compare(name.size() - 5, 5, ".json") != 0) {
      continue;
    }
    const std::string pid = name.substr(stem.size(), name.size() - stem.size() - 5);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9) continue;
    found.emplace_back(std::stol(pid), e.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

struct granule_reading {
  std::uint64_t bytes = 0;  ///< 0: not measured, `method` says why
  std::string method;
  std::string cached_in;  ///< the cache file it was read from, empty when measured now
};

// profiler::measure_granularity(device) in a forked child (this process has not touched CUDA,
// so the child may), its answer read back through a pipe.
granule_reading measure_granule_in_child(int device) {
  int fds[2];
  if (pipe(fds) != 0) return {0, std::string("pipe: ") + std::strerror(errno), ""};
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return {0, std::string("fork: ") + std::strerror(errno), ""};
  }
  if (pid == 0) {
    close(fds[0]);
    std::string text;
    try {
      const profiler::granularity_measurement m = profiler::measure_granularity(device);
      text = std::to_string(m.bytes) + "\n" + m.method;
    } catch (const std::exception& e) {
      text = std::string("0\n") + e.what();
    }
    (void)!write(fds[1], text.data(), text.size());
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const auto newline = text.find('\n');
  if (newline == std::string::npos) return {0, "the measuring process ended without an answer", ""};
  granule_reading r;
  r.bytes = std::strtoull(text.substr(0, newline).c_str(), nullptr, 10);
  r.method = text.substr(newline + 1);
  return r;
}

// Where the granule measured for this machine's GPU model and driver is kept, from /proc alone
// (no CUDA call): ${XDG_CACHE_HOME:-~/.cache}/gmem/granularity-MODEL-RELEASE. Empty (measure every
// time) without the driver's /proc files, with GPUs of more than one model, or when
// GMEM_GRANULARITY_CACHE=0.
std::string granule_cache_path() {
  if (const char* off = std::getenv("GMEM_GRANULARITY_CACHE"); off && std::string(off) == "0") return "";
  const std::string release = profiler::driver_release();
  std::set<std::string> models;
  std::error_code ec;
  for (const auto& gpu : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    std::ifstream info(gpu.path() / "information");
    for (std::string line; std::getline(info, line);) {
      if (line.rfind("Model:", 0) == 0) {
        const auto first = line.find_first_not_of(" \t", 6);
        const auto last = line.find_last_not_of(" \t");
        if (first != std::string::npos) models.insert(line.substr(first, last - first + 1));
      }
    }
  }
  if (release.empty() || models.size() != 1) return "";
  std::string key = *models.begin() + "-" + release;
  for (char& c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  }
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = xdg && *xdg ? fs::path(xdg) : home && *home ? fs::path(home) / ".cache" : fs::path();
  return base.empty() ? "" : (base / "gmem" / ("granularity-" + key)).string();
}

// The granule for `device`: from the cache when an earlier gmemprof record measured it on this
// GPU model and driver, else measured now (in a child process) and cached.
granule_reading granule_for(int device) {
  const std::string cache = granule_cache_path();
  if (!cache.empty()) {
    std::ifstream in(cache);
    std::string bytes, method;
    if (std::getline(in, bytes) && std::getline(in, method)) {
      const std::uint64_t b = granularity_from_text(bytes.c_str());
      if (b) return {b, method, cache};
    }
  }
  granule_reading r = measure_granule_in_child(device);
  if (r.bytes && !cache.empty()) {
    std::error_code ec;
    fs::create_directories(fs::path(cache).parent_path(), ec);
    try {
      profiler::write_text_atomically(std::to_string(r.bytes) + "\n" + r.method + "\n", cache);
    } catch (const std::exception&) {
      // Not cached: the next record measures again.
    }
  }
  return r;
}

// A recording whose command gmemprof record stopped (a signal sent to gmemprof, passed on):
// partial, with why, after any reason a process's own report gave.
void mark_stopped(profiler::report& r, const std::string& stopped) {
  if (!r.recorded) return;
  auto& rec = *r.recorded;
  rec.partial_reason = rec.partial && !rec.partial_reason.empty() ? rec.partial_reason + "; " + stopped : stopped;
  rec.partial = true;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string signal_text(int sig) { return std::string(signal_name(sig)) + " (" + std::to_string(sig) + ")"; }

// How the command's environment differs from gmemprof's own.
struct env_change {
  enum class how { set, set_if_absent, prepend_path, unset };
  std::string name, value;
  how kind = how::set;
};

std::vector<env_change> recording_environment(const std::string& hook, const std::string& preload,
                                              const std::string& library, const std::string& companion,
                                              const std::string& out_path, const record_options& options,
                                              const std::string& granularity, const std::string& granularity_method,
                                              const std::string& command_line) {
  using how = env_change::how;
  std::vector<env_change> env;
  if (hook == "interpose") {
    // The library's own interception: its preloaded half (record/preload.cpp) takes the
    // program's lookups of libcuda's entry points and its calls linked to them, and loads the
    // library; NVTX loads it for ranges and marks (as CUPTI would be, unless the environment
    // names another tool).
    env.push_back({"LD_PRELOAD", preload, how::prepend_path});
    env.push_back({"NVTX_INJECTION64_PATH", library, how::set_if_absent});
    env.push_back({"CUDA_INJECTION64_PATH", "", how::unset});
  } else {
    env.push_back({"CUDA_INJECTION64_PATH", library, how::set});
  }
  env.push_back({"GMEM_RECORD_LIBRARY_LOADED", library, how::set});  // where the companion finds it
  env.push_back({"GMEM_RECORD_HOOK", hook, how::set});
  env.push_back({"GMEM_RECORD_OUT", out_path, how::set});
  env.push_back({"GMEM_RECORD_OUT_PREFIX", out_path, how::set});  // each process: PATH.<pid>.json
  env.push_back({"GMEM_RECORD_NAME_FROM", options.name_from, how::set});
  env.push_back({"GMEM_RECORD_COMMAND", command_line, how::set});
  if (options.device >= 0) env.push_back({"GMEM_RECORD_DEVICE", std::to_string(options.device), how::set});
  if (!granularity.empty()) {
    env.push_back({"GMEM_RECORD_GRANULARITY", granularity, how::set});
    env.push_back({"GMEM_RECORD_GRANULARITY_METHOD", granularity_method, how::set});
  }
  // Python programs: the companion runs first (as sitecustomize) and tells the recording what
  // only PyTorch knows; other programs never read PYTHONPATH.
  if (!companion.empty()) env.push_back({"PYTHONPATH", companion, how::prepend_path});
  return env;
}

// The command's environment: gmemprof's own with ENV's changes, as "NAME=VALUE" entries, made
// before the fork (the child only executes: no allocation after fork in a process that may have
// threads).
std::vector<std::string> environment_with(const std::vector<env_change>& env) {
  using how = env_change::how;
  std::map<std::string, std::string> vars;
  std::vector<std::string> order;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    if (vars.emplace(entry.substr(0, eq), entry.substr(eq + 1)).second) order.push_back(entry.substr(0, eq));
  }
  for (const env_change& c : env) {
    const auto it = vars.find(c.name);
    const bool had = it != vars.end();
    if (c.kind == how::unset) {
      if (had) vars.erase(it);
      continue;
    }
    if (c.kind == how::set_if_absent && had) continue;
    std::string value = c.value;
    if (c.kind == how::prepend_path && had && !it->second.empty()) value += ":" + it->second;
    if (!had) order.push_back(c.name);
    vars[c.name] = value;
  }
  std::vector<std::string> out;
  for (const std::string& name : order) {
    const auto it = vars.find(name);
    if (it != vars.end()) out.push_back(name + "=" + it->second);
  }
  return out;
}

// Whether this process is in the foreground of its controlling terminal: the terminal's Ctrl-C
// (and Ctrl-\) then reach every process of its group, the command's too.
bool terminal_foreground() {
  const int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool foreground = tcgetpgrp(fd) == getpgrp();
  close(fd);
  return foreground;
}

// What became of the command.
struct command_end {
  int status = 0;             ///< as a shell gives it: 128 + N when signal N ended it
  bool started = true;        ///< false: it could not be run (status 127)
  int passed_signal = 0;      ///< the first signal sent to gmemprof record and passed on (0: none)
  bool asked_to_end = false;  ///< it outlived its grace after that signal: SIGTERM
  bool killed = false;        ///< and then SIGKILL
};

constexpr int passed_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// The signals gmemprof record takes itself while its command runs, blocked from the start (before
// the driver is initialised, which may start threads of its own) to the end (after the report is
// collected), and taken with sigtimedwait, so that none ends gmemprof before its report is
// collected. A signal gmemprof's parent set to be ignored (nohup's SIGHUP, a background job's
// SIGINT) stays ignored and is not passed on: the command ignores it too. SIGCHLD is at its
// default meanwhile: where gmemprof's parent ignored it, the command would be reaped unseen. At
// the end, signals still pending are taken (not delivered: they would end gmemprof now).
class signal_guard {
 public:
  signal_guard() {
    sigemptyset(&watched_);
    for (int sig : passed_signals) {
      struct sigaction now {};
      if (sigaction(sig, nullptr, &now) == 0 && !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_IGN) continue;
      sigaddset(&watched_, sig);
    }
    sigaddset(&watched_, SIGCHLD);
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    sigaction(SIGCHLD, &default_action, &old_child_);
    sigprocmask(SIG_BLOCK, &watched_, &old_mask_);
  }
  ~signal_guard() {
    const timespec now{0, 0};
    while (sigtimedwait(&watched_, nullptr, &now) > 0) {
    }
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    sigaction(SIGCHLD, &old_child_, nullptr);
  }
  signal_guard(const signal_guard&) = delete;
  signal_guard& operator=(const signal_guard&) = delete;

  [[nodiscard]] const sigset_t& watched() const { return watched_; }
  /// In the command's process, before it is executed: as gmemprof's parent left them.
  void restore_in_child() const {
    sigaction(SIGCHLD, &old_child_, nullptr);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }

 private:
  sigset_t watched_{}, old_mask_{};
  struct sigaction old_child_ {};
};

// The next step once the command outlived its deadline: SIGTERM where the signal passed on was
// another (a program that took SIGINT as its own may still end on SIGTERM, with its report),
// 5 s later SIGKILL.
void past_deadline(pid_t target, double grace_s, command_end& end, std::optional<std::chrono::steady_clock::time_point>& deadline,
                   std::ostream& err) {
  if (!end.asked_to_end && end.passed_signal != SIGTERM) {
    err << "gmemprof record: the command did not end within " << seconds_text(grace_s) << " s of "
        << signal_text(end.passed_signal) << ": sending SIGTERM (15), then SIGKILL after 5 s\n";
    kill(target, SIGTERM);
    end.asked_to_end = true;
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    return;
  }
  err << "gmemprof record: the command did not end within " << seconds_text(grace_s) << " s of "
      << signal_text(end.passed_signal) << (end.asked_to_end ? " and 5 s of SIGTERM" : "") << ": killing it (SIGKILL)\n";
  kill(target, SIGKILL);
  end.killed = true;
}

// Runs COMMAND in ENVIRONMENT and waits for it. gmemprof record owns the run: a signal sent to it
// (SIGINT, SIGTERM, SIGHUP, SIGQUIT; GUARD's) goes to the command's process group (its own, made
// for it, where gmemprof is not in a terminal's foreground; the command alone otherwise, where the
// terminal's own Ctrl-C reaches the command directly and is not passed twice); then the command
// has GRACE_S seconds to end (past_deadline).
command_end run_command(const std::vector<std::string>& command, const std::vector<std::string>& environment,
                        double grace_s, const signal_guard& guard, std::ostream& err) {
  command_end end;
  std::vector<char*> argv, envp;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const std::string cannot_run = "gmemprof record: cannot run '" + command[0] + "': ";
  const bool own_group = !terminal_foreground();
  const pid_t pid = fork();
  if (pid < 0) {
    err << "gmemprof record: cannot start '" << command[0] << "': " << std::strerror(errno) << "\n";
    end.status = 127;
    end.started = false;
    return end;
  }
  if (pid == 0) {
    if (own_group) setpgid(0, 0);
    guard.restore_in_child();
    execvpe(argv[0], argv.data(), envp.data());
    const char* why = std::strerror(errno);
    (void)!write(2, cannot_run.data(), cannot_run.size());
    (void)!write(2, why, std::strlen(why));
    (void)!write(2, "\n", 1);
    _exit(127);
  }
  if (own_group) setpgid(pid, pid);  // here too: either process may run first
  const pid_t target = own_group ? -pid : pid;
  using clock = std::chrono::steady_clock;
  std::optional<clock::time_point> deadline;
  // When each signal was last passed on: the same signal again within a second is the same one
  // sent twice (timeout(1) sends it to gmemprof, then to gmemprof's process group), passed once.
  std::map<int, clock::time_point> passed_at;
  int status = 0;
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      err << "gmemprof record: lost track of the command (waitpid: " << std::strerror(errno) << ")\n";
      end.status = 1;
      return end;
    }
    const auto now = clock::now();
    if (deadline && now >= *deadline && !end.killed) past_deadline(target, grace_s, end, deadline, err);
    // At most a second's wait: the deadline is checked between signals.
    const double wait_s = deadline && !end.killed
                              ? std::min(1.0, std::max(0.0, std::chrono::duration<double>(*deadline - clock::now()).count()))
                              : 1.0;
    timespec ts{static_cast<time_t>(wait_s), static_cast<long>((wait_s - static_cast<time_t>(wait_s)) * 1e9)};
    siginfo_t info{};
    const int sig = sigtimedwait(&guard.watched(), &info, &ts);
    if (sig <= 0 || sig == SIGCHLD) continue;
    if (!own_group && info.si_code == SI_KERNEL) continue;  // the terminal's: the command has it too
    const auto last = passed_at.find(sig);
    if (last != passed_at.end() && clock::now() - last->second < std::chrono::seconds(1)) continue;
    passed_at[sig] = clock::now();
    if (!end.passed_signal) {
      end.passed_signal = sig;
      deadline = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(grace_s));
      err << "gmemprof record: passing " << signal_text(sig) << " to the command and waiting up to "
          << seconds_text(grace_s) << " s for it to end\n";
    }
    kill(target, sig);
  }
  end.status = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  return end;
}

// The hook asked for: --hook, else GMEM_RECORD_HOOK, else empty (chosen once the library is
// found: its own interception where its preloaded half is built, x86-64; CUPTI elsewhere).
// nullopt, said on ERR, for a hook that does not exist.
std::optional<std::string> asked_hook(const record_options& options, std::ostream& err) {
  std::string hook = options.hook;
  if (hook.empty()) {
    const char* h = std::getenv("GMEM_RECORD_HOOK");
    hook = h && *h ? h : "";
  }
  if (!hook.empty() && hook != "cupti" && hook != "interpose") {
    err << "gmemprof record: --hook takes cupti or interpose, not '" << hook << "'"
        << (options.hook.empty() ? " (from GMEM_RECORD_HOOK)" : "") << "\n";
    return std::nullopt;
  }
  return hook;
}

// The -o report's absolute path, checked writable, with any report of an earlier run at it (and
// its processes' PATH.<pid>.json) removed: a stale report must not pass for this run's. nullopt,
// said on ERR, where it cannot be written.
std::optional<std::string> fresh_out_path(const std::string& asked, std::ostream& err) {
  try {
    profiler::check_writable(asked);
  } catch (const profiler::report_error& e) {
    err << "gmemprof record: " << e.what() << "\n";
    return std::nullopt;
  }
  std::error_code ec;
  const std::string out_path = fs::absolute(asked, ec).string();
  fs::remove(out_path, ec);
  for (const auto& [pid, stale] : process_reports(out_path)) {
    fs::remove(stale, ec);
    fs::remove(stale + ".summary", ec);
  }
  return out_path;
}

// How the granule passed to the recording was had: measured now, or from the cache.
std::string granule_method(const granule_reading& granule, int device) {
  return granule.method + (granule.cached_in.empty()
                               ? ", measured by gmemprof record on device " + std::to_string(device) +
                                     " before the command started"
                               : ", measured by gmemprof record on this GPU model and driver earlier (cached in " +
                                     granule.cached_in + ")");
}

}  // namespace

std::string describe_recording_library(const std::string& asked) {
  const std::string path = find_library(asked);
  if (path.empty()) {
    return "not found (beside gmemprof, in ../record/ or " + std::string(GMEM_RECORD_LIBDIR_FROM_BIN) +
           "/ from it); set GMEM_RECORD_LIBRARY or install gmem with `cmake --install`";
  }
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h) {
    dlclose(h);
    return path + " (loads)";
  }
  const char* why = dlerror();
  const std::string text = why ? why : "unknown reason";
  return path + " (does not load here: " + text + ")" +
         (text.find("libcuda.so.1") != std::string::npos
              ? "; it needs the NVIDIA driver's libcuda.so.1, which a machine with a GPU has"
              : std::string());
}

std::string gpu_unavailable_reason(int& device_count) {
  device_count = 0;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return "no NVIDIA driver (libcuda.so.1 cannot be loaded)";
  using init_fn = int (*)(unsigned);
  using count_fn = int (*)(int*);
  const auto init = reinterpret_cast<init_fn>(dlsym(lib, "cuInit"));
  const auto count = reinterpret_cast<count_fn>(dlsym(lib, "cuDeviceGetCount"));
  if (!init || !count) return "the NVIDIA driver library lacks cuInit";
  if (const int r = init(0)) return "the CUDA driver did not initialise (CUresult " + std::to_string(r) + ")";
  if (count(&device_count) || device_count == 0) return "no CUDA device";
  return "";
}

void collect_recordings(const std::string& out_path, const std::vector<std::string>& command, std::ostream& err,
                        const std::string& hook, const std::string& stopped) {
  // Every process of the command's tree that used CUDA wrote PATH.<pid>.json: one is renamed
  // to PATH; several are merged into PATH (graphs named by process), each kept beside it.
  const auto written = process_reports(out_path);
  if (written.empty()) {
    err << "gmemprof record: no report was written: no process of the command made a CUDA call, "
           "or each ended before its exit handlers ran (_exit, SIGKILL)"
        << (hook == "interpose"
                ? ", or the preloaded library did not reach it (a program that clears LD_PRELOAD, or a setuid "
                  "one): record it with --hook cupti"
                : "")
        << "\n";
    return;
  }
  std::error_code ec;
  std::optional<std::vector<std::string>> summary;  // what the library said of its lone report
  try {
    if (written.size() == 1) {
      fs::rename(written.front().second, out_path, ec);
      if (ec) throw std::runtime_error("cannot rename " + written.front().second + ": " + ec.message());
      const std::uintmax_t bytes = fs::file_size(out_path, ec);
      if (!ec) summary = read_summary(written.front().second + ".summary", bytes);
    } else {
      std::vector<process_report> reports;
      for (const auto& [process, path] : written) {
        try {
          reports.push_back({path, profiler::read_report(path)});
        } catch (const std::exception& e) {
          err << "gmemprof record: process " << process << "'s report '" << path << "' cannot be read: " << e.what() << "\n";
        }
      }
      profiler::report merged = merge_recordings(std::move(reports), join(command));
      if (!stopped.empty()) mark_stopped(merged, stopped);
      profiler::write_report(merged, out_path);
      err << "gmemprof record: " << written.size() << " processes wrote reports, merged into " << out_path << ":\n";
      for (const auto& [process, path] : written) err << "gmemprof record:   process " << process << ": " << path << "\n";
    }
    if (written.size() == 1 && !stopped.empty()) {  // the library's summary does not say it was stopped
      profiler::report lone = profiler::read_report(out_path);
      mark_stopped(lone, stopped);
      profiler::write_report(lone, out_path);
      summary.reset();
    }
    for (const auto& line : summary ? *summary : summarize_recording(out_path)) err << "gmemprof record: " << line << "\n";
  } catch (const std::exception& e) {
    err << "gmemprof record: the report '" << out_path << "' cannot be read: " << e.what() << "\n";
  }
  for (const auto& [process, path] : written) fs::remove(path + ".summary", ec);
}

int run_record(const record_options& options, const std::vector<std::string>& command,
               std::ostream& out, std::ostream& err) {
  if (command.empty()) {
    err << "gmemprof record: no command given; write it after --, e.g. gmemprof record -- python3 train.py\n";
    return 2;
  }
  if (!parse_name_source(options.name_from)) {
    err << "gmemprof record: --name-from takes nvtx, stream or sequence, not '" << options.name_from << "'\n";
    return 2;
  }
  std::optional<std::string> asked = asked_hook(options, err);
  if (!asked) return 2;
  std::string hook = *asked;
  const signal_guard signals;  // from here until the report is collected
  // The granule the driver reserves graph memory in is measured before the command starts (the
  // recording library inside it must not allocate graph memory of its own) and passed on. It is
  // measured in a child process, so that no CUDA context of gmemprof's exists while the command
  // runs (with one left in this process, even after cudaDeviceReset, the command's loop of 1000
  // launches ran 8.8% slower on an H100; measured in a child, 2.0%), and cached per GPU model
  // and driver: measuring costs a context, about 0.6 s of an H100 run.
  // It goes first: a child may use CUDA only if this process has not initialised the driver,
  // which the check for a GPU below does. Without a GPU the child fails quietly.
  // Without the recording library nothing is recorded: then nothing is measured either.
  const std::string library = find_library(options.library);
  const std::string companion = find_companion(library);
  const int granule_device = options.device >= 0 ? options.device : 0;
  const granule_reading granule =
      library.empty() ? granule_reading{} : granule_for(granule_device);
  int devices = 0;
  std::string why = options.assume_gpu ? "" : gpu_unavailable_reason(devices);
  if (why.empty() && library.empty()) {
    why = "the recording library libgmem_record.so was not found next to gmemprof (set GMEM_RECORD_LIBRARY)";
  }
  // --hook interpose: the preloaded half, beside the library.
  const std::string preload =
      library.empty() ? std::string() : (fs::path(library).parent_path() / "libgmem_record_preload.so").string();
  std::error_code absent;
  hook = chosen_hook(hook, preload);
  if (why.empty() && hook == "interpose" && !fs::exists(preload, absent)) {
    err << "gmemprof record: --hook interpose needs " << preload
        << ", which is not there; build or install it with the recording library, or record with --hook cupti\n";
    return 2;
  }
  if (why.empty() && !options.assume_gpu && options.device >= devices) {
    err << "gmemprof record: device " << options.device << " does not exist (this machine has "
        << devices << "); pass --device 0.." << devices - 1 << " or all\n";
    return 2;
  }
  std::string out_path;
  if (why.empty()) {
    const std::optional<std::string> fresh = fresh_out_path(options.out_path, err);
    if (!fresh) return 2;
    out_path = *fresh;
  } else {
    err << "gmemprof record: nothing recorded: " << why << "; running the command anyway\n";
  }
  std::string granularity, granularity_method;
  if (why.empty()) {
    if (granule.bytes) {
      granularity = std::to_string(granule.bytes);
      granularity_method = granule_method(granule, granule_device);
    } else {
      err << "gmemprof record: the reservation granularity could not be measured (" << granule.method
          << "); bounds are rounded to cuMemGetAllocationGranularity's figure instead\n";
    }
    const char* off = std::getenv("GMEM_RECORD_COMPANION");
    if (companion.empty() && !(off && std::string(off) == "0")) {
      err << "gmemprof record: note: the Python companion (companion/sitecustomize.py) is not beside " << library
          << " nor under share/gmem: a PyTorch program is recorded without what only PyTorch knows (its graph "
             "pools, capture sites and labels, the bill's framework pools); set GMEM_RECORD_COMPANION_DIR to "
             "gmem's record/companion folder, or GMEM_RECORD_COMPANION=0 to record without it quietly\n";
    }
  }

  const std::vector<std::string> environment = environment_with(
      why.empty() ? recording_environment(hook, preload, library, companion, out_path, options, granularity,
                                          granularity_method, join(command))
                  : std::vector<env_change>{});
  const command_end end = run_command(command, environment, options.grace_s, signals, err);
  if (!why.empty() || !end.started) return end.status;
  std::string stopped;
  if (end.passed_signal) {
    stopped = "gmemprof record was sent " + signal_text(end.passed_signal) + " and passed it to the command";
    if (end.asked_to_end || end.killed) {
      stopped += ", which did not end within " + seconds_text(options.grace_s) + " s and was " +
                 (end.killed ? std::string(end.asked_to_end ? "sent SIGTERM, then killed (SIGKILL)" : "killed (SIGKILL)")
                             : std::string("sent SIGTERM"));
    }
  }
  collect_recordings(out_path, command, err, hook, stopped);
  (void)out;
  return end.status;
}

std::string chosen_hook(const std::string& asked, const std::string& preload) {
  if (!asked.empty()) return asked;
  std::error_code absent;
  return !preload.empty() && fs::exists(preload, absent) ? "interpose" : "cupti";
}

}  // namespace gmem::record
