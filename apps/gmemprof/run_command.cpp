#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gmemprof/commands.hpp"
#include "gmem/capability.hpp"
#include "gmem/error.hpp"
#include "gmem/profiler/compare.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gmem/usage_error.hpp"

namespace gmem::profiler {
namespace {

// Runs this gmemprof again with trial_arguments (stdout discarded, progress on stderr);
// returns its exit status, or -1 when it could not start.
int run_child(const run_options& options, const std::string& path) {
  std::vector<std::string> args = trial_arguments(options, path);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDOUT_FILENO);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// One trial in a fresh process, its report read back and its file removed; `what` names it
// ("trial 3") in the error when the process fails.
// A trial process that failed: gmemprof run exits as it did (3: the GPU or a CUDA call failed).
struct trial_failed : std::runtime_error {
  int exit_code;
  trial_failed(const std::string& what, int code) : std::runtime_error(what), exit_code(code) {}
};

report run_trial(const run_options& options, const std::string& path, const std::string& what) {
  const int rc = run_child(options, path);
  // 0, or 3 with its report written: a scenario ended in error, which the report says.
  std::ifstream written(path);
  if (rc != 0 && !(rc == 3 && written)) {
    std::remove(path.c_str());
    throw trial_failed(what + " of gmemprof run exited with " + std::to_string(rc) +
                           " (see its messages above); no report was written",
                       rc == 3 ? 3 : 2);
  }
  report r = read_report(path);
  std::remove(path.c_str());
  return r;
}

// K trials, each a fresh process (a new CUDA context: the driver's choices differ between
// processes far more than between trials of one process, reports/check-quality/README.md),
// joined into one report.
report run_trials_in_processes(const run_options& options, const std::string& out_path,
                               const std::string& command_line) {
  std::vector<std::vector<scenario_result>> trials;
  report first;
  for (int t = 0; t < options.trials; ++t) {
    const std::string path = out_path + ".trial" + std::to_string(t + 1) + ".tmp";
    if (options.progress) {
      options.progress("trial " + std::to_string(t + 1) + " of " +
                       std::to_string(options.trials) + " (a fresh process)");
    }
    report r = run_trial(options, path, "trial " + std::to_string(t + 1));
    if (t == 0) first = r;
    trials.push_back(std::move(r.scenarios));
  }
  // Scenarios whose trials disagree on a memory counter get more trials (fresh processes too),
  // of those scenarios only.
  const int settle = options.settle_trials < 0 ? 2 * options.trials : options.settle_trials;
  const std::vector<std::string> unsettled =
      settle > 0 ? unsettled_scenarios(trials, tolerances{}.memory) : std::vector<std::string>{};
  if (!unsettled.empty()) {
    run_options more = options;
    more.only = unsettled;
    more.settings.clear();  // only the settings that one of these scenarios declares
    for (const std::string& setting : options.settings) {
      try {
        (void)resolve_parameters(unsettled, {setting});
        more.settings.push_back(setting);
      } catch (const usage_error&) {
      }
    }
    for (int t = 0; t < settle; ++t) {
      const std::string path = out_path + ".settle" + std::to_string(t + 1) + ".tmp";
      if (options.progress) {
        std::string names;
        for (const auto& n : unsettled) names += (names.empty() ? "" : ", ") + n;
        options.progress("extra trial " + std::to_string(t + 1) + " of " + std::to_string(settle) +
                         " for " + names + " (their trials disagree on memory)");
      }
      trials.push_back(run_trial(more, path, "extra trial " + std::to_string(t + 1)).scenarios);
    }
  }
  first.env.command_line = command_line;
  first.scenarios = combine_trials(std::move(trials));
  return first;
}

}  // namespace

std::vector<std::string> trial_arguments(const run_options& options, const std::string& path) {
  std::vector<std::string> args{"gmemprof", "run"};
  for (const auto& n : options.only) args.push_back(n);
  for (const auto& s : options.settings) {
    args.push_back("--set");
    args.push_back(s);
  }
  for (const auto& [flag, value] : {std::pair<const char*, int>{"--device", options.device},
                                    {"--reps", options.reps},
                                    {"--warmups", options.warmups},
                                    {"--trials", 1}}) {
    args.push_back(flag);
    args.push_back(std::to_string(value));
  }
  args.push_back("--out");
  args.push_back(path);
  return args;
}

int run_run(const run_options& options, const std::string& out_path,
            const std::string& command_line, std::ostream& out, std::ostream& err) {
  try {
    // Everything that can be checked is checked before minutes of measuring.
    check_writable(out_path);
    check_scenario_names(options.only);
    (void)resolve_parameters(options.only, options.settings);
    if (const auto why = gpu_unavailable_reason()) {
      err << "gmemprof run: " << *why << "; no report was written\n";
      return 3;
    }
    const report rep = options.trials > 1 && options.trials_in_processes
                           ? run_trials_in_processes(options, out_path, command_line)
                           : run_suite(options, command_line);
    write_report(rep, out_path);
    int ok = 0, skipped = 0, failed = 0;
    for (const auto& s : rep.scenarios) {
      if (s.status == scenario_status::ok) ++ok;
      if (s.status == scenario_status::skipped) ++skipped;
      if (s.status == scenario_status::error) {
        ++failed;
        err << "gmemprof run: scenario " << s.key() << " failed: " << s.status_message << "\n";
      }
    }
    out << "wrote " << out_path << ": " << rep.scenarios.size() << " scenario results (" << ok
        << " ok, " << skipped << " skipped, " << failed << " error) on " << rep.env.device_name
        << "\n";
    return failed ? 3 : 0;  // 1 is check's, for a regression; a scenario's error is the GPU's
  } catch (const trial_failed& e) {
    err << "gmemprof run: " << e.what() << "\n";
    return e.exit_code;
  } catch (const report_error& e) {
    err << "gmemprof run: " << e.what() << "\n";
    return 2;
  } catch (const usage_error& e) {
    err << "gmemprof run: " << e.what() << "\n";
    return 2;
  } catch (const unsupported_error& e) {
    err << "gmemprof run: " << e.what() << "\n";
    return 2;
  } catch (const cuda_error& e) {
    // A CUDA failure outside any scenario (probing the device, measuring the granularity):
    // the GPU failed the run, and no report was written.
    err << "gmemprof run: " << e.what() << "; no report was written\n";
    return 3;
  } catch (const std::exception& e) {
    err << "gmemprof run: " << e.what() << "; no report was written\n";
    return 2;
  }
}

}  // namespace gmem::profiler
