// A recording as a report: graphs become scenario results (so that show and check work on them
// unchanged), with the graph's own figures (the reuse model's prediction of the graph alone); the
// events, the counter timeline, each device's pool and how the recording ended go in the
// report's optional "recorded" section (profiler::recording).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <map>
#include <cstdio>
#include <exception>
#include <functional>
#include <set>
#include <string_view>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/budget.hpp"
#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/graph_alone.hpp"
#include "gmem/profiler/lifetime.hpp"
#include "gmem/profiler/parallel_for.hpp"
#include "gmem/profiler/pool_analysis.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gmem/profiler/reuse_model.hpp"
#include "record/recording_report.hpp"
#include "gmem/profiler/size_text.hpp"
#include "model/fnv.hpp"

namespace gmem::record {
namespace fnv = profiler::fnv;
namespace {

std::string stream_name(std::uint64_t label) { return label ? "stream " + std::to_string(label) : ""; }

const char* op_name(char op) {
  switch (op) {
    case 'L': return "launch";
    case 'U': return "upload";
    case 'F': return "free";
    case 'D': return "destroy";
    case 'T': return "trim";
    case 'I': return "instantiate";
    case 'E': return "update";
    default: return "sync";
  }
}

// The threads that analyse graphs at exit: GMEM_RECORD_ANALYSIS_THREADS (1 or more), else the
// CPUs this process may run on (a rank pinned to a few CPUs uses those), at most 8.
unsigned analysis_threads() {
  if (const char* text = std::getenv("GMEM_RECORD_ANALYSIS_THREADS"); text && *text) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(text, &end, 10);
    if (end && *end == '\0' && v >= 1) return static_cast<unsigned>(std::min<unsigned long>(v, 64));
  }
  return profiler::cpus_to_use(8);
}

double analysis_budget_seconds() {
  const char* text = std::getenv("GMEM_RECORD_ANALYSIS_BUDGET_S");
  if (!text || !*text) return 30.0;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  return end && *end == '\0' && v >= 0 ? v : 30.0;
}

}  // namespace

std::string deferred_message(double budget_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", budget_s);
  return std::string("analysis deferred: the recording's ") + buf +
         " s budget for analysis at exit (GMEM_RECORD_ANALYSIS_BUDGET_S) was spent; the graph's "
         "skeleton is kept: `gmemprof show` analyses it, `gmemprof replay` measures it";
}

namespace {

// A number's decimal digits, mixed as part of a text.
void mix_decimal(std::uint64_t& h, std::uint64_t v) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
  fnv::mix_bytes(h, std::string_view(digits, static_cast<std::size_t>(end - digits)));
}

}  // namespace

