// How the injected library ends: the report written at exit, a partial one on a signal that
// ends the process, nothing in a child of fork().
//
// At exit the session never waits on a lock this thread holds: a program whose signal handler
// calls exit() while a callback of the same thread is recording would deadlock on it; another
// thread's hold is waited for at most 2 s.
//
// Signals are the program's. A signal the program handles (a fault a JVM or a wasm runtime
// takes on purpose, Python's SIGINT, a C++ SIGTERM handler) goes to its handler at once and
// nothing is written: the program goes on, recorded, and the report is written at its real
// exit. Only where the default action follows (the process ends) is a partial report written
// first, with skeletons only (no analysis), in a time bounded by the graphs' size. The handler
// itself does only what is async-signal-safe: it writes the signal's number to a pipe and waits
// (poll, up to 5 s) for the writer thread to answer on another pipe, then takes the default
// action again. The writer thread blocks every signal and takes the session's lock for at most
// 2 s: a signal that landed while a callback held it loses the partial report, it does not
// deadlock the process.
//
// A report written before exit (Python's end after an uncaught KeyboardInterrupt, which the
// interpreter ends by raising SIGINT again with no C exit handler run) registers the exit
// handler again, so that at a real exit it runs before the destructors of anything the early
// report made; the exit handler writes once.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "record/injected.hpp"
#include "record/signal_names.hpp"

namespace gmem::record::injected {
namespace {

constexpr int handled_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};
struct sigaction previous[65];
bool installed[65];
int wake_pipe[2] = {-1, -1};
int done_pipe[2] = {-1, -1};
std::atomic<bool> signal_writing{false};
std::atomic<bool> exit_written{false};

void at_exit() {
  if (!the_session || the_session->is_forked() || exit_written.exchange(true)) return;
  std::string why;
  if (!the_session->write_at_exit(&why) && !why.empty()) std::fprintf(stderr, "gmemprof record: %s\n", why.c_str());
}

void writer_thread() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    int sig = 0;
    const ssize_t n = read(wake_pipe[0], &sig, sizeof sig);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof sig)) return;
    if (the_session) the_session->write_on_signal(sig, signal_name(sig));
    const char done = 1;
    (void)!write(done_pipe[1], &done, 1);
  }
}

bool fault(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL; }

// The partial report, written by the writer thread while this handler waits (5 s at most).
void write_partial(int sig) {
  if (!the_session || the_session->is_forked() || wake_pipe[1] < 0 || signal_writing.exchange(true)) return;
  if (write(wake_pipe[1], &sig, sizeof sig) == static_cast<ssize_t>(sizeof sig)) {
    struct pollfd p {done_pipe[0], POLLIN, 0};
    int r;
    while ((r = poll(&p, 1, 5000)) < 0 && errno == EINTR) {
    }
    char c;
    if (r > 0) (void)!read(done_pipe[0], &c, 1);
  }
}

// The program's action for a signal as it set it: ignored, the default, or a handler. SIG_IGN
// and SIG_DFL are told apart from a handler whatever the flags (sa_handler and sa_sigaction share
// their storage).
bool ignored(const struct sigaction& a) { return a.sa_handler == SIG_IGN; }
bool by_default(const struct sigaction& a) { return a.sa_handler == SIG_DFL; }

void on_signal(int sig, siginfo_t* info, void* context) {
  const int saved = errno;
  const struct sigaction old = previous[sig];
  if (ignored(old)) return;
  if (!by_default(old)) {  // the program's: nothing is written, its handler runs as it would
    if (old.sa_flags & SA_RESETHAND) {  // a handler for one signal: the next one takes the default
      previous[sig] = {};
      previous[sig].sa_handler = SIG_DFL;
    }
    errno = saved;
    if (old.sa_flags & SA_SIGINFO) {
      old.sa_sigaction(sig, info, context);
    } else {
      old.sa_handler(sig);
    }
    return;
  }
  write_partial(sig);
  errno = saved;
  // The default action, as without recording: a fault raised by the kernel happens again when
  // the handler returns; any other signal is taken again once this handler returns.
  sigaction(sig, &old, nullptr);
  installed[sig] = false;
  if (!(fault(sig) && info && info->si_code > 0)) raise(sig);
}

void install_signal_handlers() {
  if (pipe2(wake_pipe, O_CLOEXEC) != 0 || pipe2(done_pipe, O_CLOEXEC) != 0) return;
  std::thread(writer_thread).detach();
  for (int sig : handled_signals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) continue;
    if (ignored(old)) continue;  // ignored: stays so
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_mask = old.sa_mask;
    sa.sa_flags = (old.sa_flags | SA_SIGINFO) & ~SA_RESETHAND;  // the program's SA_RESTART, SA_ONSTACK...
    if (sigaction(sig, &sa, &previous[sig]) == 0) installed[sig] = true;
  }
}

// A child made by fork() (without exec) holds a copy of the session: the parent's graphs, its
// output path, its signal handlers. It must not write over the parent's report nor catch the
// parent's signals: it records nothing (CUDA cannot be used in it after the parent's cuInit; a
// child of a process that never initialised CUDA loads this library afresh at its own cuInit
// and records under its own pid).
void in_forked_child() {
  if (the_session) the_session->forked();
  for (int sig : handled_signals) {
    if (installed[sig]) sigaction(sig, &previous[sig], nullptr);
  }
}

}  // namespace

void install_exit_path() {
  pthread_atfork(nullptr, nullptr, in_forked_child);
  std::atexit(at_exit);
  install_signal_handlers();
}

void write_before_exit(const char* note) {
  if (!the_session || the_session->is_forked()) return;
  std::string why;
  if (!the_session->write_at_exit(&why, 2.0, note ? note : "")) {
    if (!why.empty()) std::fprintf(stderr, "gmemprof record: %s\n", why.c_str());
    return;
  }
  std::atexit(at_exit);  // runs before the destructors of what this report made, and writes once
}

}  // namespace gmem::record::injected
