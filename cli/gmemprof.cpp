// gmemprof: the command line over gmem's profiler. It parses arguments and calls library
// functions; the work lives in the library.

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "gmem/profiler/device_info.hpp"
#include "record/record_command.hpp"
#include "suite/scenarios.hpp"

namespace {

constexpr const char* usage =
    "usage: gmemprof <command> [options]\n"
    "\n"
    "commands:\n"
    "  info [--device N]            the GPU(s): name, compute capability, memory, driver and\n"
    "                               runtime versions, graph memory node support\n"
    "  run [SCENARIO...] [options]  run the scenario suite (or the named scenarios) on a GPU\n"
    "                               and write a JSON report\n"
    "  check BASELINE CURRENT       compare a report against a baseline: exit 0 pass,\n"
    "                               1 regression, 2 unusable input\n"
    "  show REPORT                  print a report as tables\n"
    "  replay REPORT [--graph NAME | --set] [--device N]\n"
    "                               re-measure a report's graph skeletons and the changes that\n"
    "                               save memory on this GPU\n"
    "  bench-summary BENCH_JSON [--out FILE.md]\n"
    "                               the markdown summary of a gmem_bench run\n"
    "  html REPORT [--baseline B] [--bench BENCH_JSON] -o FILE.html\n"
    "                               the report as one self-contained HTML page\n"
    "  trace REPORT -o FILE.json    the report as a Chrome trace / Perfetto timeline\n"
    "  record [options] -- COMMAND [ARGS...]\n"
    "                               run COMMAND unmodified and record the graph memory of\n"
    "                               every CUDA graph it instantiates\n"
    "  --version                    the tool version and git commit\n"
    "  --help                       this text; `gmemprof <command> --help` for each command\n";

constexpr const char* info_usage =
    "usage: gmemprof info [--device N]\n"
    "\n"
    "Describes device N (every device when omitted). Without a GPU, says so in one line and\n"
    "exits 0.\n";

constexpr const char* run_usage =
    "usage: gmemprof run [SCENARIO...] [--set NAME=VALUE]... [--out PATH] [--device N]\n"
    "                    [--reps N] [--warmups N] [--trials K] [--progress]\n"
    "       gmemprof run --list\n"
    "\n"
    "Runs every scenario (or the named ones) on device N (default 0) and writes the report to\n"
    "PATH (default gmem-report.json) atomically: a failed run never overwrites a good report.\n"
    "The output path, the device, the scenario names and the settings are checked before\n"
    "anything runs. --list shows each scenario with its parameters and their defaults.\n"
    "--set NAME=VALUE (repeatable) sets parameter NAME of every selected scenario that has it\n"
    "(an error when none has): sizes take bytes or B, KiB, MiB, GiB, TiB (powers of 1024,\n"
    "e.g. --set bytes=1GiB; KB/MB/GB are refused as ambiguous), counts a whole number\n"
    "(--set allocations=64), flags true or false. A sweep's defaults (single_alloc's sizes)\n"
    "give way to the one value set. The values used are in the report, part of each key.\n"
    "Progress ([n/N] scenario, elapsed) goes to stderr once a run takes over a second, when\n"
    "stderr is a terminal or with --progress. --reps (default 10) and --warmups (default 2) set\n"
    "how many samples each launch cost takes; --trials (default 5) how many times each scenario\n"
    "is measured from a fresh state (the check tests the trials' distribution). A scenario whose\n"
    "trials disagree on used or reserved memory (the driver's choice depends on a race) gets 2K\n"
    "more trials, so that the check judges its distribution.\n"
    "Exit: 0 all scenarios ok or skipped, 1 a scenario failed\n"
    "(the report is still written), 2 bad input or no GPU.\n";

constexpr const char* check_usage =
    "usage: gmemprof check BASELINE CURRENT [--tolerance NAME=FRACTION]... [--all] [--strict]\n"
    "                      [--format text|json|markdown]\n"
    "\n"
    "Reports with trials (gmemprof run --trials K) are compared as distributions, every row\n"
    "judged: a one-sided Mann-Whitney U test of the trials must give p <= 0.01 (with too few\n"
    "trials for the test, the effect alone decides), and the effect: a counter's current median\n"
    "lies outside every value the baseline's trials showed, by more than the tolerance (where\n"
    "either side's trials spread beyond it, every current trial must); a time's\n"
    "current median exceeds the baseline's slowest trial by the tolerance and time_floor_us (if\n"
    "the baseline's trials spread beyond the tolerance, with every current trial above it), or\n"
    "every current trial exceeds it by time_separation (default 0.15). Where every trial of\n"
    "both reports has a reference launch (a one-memset graph timed beside each sample, in the\n"
    "same process), times are judged at the baseline's reference speed, scaled by the slope of\n"
    "time on reference within the trials (0 to 1); such a change is marked '*', and a row\n"
    "whose change there and as measured disagree in sign is 'unstable'. A time that moved no\n"
    "further than its metric moved across the whole suite (the median over at least 8\n"
    "scenarios, else over every host or wall row; held within 1 + host_drift, default 0.6) is\n"
    "'unstable': the host ran slower or faster as a whole. Rows that cannot be compared\n"
    "(trials against different reservations, a recording's concurrent or rare calls) are\n"
    "'unstable' too: reported, failing only with --strict. The summary\n"
    "(counts per verdict) comes first, then only the rows that are not a pass (--all: every row).\n"
    "\n"
    "Compares CURRENT against BASELINE scenario by scenario: used and reserved high watermarks\n"
    "may not grow by more than the memory tolerance (default 0.02), reuse ratios may not drop by\n"
    "more than the reuse tolerance (default 0.02), launch-cost medians may not grow by more than\n"
    "the time tolerance (default 0.50) and by more than time_floor_us (default 10) microseconds.\n"
    "NAME is memory, reuse, time, time_floor_us, time_separation, host_drift (0: off), or one\n"
    "metric as printed in\n"
    "the table (e.g. reserved_high_bytes, wall.first_launch_no_upload).\n"
    "Exit: 0 all pass, 1 a regression, 2 unusable input (missing file, not JSON, wrong schema\n"
    "version, a different GPU model).\n";

constexpr const char* bench_usage =
    "usage: gmemprof bench-summary BENCH_JSON [--out FILE.md]\n"
    "\n"
    "Turns the JSON of a gmem_bench run (--benchmark_out=FILE --benchmark_out_format=json) into\n"
    "a markdown summary: mapping cost per GiB, its ratio to the virtual-memory floor, what an\n"
    "upload saves, what remaps cost, the alternatives' cost and footprint, gmem's own cost.\n"
    "Prints it, or writes FILE.md atomically. Exit 2 for an unusable input.\n";

constexpr const char* replay_usage =
    "usage: gmemprof replay REPORT [--graph NAME] [--device N]\n"
    "       gmemprof replay REPORT --set [--device N]\n"
    "\n"
    "Builds each graph skeleton the report carries (memory nodes and empty nodes, in the order\n"
    "the graph created them; no user kernel runs) on the GPU, measures its reservation, then\n"
    "each candidate change, and prints the changes that saved at least one granule here.\n"
    "With --set (a report of gmemprof record or gmem.profile_graphs): replays the graphs\n"
    "together, in the order the program launched, uploaded, freed, destroyed and trimmed them,\n"
    "and prints the set's high watermark against the recorded one, each graph's growth, and\n"
    "the what-if changes of the set that saved at least one granule here.\n";

constexpr const char* show_usage =
    "usage: gmemprof show REPORT\n"
    "\n"
    "Prints the report's environment, then per scenario its footprint, lower bound, ratios,\n"
    "launch costs and diagnostics.\n";

constexpr const char* html_usage =
    "usage: gmemprof html REPORT [--baseline BASELINE] [--bench BENCH_JSON] -o FILE.html\n"
    "\n"
    "Writes the report as one self-contained HTML page (inline CSS, script and SVG; nothing\n"
    "loaded from the network): per scenario requested vs lower bound vs reserved, the counters\n"
    "across phases, with --bench the mapping cost against size from gmem_bench's JSON, with\n"
    "--baseline the check's verdicts coloured. Exit 2 for an unusable input.\n";

constexpr const char* trace_usage =
    "usage: gmemprof trace REPORT -o FILE.json\n"
    "\n"
    "Writes the report's phases, launches and counters as Chrome trace event JSON, to open in\n"
    "ui.perfetto.dev or chrome://tracing: one track per scenario under its device, counter\n"
    "tracks for used/reserved current/high. The report holds medians, not timestamps: the\n"
    "timeline is laid out from them. Exit 2 for an unusable input.\n";
constexpr const char* record_usage =
    "usage: gmemprof record [--out PATH] [--device N|all] [--name-from nvtx|stream|sequence]\n"
    "                       -- COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND with gmem's recording library injected (CUDA_INJECTION64_PATH, CUPTI\n"
    "callbacks) and writes, when it exits, a report (default gmem-record.json) of every\n"
    "executable graph with memory nodes: its nodes and analysis, each instantiate, upload,\n"
    "launch and trim with host time, the graph memory counters around it and what the launch\n"
    "was (first_launch, steady, remap_after_trim, ...). Graphs are named after the NVTX range\n"
    "active at capture or instantiation, else the capturing stream and a number (--name-from).\n"
    "Read it with `gmemprof show PATH`, compare two with `gmemprof check`. The exit status is\n"
    "COMMAND's (128+N when signal N ended it); without a GPU COMMAND runs unrecorded.\n";

bool wants_help(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) return true;
  }
  return false;
}

