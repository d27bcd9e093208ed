#pragma once
// Record mode's bookkeeping, as plain C++ (no CUDA): what the injected library saw (captures,
// instantiations, uploads, launches, trims, the counters around them), how each launch is
// classified, how a graph is named, and how all of it becomes a report. The CUPTI adapter
// (inject.cpp) only reads the driver and calls these functions; everything here is host-tested.
//
// Invariants: every exec id passed to on_upload / on_launch / on_exec_destroy was first passed to
// on_instantiate (unknown execs are graphs without memory nodes and are ignored, but for their
// updates and node parameter calls, which are counted); times are
// microseconds since the recorder was made, non-decreasing per thread.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gmem/profiler/graph_model.hpp"
#include "gmem/profiler/recording.hpp"
#include "gmem/profiler/report.hpp"

namespace gmem::record {

using profiler::counters;

/// How a graph's name is chosen (`gmemprof record --name-from`).
enum class name_source { nvtx, stream, sequence };
/// "nvtx", "stream", "sequence".
[[nodiscard]] const char* to_string(name_source s) noexcept;
/// Parses "nvtx" / "stream" / "sequence"; nullopt otherwise. Throws nothing.
[[nodiscard]] std::optional<name_source> parse_name_source(const std::string& text) noexcept;

/// The reservation granularity `gmemprof record` measured before the command started and
/// passed in GMEM_RECORD_GRANULARITY (decimal bytes, a whole number of 4 KiB pages), or 0 when
/// `text` is absent or not such a number (the library then reads the driver's own figure).
[[nodiscard]] std::uint64_t granularity_from_text(const char* text) noexcept;

/// What a launch was, decided from the graph's history and the counters around the call. Two
/// classes are provisional until the pool model has followed the call sequence (pool_analysis):
/// a slow_launch becomes remap_contention where the model says another graph's live allocation
/// held granules the launch needed, and a remap_contention the model cannot explain becomes
/// remap_unexplained.
enum class launch_class {
  first_launch,               ///< never launched, not uploaded: the launch maps its memory
  first_launch_after_upload,  ///< never launched, uploaded before: mapping was paid by the upload
  steady,                     ///< launched before, nothing mapped
  remap_after_trim,           ///< memory was trimmed since its last launch and mapped again
  remap_after_stream_switch,  ///< launched into another stream than last time and remapped
  remap_contention,           ///< the pool grew inside the call (no trim, no stream switch, no
                              ///< other thread's call in its window): it mapped memory again
  slow_launch                 ///< took map_floor_us or more and the pool did not grow: the launch
                              ///< queue was full or the host busy, unless the pool model finds
                              ///< contention (tools/completion_cases.sh C10: 2934 of 4000
                              ///< back-to-back launches took 15 us or more, none mapped)
};
/// "first_launch", "steady", "remap_after_trim", ...
[[nodiscard]] const char* to_string(launch_class c) noexcept;

/// What is known before a launch from the graph's history.
struct launch_history {
  bool launched_before = false;
  bool uploaded = false;             ///< uploaded since its last launch (or ever, if none)
  bool trimmed_since_last = false;   ///< its device was trimmed since its last launch
  bool stream_changed = false;       ///< another stream than its last launch (or upload)
  bool graph_memory = true;          ///< false: no memory nodes (a private-pool graph): nothing to remap
};

/// A launch this long may have mapped memory, so the counters are read after it: measured on an
/// H100 (driver 580), every launch that mapped a granule took 18.9 us or more, every steady one
/// 14.4 us or less (tools/pool_probe.cu, 159 calls). Any growth of the pool is thus seen by the
/// call that caused it, at the cost of one reading for the rare steady launch this slow.
inline constexpr double map_floor_us = 15.0;
/// A relaunch is slow, so it may have mapped memory even where the pool did not grow, when it
/// took map_floor_us or more and this many times the graph's steady median (a busy host can
/// stretch a steady launch past the floor; not three times its usual cost as often).
inline constexpr double slow_factor = 3.0;

/// Classifies a launch. `before`/`after` are the device's counters around the call when they
/// were read (nullopt: not read, the launch looked steady); `slow` says the host time was above
/// the slow threshold; `concurrent` that another thread's graph call overlapped the window (the
/// counters' growth may be that call's). Throws nothing.
[[nodiscard]] launch_class classify(const launch_history& h, const std::optional<counters>& before,
                                    const std::optional<counters>& after, bool slow,
                                    bool concurrent = false) noexcept;

/// One event of one graph: instantiate, upload, launch or trim, with host time and counters.
struct graph_event {
  double t_us = 0;
  std::string kind;  ///< "instantiate", "upload", "launch", "trim", "free", "release", "capture", "update"
  std::string cls;   ///< launch class for launches, else empty
  int device = 0;
  double host_us = 0;
  std::optional<counters> before;
  std::optional<counters> after;
  std::uint64_t stream = 0;  ///< stream label index (see recorder::stream_label), 0 = none
  std::string result;        ///< the CUresult name when the call failed, else empty
  bool concurrent = false;   ///< another thread's graph call overlapped its counter window
  std::uint64_t address = 0; ///< frees: the allocation freed
};

/// A point of a device's counter timeline.
struct timeline_point {
  double t_us = 0;
  int device = 0;
  std::string event;  ///< "instantiate", "launch:first_launch", "trim", ...
  /// The graph record's index (none for trims): the report names the point by the record's
  /// name at its end, which an update in place may have changed since.
  std::size_t graph = static_cast<std::size_t>(-1);
  counters values;
};

/// A native call stack as named frames, innermost first, with their hash: taken once per site
/// (session::stack_of) and shared by every graph instantiated there, so that a warm-up of
/// thousands of graphs neither copies nor hashes its frames again for each one.
struct call_stack {
  std::vector<std::string> frames;
  std::uint64_t hash = 0;  ///< FNV-1a over the frames
};
using stack_ref = std::shared_ptr<const call_stack>;
/// `frames` as a shared stack with its hash; null for no frame.
[[nodiscard]] stack_ref make_stack(std::vector<std::string> frames);

/// The name a bill gives the library in file `object` ("libnccl.so.2" -> "NCCL",
/// "libcublasLt.so.13" -> "cuBLAS", "libc10_cuda.so" -> "PyTorch"); a library it does not know
/// keeps its file's name without the version ("libfoo.so"); "" -> "unknown".
[[nodiscard]] std::string library_name(const std::string& object);

/// One executable graph that owns memory nodes, or whose capture took memory from the
/// application's allocator (a private pool: PyTorch's native caching allocator).
struct graph_record {
  std::string name;
  /// The name before " (2)" told it apart from an earlier graph's: an update whose graph is
  /// named alike keeps the name.
  std::string plain_name;
  /// "memory_nodes", or "private_pool": no memory nodes, its memory is what the capturing
  /// thread allocated (cuMemAlloc, cuMemCreate) while the capture was active.
  std::string kind = "memory_nodes";
  std::uint64_t capture_bytes = 0;        ///< private_pool: what its capture allocated
  std::uint64_t capture_allocations = 0;  ///< private_pool: how many allocations
  std::uint64_t released_bytes = 0;       ///< private_pool: of those, freed since
  std::string nvtx;            ///< NVTX range active at capture or instantiation, if any
  std::string stream;          ///< "stream 2" (the capturing stream), empty if not captured
  std::uint64_t sequence = 0;  ///< instantiation order among graphs with memory nodes (1-based)
  profiler::graph_model model;
  std::vector<int> devices;    ///< devices of its alloc nodes, ascending
  std::vector<graph_event> events;  ///< every event except steady launches
  /// Host times of steady launches: every one up to max_steady_samples, then a uniform sample
  /// of them (reservoir), so that a loop of 10^6 launches costs bounded memory.
  std::vector<double> steady_host_us;
  std::uint64_t steady_count = 0;  ///< steady launches in all
  std::uint64_t slow_launches = 0; ///< of those, taking map_floor_us or more with nothing that
                                   ///< could have taken the graph's memory since its last launch
  double steady_min_us = 0;
  double steady_max_us = 0;
  double steady_median_us = 0;  ///< median of the last (up to) 32 steady launches, refreshed
                                ///< at each of the first 16 and then every 64th
  std::array<double, 32> recent{};  ///< the last 32 steady host times (a ring)
  std::uint64_t launches = 0;
  std::uint64_t failed_calls = 0;  ///< launches, uploads and updates the driver refused
  /// Updates in place that took (cuGraphExecUpdate): the record is its last graph's since.
  std::uint64_t updates = 0;
  /// Calls that set one node's parameters of its executable graph (cuGraphExec*SetParams,
  /// cuGraphNodeSetEnabled); none of them can change a memory node.
  std::uint64_t node_param_sets = 0;
  std::int64_t exec_state_bytes = 0;  ///< the driver's state for its instances (-1: unmeasured)
  std::string python_site;             ///< where the framework captured it (the companion)
  std::string framework_label;
  std::string framework_detail;  ///< the framework's own words for it (show --all)
  /// What libraries took outside the framework's pools during its capture (streams made in it,
  /// allocations at addresses that are not the pool's segments).
  std::uint64_t library_bytes = 0;
  /// What its framework pool grew by since the previous capture into it, by the allocator's
  /// figure after each (on_pool_after_capture); known only where that was told.
  bool pool_added_known = false;
  std::int64_t pool_added = 0;
  /// Executable graphs of this site and shape recorded here, one after the other: a new one is
  /// folded into this record only when this one was destroyed before it was made and left no
  /// live allocation, so that instances never coexist.
  std::uint64_t instances = 1;
  std::uint64_t events_dropped = 0;  ///< past max_events
  profiler::instantiate_flags flags;
  /// Addresses of the allocations its current instance leaves allocated (alloc nodes without a
  /// free node), in the order of their alloc nodes; and which of them are live (allocated by a
  /// launch, not yet freed).
  std::vector<std::uint64_t> held_addresses;
  std::vector<bool> held_live;
  /// The addresses of the graph before an update of the held allocations that were live at
  /// the update, by the same order (0 where none): the program frees them later.
  std::vector<std::uint64_t> replaced_held;
  std::uint64_t shape = 0;  ///< site and structure (see recorder::shape_of)
  std::uint64_t epoch = 0;  ///< the recorder's contention epoch at its last launch
  // History for classification.
  bool launched = false;
  bool uploaded = false;
  std::uint64_t last_stream = 0;
  std::uint64_t trims_seen = 0;  ///< device trim count at its last launch
  bool destroyed = false;
  /// Where the program instantiated it: the native call stack, innermost first, without the
  /// driver's, CUPTI's and the recording library's frames ("libtorch_cuda.so!at::cuda::
  /// CUDAGraph::capture_end()+0x1c4"); null where none could be taken. One per site, shared.
  stack_ref instantiate_stack;
};

/// The most steady host times kept per graph (then a uniform sample of them).
inline constexpr std::size_t max_steady_samples = 4096;
/// The most entries of the call sequence kept (runs of identical launches count once).
inline constexpr std::size_t max_sequence = 1u << 16;
/// The most events kept per graph, and timeline points in all (a program that remaps forever).
inline constexpr std::size_t max_events = 4096;
inline constexpr std::size_t max_timeline = 1u << 16;

/// One entry of the sequence of calls that change a pool (see profiler::sequence_step).
struct sequence_entry {
  char op = 'L';  ///< L launch, U upload, F free, D destroy, T trim, S sync, I instantiate again,
                  ///< E updated in place
  std::size_t graph = 0;
  std::uint64_t stream = 0;  ///< label; 0 = none (sync: every stream)
  int device = -1;
  std::uint64_t count = 1;
  std::uint64_t address = 0;
  std::int64_t event = -1;  ///< index into the graph's events
  /// When the call began (a synchronize: when it returned); negative: unknown, as the entry
  /// before. Calls of several threads are put in this order for the pool model: a call's
  /// mapping is decided while it runs, so a launch that began before another thread's
  /// synchronize returned could not share what that synchronize completed.
  double t_us = -1;
  std::int64_t held = -1;  ///< frees: which held allocation (alloc node order), -1 all
  std::int64_t upto = -1;  ///< syncs of one stream: complete up to this launch ordinal, -1 all
};

/// Records what the adapter reports; not thread-safe (the adapter holds a lock). Its state is
/// bounded whatever the program does: records by live graph or distinct site and structure
/// (recorder_fold.cpp), events per graph, the sequence and the timeline by the constants above.
class recorder {
 public:
  /// No framework pool (on_capture_end of a capture that took no memory and named none).
  static constexpr std::size_t no_pool = static_cast<std::size_t>(-1);
  explicit recorder(name_source names = name_source::nvtx) : names_(names) {}