std::string graph_identity(const graph_record& g, const profiler::flat_graph& flat, bool sizes) {
  if (!g.nvtx.empty()) return "nvtx:" + g.nvtx;
  // Where the program captured it, as its Python companion told: the same across runs of the
  // program whatever the sizes (the native stack of a Python program is the interpreter's).
  if (!g.python_site.empty()) {
    return "python:" + g.python_site + (g.framework_label.empty() ? "" : " (" + g.framework_label + ")");
  }
  // FNV-1a from the stack's own hash (the state after its frames, as make_stack left it), over
  // one text per node ("alloc:4096", or "alloc" without sizes) and per edge ("3>7"), each ended
  // by fnv::end_text: mixed piece by piece, without making the texts.
  std::uint64_t h = g.instantiate_stack ? g.instantiate_stack->hash : fnv::basis;
  for (const auto& n : flat.nodes) {
    fnv::mix_bytes(h, profiler::to_string(n.kind));
    if (sizes) {
      fnv::mix_bytes(h, ":");
      mix_decimal(h, n.bytes);
    }
    fnv::end_text(h);
  }
  for (std::size_t u = 0; u < flat.successors.size(); ++u) {
    for (std::size_t v : flat.successors[u]) {
      mix_decimal(h, u);
      fnv::mix_bytes(h, ">");
      mix_decimal(h, v);
      fnv::end_text(h);
    }
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "site:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

// One graph's scenario: what its events say (launch costs by class, counters after each call)
// and, per `mode`, its own figures (analysed alone, or only its skeleton).
enum class analysis_mode { full, deferred, none };

struct graph_figures {
  profiler::scenario_result scenario;
  profiler::recorded_graph graph;
  profiler::skeleton skeleton;  ///< the pools' analysis reads it, then the scenario keeps it
  bool scenario_has_skeleton = false;
  bool deferred = false;  ///< the budget ran out before or inside its analysis
};

profiler::recorded_event to_recorded(const graph_event& e) {
  profiler::recorded_event re;
  re.t_us = e.t_us;
  re.kind = e.kind;
  re.cls = e.cls;
  re.device = e.device;
  re.host_us = e.host_us;
  re.before = e.before;
  re.after = e.after;
  re.stream = stream_name(e.stream);
  re.result = e.result;
  re.concurrent = e.concurrent;
  return re;
}

graph_figures figures_of(const graph_record& g, std::uint64_t granularity, analysis_mode mode,
                         double budget_s, long pid, const profiler::deadline& until) {
  graph_figures out;
  // Flattened once: the analysis, the skeleton, the peers and the identity all read it (the
  // analysis takes it and gives it back; flattened again where the analysis threw).
  profiler::flat_graph flat = profiler::flatten(g.model);
  profiler::scenario_result& s = out.scenario;
  s.name = g.name;
  s.params.emplace_back("source", std::string("recorded"));
  profiler::recorded_graph& rg = out.graph;
  std::set<std::uint64_t> streams;
  for (const graph_event& e : g.events) {
    rg.events.push_back(to_recorded(e));
    if (e.stream && e.result.empty() && e.kind != "free") streams.insert(e.stream);
  }
  if (g.kind == "private_pool") {
    // No memory nodes: its memory is what the application's allocator took while it was
    // captured. Its figures are that growth (the "recorded" section), not graph memory.
    s.diagnostics.push_back(
        {"private_pool", "info",
         "graph '" + g.name + "' has no memory nodes: its memory is the application's allocator's, " +
             (g.capture_bytes != 0
                  ? "which took " + profiler::size_text(g.capture_bytes) + " in " + std::to_string(g.capture_allocations) +
                        " allocation(s) from the device while the graph was being captured (its private memory "
                        "pool grew by that much; PyTorch's native caching allocator works so). A later capture "
                        "into the same pool adds only what the pool lacked."
                  : std::string("whose pool already held what the capture needed (taken by warm-up runs or "
                                "earlier captures into it: the bill's framework graph pools), so that the capture "
                                "took nothing from the device.")) +
             (g.instances == 0 ? " The graph was never instantiated." : ""),
         g.capture_bytes});
  } else if (mode != analysis_mode::full) {
    out.deferred = mode == analysis_mode::deferred;
  } else {
    try {
      std::vector<std::string> launched_into;
      for (std::uint64_t st : streams) launched_into.push_back(stream_name(st));
      // The graph's own figures: what it reserves alone, not the device's watermark, which
      // holds every graph's memory (the "recorded" section has it, as the pool's).
      profiler::graph_alone alone =
          profiler::study_alone(std::move(flat), g.name, granularity, g.flags.auto_free_on_launch, launched_into, until);
      rg.own_footprint_bytes = alone.reserved_bytes;
      rg.own_footprint_method =
          "reuse model: the graph alone from a trimmed pool, predicted (gmemprof replay measures it)";
      s.analysis = alone.summary;
      s.diagnostics = std::move(alone.diagnostics);
      s.allocations = profiler::lifetimes(alone.flat, alone.analysis);
      out.skeleton = std::move(alone.shape);
      out.scenario_has_skeleton = true;
      flat = std::move(alone.flat);
    } catch (const profiler::budget_exceeded&) {
      // The budget ran out inside this graph's analysis: nothing of it was kept, the graph is
      // deferred like those after it.
      out.deferred = true;
      flat = profiler::flatten(g.model);
    } catch (const std::exception& e) {
      flat = profiler::flatten(g.model);
      s.status = profiler::scenario_status::error;
      s.status_message = std::string("the recorded graph could not be analysed: ") + e.what();
      out.skeleton = profiler::skeleton{};
    }
  }
  if (g.kind != "private_pool" && (mode == analysis_mode::none || out.deferred)) {
    out.skeleton = profiler::skeleton_without_analysis(flat, g.name);
    s.status = profiler::scenario_status::skipped;
    s.status_message = out.deferred ? deferred_message(budget_s)
                                    : "not analysed: the report was written on a fatal signal, with the graph's "
                                      "skeleton only (`gmemprof replay` measures it)";
    out.scenario_has_skeleton = true;
  }
  rg.name = g.name;
  rg.kind = g.kind;
  rg.capture_pool_growth_bytes = g.capture_bytes;
  rg.libraries_at_capture_bytes = g.library_bytes;
  rg.framework_pool_added_known = g.pool_added_known;
  rg.framework_pool_added_bytes = g.pool_added;
  rg.nvtx = g.nvtx;
  rg.stream = g.stream;
  rg.sequence = g.sequence;
  rg.pid = pid;
  rg.devices = g.devices;
  std::set<int> peers;
  for (const auto& n : flat.nodes) peers.insert(n.peers.begin(), n.peers.end());
  rg.peers.assign(peers.begin(), peers.end());
  rg.nodes = flat.nodes.size();
  rg.launches = g.launches;
  rg.steady_launches = g.steady_count;
  rg.slow_launches = g.slow_launches;
  rg.failed_calls = g.failed_calls;
  rg.updates = g.updates;
  rg.node_param_sets = g.node_param_sets;
  rg.instances = g.instances;
  rg.events_dropped = g.events_dropped;
  rg.flags = g.flags;
  rg.flags_known = true;
  rg.identity = graph_identity(g, flat, true);
  rg.site = graph_identity(g, flat, false);
  if (g.instantiate_stack) rg.instantiate_stack = g.instantiate_stack->frames;
  rg.exec_state_bytes = g.exec_state_bytes;
  rg.python_site = g.python_site;
  rg.framework_label = g.framework_label;
  rg.framework_detail = g.framework_detail;
  return out;
}

// Launch costs by class and the counters after each call, from the events as the pool model
// left their classes (a slow launch it found contention for is a remap).
void add_launch_costs(profiler::scenario_result& s, const profiler::recorded_graph& rg, const graph_record& g) {
  profiler::add_event_phases(s, rg);
  if (g.steady_count > 0) {
    profiler::launch_cost c;
    c.phase = "steady";
    c.host = profiler::summarize_samples(g.steady_host_us);  // every launch, or a uniform sample past 4096
    c.host.count = g.steady_count;
    c.host.min_us = g.steady_min_us;
    c.host.max_us = g.steady_max_us;
    s.launch_costs.push_back(c);
  }
}

// A graph of more nodes than this is analysed on the exit's own thread, one at a time.
constexpr std::size_t max_shared_graph_nodes = 4096;

profiler::sequence_step to_step(const sequence_entry& e) {
  profiler::sequence_step st;
  st.op = op_name(e.op);
  if (e.op != 'T' && e.op != 'S') st.graph = static_cast<std::int64_t>(e.graph);
  st.stream = stream_name(e.stream);
  st.device = e.device;
  st.count = e.count;
  st.address = e.address;
  st.held = e.op == 'F' ? e.held : -1;
  st.upto = e.op == 'S' ? e.upto : -1;
  st.event = e.event;
  return st;
}

// What the program did to its executable graphs without memory nodes once instantiated, for the
// note that counts them: zeros are said too, since "none updated" is what a reader asks of them.
std::string without_memory_nodes_calls_text(const recorder::calls_without_memory_nodes& c) {
  return "Their updates in place: " + std::to_string(c.updates) + " taken, " + std::to_string(c.refused_updates) +
         " refused by the driver (cuGraphExecUpdate); calls that set one of their nodes' parameters: " +
         std::to_string(c.node_param_sets) + " (cuGraphExec*SetParams, cuGraphNodeSetEnabled)";
}

// The recording's own fields and notes: what was recorded, by whom, and what it lacks.
profiler::recording recording_head(const recorder& r, const recording_info& info, const assemble_options& options) {
  profiler::recording rec;
  rec.partial = info.partial;
  rec.partial_reason = info.partial_reason;
  rec.command = info.command;
  rec.pid = info.pid;
  rec.rank = info.rank;
  rec.name_from = to_string(r.names());
  rec.graphs_without_memory_nodes = r.graphs_without_memory_nodes();
  const recorder::calls_without_memory_nodes& calls = r.without_memory_nodes_calls();
  rec.updates_without_memory_nodes = calls.updates;
  rec.refused_updates_without_memory_nodes = calls.refused_updates;
  rec.node_param_sets_without_memory_nodes = calls.node_param_sets;
  rec.notes = info.notes;
  rec.cost = info.cost;
  rec.notes.insert(rec.notes.end(), r.notes().begin(), r.notes().end());
  if (r.graphs_without_memory_nodes() > 0 && r.graphs().empty()) {
    rec.notes.push_back(std::to_string(r.graphs_without_memory_nodes()) +
                        " graph(s) were instantiated, none with memory nodes: their memory came "
                        "from the application's own allocator (PyTorch's caching allocator keeps it "
                        "in the graph's private memory pool), not from graph memory; this is not an "
                        "error. PyTorch makes memory nodes with "
                        "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync. " +
                        without_memory_nodes_calls_text(calls));
  } else if (calls.updates + calls.refused_updates + calls.node_param_sets > 0) {
    rec.notes.push_back(std::to_string(r.graphs_without_memory_nodes()) +
                        " graph(s) without memory nodes were instantiated besides. " +
                        without_memory_nodes_calls_text(calls));
  }
  if (r.captures_never_instantiated() > 0) {
    rec.notes.push_back(std::to_string(r.captures_never_instantiated()) +
                        " captured graph(s) were never instantiated and took no memory: they cost nothing");
  }
  rec.sequence_truncated = r.sequence_truncated();
  if (r.timeline_truncated()) {
    rec.notes.push_back("the counter timeline keeps its first " + std::to_string(max_timeline) + " points");
  }
  if (!options.analyse) rec.notes.push_back("written on a fatal signal: graphs not analysed, no pool model");
  return rec;
}

// Each graph's figures, analysed alone on threads where the report is analysed (a signal's report
// is not) within the analysis's budget; a graph's failure is thrown once all are done.
// The threads that analyse the graphs: one for a signal's report (no analysis).
unsigned analysis_threads_of(const assemble_options& options) {
  return options.analyse ? (options.threads ? options.threads : analysis_threads()) : 1;
}

std::vector<graph_figures> all_figures(const recorder& r, std::uint64_t granularity, const recording_info& info,
                                       const assemble_options& options) {
  // The analysis runs at exit, inside the program: past its budget the graphs left keep their
  // skeletons and `gmemprof show` analyses them (GMEM_RECORD_ANALYSIS_BUDGET_S, default 30 s;
  // 10,000 independent memory nodes take 0.2 s on a 2-core machine).
  const auto started = std::chrono::steady_clock::now();
  const double budget_s = options.budget_s >= 0 ? options.budget_s : analysis_budget_seconds();
  // Checked inside each graph's analysis too (one graph of 5,000 + 5,000 allocations
  // took 7 s past a budget checked only between graphs); a budget of a year or more is none.
  const profiler::deadline until =
      budget_s < 3.2e7 ? profiler::deadline(started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                           std::chrono::duration<double>(budget_s)))
                       : profiler::deadline();
  const std::vector<graph_record>& graphs = r.graphs();
  std::vector<graph_figures> figures(graphs.size());
  std::vector<std::exception_ptr> failed(graphs.size());
  const auto figure = [&](std::size_t i) {
    analysis_mode mode = options.analyse ? analysis_mode::full : analysis_mode::none;
    if (mode == analysis_mode::full &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() > budget_s) {
      mode = analysis_mode::deferred;
    }
    try {
      const profiler::deadline own = until;  // a deadline counts its work: one per thread
      figures[i] = figures_of(graphs[i], granularity, mode, budget_s, info.pid, own);
    } catch (...) {
      failed[i] = std::current_exception();
    }
  };
  // Each graph is analysed alone, so graphs are shared among threads (2000 graphs of a model's
  // size: most of the recording's end). A signal's report (no analysis) and graphs too large to
  // analyse several at once (their analysis may take hundreds of MiB) stay on this thread.
  const unsigned threads = analysis_threads_of(options);
  std::vector<std::size_t> here;
  std::vector<std::size_t> shared;
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    (threads > 1 && graphs[i].model.nodes.size() <= max_shared_graph_nodes ? shared : here).push_back(i);
  }
  if (options.threads_used) *options.threads_used = static_cast<unsigned>(std::clamp<std::size_t>(shared.size(), 1, threads));
  profiler::for_each_on_threads(shared, threads, figure);
  for (const std::size_t i : here) figure(i);
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    if (failed[i]) std::rethrow_exception(failed[i]);
  }
  return figures;
}

}  // namespace

