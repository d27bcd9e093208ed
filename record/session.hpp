#pragma once
// A recording session: what the injected library does for each driver call it is told about,
// by family (graph calls, captures, completions, NVTX), and how the report is written at exit
// or on a fatal signal. It sees the driver only through `driver_api`, a table of plain function
// pointers, and CUPTI only as the plain arguments inject.cpp decodes from CUPTI's parameter
// structs: a host test drives it with a fake driver, call by call, on as many threads as it
// likes (tests/host/record/record_session_test.cpp).
//
// Every handler is safe to call from any thread, takes the session's lock for a few map
// look-ups at most, and throws nothing (the program must never see the recorder fail).

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gmem/profiler/environment.hpp"
#include "gmem/profiler/graph_model.hpp"
#include "gmem/profiler/recording.hpp"
#include "record/recorder.hpp"
#include "record/recording_report.hpp"

namespace gmem::record {

namespace detail {
struct thread_state;  // session_state.hpp
}  // namespace detail

/// What the session asks of the driver. The injected library fills it with driver API calls
/// (inject.cpp); tests with fakes.
struct driver_api {
  /// The device's four graph memory counters; nullopt when the driver refused.
  std::optional<counters> (*read_counters)(int device) = nullptr;
  /// Reads graph `graph` (a CUgraph) into `m`; false when the driver refused a query.
  /// `has_alloc` is set when the graph (or a child) has alloc nodes.
  bool (*read_graph)(std::uint64_t graph, profiler::graph_model& m, bool& has_alloc) = nullptr;
  /// The calling thread's current device (0 when none).
  int (*current_device)() = nullptr;
  /// Whether a stream (a handle as the program passed it) synchronizes with the legacy default
  /// stream; nullopt where the driver cannot be asked now: the stream is being captured, and
  /// asking a capturing stream for its flags invalidates its capture (docs/driver-facts.md).
  std::optional<bool> (*stream_blocking)(std::uint64_t stream) = nullptr;
  /// The caller's call stack, innermost first, without the driver's, CUPTI's and the
  /// recording library's frames.
  std::vector<std::string> (*call_stack)() = nullptr;
  /// The file name of the library whose call this is: the innermost frame's object that is not
  /// the driver's, the CUDA runtime's, CUPTI's, the C library's or the recording library's
  /// ("libnccl.so.2"); "" where none.
  std::string (*calling_object)() = nullptr;
  /// Microseconds on a steady clock.
  double (*now_us)() = nullptr;
  /// The device's description for the report, and the reservation granularity; false when the
  /// driver could not say.
  bool (*describe)(int device, profiler::environment& env, std::uint64_t& granularity) = nullptr;
  /// Whether `address` is host memory (a synchronous copy to it returns when the copy is done).
  bool (*is_host_pointer)(std::uint64_t address) = nullptr;
  /// The device memory in use on the calling thread's current device (cuMemGetInfo: total -
  /// free, every process's) and that device; false without a current context. It may be called
  /// in the exit handlers, after the thread's thread_local objects are gone: it keeps none.
  bool (*memory_used)(int& device, std::uint64_t& used) = nullptr;
  /// memory_used in two halves, so that the caller works while the reading is taken (on the
  /// recording library's helper thread): `start_memory_reading` begins it, and
  /// `finish_memory_reading` waits for it and answers as memory_used would have at the start.
  /// One at a time per thread, each started one finished. Without them the session calls
  /// memory_used where it would finish.
  void (*start_memory_reading)() = nullptr;
  bool (*finish_memory_reading)(int& device, std::uint64_t& used) = nullptr;
  /// The same in context `context` (a CUcontext just made, not yet current), and its device.
  bool (*context_memory_used)(std::uint64_t context, int& device, std::uint64_t& used) = nullptr;
};

/// Stream handles as the driver takes them: 0 and CU_STREAM_LEGACY name the legacy default
/// stream, CU_STREAM_PER_THREAD (and 0 in a per-thread-stream call) the calling thread's.
inline constexpr std::uint64_t legacy_stream = 0;
inline constexpr std::uint64_t per_thread_stream = 2;

/// The parts of what recording costs the program (the report's record_cost), in its order.
enum class cost_part : int {
  instantiate_graph_read,  ///< reading the graph back (cuGraphGetNodes, node parameters, edges)
  instantiate_memory,      ///< cuMemGetInfo before and after (the executable graph's state)
  instantiate_counters,    ///< the graph memory counters before and after
  instantiate_stack,       ///< the call stack
  instantiate_record,      ///< the recorder's own work, its lock included
  launch,
  upload,
  capture,      ///< stream capture begin and end
  memory,       ///< cuMemAlloc, cuMemCreate, frees and releases
  completion,   ///< synchronizes, queries, event records, synchronous copies
  trim,
  destroy,      ///< executable graphs and graphs destroyed
  update,       ///< executable graphs updated in place (the new graph's read included)
  node_params,  ///< an executable graph's node given other parameters
  companion,    ///< the Python companion's NVTX marks, read by this library
  count
};
[[nodiscard]] const char* to_string(cost_part part);

class session {
 public:
  session(const driver_api& driver, name_source names, std::string out_path, int device_filter = -1);
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  // Graph calls. `failure` is the CUresult's name when the call failed, else empty.
  void launch_enter(std::uint64_t exec, std::uint64_t stream) noexcept;
  void launch_exit(std::uint64_t exec, const std::string& failure) noexcept;
  void upload_enter(std::uint64_t exec, std::uint64_t stream) noexcept;
  void upload_exit(std::uint64_t exec, const std::string& failure) noexcept;
  void instantiate_enter(std::uint64_t graph) noexcept;
  /// `upload_stream`: the stream of CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, when given.
  void instantiate_exit(std::uint64_t exec, std::uint64_t graph, const std::string& failure,
                        const profiler::instantiate_flags& flags,
                        std::optional<std::uint64_t> upload_stream) noexcept;
  void trim_enter(int device) noexcept;
  void trim_exit(int device) noexcept;
  void exec_destroy(std::uint64_t exec) noexcept;
  /// cuGraphExecDestroy returned: where executable-graph state was outstanding, what the
  /// destroy gave back (the device's memory in use read around it).
  void exec_destroy_exit(bool ok) noexcept;
  void graph_destroy(std::uint64_t graph) noexcept;
  /// cuGraphExecUpdate begins on `exec`: the counters are read before it where the recording
  /// tracks `exec`.
  void exec_update_enter(std::uint64_t exec) noexcept;
  /// cuGraphExecUpdate of `exec` with graph `graph` returned (`failure` as for launches): where
  /// it succeeded, `graph` is read, and `exec`'s record takes its memory nodes and its name; an
  /// executable graph without memory nodes is counted (recorder::without_memory_nodes_calls).
  void exec_update_exit(std::uint64_t exec, std::uint64_t graph, const std::string& failure) noexcept;
  /// A call that set the parameters of one node of `exec` succeeded (cuGraphExec*SetParams,
  /// cuGraphNodeSetEnabled): counted on its record, or as a call on a graph without memory nodes.
  void node_params_set(std::uint64_t exec) noexcept;