std::optional<int> parse_int(const char* text) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || v < INT_MIN || v > INT_MAX) {
    return std::nullopt;
  }
  return static_cast<int>(v);
}

bool takes_value(const std::string& arg) {
  return arg == "--out" || arg == "-o" || arg == "--baseline" || arg == "--bench" ||
         arg == "--device" || arg == "--reps" || arg == "--warmups" ||
         arg == "--tolerance" || arg == "--graph" || arg == "--trials" || arg == "--format";
}

std::string joined_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

int bad(const std::string& command, const std::string& message, const char* help) {
  std::cerr << "gmemprof " << command << ": " << message << "\n\n" << help;
  return 2;
}

int info_command(int argc, char** argv) {
  std::optional<int> device;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (takes_value(arg) && i + 1 >= argc) return bad("info", arg + " needs a value", info_usage);
    if (arg == "--device") {
      device = parse_int(argv[++i]);
      if (!device) return bad("info", "--device takes a device index", info_usage);
    } else {
      return bad("info", "unknown argument '" + arg + "'", info_usage);
    }
  }
  const int rc = gmem::profiler::run_info(std::cout, std::cerr, device);
  std::cout << "recording library (gmemprof record): "
            << gmem::record::describe_recording_library() << "\n";
  return rc;
}