  /// A stable label for a stream handle: "stream 1" for the first stream seen, and so on.
  std::uint64_t stream_label(std::uint64_t handle);
  /// Whether the stream of `label` synchronizes with the legacy default stream (a blocking
  /// stream, the legacy stream itself, a per-thread default stream): a synchronous copy
  /// completes its work. Unknown streams are taken as non-blocking.
  void set_blocking(std::uint64_t label, bool blocking) { blocking_[label] = blocking; }
  [[nodiscard]] bool knows_blocking(std::uint64_t label) const { return blocking_.count(label) != 0; }
  /// A capture began on `stream` with `nvtx` the innermost active NVTX range ("" if none).
  void on_capture_begin(std::uint64_t stream, const std::string& nvtx);
  /// A capture on `stream` ended with `graph`. Returns the framework pool it took memory into
  /// (for on_capture_pool_known), or no_pool.
  std::size_t on_capture_end(std::uint64_t stream, std::uint64_t graph);
  /// The thread capturing into `stream` allocated device memory outside the capture
  /// (cuMemAlloc, cuMemCreate): an allocator growing the graph's private pool. `handle` is the
  /// address or the allocation handle, for on_capture_memory_free.
  /// `address`: `handle` is the memory's address (cuMemAlloc), which the allocator's snapshot
  /// names its segments by; false for an allocation handle (cuMemCreate).
  /// `library`: the file name of the library whose call took it (driver_api::calling_object).
  void on_capture_alloc(std::uint64_t stream, std::uint64_t handle, std::uint64_t bytes, int device, double t_us,
                        bool address = true, const std::string& library = "");
  /// A stream made on the thread capturing into `stream` took `bytes` of the device (the
  /// driver's memory for it, cuMemGetInfo around the call): `library`'s, at this capture.
  void on_capture_stream(std::uint64_t stream, int device, std::uint64_t bytes, const std::string& library);
  /// Memory a capture allocated freed (cuMemFree, cuMemRelease): the pool released. Returns
  /// whether `handle` was such memory.
  bool on_capture_memory_free(std::uint64_t handle, double t_us);
  /// Whether `handle` is memory a capture allocated (one look-up).
  [[nodiscard]] bool is_capture_memory(std::uint64_t handle) const { return capture_memory_.count(handle) != 0; }
  /// `exec` was instantiated from `graph` whose model is `model`; counters of its devices
  /// before and after; `stack` the call stack of the instantiation (graph_record::
  /// instantiate_stack). Graphs without alloc nodes only count (graphs_without_memory_nodes),
  /// unless their capture took memory (a private pool). An instantiation of the site and
  /// structure of a destroyed graph that left nothing allocated is recorded as that graph again
  /// (recorder_fold.cpp).
  void on_instantiate(std::uint64_t exec, std::uint64_t graph, profiler::graph_model model,
                      const std::string& nvtx, double t_us, double host_us,
                      const std::optional<counters>& before, const std::optional<counters>& after,
                      const profiler::instantiate_flags& flags = {}, stack_ref stack = nullptr);
  /// An instantiation of a graph with memory nodes that the driver refused (`result`, the
  /// CUresult name): kept as a note, the graph is not tracked.
  void on_instantiate_failed(const std::string& nvtx, double t_us, const std::string& result);
  /// Whether `exec` is a graph with memory nodes the recorder tracks.
  [[nodiscard]] bool tracks(std::uint64_t exec) const { return execs_.count(exec) != 0; }
  /// What a launch of `exec` into stream `handle` needs, in one look-up: whether it is tracked,
  /// the stream's label, the device, and whether the counters must be read around it (first
  /// launch, after an upload, a trim or a stream switch).
  struct launch_plan {
    bool tracked = false;
    std::uint64_t stream = 0;
    int device = -1;
    bool read_counters = false;
    std::size_t graph = 0;  ///< the graph record's index, for on_steady_launch
  };
  [[nodiscard]] launch_plan plan_launch(std::uint64_t exec, std::uint64_t stream_handle);
  /// The common case of a planned launch, without look-ups: nothing was read around it
  /// (plan.read_counters was false) and it took `host_us` < map_floor_us, so it is steady.
  /// Records what on_launch would for such a launch; returns false (recording nothing) when the
  /// launch is not that case and on_launch must take it.
  bool on_steady_launch(const launch_plan& plan, double host_us, double t_us = -1);
  /// The device whose counters matter for `exec` (its first alloc node's device); -1 if unknown.
  [[nodiscard]] int device_of(std::uint64_t exec) const;
  /// Every device `exec` allocates on, ascending (empty if unknown).
  [[nodiscard]] std::vector<int> devices_of(std::uint64_t exec) const;
  /// The counters of another device of `exec` around the call just recorded for it (a graph
  /// that allocates on several devices maps memory on each): recorded as the same call on that
  /// device, so that each device's pool sees its own growth. Ignored when the last recorded
  /// event of `exec` is not that call (a steady launch recorded none).
  void on_other_device(std::uint64_t exec, int device, double t_us, const std::optional<counters>& before,
                       const std::optional<counters>& after);
  /// History of `exec` before a launch into `stream` (stream label, see stream_label).
  [[nodiscard]] launch_history history(std::uint64_t exec, std::uint64_t stream) const;
  /// Whether a launch taking `host_us` is slow for `exec` (see slow_factor).
  [[nodiscard]] bool slow(std::uint64_t exec, double host_us) const;
  /// `exec` was instantiated with the upload flag into `stream`: its first launch is a first
  /// launch after upload (the instantiate event's host time holds the mapping).
  void mark_uploaded(std::uint64_t exec, std::uint64_t stream);
  /// An upload; `failure` the CUresult name when the driver refused it (not counted as one).
  void on_upload(std::uint64_t exec, std::uint64_t stream, double t_us, double host_us,
                 const std::optional<counters>& before, const std::optional<counters>& after,
                 const std::string& failure = "", bool concurrent = false);
  /// A launch; counters nullopt when not read (a steady-looking launch); `failure` the CUresult
  /// name when the driver refused it: recorded as a failed call, not counted as a launch.
  void on_launch(std::uint64_t exec, std::uint64_t stream, double t_us, double host_us,
                 const std::optional<counters>& before, const std::optional<counters>& after,
                 const std::string& failure = "", bool concurrent = false);
  void on_trim(int device, double t_us, double host_us, const counters& before,
               const counters& after);
  /// cuGraphExecUpdate of `exec` with graph `graph` returned: `failure` the CUresult name where
  /// the driver refused it (counted, nothing else changes); else the record takes `model` (the
  /// graph read back; nullopt: unread, the skeleton stays), its held allocations' addresses,
  /// its name where names come from the graph (NVTX range, capture, Python site; `nvtx` is the
  /// range active at the update), and starts with no mapping: the new graph's allocations have
  /// addresses of their own (a sequence entry "update"). Counters around the call as for an
  /// upload. An untracked `exec` only marks `graph` as instantiated where the update took, and is
  /// counted, taken or refused, where it is an executable graph without memory nodes
  /// (without_memory_nodes_calls).
  void on_exec_update(std::uint64_t exec, std::uint64_t graph, std::optional<profiler::graph_model> model,
                      const std::string& nvtx, double t_us, double host_us, const std::optional<counters>& before,
                      const std::optional<counters>& after, const std::string& failure = "", bool concurrent = false);
  /// One node of `exec` was given other parameters: counted (graph_record::node_param_sets).
  void on_node_params_set(std::uint64_t exec);
  /// The same for an `exec` the recorder does not track (tracks is false): counted where it is an
  /// executable graph without memory nodes (without_memory_nodes_calls), in one look-up.
  void on_untracked_node_params_set(std::uint64_t exec) {
    if (no_memory_execs_.count(exec) != 0) ++no_memory_calls_.node_param_sets;
  }
  /// The executable graph destroyed: its record stays (a later instantiation of its site and
  /// structure may be recorded as it again, recorder_fold.cpp).
  void on_exec_destroy(std::uint64_t exec, double t_us = -1);
  /// cuGraphDestroy: forgets the graph's capture origin; a capture that took memory and was
  /// never instantiated becomes a record of its own (every capture is recorded).
  void on_graph_destroy(std::uint64_t graph);
  /// The end of the recording: captures never instantiated whose graphs are still alive become
  /// records. Call once, before assemble.
  void finish();
  [[nodiscard]] bool timeline_truncated() const { return timeline_truncated_; }
  /// cuMemFreeAsync / cuMemFree of `address` into stream label `stream` (0: cuMemFree). When it
  /// is an allocation a tracked graph leaves allocated, records the free and returns true.
  bool on_free(std::uint64_t address, std::uint64_t stream, double t_us);
  /// Whether `address` is an allocation a tracked graph leaves allocated (one look-up).
  [[nodiscard]] bool is_held(std::uint64_t address) const { return held_.count(address) != 0; }
  /// False when no graph has ever held `address` (then is_held is false too); read without the
  /// session's lock, so that the frees a capture makes into its graph (a hundred in a model's
  /// step) and the program's own frees cost the recording no lock. A filter of every address
  /// ever held: its bits are set, never cleared, so a long run only makes more frees look.
  [[nodiscard]] bool might_hold(std::uint64_t address) const noexcept { return ever_held_.may_have(address); }