  // Captures, and memory the capturing thread takes meanwhile (a private pool growing).
  void capture_begin(std::uint64_t stream) noexcept;
  void capture_began(std::uint64_t stream, bool ok) noexcept;
  void capture_end(std::uint64_t stream, std::uint64_t graph) noexcept;
  /// cuMemAlloc / cuMemCreate returned `handle` (an address or an allocation handle).
  void device_alloc(std::uint64_t handle, std::uint64_t bytes, std::optional<int> device) noexcept;
  /// cuMemFree (no stream) or cuMemFreeAsync of `address`.
  void device_free(std::uint64_t address, std::optional<std::uint64_t> stream) noexcept;
  void release(std::uint64_t handle) noexcept;
  /// cuStreamCreate(WithPriority) begins and returns: a stream made on a capturing thread takes
  /// device memory of the driver's (2 MiB on an H200) that is the capture's.
  void stream_create_enter() noexcept;
  void stream_create_exit(bool ok) noexcept;

  // Completions the program saw (recorder_completions.cpp).
  void device_synchronized() noexcept;
  /// A stream synchronize, or a stream query that reported idle.
  void stream_synchronized(std::uint64_t stream) noexcept;
  void event_recorded(std::uint64_t event, std::uint64_t stream) noexcept;
  /// An event synchronize, or an event query that reported done.
  void event_completed(std::uint64_t event) noexcept;
  void event_destroyed(std::uint64_t event) noexcept;
  /// A synchronous copy returned: `to_host` whether its destination is host memory (a copy of
  /// unknown direction asks the driver when it matters), `per_thread` from a per-thread-stream
  /// call.
  void copied(std::uint64_t destination, std::optional<bool> to_host, bool per_thread) noexcept;