int run_command(int argc, char** argv) {
  gmem::profiler::run_options options;
  std::string out_path = "gmem-report.json";
  bool progress = gmem::profiler::progress_printer::stderr_is_terminal();
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((takes_value(arg) || arg == "--set") && i + 1 >= argc) {
      return bad("run", arg + " needs a value", run_usage);
    }
    if (arg == "--list") {
      std::cout << gmem::profiler::format_scenario_list();
      return 0;
    } else if (arg == "--set") {
      options.settings.push_back(argv[++i]);
    } else if (arg == "--progress") {
      progress = true;
    } else if (arg == "--out") {
      out_path = argv[++i];
    } else if (arg == "--trials") {
      const auto v = parse_int(argv[++i]);
      if (!v || *v < 1) return bad("run", "--trials takes an integer of at least 1", run_usage);
      options.trials = *v;
    } else if (arg == "--device" || arg == "--reps" || arg == "--warmups") {
      const auto v = parse_int(argv[++i]);
      if (!v || *v < 0) return bad("run", arg + " takes a non-negative integer", run_usage);
      (arg == "--device" ? options.device : arg == "--reps" ? options.reps : options.warmups) = *v;
    } else if (!arg.empty() && arg[0] == '-') {
      return bad("run", "unknown option '" + arg + "'", run_usage);
    } else {
      options.only.push_back(arg);
    }
  }
  if (options.reps < 1) return bad("run", "--reps must be at least 1", run_usage);
  options.progress = gmem::profiler::progress_printer(std::cerr, progress);
  return gmem::profiler::run_run(options, out_path, joined_command_line(argc, argv), std::cout,
                                 std::cerr);
}

