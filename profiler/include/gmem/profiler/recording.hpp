#pragma once
// What `gmemprof record` saw in a program, as plain data: the report's optional "recorded"
// section. The recording library fills it (record/), the report code writes and reads it
// (recording_json.cpp), and show, html and check read it. No CUDA, no JSON here.
//
// Figures and whose they are:
//  - a graph's `growth_bytes` is the growth of its device's pool that its own calls caused
//    (ReservedMemCurrent after minus before each call that mapped memory); where another
//    thread's call overlapped the window, the pool model splits the measured growth;
//  - a graph's `own_footprint_bytes` is what the graph alone reserves from a trimmed pool, as the
//    reuse model predicts it (and `gmemprof replay` measures it);
//  - a pool's `high_bytes` is the device's high watermark (ReservedMemHighWatermark): the whole
//    set's, never one graph's; its `attribution` says what was mapped at that moment, by graph.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gmem/profiler/report_values.hpp"

namespace gmem::profiler {

/// One event of one graph: its instantiation, an upload, a launch (other than a steady one), a
/// trim of its device, a failed call, a free of an allocation it left allocated.
struct recorded_event {
  double t_us = 0;
  std::string kind;  ///< "instantiate", "upload", "launch", "trim", "free", "update"
  /// launches: "first_launch", "steady", "remap_after_trim", "remap_contention" (the pool model
  /// says another graph's live allocation held granules it had mapped), "slow_launch" (a
  /// relaunch that took 15 us or more where the pool did not grow and the pool model finds
  /// nothing it had to map again: the launch queue was full, or the host busy), "remap_unexplained" (the pool grew inside a relaunch the pool model says
  /// needed nothing), ...
  std::string cls;
  int device = 0;
  double host_us = 0;
  std::optional<counters> before;
  std::optional<counters> after;
  std::string stream;   ///< "stream 2", empty when none
  std::string result;   ///< the CUresult name of a call that failed ("CUDA_ERROR_INVALID_VALUE")
  bool concurrent = false;      ///< another thread's graph call overlapped its counter window
  std::int64_t growth_bytes = 0;  ///< the pool growth this call caused (see above)
};

/// The flags the program instantiated a graph with.
struct instantiate_flags {
  bool auto_free_on_launch = false;
  bool upload = false;
  bool device_launch = false;
  bool use_node_priority = false;
};

/// One executable graph the program made.
struct recorded_graph {
  std::string name;
  /// Stable across runs of one program: "nvtx:<range>" when captured or instantiated inside a
  /// named NVTX range, else "site:<hash>" of the instantiation's call stack (offsets within
  /// functions) and the graph's structure (node kinds, sizes, edges).
  std::string identity;
  /// Where it was made and its structure without sizes: the identity less its ordinal for
  /// NVTX and Python sites, else "site:<hash>" of the call stack, node kinds and edges. A check
  /// pairs graphs whose identities differ only by sizes (a held output grew) through it, the
  /// n-th of a site with the n-th. Empty in recordings made before it existed.
  std::string site;
  /// "memory_nodes": its memory is graph memory (alloc and free nodes);
  /// "private_pool": its memory came from the application's allocator while it was captured.
  std::string kind = "memory_nodes";
  std::string nvtx;
  std::string stream;          ///< the capturing stream ("stream 2"), empty if not captured
  std::uint64_t sequence = 0;  ///< instantiation order (1-based)
  long pid = 0;                ///< the process that made it (merged recordings of several)
  std::vector<int> devices;
  std::vector<int> peers;
  std::size_t nodes = 0;
  std::uint64_t launches = 0;
  std::uint64_t steady_launches = 0;
  /// Of the steady launches, those that took 15 us or more although nothing since the graph's
  /// last launch could have taken its memory (no other stream, no held output): the launch
  /// queue was full, or the host busy.
  std::uint64_t slow_launches = 0;
  std::uint64_t failed_calls = 0;  ///< launches, uploads and updates the driver refused
  /// Updates in place that took (cuGraphExecUpdate): the graph's name, skeleton and figures are
  /// its last graph's; its events and launches are all its graphs'. 0 in recordings made before
  /// updates were followed.
  std::uint64_t updates = 0;
  /// Calls that gave one node of the executable graph other parameters (cuGraphExec*SetParams,
  /// cuGraphNodeSetEnabled): none can change a memory node.
  std::uint64_t node_param_sets = 0;
  /// Executable graphs of this site and structure the program made and destroyed, recorded as
  /// one (their launches and events together).
  std::uint64_t instances = 1;
  std::uint64_t events_dropped = 0;  ///< events past the recorder's bound (4096 per graph)
  instantiate_flags flags;
  bool flags_known = false;  ///< false in recordings made before flags were recorded
  std::vector<std::string> instantiate_stack;
  std::vector<recorded_event> events;
  std::uint64_t growth_bytes = 0;         ///< the pool growth this graph caused, in all
  std::uint64_t own_footprint_bytes = 0;  ///< the graph alone, from a trimmed pool (predicted)
  std::string own_footprint_method;       ///< "reuse model" (predicted) or how it was measured
  std::uint64_t held_requested_bytes = 0;  ///< what it leaves allocated between launches
  std::uint64_t held_granule_bytes = 0;    ///< the granules those allocations occupy
  /// private_pool: what the application's allocator took from the device while this graph was
  /// being captured, by the capturing thread (cuMemAlloc, cuMemCreate): the graph's pool growth.
  std::uint64_t capture_pool_growth_bytes = 0;
  std::string pool_id;  ///< private_pool: the allocator's pool, when the program names it
  /// Device memory the driver took for the executable graph's own state, outside any pool
  /// (cuMemGetInfo around its instantiations and uploads, less what a pool grew), in all its
  /// instances; -1 where no reading was clean (another thread's call overlapped).
  std::int64_t exec_state_bytes = 0;
  /// Where the program captured it, when the recording's Python companion told
  /// ("serve.py:42 in main": the program's own line, past PyTorch, generated code and installed
  /// packages), what was captured in the words a user knows ("LlamaForCausalLM.forward, batch 1,
  /// sequence 1", "make_graphed_callables"), and the framework's own words for it ("cudagraph
  /// tree node 3 [[1, 1]] from c3x...py:2109 in call"); empty otherwise.
  std::string python_site;
  std::string framework_label;
  std::string framework_detail;
  /// What libraries took outside the framework's pools while it was captured (a collective's
  /// buffers and the driver's memory for a stream made in the capture), alive at the bill's end.
  std::uint64_t libraries_at_capture_bytes = 0;
  /// What its framework pool grew by from the previous capture into the pool to the end of its
  /// own (its warm-up runs and its capture; negative where the pool gave back more), by the
  /// allocator's own figure after each (framework_pool::after_captures); known only there.
  bool framework_pool_added_known = false;
  std::int64_t framework_pool_added_bytes = 0;
};

/// A framework pool right after one capture into it: the recording's figure and the allocator's
/// own (PyTorch's snapshot, read by the Python companion as the capture ended).
struct pool_check {
  std::string graph;  ///< the graph captured; "" for a capture never instantiated
  std::uint64_t retained_bytes = 0;  ///< the recording's: what the pool held then
  std::uint64_t framework_bytes = 0; ///< the allocator's: its segments then
};

/// One private pool of the application's allocator (PyTorch's caching allocator: a CUDA graph
/// pool, the `segment_pool_id` of its snapshot), as the recording saw the device memory the
/// allocator took into it: in warm-up runs (torch.compile's CUDA graph trees run a new shape
/// once inside the pool before they capture it), in captures, and given back.
struct framework_pool {
  std::string id;  ///< "(0, 1)" as PyTorch names it; "capture of 'g'" where nothing named it
  int device = 0;
  std::uint64_t warmup_bytes = 0;
  std::uint64_t capture_bytes = 0;
  std::uint64_t released_bytes = 0;  ///< given back to the device (cudaFree of its segments)
  std::uint64_t retained_bytes = 0;  ///< at the bill's end: warm-up + capture - released
  std::uint64_t peak_bytes = 0;      ///< the most it held at once
  /// The allocator's own figure for the pool at the bill's end (PyTorch's snapshot, summed
  /// over the pool's segments), told by the Python companion; -1 unknown.
  std::int64_t snapshot_bytes = -1;
  std::vector<std::string> graphs;  ///< the graphs captured into it
  /// After each capture into it, where the companion read the allocator's figure, in order.
  std::vector<pool_check> after_captures;
};

/// Device memory one library took while captures or warm-up runs were under way, outside the
/// framework's pools, alive at the bill's end.
struct library_taker {
  std::string library;  ///< "NCCL", "cuBLAS", "PyTorch", or its file's name; "unknown" where no frame named one
  std::uint64_t bytes = 0;
  std::uint64_t allocations = 0;  ///< cuMemAlloc and cuMemCreate calls
  std::uint64_t streams = 0;      ///< streams it made during a capture (the driver's memory for each)
};

/// What CUDA graphs cost one device of one process, by kind (docs/record.md, "The bill"). Each
/// figure is of its own kind: a kind the recording did not see is absent (flagged), never 0.
struct graph_bill {
  int device = 0;
  std::string process;  ///< merged recordings: "rank 0" or "p1", ...; empty for one process
  /// Where the bill ends: "the program's end (Python, before its teardown)", "exit", ...
  std::string end;
  // Graph memory nodes' pool (cudaGraphMemAttr counters).
  bool node_pool_seen = false;
  std::uint64_t node_pool_high_bytes = 0;
  std::uint64_t node_pool_retained_bytes = 0;  ///< reserved at the bill's end
  // The framework's graph pools (the application's allocator).
  bool framework_seen = false;
  bool framework_named = false;  ///< the Python companion named the pools and warm-ups
  std::uint64_t framework_warmup_bytes = 0;
  std::uint64_t framework_capture_bytes = 0;
  std::uint64_t framework_retained_bytes = 0;
  std::uint64_t framework_peak_bytes = 0;
  std::int64_t framework_snapshot_bytes = -1;  ///< the allocator's own figure, -1 unknown
  /// Captures after which the companion read the allocator's figure for the capture's pool, and
  /// of those, where the recording's figure for the pool differed (framework_pool::after_captures).
  std::uint64_t framework_checked_captures = 0;
  std::uint64_t framework_differing_captures = 0;
  // What capturing or warming-up threads allocated outside the framework's pools, alive at the
  // bill's end (PyTorch's snapshot names its pools' segments; these are at other addresses):
  // libraries' handles and workspaces made by a warm-up run, buffers made during a capture.
  std::uint64_t library_bytes = 0;
  std::uint64_t library_allocations = 0;
  std::uint64_t library_streams = 0;  ///< streams made during captures (their memory is in library_bytes)
  std::vector<library_taker> library_takers;  ///< the same by library, most bytes first
  // Executable-graph state (outside every pool).
  bool exec_state_measured = false;
  std::uint64_t exec_state_bytes = 0;
  std::uint64_t exec_state_instantiations = 0;     ///< measured ones, graphs without memory nodes included
  std::uint64_t exec_state_unmeasured = 0;         ///< another thread's call overlapped their reading
  /// What destroys of executable graphs gave back (already out of exec_state_bytes), read around
  /// each destroy made while state was counted; and such destroys, read and not (overlapped).
  std::uint64_t exec_state_released_bytes = 0;
  std::uint64_t exec_state_destroys = 0;
  std::uint64_t exec_state_destroys_unmeasured = 0;
  // The process's device memory (cuMemGetInfo: used = total - free) from the recording's first
  // reading (before the program's first allocation) to the bill's end.
  bool process_measured = false;
  std::int64_t process_delta_bytes = 0;
  /// The process's change less the graph kinds above: what the program's other allocations
  /// (weights, activations, libraries' workspaces) took.
  std::int64_t not_graph_bytes = 0;
  /// What the recording itself took of the device ("gmem's own"), by the way it took the calls:
  /// "interpose" (the library's own interception: nothing on the device, own_bytes 0) or "cupti"
  /// (CUPTI's own memory shares the driver's pieces with the executable graphs' state: not told
  /// apart, own_apart false). Empty: the report does not say (written before it was recorded).
  std::string own_hook;
  bool own_apart = false;
  std::uint64_t own_bytes = 0;
};

/// Says on `b` how the calls were taken (`hook`, as graph_bill::own_hook), and what follows of
/// gmem's own: told apart, 0 B, with the library's own interception; not told apart under CUPTI.
inline void set_own_hook(graph_bill& b, std::string hook) {
  b.own_apart = hook == "interpose";
  b.own_bytes = 0;
  b.own_hook = std::move(hook);
}

/// A point of a device's pool timeline: a call that changed the reservation, or a trim.
struct pool_point {
  double t_us = 0;
  std::string graph;  ///< empty for a trim
  std::string event;  ///< "launch:first_launch", "upload", "trim", "capture", ...
  std::uint64_t reserved_bytes = 0;
  std::int64_t growth_bytes = 0;
  /// Another thread's call overlapped this one's counter window: its growth is the pool model's
  /// share of what the calls grew the pool by together, and "reserved after" readings of such
  /// calls need not rise in time order.
  bool concurrent = false;
};

/// One device's graph memory pool over the recording (a process's: each has its own).
struct recorded_pool {
  int device = 0;
  /// In a merged recording of several processes, whose pool: "rank 0", "rank 1", ... where every
  /// process has a rank, else "p1", "p2", ... (by pid order); empty in a recording of one process.
  std::string process;
  std::uint64_t high_bytes = 0;   ///< the device's high watermark, measured
  std::uint64_t end_bytes = 0;    ///< reserved at the last reading
  /// Reserved at the first reading: memory other graphs' live allocations held before the first
  /// recorded call (0 for a process's own recording; profile_graphs in a process that holds
  /// other graphs' outputs starts above 0). In the attribution as "held_before".
  std::uint64_t start_bytes = 0;
  std::uint64_t model_high_bytes = 0;  ///< the pool model's reservation at the high watermark
  double high_t_us = 0;
  /// Whose call reached the high watermark: the launching graph of the attribution's moment (its
  /// "working_set" share). Where other threads' calls overlapped that call (`high_concurrent`),
  /// the counters cannot tell which of them reached it: the last of them to return is named,
  /// as the attribution is taken after it.
  std::string high_graph;
  std::string high_event;
  bool high_concurrent = false;
  /// What was mapped at the high watermark, by graph and why: the launching graph's
  /// "working_set", other graphs' "held_outputs", a "concurrent_launch" in another stream,
  /// "held_before" (start_bytes), "idle" memory nobody held. Sums to model_high_bytes.
  struct share {
    std::string graph;
    std::string why;
    std::uint64_t bytes = 0;
  };
  std::vector<share> attribution;
  std::vector<diagnostic> diagnostics;  ///< about the set of graphs, each with its bytes
  std::vector<pool_point> timeline;
  /// Private pools (native allocator): bytes the application's allocator took while graphs
  /// were captured, in all.
  std::uint64_t private_pool_bytes = 0;
};

/// A run of identical calls in the order the program made them: what `replay --set` replays.
struct sequence_step {
  /// "launch", "upload", "free", "destroy", "trim", "sync", "instantiate": an executable
  /// graph of a destroyed graph's site and structure made again (recorded as that graph: its
  /// instances grow by one; it starts with no mapping), or "update": the executable graph
  /// updated in place with another graph of its shape (cuGraphExecUpdate), whose allocations
  /// have addresses of their own: it starts with no mapping, and the allocations it held that
  /// are still live stay until freed.
  std::string op;
  std::int64_t graph = -1;  ///< index into recording::graphs, -1 for trim and sync
  std::string stream;       ///< launches, uploads, frees, stream syncs
  int device = -1;          ///< trims
  std::uint64_t count = 1;
  std::uint64_t address = 0;  ///< frees: the allocation freed
  /// frees: which of the graph's held allocations (in the order of its alloc nodes), -1 all
  std::int64_t held = -1;
  std::int64_t event = -1;    ///< the graph's recorded event for this call, if any
  /// syncs of one stream: the program saw that stream's launches and uploads complete up to
  /// this one (counting from 1 in sequence order, runs by their count: an event synchronize or
  /// query); -1: all of them (a stream synchronize or query).
  std::int64_t upto = -1;
};

/// One process of the recorded command.
struct recorded_process {
  long pid = 0;
  /// Its rank where a launcher told it (the RANK environment variable, else LOCAL_RANK: torchrun,
  /// vLLM's and SGLang's workers); empty otherwise.
  std::string rank;
  std::string command;
  std::string report;  ///< where its own report was written
  std::size_t graphs = 0;
};

/// What recording cost the program, by part: the time the recording library's handlers took
/// inside the program's CUDA calls (its own clock, around its own work: CUPTI's dispatch and the
/// driver's bookkeeping for a subscriber are not in it), and the Python companion's time.
struct record_cost {
  std::string part;     ///< "instantiate: graph read", "launch", "companion (Python)", ...
  std::string process;  ///< merged recordings: the process ("rank 0", "p1"); empty otherwise
  std::uint64_t calls = 0;
  double us = 0;
};
/// The part that is the Python companion's own time (not the library's).
inline constexpr const char* companion_cost_part = "companion (Python)";

struct recording {
  bool partial = false;
  std::string partial_reason;
  std::string command;
  long pid = 0;
  std::string rank;  ///< the process's rank (RANK, else LOCAL_RANK), empty where none was set
  std::string name_from = "nvtx";
  std::uint64_t graphs_without_memory_nodes = 0;
  /// What the program did to those graphs once instantiated (XLA updates its command buffers in
  /// place): updates in place the driver took (cuGraphExecUpdate), those it refused, and calls
  /// that set one node's parameters (cuGraphExec*SetParams, cuGraphNodeSetEnabled). A recording
  /// written before they were counted reads 0 for each.
  std::uint64_t updates_without_memory_nodes = 0;
  std::uint64_t refused_updates_without_memory_nodes = 0;
  std::uint64_t node_param_sets_without_memory_nodes = 0;
  std::vector<std::string> notes;
  std::vector<recorded_graph> graphs;
  /// Counter readings after each recorded call, per device (as before: the device's counters).
  struct point {
    double t_us = 0;
    int device = 0;
    std::string event;
    std::string graph;
    counters values;
  };
  std::vector<point> timeline;
  std::vector<recorded_pool> pools;
  std::vector<sequence_step> sequence;
  bool sequence_truncated = false;
  std::vector<recorded_process> processes;  ///< merged recordings: every process's
  std::vector<framework_pool> framework_pools;
  std::vector<graph_bill> bills;  ///< per process and device
  /// The analysis at exit ran out of its time budget: scenarios hold the graph models' figures
  /// without analysis, and `gmemprof show` analyses them.
  bool analysis_deferred = false;
  std::vector<record_cost> cost;  ///< parts with calls only, in the library's order
};

}  // namespace gmem::profiler
