// `gmemprof record` owns its run: a signal sent to it while the command runs goes to the command
// (its process group), which has its grace to end before SIGKILL, and what the command's
// processes wrote is collected into the report, marked partial with why. The command here
// stands in for a recorded program: a shell that writes a committed recording as its
// PATH.<pid>.json when the signal reaches it. gmemprof itself runs in a child of the test, in a
// session of its own (no terminal), and the test sends the signal to that child.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmem/profiler/report_io.hpp"
#include "gmemprof/record_command.hpp"

namespace gmem::record {
namespace {

namespace fs = std::filesystem;

struct stopped_run {
  int status = -1;     ///< gmemprof record's exit status
  std::string err;     ///< what it printed on stderr
  fs::path out;        ///< its -o report
  fs::path dir;        ///< the run's folder
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `gmemprof record` (run_record) on `script` in a child of this process (with `ignored`
// set to be ignored there first, as nohup does), waits until the script has written READY, sends
// `signals` to the child a quarter of a second apart, and waits for it.
stopped_run stop_a_recording(const std::string& name, const std::string& script, std::vector<int> signals,
                             double grace_s, std::vector<int> ignored = {}) {
  stopped_run r;
  r.dir = fs::path(GMEM_BINARY_DIR) / ("record-signals-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(r.dir);
  fs::create_directories(r.dir);
  r.out = r.dir / "run.json";
  const fs::path ready = r.dir / "READY", err = r.dir / "err.txt", library = r.dir / "libgmem_record.so";
  std::ofstream(library) << "";  // a library file to name: nothing loads it, the command stands in
  const pid_t gmemprof = fork();
  if (gmemprof == 0) {
    setsid();  // no terminal: as under CI, a timeout or a job runner
    for (int sig : ignored) signal(sig, SIG_IGN);
    std::FILE* e = std::freopen(err.c_str(), "w", stderr);
    (void)e;
    setenv("GMEM_RECORD_COMPANION", "0", 1);
    setenv("READY", ready.c_str(), 1);
    setenv("SRC", (fs::path(GMEM_SOURCE_DIR) / "reports" / "record" / "cupy_async-h100.json").c_str(), 1);
    setenv("HERE", r.dir.c_str(), 1);
    record_options o;
    o.out_path = r.out.string();
    o.library = library.string();
    o.hook = "cupti";
    o.grace_s = grace_s;
    o.assume_gpu = true;
    std::ostringstream out;
    std::ofstream errors(err, std::ios::app);
    const int rc = run_record(o, {"/bin/sh", "-c", script}, out, errors);
    errors.flush();
    _exit(rc);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(ready) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(fs::exists(ready)) << "the command never started";
  for (std::size_t k = 0; k < signals.size(); ++k) {
    if (k) std::this_thread::sleep_for(std::chrono::milliseconds(250));
    kill(gmemprof, signals[k]);
  }
  int status = 0;
  waitpid(gmemprof, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = read_text(err);
  return r;
}

// The stand-in's report on the signal SIG: the committed recording as its PATH.<pid>.json.
std::string writes_its_report_on(const char* sig, int exit_code) {
  return "trap 'cp \"$SRC\" \"$GMEM_RECORD_OUT_PREFIX.$$.json\"; exit " + std::to_string(exit_code) + "' " + sig +
         "\n: > \"$READY\"\nwhile :; do sleep 0.05; done\n";
}

class SignalToGmemprof : public ::testing::TestWithParam<std::pair<int, const char*>> {};

TEST_P(SignalToGmemprof, GoesToTheCommandWhoseReportIsWrittenPartialAndItsStatusIsGmemprofs) {
  const auto [sig, name] = GetParam();
  const stopped_run r = stop_a_recording(name, writes_its_report_on(name + 3, 64 + sig), {sig}, 20);  // trap: "TERM"
  EXPECT_EQ(r.status, 64 + sig) << r.err;
  ASSERT_TRUE(fs::exists(r.out)) << r.err;
  const profiler::report rep = profiler::read_report(r.out.string());
  ASSERT_TRUE(rep.recorded);
  EXPECT_TRUE(rep.recorded->partial);
  const std::string why = std::string("gmemprof record was sent ") + name + " (" + std::to_string(sig) +
                          ") and passed it to the command";
  EXPECT_EQ(rep.recorded->partial_reason, why);
  EXPECT_NE(r.err.find(std::string("passing ") + name), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wrote " + r.out.string() + " (PARTIAL: " + why + ")"), std::string::npos) << r.err;
  for (const auto& e : fs::directory_iterator(r.dir)) {  // the process's report became the -o report
    EXPECT_EQ(e.path().filename().string().rfind("run.json.", 0), std::string::npos) << e.path();
  }
  if (!HasFailure()) fs::remove_all(r.dir);  // kept for a failure's reading
}

INSTANTIATE_TEST_SUITE_P(Signals, SignalToGmemprof,
                         ::testing::Values(std::make_pair(SIGTERM, "SIGTERM"), std::make_pair(SIGHUP, "SIGHUP"),
                                           std::make_pair(SIGINT, "SIGINT"), std::make_pair(SIGQUIT, "SIGQUIT")),
                         [](const auto& param) { return std::string(param.param.second); });

// The signal reaches the command's whole process group: a process it started in the background
// (a launcher's worker) gets it too, and the command waits for it.
TEST(SignalToGmemprofTest, ReachesEveryProcessOfTheCommandsGroup) {
  // The worker says it is ready once its trap is set; the command, once the worker is.
  const std::string script =
      "sh -c 'trap \"touch \\\"$HERE/worker-stopped\\\"; exit 0\" TERM; : > \"$HERE/worker-ready\"; "
      "while :; do sleep 0.05; done' &\n"
      "while [ ! -e \"$HERE/worker-ready\" ]; do sleep 0.01; done\n"
      "trap 'wait; cp \"$SRC\" \"$GMEM_RECORD_OUT_PREFIX.$$.json\"; exit 3' TERM\n"
      ": > \"$READY\"\nwhile :; do sleep 0.05; done\n";
  const stopped_run r = stop_a_recording("group", script, {SIGTERM}, 20);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_TRUE(fs::exists(r.dir / "worker-stopped")) << "the worker never got SIGTERM\n" << r.err;
  EXPECT_TRUE(fs::exists(r.out)) << r.err;
  if (!HasFailure()) fs::remove_all(r.dir);
}

// A command that ignores the signal is killed once its grace is over; no report was written, and
// no message names one.
TEST(SignalToGmemprofTest, ACommandThatIgnoresItIsKilledAfterItsGraceAndNoReportIsNamed) {
  const auto t = std::chrono::steady_clock::now();
  const stopped_run r = stop_a_recording("ignored", "trap '' TERM\n: > \"$READY\"\nwhile :; do sleep 0.05; done\n",
                                         {SIGTERM}, 1.0);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  EXPECT_EQ(r.status, 128 + SIGKILL) << r.err;
  EXPECT_LT(took, 30.0);
  EXPECT_NE(r.err.find("did not end within 1 s of SIGTERM (15): killing it (SIGKILL)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no report was written"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("wrote "), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(r.out));
  if (!HasFailure()) fs::remove_all(r.dir);
}

// A command that takes SIGINT as its own and goes on is sent SIGTERM once its grace is over,
// which it may still end on, writing its report; SIGKILL would have lost it.
TEST(SignalToGmemprofTest, ACommandThatOutlivesItsGraceIsSentSigtermBeforeSigkill) {
  const stopped_run r = stop_a_recording("escalated", "trap '' INT\n" + writes_its_report_on("TERM", 143), {SIGINT}, 1.0);
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_NE(r.err.find("did not end within 1 s of SIGINT (2): sending SIGTERM (15), then SIGKILL after 5 s"),
            std::string::npos)
      << r.err;
  ASSERT_TRUE(fs::exists(r.out)) << r.err;
  EXPECT_EQ(profiler::read_report(r.out.string()).recorded->partial_reason,
            "gmemprof record was sent SIGINT (2) and passed it to the command, which did not end within 1 s and was "
            "sent SIGTERM");
  if (!HasFailure()) fs::remove_all(r.dir);
}

// A signal gmemprof was started to ignore (nohup's SIGHUP) is not passed on: the command, which
// ignores it too, is not made to end by it.
TEST(SignalToGmemprofTest, ASignalGmemprofIgnoresIsNotPassedOn) {
  const std::string script = "trap 'touch \"$HERE/got-hup\"' HUP\n" + writes_its_report_on("TERM", 143);
  const stopped_run r = stop_a_recording("nohup", script, {SIGHUP, SIGTERM}, 20, {SIGHUP});
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_FALSE(fs::exists(r.dir / "got-hup")) << r.err;
  EXPECT_EQ(r.err.find("passing SIGHUP"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("passing SIGTERM"), std::string::npos) << r.err;
  if (!HasFailure()) fs::remove_all(r.dir);
}

// Without a signal the report is the command's own, not partial.
TEST(SignalToGmemprofTest, ACommandThatEndsByItselfLeavesAWholeReport) {
  const std::string dir = std::string(GMEM_BINARY_DIR) + "/record-signals-none-" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/libgmem_record.so") << "";
  setenv("GMEM_RECORD_COMPANION", "0", 1);
  setenv("SRC", (fs::path(GMEM_SOURCE_DIR) / "reports" / "record" / "cupy_async-h100.json").c_str(), 1);
  record_options o;
  o.out_path = dir + "/run.json";
  o.library = dir + "/libgmem_record.so";
  o.hook = "cupti";
  o.assume_gpu = true;
  std::ostringstream out, err;
  EXPECT_EQ(run_record(o, {"/bin/sh", "-c", "cp \"$SRC\" \"$GMEM_RECORD_OUT_PREFIX.$$.json\"; exit 4"}, out, err), 4);
  unsetenv("GMEM_RECORD_COMPANION");
  const profiler::report rep = profiler::read_report(o.out_path);
  ASSERT_TRUE(rep.recorded);
  EXPECT_FALSE(rep.recorded->partial);
  EXPECT_EQ(err.str().find("passing"), std::string::npos) << err.str();
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace gmem::record