int check_command(int argc, char** argv) {
  gmem::profiler::tolerances t;
  std::vector<std::string> paths;
  bool all = false;
  std::string format = "text";
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (takes_value(arg) && i + 1 >= argc) return bad("check", arg + " needs a value", check_usage);
    if (arg == "--tolerance") {
      try {
        gmem::profiler::set_tolerance(t, argv[++i]);
      } catch (const std::invalid_argument& e) {
        return bad("check", e.what(), check_usage);
      }
    } else if (arg == "--all") {
      all = true;
    } else if (arg == "--strict") {
      t.strict = true;
    } else if (arg == "--format") {
      format = argv[++i];
      if (format != "text" && format != "json" && format != "markdown") {
        return bad("check", "--format takes text, json or markdown, not '" + format + "'",
                   check_usage);
      }
    } else if (!arg.empty() && arg[0] == '-') {
      return bad("check", "unknown option '" + arg + "'", check_usage);
    } else {
      paths.push_back(arg);
    }
  }
  if (paths.size() != 2) return bad("check", "needs BASELINE and CURRENT", check_usage);
  return gmem::profiler::run_check(paths[0], paths[1], t, std::cout, std::cerr, all, format);
}

int bench_command(int argc, char** argv) {
  std::string in, out;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (takes_value(arg) && i + 1 >= argc) return bad("bench-summary", arg + " needs a value", bench_usage);
    if (arg == "--out") {
      out = argv[++i];
    } else if (!arg.empty() && arg[0] == '-') {
      return bad("bench-summary", "unknown option '" + arg + "'", bench_usage);
    } else if (in.empty()) {
      in = arg;
    } else {
      return bad("bench-summary", "takes one BENCH_JSON", bench_usage);
    }
  }
  if (in.empty()) return bad("bench-summary", "needs BENCH_JSON", bench_usage);
  return gmem::profiler::run_bench_summary(in, out, std::cout, std::cerr);
}

int record_command(int argc, char** argv) {
  gmem::record::record_options options;
  int i = 2;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--out" || arg == "--device" || arg == "--name-from") && i + 1 >= argc) {
      return bad("record", arg + " needs a value", record_usage);
    }
    if (arg == "--help" || arg == "-h") {
      std::cout << record_usage;
      return 0;
    }
    if (arg == "--out") {
      options.out_path = argv[++i];
    } else if (arg == "--name-from") {
      options.name_from = argv[++i];
    } else if (arg == "--device") {
      const std::string v = argv[++i];
      const auto d = parse_int(v.c_str());
      if (v == "all") {
        options.device = -1;
      } else if (!d || *d < 0) {
        return bad("record", "--device takes a device index or all", record_usage);
      } else {
        options.device = *d;
      }
    } else {
      return bad("record", "unknown option '" + arg + "' (the command goes after --)", record_usage);
    }
  }
  std::vector<std::string> command(argv + std::min(i + 1, argc), argv + argc);
  if (command.empty()) return bad("record", "needs -- COMMAND", record_usage);
  return gmem::record::run_record(options, command, std::cout, std::cerr);
}