  // Completions the program saw (recorder_completions.cpp): the pool model shares the granules
  // of work known complete with launches in other streams. Each is logged only when it completes
  // tracked work not yet known complete, so a program that queries events in a loop adds nothing.
  /// A synchronize or a query that reported idle: of a stream (its label), or of every stream (0).
  void on_sync(std::uint64_t stream, double t_us = -1);
  /// cuEventRecord of `event` (a handle) into stream label `stream`.
  void on_event_record(std::uint64_t event, std::uint64_t stream);
  /// cuEventSynchronize, or a cuEventQuery that reported done: the work before the event's
  /// record is complete.
  void on_event_complete(std::uint64_t event, double t_us = -1);
  /// cuEventDestroy.
  void on_event_destroy(std::uint64_t event) { events_.erase(event); }
  /// A synchronous copy to the host returned: the legacy stream's work is complete, and every
  /// blocking stream's (`per_thread`: the calling thread's default stream's only, label given).
  void on_sync_copy(std::uint64_t per_thread_label, bool per_thread, double t_us = -1);

  // The bill (recorder_bill.cpp): what the graphs cost the device besides the graph memory
  // pool. The Python companion (python/gmem_companion) names the application allocator's pools
  // and its warm-ups through NVTX marks; without it each capture's memory is a pool of its own.
  /// The capture just begun on `stream` takes memory into the allocator's pool `pool` on
  /// `device`, was captured at `python_site`, and the framework calls it `framework_label`.
  void on_capture_named(std::uint64_t stream, const std::string& pool, int device, const std::string& python_site,
                        const std::string& framework_label);
  /// The allocator's pool the capture of `graph` took memory into, told after the capture where
  /// the program named none (PyTorch made one): the capture's pool is that one. `took` is what
  /// on_capture_end returned for it, the pool named by it even once the graph is destroyed;
  /// `graph` is looked up only for a capture that took nothing.
  void on_capture_pool_known(std::uint64_t graph, std::size_t took, const std::string& pool, int device);
  /// Device memory a warm-up run took into the allocator's pool `pool` (torch.compile's CUDA graph
  /// trees run a new shape once in the pool before they capture it). `handle` as on_capture_alloc.
  void on_warmup_alloc(const std::string& pool, int device, std::uint64_t handle, std::uint64_t bytes,
                       bool address = true, const std::string& library = "");
  /// The allocator's own figure for its pool `pool` on `device` (PyTorch's snapshot), and where
  /// told, the addresses of the pool's segments: the bill's end then takes out of the pool what a
  /// capturing or warming-up thread allocated at other addresses (libraries' handles and
  /// workspaces made during a warm-up run, NCCL's buffers made during a capture).
  void on_pool_snapshot(const std::string& pool, int device, std::uint64_t bytes,
                        const std::vector<std::uint64_t>* segments = nullptr);
  /// The allocator's figure for pool `pool` on `device` right after the capture of `graph` ended
  /// (`took` as on_capture_pool_known), with its segments' addresses: what the capture took at
  /// other addresses is the libraries', and the pool's figure then is kept beside the
  /// allocator's (framework_pool::after_captures).
  /// `record`: the graph record the capture became (record_of_exec), no_pool where none.
  void on_pool_after_capture(std::uint64_t graph, std::size_t record, std::size_t took, const std::string& pool,
                             int device, std::uint64_t bytes, std::vector<std::uint64_t> segments);
  /// The graph record of executable graph `exec`; no_pool where the recorder keeps none for it.
  [[nodiscard]] std::size_t record_of_exec(std::uint64_t exec) const {
    const auto it = execs_.find(exec);
    return it == execs_.end() ? no_pool : it->second;
  }
  /// What the driver took for an executable graph's state on `device` (cuMemGetInfo around its
  /// instantiation or upload, less a pool's growth); nullopt: no clean reading. `exec` may be a
  /// graph the recorder does not track (no memory nodes): counted in the device's total.
  void on_exec_state(std::uint64_t exec, int device, std::optional<std::uint64_t> bytes);
  /// Whether executable-graph state is counted on some device and not all given back.
  [[nodiscard]] bool exec_state_outstanding() const;
  /// An executable graph's destroy on `device` gave `bytes` back (cuMemGetInfo around it;
  /// nullopt: no clean reading): the device's executable-graph state comes down by it.
  void on_exec_state_released(int device, std::optional<std::uint64_t> bytes);
  /// The device memory the process uses now (cuMemGetInfo: total - free); the first reading is
  /// the bill's start.
  void on_memory_reading(int device, std::uint64_t used);
  /// Whether the device's memory was read already (its first reading is the bill's start).
  [[nodiscard]] bool has_memory_reading(int device) const {
    const auto it = costs_.find(device);
    return it != costs_.end() && it->second.have_memory;
  }
  /// The program's end as it said it (the Python companion): the bill is taken now, with
  /// `counters` the devices' graph memory counters now.
  void end_bill(const std::string& why, const std::map<int, counters>& counters);
  /// The bills of the recording, per device, and the framework pools (assemble calls it).
  void bills(std::vector<profiler::graph_bill>& bills, std::vector<profiler::framework_pool>& pools,
             const std::vector<profiler::recorded_pool>& node_pools) const;

