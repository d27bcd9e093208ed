#pragma once
// Record mode's bookkeeping, as plain C++ (no CUDA): what the injected library saw (captures,
// instantiations, uploads, launches, trims, the counters around them), how each launch is
// classified, how a graph is named, and how all of it becomes a report. The CUPTI adapter
// (inject.cpp) only reads the driver and calls these functions; everything here is host-tested.
//
// Invariants: every exec id passed to on_upload / on_launch / on_exec_destroy was first passed to
// on_instantiate (unknown execs are graphs without memory nodes and are ignored); times are
// microseconds since the recorder was made, non-decreasing per thread.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
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

/// What a launch was, decided from the graph's history and the counters around the call.
enum class launch_class {
  first_launch,               ///< never launched, not uploaded: the launch maps its memory
  first_launch_after_upload,  ///< never launched, uploaded before: mapping was paid by the upload
  steady,                     ///< launched before, nothing mapped
  remap_after_trim,           ///< memory was trimmed since its last launch and mapped again
  remap_after_stream_switch,  ///< launched into another stream than last time and remapped
  remap_contention            ///< mapped again with no trim and no stream switch (the pool grew
                              ///< inside the call, or it was slow): another graph's allocation
                              ///< took memory it had mapped
};
/// "first_launch", "steady", "remap_after_trim", ...
[[nodiscard]] const char* to_string(launch_class c) noexcept;

/// What is known before a launch from the graph's history.
struct launch_history {
  bool launched_before = false;
  bool uploaded = false;             ///< uploaded since its last launch (or ever, if none)
  bool trimmed_since_last = false;   ///< its device was trimmed since its last launch
  bool stream_changed = false;       ///< another stream than its last launch (or upload)
};

/// A launch this long may have mapped memory, so the counters are read after it: measured on an
/// H100 (driver 580), every launch that mapped a granule took 18.9 us or more, every steady one
/// 14.4 us or less (tools/pool_probe.cu, 159 calls). Any growth of the pool is thus seen by the
/// call that caused it, at the cost of one reading for the rare steady launch this slow.
inline constexpr double map_floor_us = 15.0;
/// A relaunch is slow, so it mapped memory even where the pool did not grow, when it took
/// map_floor_us or more and this many times the graph's steady median (a busy host can stretch a
/// steady launch past the floor; not three times its usual cost as often).
inline constexpr double slow_factor = 3.0;

/// Classifies a launch. `before`/`after` are the device's counters around the call when they
/// were read (nullopt: not read, the launch looked steady); `slow` says the host time was above
/// the slow threshold. Mapping is seen as reserved_current growing inside the call, or a slow
/// relaunch. Throws nothing.
[[nodiscard]] launch_class classify(const launch_history& h, const std::optional<counters>& before,
                                    const std::optional<counters>& after, bool slow) noexcept;

/// One event of one graph: instantiate, upload, launch or trim, with host time and counters.
struct graph_event {
  double t_us = 0;
  std::string kind;  ///< "instantiate", "upload", "launch", "trim"
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
  std::string graph;  ///< graph name, empty for trims
  counters values;
};

/// One executable graph that owns memory nodes, or whose capture took memory from the
/// application's allocator (a private pool: PyTorch's native caching allocator).
struct graph_record {
  std::string name;
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
  double steady_min_us = 0;
  double steady_max_us = 0;
  double steady_median_us = 0;  ///< median of the last (up to) 32 steady launches, refreshed
                                ///< at each of the first 16 and then every 64th
  std::array<double, 32> recent{};  ///< the last 32 steady host times (a ring)
  std::uint64_t launches = 0;
  std::uint64_t failed_calls = 0;  ///< launches and uploads the driver refused
  std::uint64_t instances = 1;     ///< executable graphs of this site and shape, made and destroyed
  std::uint64_t events_dropped = 0;  ///< past max_events
  profiler::instantiate_flags flags;
  /// Addresses of the allocations it leaves allocated (alloc nodes without a free node).
  std::vector<std::uint64_t> held_addresses;
  // History for classification.
  bool launched = false;
  bool uploaded = false;
  std::uint64_t last_stream = 0;
  std::uint64_t trims_seen = 0;  ///< device trim count at its last launch
  bool destroyed = false;
  /// Where the program instantiated it: the native call stack, innermost first, without the
  /// driver's, CUPTI's and the recording library's frames ("libtorch_cuda.so!at::cuda::
  /// CUDAGraph::capture_end()+0x1c4"); empty where none could be taken.
  std::vector<std::string> instantiate_stack;
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
  char op = 'L';  ///< L launch, U upload, F free, D destroy, T trim, S sync
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
};