  // NVTX ranges of the calling thread, and marks: a mark whose message starts with "gmem:" is
  // the Python companion speaking (session_companion.cpp).
  void nvtx_push(const char* message) noexcept;
  void nvtx_pop() noexcept;
  void nvtx_mark(const char* message) noexcept;
  /// The companion's word of every capture, said directly with its fields (the exported
  /// gmem_record_next_capture: no JSON made or parsed in the program's capture): what
  /// "gmem:capture" says, with the pool PyTorch made for the thread's capture before it
  /// ("" where none). A device below 0 is the capturing thread's current device, read by the
  /// library where the capture begins.
  void companion_next_capture(const char* previous_pool, const char* pool, int device, const char* site,
                              const char* label) noexcept;
  /// The process's device memory before its first allocation: read once, at the first call that
  /// has a context (cheap after that: one atomic load).
  void first_reading() noexcept;
  /// A context was made (cuDevicePrimaryCtxRetain, cuCtxCreate): its device's memory, read now,
  /// is the device's first reading, before the program allocates there by any call (a
  /// cudaMallocAsync pool's allocations pass no call the library watches).
  void context_made(std::uint64_t context) noexcept;

  // Writing the report.
  /// At exit: the report, analysed. Never waits on a lock this thread holds (exit() called
  /// from a signal handler that interrupted a callback) and at most `wait_s` for another
  /// thread's; false (and `why`) when it could not write. `note`, where given, is a line of this
  /// report's notes (why it was written where it was). It may be written again later: each
  /// report replaces the one before.
  bool write_at_exit(std::string* why = nullptr, double wait_s = 2.0, const std::string& note = "") noexcept;
  /// On a fatal signal whose default action follows: a partial report with skeletons only (no
  /// analysis, no pool model: bounded by the graphs' size), waiting `wait_s` at most for the
  /// lock. False when it could not write.
  bool write_on_signal(int signal, const char* signal_name, double wait_s = 2.0) noexcept;

  recording_info& info() noexcept { return info_; }
  /// The report's environment: the tool's version, commit, command line and date, set before the
  /// first callback; the device's description is added at the first instantiation.
  profiler::environment& environment() noexcept { return env_; }
  [[nodiscard]] const recorder& rec() const noexcept { return rec_; }
  [[nodiscard]] const std::string& out_path() const noexcept { return out_path_; }
  /// Each report written is followed by its summary, the lines `gmemprof record` prints about it
  /// once it is renamed `final_path`, at OUT_PATH.summary (write_summary): gmemprof need not read
  /// the report again. Empty (the default): no summary.
  void summarize_as(std::string final_path) { summary_as_ = std::move(final_path); }
  [[nodiscard]] bool written() const noexcept { return written_; }
  /// What the last report written took to make, part by part (zeros before one is written).
  [[nodiscard]] const end_times& end() const noexcept { return end_; }
  /// A child of fork(): records nothing and writes nothing (the parent's report is the
  /// parent's).
  void forked() noexcept { forked_ = true; }
  [[nodiscard]] bool is_forked() const noexcept { return forked_; }
  /// Adds `us` microseconds (and one call) to `part` of what recording costs the program.
  void charge(cost_part part, double us) noexcept;
  /// What recording cost so far: the parts with calls, in their order, and the Python
  /// companion's own time where it said it.
  [[nodiscard]] std::vector<profiler::record_cost> cost() const;