  /// Whether a completion could change anything now: tracked work not yet known complete, or an
  /// event that stands for some.
  [[nodiscard]] bool awaiting_completion() const;

  /// The sequence of calls that change a pool, in order.
  [[nodiscard]] const std::vector<sequence_entry>& sequence() const { return sequence_; }
  [[nodiscard]] bool sequence_truncated() const { return sequence_truncated_; }
  [[nodiscard]] const std::vector<std::string>& notes() const { return notes_; }
  /// The last counters seen for `device`, if any.
  [[nodiscard]] std::optional<counters> last_counters(int device) const;

  [[nodiscard]] const std::vector<graph_record>& graphs() const { return graphs_; }
  [[nodiscard]] const std::vector<timeline_point>& timeline() const { return timeline_; }
  [[nodiscard]] std::uint64_t graphs_without_memory_nodes() const { return no_memory_nodes_; }
  /// What the program did to its executable graphs without memory nodes once instantiated (XLA
  /// updates its command buffers in place): updates in place the driver took (cuGraphExecUpdate),
  /// those it refused, and calls that set one node's parameters (cuGraphExec*SetParams,
  /// cuGraphNodeSetEnabled). Executable graphs the recording leaves out for other reasons (on
  /// another device than --device, a graph it could not read) are not counted.
  struct calls_without_memory_nodes {
    std::uint64_t updates = 0;
    std::uint64_t refused_updates = 0;
    std::uint64_t node_param_sets = 0;
  };
  [[nodiscard]] const calls_without_memory_nodes& without_memory_nodes_calls() const { return no_memory_calls_; }
  /// Captures whose graphs were destroyed (or alive at the end) without an instantiation and
  /// without taking memory: they cost nothing, and are counted.
  [[nodiscard]] std::uint64_t captures_never_instantiated() const { return never_instantiated_; }
  [[nodiscard]] name_source names() const { return names_; }