int show_command(int argc, char** argv) {
  if (argc != 3) return bad("show", "needs one REPORT", show_usage);
  return gmem::profiler::run_show(argv[2], std::cout, std::cerr);
}

int view_command(const std::string& name, const char* help, int argc, char** argv) {
  std::string report, baseline, bench, out;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (takes_value(arg) && i + 1 >= argc) return bad(name, arg + " needs a value", help);
    if (arg == "-o" || arg == "--out") {
      out = argv[++i];
    } else if (name == "html" && arg == "--baseline") {
      baseline = argv[++i];
    } else if (name == "html" && arg == "--bench") {
      bench = argv[++i];
    } else if (!arg.empty() && arg[0] == '-') {
      return bad(name, "unknown option '" + arg + "'", help);
    } else if (report.empty()) {
      report = arg;
    } else {
      return bad(name, "takes one REPORT", help);
    }
  }
  if (report.empty()) return bad(name, "needs REPORT", help);
  if (out.empty()) return bad(name, "needs -o FILE", help);
  if (name == "html") {
    return gmem::profiler::run_html(report, baseline, bench, out, std::cout, std::cerr);
  }
  return gmem::profiler::run_trace(report, out, std::cout, std::cerr);
}

int html_command(int argc, char** argv) { return view_command("html", html_usage, argc, argv); }
int trace_command(int argc, char** argv) { return view_command("trace", trace_usage, argc, argv); }

int replay_command(int argc, char** argv) {
  std::string path, graph;
  int device = 0;
  bool set = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (takes_value(arg) && i + 1 >= argc) return bad("replay", arg + " needs a value", replay_usage);
    if (arg == "--set") {
      set = true;
    } else if (arg == "--graph") {
      graph = argv[++i];
    } else if (arg == "--device") {
      const auto v = parse_int(argv[++i]);
      if (!v || *v < 0) return bad("replay", "--device takes a device index", replay_usage);
      device = *v;
    } else if (!arg.empty() && arg[0] == '-') {
      return bad("replay", "unknown option '" + arg + "'", replay_usage);
    } else if (path.empty()) {
      path = arg;
    } else {
      return bad("replay", "takes one REPORT", replay_usage);
    }
  }
  if (path.empty()) return bad("replay", "needs a REPORT", replay_usage);
  if (set && !graph.empty()) return bad("replay", "--set replays every graph: leave out --graph", replay_usage);
  if (set) return gmem::profiler::run_replay_set(path, device, std::cout, std::cerr);
  return gmem::profiler::run_replay(path, graph, device, std::cout, std::cerr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::cout << usage;
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  struct entry {
    const char* name;
    const char* help;
    int (*fn)(int, char**);
  };
  const entry commands[] = {{"info", info_usage, info_command},
                            {"run", run_usage, run_command},
                            {"check", check_usage, check_command},
                            {"show", show_usage, show_command},
                            {"replay", replay_usage, replay_command},
                            {"bench-summary", bench_usage, bench_command},
                            {"html", html_usage, html_command},
                            {"trace", trace_usage, trace_command},
                            {"record", record_usage, record_command}};
  try {
    if (command == "--version") {
      std::cout << gmem::profiler::tool_version() << "\n";
      return 0;
    }
    for (const auto& c : commands) {
      if (command != c.name) continue;
      if (command != "record" && wants_help(argc, argv)) {
        std::cout << c.help;
        return 0;
      }
      return c.fn(argc, argv);
    }
  } catch (const std::exception& e) {
    std::cerr << "gmemprof " << command << ": " << e.what() << "\n";
    return 1;
  }
  std::cerr << "gmemprof: unknown command '" << command << "'\n\n" << usage;
  return 2;
}