 private:
  struct lock;  // the session's lock, marked as held by this thread while held
  /// The stream's label, its blocking flag read once it can be (the caller holds the lock): not
  /// while the stream is being captured, but at its first call after.
  std::uint64_t label_of(std::uint64_t stream);
  void window_enter() noexcept;
  bool window_exit() noexcept;
  /// The driver's reading of the device memory in use, begun (driver_api::start_memory_reading)
  /// and answered (finish_memory_reading, else memory_used there); reads_memory() says whether
  /// the driver gives readings at all. close_reading() answers one a handler began and left
  /// early (an exception): the helper is not kept spinning for it.
  [[nodiscard]] bool reads_memory() const noexcept;
  void start_reading() noexcept;
  bool finish_reading(int& device, std::uint64_t& used) noexcept;
  void close_reading() noexcept;
  void read_other_devices_before(std::uint64_t exec, int primary);
  void record_other_devices(std::uint64_t exec, int primary, double t_us);
  void describe(int device);
  bool write(bool partial, const std::string& reason, bool analyse, std::string* why,
             const std::string& note = "") noexcept;
  void note_completions() noexcept { completions_matter_.store(rec_.awaiting_completion(), std::memory_order_relaxed); }

  driver_api driver_;
  std::mutex mutex_;
  recorder rec_;
  recording_info info_;
  std::string out_path_;
  std::string summary_as_;
  int device_filter_ = -1;
  bool have_env_ = false;
  profiler::environment env_;
  std::uint64_t granularity_ = 0;
  bool written_ = false;
  end_times end_;
  /// The report written last, what was read back of it, and their JSON trees.
  profiler::kept_trees kept_;
  std::atomic<bool> forked_{false};
  /// Windows of graph calls (launches, uploads, instantiations of graphs with memory nodes,
  /// trims) across threads: a call whose counter window another such call overlapped reads the
  /// device-wide counters with the other's mapping in them, so it is marked concurrent and its
  /// growth split by the pool model (profiler/pool_analysis.hpp), never given to one graph by
  /// guess.
  std::atomic<int> calls_in_flight_{0};
  std::atomic<std::uint64_t> calls_started_{0};
  std::atomic<bool> have_first_reading_{false};
  /// Captures and named warm-ups under way on any thread: an allocation another thread makes
  /// meanwhile (PyTorch's autograd thread runs a captured backward) is theirs when there is one.
  std::atomic<int> open_contexts_{0};
  struct open_context {
    bool capture = false;
    std::uint64_t stream = 0;  ///< a capture's stream
    std::string pool;          ///< a warm-up's pool
    int device = 0;
  };
  std::map<const void*, open_context> open_;  ///< by thread (its state), under the lock
  void open(const open_context& c) noexcept;
  void close() noexcept;
  void read_memory() noexcept;  // the caller holds the lock
  /// The companion's capture words, however said (session_companion.cpp).
  void told_capture(detail::thread_state& t, std::string pool, int device, std::string site, std::string label,
                    std::string previous_pool);
  void told_captured(const detail::thread_state& t, const std::string& pool, int device);  // holds the lock
  /// The device a capture word names; below 0, the calling thread's current device.
  int told_device(int device) const { return device >= 0 ? device : driver_.current_device(); }
  /// What recording costs, by part: calls and nanoseconds (relaxed atomics: no lock).
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(cost_part::count)> cost_calls_{};
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(cost_part::count)> cost_ns_{};
  /// A Python program's native stack at instantiation is the interpreter's, the same for every
  /// graph of a Python site: taken at the site's first instantiation, kept here by the site the
  /// companion named (at most 4096 sites), and given to the site's later graphs (a stack walk
  /// through the interpreter took 16 to 28 us of each of 2000 captures on an H100 host).
  std::mutex site_stacks_mutex_;
  std::map<std::string, stack_ref> site_stacks_;
  stack_ref stack_of(const std::string& python_site);
  /// The Python companion's time in its wrappers, as it said at the program's end.
  std::uint64_t companion_calls_ = 0;
  double companion_us_ = 0;
  struct timed;  // charges a part the time from its construction to its destruction
  /// Whether a completion can change anything (tracked work not yet known complete): event
  /// calls, queries and copies skip the lock when not.
  std::atomic<bool> completions_matter_{false};
};

}  // namespace gmem::record