profiler::report assemble(const recorder& r, const profiler::environment& env,
                          std::uint64_t granularity, const recording_info& info,
                          const assemble_options& options) {
  profiler::report rep;
  rep.env = env;
  profiler::recording rec = recording_head(r, info, options);
  std::vector<profiler::skeleton> skeletons;  // by graph, for the pools' analysis
  std::vector<bool> has_skeleton;             // by graph: its scenario keeps its skeleton
  std::vector<graph_figures> figures = all_figures(r, granularity, info, options);
  for (graph_figures& f : figures) {
    if (f.deferred) rec.analysis_deferred = true;
    skeletons.push_back(std::move(f.skeleton));
    has_skeleton.push_back(f.scenario_has_skeleton);
    rep.scenarios.push_back(std::move(f.scenario));
    rec.graphs.push_back(std::move(f.graph));
  }
  // Calls in the order they began (a synchronize: returned): several threads' calls are logged
  // in the order they returned, and a launch's mapping is decided while it runs.
  std::vector<sequence_entry> ordered = r.sequence();
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const sequence_entry& a, const sequence_entry& b) { return a.t_us < b.t_us; });
  for (const sequence_entry& e : ordered) rec.sequence.push_back(to_step(e));
  std::map<std::string, int> identities;
  for (auto& g : rec.graphs) {
    const int n = ++identities[g.identity];
    if (n > 1) g.identity += " #" + std::to_string(n);
  }
  const std::string no_name;  // a trim's point names no graph
  for (const timeline_point& p : r.timeline()) {
    const std::string& graph = p.graph < r.graphs().size() ? r.graphs()[p.graph].name : no_name;
    rec.timeline.push_back({p.t_us, p.device, p.event, graph, p.values});
  }
  if (granularity && options.analyse) profiler::analyse_pools(rec, skeletons, granularity, profiler::on_threads(analysis_threads_of(options)));
  for (std::size_t gi = 0; gi < skeletons.size(); ++gi) {  // moved, not copied, once the pools are analysed
    if (has_skeleton[gi]) rep.scenarios[gi].skeletons.push_back(std::move(skeletons[gi]));
  }
  // What each pool holds at the end is the last reading of its device, kept whatever the bounds
  // on events and the timeline dropped (16,000 rounds of make, launch, destroy, trim: the last
  // kept event said 32 MiB, the device 0 after its trim).
  for (auto& pool : rec.pools) {
    if (const auto last = r.last_counters(pool.device)) pool.end_bytes = last->reserved_current;
  }
  r.bills(rec.bills, rec.framework_pools, rec.pools);
  // The library's own interception makes no context, module, stream or allocation on the device;
  // CUPTI's memory shares the driver's pieces with the executable graphs' state (docs/record.md,
  // "gmem's own").
  for (profiler::graph_bill& b : rec.bills) profiler::set_own_hook(b, info.hook);
  for (std::size_t gi = 0; gi < rec.graphs.size(); ++gi) {
    add_launch_costs(rep.scenarios[gi], rec.graphs[gi], r.graphs()[gi]);
  }
  rep.recorded = std::move(rec);
  return rep;
}