  /// The name for a graph: per the name source, "<nvtx range>", where the program captured it
  /// as its Python companion told ("model.py:42 in forward", with the framework's label:
  /// "... (cudagraph tree node 3 [[8, 64]])"), "stream 2 #3" (the third graph captured on
  /// stream 2), "graph 5" (the fifth instantiated). Falls back nvtx -> Python site -> stream ->
  /// sequence when a source has nothing.
  [[nodiscard]] static std::string make_name(name_source s, const std::string& nvtx,
                                             const std::string& stream,
                                             std::uint64_t stream_sequence,
                                             std::uint64_t sequence, const std::string& python_site = "",
                                             const std::string& framework_label = "");
  /// The site and structure of a graph: its instantiation stack, NVTX range, kind, flags, node
  /// kinds and sizes, edges and children, hashed. Instances of one shape are one record.
  [[nodiscard]] static std::uint64_t shape_of(const call_stack* stack, const std::string& nvtx,
                                              const std::string& kind, const profiler::instantiate_flags& flags,
                                              const profiler::graph_model& model);

 private:
  struct capture_origin {
    std::uint64_t stream_label = 0;
    std::uint64_t stream_sequence = 0;
    std::string nvtx;
    std::uint64_t capture_bytes = 0;
    std::uint64_t capture_allocations = 0;
    int device = 0;
    double t_us = 0;
    bool instantiated = false;
    std::size_t pool = no_pool;  ///< its framework pool (pools_), once it took memory or was named
    std::string python_site;     ///< from the Python companion
    std::string framework_label;
    std::string framework_detail;
    std::uint64_t library_bytes = 0;  ///< the driver's memory for streams made in the capture
  };
  /// A private pool of the application's allocator (recorder_bill.cpp).
  struct pool_state {
    std::string id;  ///< the allocator's name for it; empty: one capture's, unnamed
    int device = 0;
    std::uint64_t warmup = 0, capture = 0, released = 0, held = 0, peak = 0;
    std::int64_t snapshot = -1;
    std::vector<std::size_t> graphs;  ///< graph records captured into it
    bool merged = false;  ///< an unnamed pool found to be a named one: its figures are there
    std::uint64_t peak_seq = 0;          ///< the allocation that made the peak (alloc_seq_)
    std::vector<std::uint64_t> segments;  ///< the snapshot's segment addresses, sorted
    bool segments_known = false;
    std::uint64_t segments_seq = 0;  ///< alloc_seq_ when the segments were told
    std::vector<profiler::pool_check> checks;  ///< after each capture the companion read it
  };
  /// The framework pool `id` on `device` (made when new); an empty id makes an unnamed one.
  std::size_t pool_of(const std::string& id, int device);
  void pool_took(std::size_t pool, std::uint64_t bytes, bool warmup);
  /// The capture memory of `handle`, just taken into its pool.
  void took_capture_memory(std::uint64_t handle, std::uint64_t bytes, std::size_t pool, bool warmup, bool address,
                           std::uint64_t stream, const std::string& library);
  /// Where a pool's segments are known (after a capture, at the bill's end): what a capture or
  /// warm-up took at an address outside them is the libraries' (device_costs::takers), not
  /// the pool's. `only`: that pool alone (its list just told); no_pool: every pool.
  void separate_library_memory(std::size_t only = no_pool);
  /// A point of the timeline; `graph`: the record's index (none for a trim).
  void point(double t_us, int device, const std::string& event, std::size_t graph, const counters& c);
  void log(sequence_entry e);
  std::int64_t push_event(graph_record& g, const graph_event& e);
  /// A graph's held allocations' addresses in the order of their alloc nodes.
  static std::vector<std::uint64_t> held_of(const profiler::graph_model& model);
  /// Points held_ at record `gi`'s current held addresses (and forgets its earlier ones).
  void hold(std::size_t gi, std::vector<std::uint64_t> addresses);
  /// A launch of record `gi` into stream label `stream` ran: its held allocations are live, and
  /// it may have taken granules other graphs had mapped.
  void launched(graph_record& g, std::uint64_t stream);
  /// recorder_fold.cpp: the destroyed record of `shape` that a new instance may be, if any.
  std::optional<std::size_t> revivable(std::uint64_t shape) const;
  void revive(std::size_t gi, std::uint64_t exec, std::uint64_t graph, const profiler::graph_model& model,
              double t_us, double host_us, const std::optional<counters>& before,
              const std::optional<counters>& after);
  /// A capture that took memory and was never instantiated, as a private-pool record.
  void record_uninstantiated(std::uint64_t graph, const capture_origin& o);
  void complete(std::uint64_t stream, std::int64_t upto, double t_us);