/// Records what the adapter reports; not thread-safe (the adapter holds a lock).
class recorder {
 public:
  explicit recorder(name_source names = name_source::nvtx) : names_(names) {}

  /// A stable label for a stream handle: "stream 1" for the first stream seen, and so on.
  std::uint64_t stream_label(std::uint64_t handle);
  /// A capture began on `stream` with `nvtx` the innermost active NVTX range ("" if none).
  void on_capture_begin(std::uint64_t stream, const std::string& nvtx);
  /// A capture on `stream` ended with `graph`.
  void on_capture_end(std::uint64_t stream, std::uint64_t graph);
  /// The thread capturing into `stream` allocated device memory outside the capture
  /// (cuMemAlloc, cuMemCreate): an allocator growing the graph's private pool. `handle` is the
  /// address or the allocation handle, for on_capture_memory_free.
  void on_capture_alloc(std::uint64_t stream, std::uint64_t handle, std::uint64_t bytes, int device, double t_us);
  /// Memory a capture allocated freed (cuMemFree, cuMemRelease): the pool released. Returns
  /// whether `handle` was such memory.
  bool on_capture_memory_free(std::uint64_t handle, double t_us);
  /// Whether `handle` is memory a capture allocated (one look-up).
  [[nodiscard]] bool is_capture_memory(std::uint64_t handle) const { return capture_memory_.count(handle) != 0; }
  /// `exec` was instantiated from `graph` whose model is `model`; counters of its devices
  /// before and after. Graphs without alloc nodes only count (graphs_without_memory_nodes).
  void on_instantiate(std::uint64_t exec, std::uint64_t graph, profiler::graph_model model,
                      const std::string& nvtx, double t_us, double host_us,
                      const std::optional<counters>& before, const std::optional<counters>& after,
                      const profiler::instantiate_flags& flags = {});
  /// An instantiation of a graph with memory nodes that the driver refused (`result`, the
  /// CUresult name): kept as a note, the graph is not tracked.
  void on_instantiate_failed(const std::string& nvtx, double t_us, const std::string& result);
  /// The call stack of `exec`'s instantiation (see graph_record::instantiate_stack).
  void set_instantiate_stack(std::uint64_t exec, std::vector<std::string> frames);
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
  /// The executable graph destroyed. When an earlier destroyed graph had the same site and
  /// structure and this one is the newest record, it is folded into that one (instances,
  /// launches, steady times, events up to max_events): a program that makes the same graph
  /// 10^4 times keeps one record, and the recorder's memory stays flat.
  void on_exec_destroy(std::uint64_t exec, double t_us = -1);
  /// cuGraphDestroy: forgets the graph's capture origin.
  void on_graph_destroy(std::uint64_t graph);
  [[nodiscard]] bool timeline_truncated() const { return timeline_truncated_; }
  /// cuMemFreeAsync / cuMemFree of `address` into stream label `stream` (0: cuMemFree). When it
  /// is an allocation a tracked graph leaves allocated, records the free and returns true.
  bool on_free(std::uint64_t address, std::uint64_t stream, double t_us);
  /// Whether `address` is an allocation a tracked graph leaves allocated (one look-up).
  [[nodiscard]] bool is_held(std::uint64_t address) const { return held_.count(address) != 0; }
  /// A synchronize: of a stream (its label), or of every stream (0).
  void on_sync(std::uint64_t stream, double t_us = -1);
  /// The sequence of calls that change a pool, in order.
  [[nodiscard]] const std::vector<sequence_entry>& sequence() const { return sequence_; }
  [[nodiscard]] bool sequence_truncated() const { return sequence_truncated_; }
  [[nodiscard]] const std::vector<std::string>& notes() const { return notes_; }
  /// The last counters seen for `device`, if any.
  [[nodiscard]] std::optional<counters> last_counters(int device) const;

