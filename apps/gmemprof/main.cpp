// gmemprof: the command line over gmem's profiler. It parses arguments and calls library
// functions; the work lives in the library.
//
// Conventions (docs/gmemprof.md, "Conventions"): `gmemprof help [COMMAND]` and `COMMAND --help`
// print the help; a usage error prints one line saying what is wrong, the command's usage
// line and where the help is, and exits 2; -o/--out names the file a command writes; the exit
// status is 0 (done), 1 (check found a regression; run: a scenario ended in error), 2 (a usage
// error or an unusable input or output), 3 (no usable GPU, or the GPU failed the command).
// `record` exits with its command's status.

#include <climits>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "gmemprof/arguments.hpp"
#include "gmemprof/commands.hpp"
#include "gmemprof/progress.hpp"
#include "gmem/error.hpp"
#include "gmem/profiler/device_info.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gmemprof/record_command.hpp"
#include "suite/scenarios.hpp"

namespace {

using gmem::cli::arguments;
using gmem::cli::option;
using gmem::cli::usage_problem;
using gmem::cli::whole_number;

constexpr int exit_usage = 2;
constexpr int exit_no_gpu = 3;

struct command {
  const char* name;
  const char* summary;  ///< one line for `gmemprof help`
  const char* usage;    ///< the usage line(s), "usage: " first
  const char* help;     ///< what follows the usage in `gmemprof help COMMAND`
  std::vector<option> options;
  bool takes_command;
  int (*run)(const arguments&, const std::string& command_line);
};

const char* const exit_status_text =
    "exit status: 0 done; 1 check found a regression (only check exits 1); 2 a usage error, or an\n"
    "input or output that cannot be used; 3 no usable GPU, or the GPU failed the command (run: a\n"
    "scenario ended in error; its report is still written). record exits with COMMAND's status.\n";

// ---- the commands ----

int info(const arguments& a, const std::string&) {
  std::optional<int> device;
  if (a.has("--device")) device = whole_number("--device", a.value("--device"), 0, INT_MAX);
  if (!a.positional.empty()) throw usage_problem("takes no argument '" + a.positional.front() + "'");
  const int rc = gmem::profiler::run_info(std::cout, std::cerr, device);
  std::cout << "recording library (gmemprof record): " << gmem::record::describe_recording_library() << "\n";
  return rc;
}

int run(const arguments& a, const std::string& command_line) {
  if (a.has("--list")) {
    std::cout << gmem::profiler::format_scenario_list();
    return 0;
  }
  gmem::profiler::run_options options;
  options.only = a.positional;
  options.settings = a.all("--set");
  if (a.has("--device")) options.device = whole_number("--device", a.value("--device"), 0, INT_MAX);
  if (a.has("--reps")) options.reps = whole_number("--reps", a.value("--reps"), 1, INT_MAX);
  if (a.has("--warmups")) options.warmups = whole_number("--warmups", a.value("--warmups"), 0, INT_MAX);
  if (a.has("--trials")) options.trials = whole_number("--trials", a.value("--trials"), 1, INT_MAX);
  const bool progress = a.has("--progress") || gmem::profiler::progress_printer::stderr_is_terminal();
  options.progress = gmem::profiler::progress_printer(std::cerr, progress);
  return gmem::profiler::run_run(options, a.value("--out", "gmem-report.json"), command_line, std::cout, std::cerr);
}

int check(const arguments& a, const std::string&) {
  if (a.positional.size() != 2) throw usage_problem("needs BASELINE and CURRENT, two reports");
  gmem::profiler::tolerances t;
  for (const std::string& s : a.all("--tolerance")) {
    try {
      gmem::profiler::set_tolerance(t, s);
    } catch (const std::invalid_argument& e) {
      throw usage_problem(e.what());
    }
  }
  t.strict = a.has("--strict");
  const std::string format = a.value("--format", "text");
  if (format != "text" && format != "json" && format != "markdown") {
    throw usage_problem("option '--format' takes text, json or markdown, not '" + format + "'");
  }
  return gmem::profiler::run_check(a.positional[0], a.positional[1], t, std::cout, std::cerr, a.has("--all"), format);
}

int show(const arguments& a, const std::string&) {
  if (a.positional.size() != 1) throw usage_problem(a.positional.empty() ? "needs a REPORT" : "takes one REPORT");
  gmem::profiler::show_options o;
  if (a.has("--top")) o.top = static_cast<std::size_t>(whole_number("--top", a.value("--top"), 1, INT_MAX));
  o.graphs = a.all("--graph");
  o.all = a.has("--all");
  const std::string format = a.value("--format", "text");
  if (format != "text" && format != "json") throw usage_problem("option '--format' takes text or json, not '" + format + "'");
  return gmem::profiler::run_show(a.positional[0], o, format, std::cout, std::cerr);
}

int replay(const arguments& a, const std::string&) {
  if (a.positional.size() != 1) throw usage_problem(a.positional.empty() ? "needs a REPORT" : "takes one REPORT");
  const int device = a.has("--device") ? whole_number("--device", a.value("--device"), 0, INT_MAX) : 0;
  if (a.has("--set") && a.has("--graph")) throw usage_problem("--set replays every graph: leave out --graph");
  if (a.has("--set")) return gmem::profiler::run_replay_set(a.positional[0], device, std::cout, std::cerr);
  return gmem::profiler::run_replay(a.positional[0], a.value("--graph"), device, std::cout, std::cerr);
}

int bench_summary(const arguments& a, const std::string&) {
  if (a.positional.size() != 1) throw usage_problem(a.positional.empty() ? "needs BENCH_JSON" : "takes one BENCH_JSON");
  return gmem::profiler::run_bench_summary(a.positional[0], a.value("--out"), std::cout, std::cerr);
}

int predict(const arguments& a, const std::string&) {
  if (a.positional.size() != 1) {
    throw usage_problem(a.positional.empty() ? "needs a SAMPLE or a RECORDING" : "takes one SAMPLE or RECORDING");
  }
  gmem::profiler::predict_options o;
  o.sample_path = a.positional[0];
  o.sampled_sizes = a.value("--sampled-sizes");
  o.sizes = a.value("--sizes");
  o.order = a.value("--order", o.order);
  o.json_path = a.value("--json");
  o.format = a.value("--format", o.format);
  if (o.format != "text" && o.format != "json") throw usage_problem("--format is text or json");
  const std::string graphs = a.value("--graphs", "5");
  if (graphs == "all") {
    o.graphs = static_cast<std::size_t>(-1);
  } else {
    std::size_t used = 0;
    try {
      o.graphs = std::stoul(graphs, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != graphs.size() || graphs.empty() || graphs[0] == '-') throw usage_problem("--graphs is a count or all, not '" + graphs + "'");
  }
  return gmem::profiler::run_predict(o, std::cout, std::cerr);
}

std::string view_input(const arguments& a) {
  if (a.positional.size() != 1) throw usage_problem(a.positional.empty() ? "needs a REPORT" : "takes one REPORT");
  if (!a.has("--out")) throw usage_problem("needs -o FILE, the file to write");
  return a.positional[0];
}

int html(const arguments& a, const std::string&) {
  const std::string report = view_input(a);
  return gmem::profiler::run_html(report, a.value("--baseline"), a.value("--bench"), a.value("--out"), std::cout,
                                  std::cerr);
}

int trace(const arguments& a, const std::string&) {
  const std::string report = view_input(a);
  return gmem::profiler::run_trace(report, a.value("--out"), std::cout, std::cerr);
}

int record(const arguments& a, const std::string&) {
  if (a.command.empty()) throw usage_problem("needs the COMMAND to record (after --)");
  gmem::record::record_options options;
  options.out_path = a.value("--out", options.out_path);
  options.name_from = a.value("--name-from", options.name_from);
  options.hook = a.value("--hook", options.hook);
  if (a.has("--grace")) options.grace_s = whole_number("--grace", a.value("--grace"), 0, 86400);
  if (a.has("--device")) {
    options.device = a.value("--device") == "all" ? -1 : whole_number("--device", a.value("--device"), 0, INT_MAX);
  }
  return gmem::record::run_record(options, a.command, std::cout, std::cerr);
}

const option out_option{"--out", "-o", true, false};
const option device_option{"--device", "", true, false};

const std::vector<command>& commands() {
  static const std::vector<command> all = {
      {"info", "the GPU(s): name, memory, driver and runtime, graph memory node support",
       "usage: gmemprof info [--device N]\n",
       "Describes device N (every device when omitted) and where the recording library is.\n"
       "Without a usable GPU it says why on its first line and exits 3; with one it exits 0, so a\n"
       "script can ask whether this machine has a usable GPU (tools/main.sh does).\n",
       {device_option}, false, info},
      {"run", "run the scenario suite on a GPU and write a JSON report",
       "usage: gmemprof run [SCENARIO...] [--set NAME=VALUE]... [-o PATH] [--device N]\n"
       "                    [--reps N] [--warmups N] [--trials K] [--progress]\n"
       "       gmemprof run --list\n",
       "Runs every scenario (or the named ones) on device N (default 0) and writes the report to\n"
       "PATH (default gmem-report.json) atomically: a failed run never overwrites a good report.\n"
       "The output path, the device, the scenario names and the settings are checked before\n"
       "anything runs. --list shows each scenario with its parameters and their defaults.\n"
       "\n"
       "  --set NAME=VALUE  sets parameter NAME of every selected scenario that has it (an error\n"
       "                    when none has); repeatable. Sizes take bytes or B, KiB, MiB, GiB, TiB\n"
       "                    (powers of 1024: --set bytes=1GiB; KB/MB/GB are refused as\n"
       "                    ambiguous), counts a whole number, flags true or false. The values\n"
       "                    used are in the report, part of each key.\n"
       "  --reps N          samples per launch cost (default 10), after --warmups N (default 2)\n"
       "  --trials K        times each scenario is measured from a fresh state (default 5); the\n"
       "                    check tests the trials' distribution. A scenario whose trials\n"
       "                    disagree on used or reserved memory gets 2K more.\n"
       "  --progress        progress on stderr ([n/N] scenario, elapsed), also when stderr is\n"
       "                    not a terminal\n",
       {out_option, device_option, {"--set", "", true, true}, {"--reps", "", true, false},
        {"--warmups", "", true, false}, {"--trials", "", true, false}, {"--progress", "", false, false},
        {"--list", "", false, false}},
       false, run},
      {"check", "compare a report against a baseline: exit 0 pass, 1 regression",
       "usage: gmemprof check BASELINE CURRENT [--tolerance NAME=FRACTION]... [--all] [--strict]\n"
       "                      [--format text|json|markdown]\n",
       "Compares CURRENT against BASELINE, two reports of one kind (two suite reports, or two\n"
       "recordings), row by row: memory high watermarks may not grow by more than the memory\n"
       "tolerance (default 0.02), reuse ratios may not drop by more than the reuse tolerance\n"
       "(default 0.02), launch-cost medians may not grow by more than the time tolerance\n"
       "(default 0.50) and by more than time_floor_us (default 10) microseconds. The summary\n"
       "(counts per verdict) comes first, then the rows that are not a pass (--all: every row).\n"
       "Rows that cannot be compared are 'unstable': reported, failing only with --strict.\n"
       "\n"
       "  --tolerance NAME=FRACTION  NAME is memory, reuse, time, time_floor_us,\n"
       "                    time_separation, host_drift (0: off), few_samples,\n"
       "                    few_samples_floor_us, or one metric as the table prints it\n"
       "                    (reserved_high_bytes, wall.first_launch_no_upload)\n"
       "\n"
       "How rows are judged. Reports with trials (gmemprof run --trials K) are compared as\n"
       "distributions: a one-sided Mann-Whitney U test of the trials must give p <= 0.01 (with\n"
       "too few trials for the test, the effect alone decides), and the effect: a counter's\n"
       "current median lies outside every value the baseline's trials showed, by more than the\n"
       "tolerance; a time's current median exceeds the baseline's slowest trial by the tolerance\n"
       "and time_floor_us, or every current trial exceeds it by time_separation (default 0.15).\n"
       "Where both reports time a reference launch (a one-memset graph beside each sample),\n"
       "times are judged at the baseline's reference speed ('*'); a time that moved no further\n"
       "than its metric moved across the whole suite is 'unstable' (the host as a whole ran\n"
       "slower or faster; host_drift, default 0.6). Two recordings: graphs pair by identity, then\n"
       "by site (made where and as the other was, with other sizes); a class of calls measured\n"
       "fewer than five times is judged one sample against one, a regression needing more than\n"
       "few_samples (default 2.0) and few_samples_floor_us (default 100), except in graphs of a\n"
       "site of two or more: those make one row per site ('site S (N graphs)'), each graph's own\n"
       "change a paired sample (a sign test from seven graphs, and the median graph's change).\n"
       "A recording's drift is how the process's other calls moved.\n",
       {{"--tolerance", "", true, true}, {"--all", "", false, false}, {"--strict", "", false, false},
        {"--format", "", true, false}},
       false, check},
      {"show", "print a report: a recording's bill, top graphs and causes first",
       "usage: gmemprof show REPORT [--top N] [--graph NAME]... [--all] [--format text|json]\n",
       "A recording (gmemprof record) opens with the answer: what CUDA graphs cost the device by\n"
       "kind (the bill), the top graphs by what they cost, why the pool reached its high\n"
       "watermark, and the diagnostics by kind. Every graph's detail and the pools' mapping\n"
       "events follow for a recording of at most N graphs, or with --all. A suite report\n"
       "(gmemprof run) prints its environment, then each scenario.\n"
       "\n"
       "  --top N           the first answer lists N graphs (default 10)\n"
       "  --graph NAME      only this graph's (or scenario's) detail; a shell glob ('decode*')\n"
       "                    selects several; repeatable\n"
       "  --all             every graph's detail and every mapping event\n"
       "  --format json     the same for scripts, with exact bytes\n",
       {{"--top", "", true, false}, {"--graph", "", true, true}, {"--all", "", false, false},
        {"--format", "", true, false}},
       false, show},
      {"replay", "re-measure a report's graph skeletons on this GPU, and what saves memory",
       "usage: gmemprof replay REPORT [--graph NAME] [--device N]\n"
       "       gmemprof replay REPORT --set [--device N]\n",
       "Builds each graph skeleton the report carries (memory nodes and empty nodes, in the order\n"
       "the graph created them; no user kernel runs) on the GPU, measures its reservation, then\n"
       "each candidate change, and prints the changes that saved at least one granule here.\n"
       "With --set (a report of gmemprof record or gmem.profile_graphs): replays the graphs\n"
       "together, in the order the program launched, uploaded, freed, destroyed and trimmed them,\n"
       "and prints the set's high watermark against the recorded one, each graph's growth, and\n"
       "the what-if changes of the set that saved at least one granule here.\n",
       {device_option, {"--graph", "", true, false}, {"--set", "", false, false}}, false, replay},
      {"bench-summary", "the markdown summary of a gmem_bench run",
       "usage: gmemprof bench-summary BENCH_JSON [-o FILE.md]\n",
       "Turns the JSON of a gmem_bench run (--benchmark_out=FILE --benchmark_out_format=json) into\n"
       "a markdown summary: mapping cost per GiB, its ratio to the virtual-memory floor, what an\n"
       "upload saves, what remaps cost, the alternatives' cost and footprint, gmem's own cost.\n"
       "Prints it, or writes FILE.md atomically.\n",
       {out_option}, false, bench_summary},
      {"predict", "the bill of a whole warm-up, predicted from a few captured batch sizes",
       "usage: gmemprof predict SAMPLE [--sizes LIST] [--order largest-first|as-given] [--json FILE]\n"
       "                        [--graphs N|all] [--format text|json]\n"
       "       gmemprof predict RECORDING --sampled-sizes LIST [--sizes LIST] ...\n",
       "Reads a sample (gmem.predict.sample in the engine's process: a few batch sizes captured\n"
       "the engine's way, each with every call PyTorch's caching allocator made in the graph pool,\n"
       "the pool's segments, the executable graphs' state and the device memory in use) and\n"
       "predicts what capturing every size of LIST costs, by kind: PyTorch's graph pool (each\n"
       "size's allocations fitted from the sampled sizes, replayed in the capture order through\n"
       "the caching allocator's rules), the executable-graph state, and what captures take\n"
       "outside the pools, each with the uncertainty it measured of itself; and beside it the\n"
       "linear extrapolation from two sizes that engines use. Each graph of every size has its\n"
       "own figures (the JSON lists them all; the text the costliest). It checks the allocator\n"
       "model on the sample's own calls against the pool PyTorch listed.\n"
       "\n"
       "From a RECORDING (gmemprof record of a program that captured the sampled sizes, once\n"
       "each, with graph memory nodes): each graph's growth of the memory-node pool, its state\n"
       "as its instantiation read it, and what libraries took while it was captured. A\n"
       "recording holds no allocator calls: PyTorch's caching allocator needs a sample.\n"
       "\n"
       "  --sizes LIST      the warm-up's batch sizes: 1,2,4 or 1-512 or 8-512:8, or a mix\n"
       "                    (default: the capture order the sample holds)\n"
       "  --sampled-sizes L a recording's sampled sizes in the order it captured them: its\n"
       "                    graphs, in the order instantiated, split evenly among them\n"
       "  --order O         largest-first (default: the order engines capture in) or as-given\n"
       "  --json FILE       also write the prediction as JSON, atomically\n"
       "  --graphs N|all    list the N costliest graphs (default 5), or each graph in capture order\n"
       "  --format json     print the JSON instead of the text\n",
       {{"--sizes", "", true, false}, {"--order", "", true, false}, {"--json", "", true, false},
        {"--graphs", "", true, false}, {"--format", "", true, false}, {"--sampled-sizes", "", true, false}},
       false, predict},
      {"html", "a report as one self-contained HTML page",
       "usage: gmemprof html REPORT [--baseline BASELINE] [--bench BENCH_JSON] -o FILE.html\n",
       "Writes the report as one self-contained HTML page (inline CSS, script and SVG; nothing\n"
       "loaded from the network): for a recording, the bill, the pool's reservation over time with\n"
       "its high watermark and what held it, the graphs by cost; for a suite report, per scenario\n"
       "requested vs lower bound vs reserved and the counters across phases; with --bench the\n"
       "mapping cost against size, with --baseline the check's verdicts coloured.\n",
       {out_option, {"--baseline", "", true, false}, {"--bench", "", true, false}}, false, html},
      {"trace", "a report as a Chrome trace / Perfetto timeline",
       "usage: gmemprof trace REPORT -o FILE.json\n",
       "Writes the report as Chrome trace event JSON, to open in ui.perfetto.dev or\n"
       "chrome://tracing. A recording's calls and pool are drawn at the times the program made\n"
       "them; a suite report holds medians, not timestamps, so its timeline is laid out from them.\n",
       {out_option}, false, trace},
      {"record", "run a program unmodified and record the graph memory of its CUDA graphs",
       "usage: gmemprof record [-o PATH] [--device N|all] [--name-from nvtx|stream|sequence]\n"
       "                       [--hook cupti|interpose] [--grace SECONDS] [--] COMMAND [ARGS...]\n",
       "Runs COMMAND with gmem's recording library injected and writes, when it exits, a report\n"
       "(default gmem-record.json) of every executable graph with memory nodes and every graph\n"
       "captured into a framework's pool: its nodes and analysis, each instantiate, upload,\n"
       "launch and trim with host time and the graph memory counters around it, and the bill:\n"
       "what CUDA graphs cost the device, by kind.\n"
       "Graphs are named after the NVTX range active at capture or instantiation, else the\n"
       "capturing stream and a number (--name-from). Read it with `gmemprof show PATH`, compare\n"
       "two with `gmemprof check`. Options end at COMMAND (or --). The exit status is COMMAND's\n"
       "(128+N when signal N ended it); without a GPU COMMAND runs unrecorded.\n"
       "--hook (or GMEM_RECORD_HOOK) says how the driver's calls are taken: interpose, the\n"
       "default where it is built (x86-64), preloads the library (LD_PRELOAD), which wraps the\n"
       "driver's entry points the program looks up or links to, sparing every other driver call\n"
       "any cost; cupti injects it (CUDA_INJECTION64_PATH) and takes them through CUPTI's\n"
       "callbacks, which every driver call of the process then goes through.\n"
       "SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to gmemprof go to COMMAND (its process group),\n"
       "which then has --grace SECONDS (default 30) to end, then SIGTERM and 5 s later SIGKILL; the\n"
       "report holds what its processes wrote, marked partial. A signal COMMAND handles itself\n"
       "writes nothing early: its report is written when it exits.\n",
       {out_option, device_option, {"--name-from", "", true, false}, {"--hook", "", true, false},
        {"--grace", "", true, false}},
       true, record},
  };
  return all;
}

const command* find(const std::string& name) {
  for (const command& c : commands()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::string overview() {
  std::string out =
      "usage: gmemprof <command> [options]\n"
      "       gmemprof help [COMMAND]\n"
      "\n"
      "commands:\n";
  for (const command& c : commands()) {
    std::string name = c.name;
    out += "  " + name + std::string(name.size() < 15 ? 15 - name.size() : 1, ' ') + c.summary + "\n";
  }
  out += "\n"
         "  --version      the tool version and git commit\n"
         "\n";
  return out + exit_status_text;
}

std::string command_help(const command& c) { return std::string(c.usage) + "\n" + c.help + "\n" + exit_status_text; }

int usage_error(const command& c, const std::string& message) {
  std::cerr << "gmemprof " << c.name << ": " << message << "\n" << c.usage << "See 'gmemprof help " << c.name << "'.\n";
  return exit_usage;
}

int help(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cout << overview();
    return 0;
  }
  const command* c = find(args.front());
  if (!c || args.size() > 1) {
    std::cerr << "gmemprof help: " << (c ? "takes one COMMAND" : "no command '" + args.front() + "'")
              << "\nusage: gmemprof help [COMMAND]\nSee 'gmemprof help'.\n";
    return exit_usage;
  }
  std::cout << command_help(*c);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << overview();
    return exit_usage;
  }
  const std::string name = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (name == "--help" || name == "-h" || name == "help") return help(args);
  if (name == "--version") {
    std::cout << gmem::profiler::tool_version() << "\n";
    return 0;
  }
  const command* c = find(name);
  if (!c) {
    std::cerr << "gmemprof: '" << name << "' is not a gmemprof command. See 'gmemprof help'.\n";
    return exit_usage;
  }
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  try {
    const arguments a = gmem::cli::parse(args, c->options, c->takes_command);
    if (a.help) {
      std::cout << command_help(*c);
      return 0;
    }
    return c->run(a, command_line);
  } catch (const usage_problem& e) {
    return usage_error(*c, e.what());
  } catch (const gmem::cuda_error& e) {
    // The GPU failed the command: the call and the error, not gmem's source place (what()
    // holds none; e.where() is for a bug report).
    std::cerr << "gmemprof " << c->name << ": " << e.what() << "\n";
    return exit_no_gpu;
  } catch (const gmem::profiler::report_error& e) {
    std::cerr << "gmemprof " << c->name << ": " << e.what() << "\n";
    return exit_usage;
  } catch (const std::exception& e) {
    std::cerr << "gmemprof " << c->name << ": " << e.what() << "\n";
    return exit_usage;
  }
}