  name_source names_;
  std::unordered_map<std::uint64_t, std::uint64_t> stream_labels_;
  std::unordered_map<std::uint64_t, bool> blocking_;            ///< stream label -> blocking
  std::map<std::uint64_t, std::string> capture_nvtx_;   ///< stream handle -> nvtx at begin
  std::map<std::uint64_t, std::uint64_t> captures_per_stream_;  ///< label -> count
  std::map<std::uint64_t, capture_origin> graph_origin_;        ///< graph handle -> origin
  std::unordered_map<std::uint64_t, std::size_t> execs_;  ///< exec handle -> graphs_ index
  std::map<int, std::uint64_t> trims_;                           ///< device -> trim count
  std::map<int, counters> last_;
  std::vector<graph_record> graphs_;
  std::vector<timeline_point> timeline_;
  std::map<std::string, int> name_uses_;
  std::uint64_t no_memory_nodes_ = 0;
  /// The live executable graphs without memory nodes (those on_instantiate counted, until their
  /// destroy): their updates and node parameter calls are counted, nothing else is kept of them.
  std::unordered_set<std::uint64_t> no_memory_execs_;
  calls_without_memory_nodes no_memory_calls_;
  std::uint64_t never_instantiated_ = 0;
  std::unordered_map<std::uint64_t, std::size_t> held_;  ///< held allocation address -> graph
  /// A set of addresses that may answer "maybe" for one it never had, never "no" for one it had:
  /// 65,536 bits (8 KiB), each address one bit, set and never cleared; read and set lock-free.
  class address_filter {
   public:
    address_filter() = default;
    address_filter(const address_filter& o) noexcept { *this = o; }
    address_filter& operator=(const address_filter& o) noexcept {
      for (std::size_t k = 0; k < words_.size(); ++k) {
        words_[k].store(o.words_[k].load(std::memory_order_relaxed), std::memory_order_relaxed);
      }
      return *this;
    }
    void add(std::uint64_t address) noexcept {
      const std::uint64_t b = bit(address);
      words_[b >> 6].fetch_or(std::uint64_t{1} << (b & 63), std::memory_order_relaxed);
    }
    [[nodiscard]] bool may_have(std::uint64_t address) const noexcept {
      const std::uint64_t b = bit(address);
      return ((words_[b >> 6].load(std::memory_order_relaxed) >> (b & 63)) & 1) != 0;
    }