  [[nodiscard]] const std::vector<graph_record>& graphs() const { return graphs_; }
  [[nodiscard]] const std::vector<timeline_point>& timeline() const { return timeline_; }
  [[nodiscard]] std::uint64_t graphs_without_memory_nodes() const { return no_memory_nodes_; }
  [[nodiscard]] name_source names() const { return names_; }

  /// The name for a graph: per the name source, "<nvtx range>", "stream 2 #3" (the third graph
  /// captured on stream 2), "graph 5" (the fifth instantiated). Falls back nvtx -> stream ->
  /// sequence when a source has nothing.
  [[nodiscard]] static std::string make_name(name_source s, const std::string& nvtx,
                                             const std::string& stream,
                                             std::uint64_t stream_sequence,
                                             std::uint64_t sequence);

 private:
  void point(double t_us, int device, const std::string& event, const std::string& graph,
             const counters& c);
  void log(sequence_entry e);
  std::int64_t push_event(graph_record& g, const graph_event& e);
  static std::uint64_t shape_of(const graph_record& g);

  name_source names_;
  std::unordered_map<std::uint64_t, std::uint64_t> stream_labels_;
  std::map<std::uint64_t, std::string> capture_nvtx_;   ///< stream handle -> nvtx at begin
  struct capture_origin {
    std::uint64_t stream_label = 0;
    std::uint64_t stream_sequence = 0;
    std::string nvtx;
    std::uint64_t capture_bytes = 0;
    std::uint64_t capture_allocations = 0;
    int device = 0;
    double t_us = 0;
  };
  std::map<std::uint64_t, std::uint64_t> captures_per_stream_;  ///< label -> count
  std::map<std::uint64_t, capture_origin> graph_origin_;        ///< graph handle -> origin
  std::unordered_map<std::uint64_t, std::size_t> execs_;  ///< exec handle -> graphs_ index
  std::map<int, std::uint64_t> trims_;                           ///< device -> trim count
  std::map<int, counters> last_;
  std::vector<graph_record> graphs_;
  std::vector<timeline_point> timeline_;
  std::map<std::string, int> name_uses_;
  std::uint64_t no_memory_nodes_ = 0;
  std::unordered_map<std::uint64_t, std::size_t> held_;  ///< held allocation address -> graph
  struct capture_memory {
    std::uint64_t bytes = 0;
    std::uint64_t graph = 0;   ///< the captured graph's handle once the capture ended
    std::uint64_t stream = 0;  ///< the capturing stream until then
    std::size_t record = static_cast<std::size_t>(-1);  ///< its graph record, once instantiated
  };
  std::unordered_map<std::uint64_t, capture_memory> capture_memory_;  ///< address or handle
  std::map<std::uint64_t, capture_origin> capturing_;  ///< stream handle -> what its capture took
  int capture_device_ = -1;  ///< the device of the last capture-time allocation, -1: none yet
  std::vector<sequence_entry> sequence_;
  bool sequence_truncated_ = false;
  std::vector<std::string> notes_;
  std::unordered_map<std::uint64_t, std::size_t> destroyed_shapes_;  ///< shape -> its record
  bool timeline_truncated_ = false;
};

/// How the recording ended and in what process.
struct recording_info {
  bool partial = false;
  std::string partial_reason;  ///< "signal 15 (SIGTERM)", ...
  std::string command;         ///< the recorded command line
  long pid = 0;
  std::vector<std::string> notes;  ///< one line each, e.g. CUPTI was taken
};

/// The report of a recording: one scenario_result per graph with memory nodes (name = graph
/// name, parameter source="recorded"; counters after each recorded event; launch costs per
/// class, host time only; analysis and diagnostics from the model: the graph's own figures,
/// its reservation the reuse model's prediction for the graph alone; its skeleton), and the
/// "recorded" section: the events, each device's pool (growth by graph, high watermark and its
/// attribution, set diagnostics), the call sequence. `granularity` is the reservation
/// granularity of the graphs' device.
[[nodiscard]] profiler::report assemble(const recorder& r, const profiler::environment& env,
                                        std::uint64_t granularity,
                                        const recording_info& info = {});

/// The status message of a graph whose analysis at exit was deferred past the budget.
[[nodiscard]] std::string deferred_message(double budget_s);

/// Writes the recording atomically to `path`. Throws profiler::report_error(unwritable).
void write_recording(const profiler::report& rep, const std::string& path);

}  // namespace gmem::record