profiler::report write_recording(const profiler::report& rep, const std::string& path, std::uint64_t& bytes,
                                 end_times* times, unsigned threads, profiler::kept_trees* keep) {
  using clock = std::chrono::steady_clock;
  const auto seconds = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  // The scenarios are made and read on the analysis's threads: the text and what is read back are
  // the same on any number (a model's 2000 graphs: most of the text's and the read-back's time).
  const profiler::for_each_index each = profiler::on_threads(threads ? threads : analysis_threads());
  const auto t0 = clock::now();
  const std::string text = profiler::to_json_string(rep, each, keep);
  const auto t1 = clock::now();
  profiler::report back;
  try {
    back = profiler::from_json_string(text, path, each, keep);
  } catch (const profiler::report_error& e) {
    // A bug of gmem's, never the program's: keep the text for a report of it, under another
    // name, so that a good report at `path` is not replaced by one gmemprof refuses.
    const std::string kept = path + ".unreadable.json";
    try {
      profiler::write_text_atomically(text + "\n", kept);
    } catch (const std::exception&) {
    }
    throw profiler::report_error(profiler::report_error::kind::invalid,
                                 std::string("the recording would not read back (") + e.what() +
                                     "): not written to '" + path + "'; its text is in '" + kept +
                                     "': please report it to gmem's developers");
  }
  const auto t2 = clock::now();
  profiler::write_text_atomically(text + "\n", path);
  bytes = text.size() + 1;
  if (times) {
    times->text_s = seconds(t0, t1);
    times->read_back_s = seconds(t1, t2);
    times->write_s = seconds(t2, clock::now());
  }
  return back;
}

}  // namespace gmem::record