   private:
    static constexpr int bits = 16;
    static std::uint64_t bit(std::uint64_t address) noexcept {
      return (address * 0x9E3779B97F4A7C15ull) >> (64 - bits);
    }
    std::array<std::atomic<std::uint64_t>, (std::size_t{1} << bits) / 64> words_{};
  };
  address_filter ever_held_;  ///< every address held_ has had
  struct capture_memory {
    std::uint64_t bytes = 0;
    std::uint64_t graph = 0;   ///< the captured graph's handle once the capture ended
    std::uint64_t stream = 0;  ///< the capturing stream until then
    std::size_t record = static_cast<std::size_t>(-1);  ///< its graph record, once instantiated
    std::size_t pool = no_pool;  ///< its framework pool
    bool warmup = false;   ///< taken by a warm-up run, not a capture
    bool address = true;   ///< `handle` is an address (cuMemAlloc)
    std::uint64_t seq = 0;  ///< alloc_seq_ when taken
    std::string library;    ///< the file name of the library whose call took it
  };
  std::uint64_t alloc_seq_ = 0;  ///< capture and warm-up allocations so far
  std::vector<pool_state> pools_;
  std::map<std::pair<std::string, int>, std::size_t> pool_index_;  ///< (id, device) -> pools_
  // Executable-graph state and the process's memory, per device (recorder_bill.cpp).
  struct device_costs {
    std::uint64_t exec_bytes = 0, exec_measured = 0, exec_unmeasured = 0;
    std::uint64_t exec_released = 0;  ///< given back by destroys (at most exec_bytes)
    std::uint64_t exec_destroys = 0, exec_destroys_unmeasured = 0;  ///< destroys read while state was outstanding
    bool have_memory = false;
    std::uint64_t first_used = 0, last_used = 0;
    std::uint64_t framework_held = 0, framework_peak = 0;  ///< all its framework pools at once
    std::uint64_t framework_peak_seq = 0;  ///< the allocation that made framework_peak
    /// What capturing or warming-up threads allocated outside the framework's pools, alive at
    /// the bill's end (separate_library_memory).
    std::map<std::string, profiler::library_taker> takers;  ///< by the library's name
  };
  std::map<int, device_costs> costs_;
  /// The bill's end, frozen where the program said it ended (the Python companion, before the
  /// interpreter tears graphs and pools down); unset: the end of the recording.
  struct bill_end {
    std::string why;
    std::map<int, counters> node_pool;      ///< the counters then
    std::vector<pool_state> pools;
    std::map<int, device_costs> costs;
  };
  std::optional<bill_end> end_;
  std::unordered_map<std::uint64_t, capture_memory> capture_memory_;  ///< address or handle
  std::map<std::uint64_t, capture_origin> capturing_;  ///< stream handle -> what its capture took
  int capture_device_ = -1;  ///< the device of the last capture-time allocation, -1: none yet
  std::vector<sequence_entry> sequence_;
  bool sequence_truncated_ = false;
  std::vector<std::string> notes_;
  /// Destroyed records by shape, for recorder_fold.cpp.
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> destroyed_shapes_;
  bool timeline_truncated_ = false;
  /// Rises at every launch or upload that may take granules another graph mapped (one of a
  /// graph holding outputs, or into another stream than the call before): a slow relaunch of a
  /// graph launched since the last rise had nothing to remap.
  std::uint64_t epoch_ = 0;
  std::uint64_t last_call_stream_ = 0;
  // Completions (recorder_completions.cpp).
  std::unordered_map<std::uint64_t, std::uint64_t> stream_work_;    ///< label -> launches and uploads logged
  std::unordered_map<std::uint64_t, std::uint64_t> complete_upto_;  ///< label -> known complete
  struct recorded_event_mark {
    std::uint64_t stream = 0;
    std::uint64_t ordinal = 0;
  };
  std::unordered_map<std::uint64_t, recorded_event_mark> events_;  ///< event handle -> its record
};

}  // namespace gmem::record
