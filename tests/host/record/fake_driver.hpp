#pragma once
// A fake driver behind a recording session (record/session.hpp): graphs the test defines, the
// four counters of each device as the test sets them, a clock the test moves, streams' blocking
// flags. `program` drives the session as the injected library would for each driver call, so a
// test writes a program's trace call by call (and on several threads).

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/report_io.hpp"
#include "probe_cases.hpp"
#include "record/session.hpp"

namespace gmem::record::test {

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GMEM_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GMEM_TEST_SANITIZED 1
#endif

/// A wall-time bound of `seconds` for an uninstrumented build; twenty times that under ASan or
/// TSan, which slowed the recorder's exit 20 to 30 times on the 2-core CI machine: the bound still
/// catches work that grows with every graph ever seen (seconds to minutes), not the sanitizer.
inline double time_bound(double seconds) {
#ifdef GMEM_TEST_SANITIZED
  return 20 * seconds;
#else
  return seconds;
#endif
}

struct fake_gpu {
  std::mutex mutex;  // the fake's state, for tests that call from several threads
  std::map<int, counters> devices;
  std::map<std::uint64_t, profiler::graph_model> graphs;
  std::set<std::uint64_t> refused;  ///< graphs whose read the driver refuses
  std::atomic<double> clock_us{0};
  std::atomic<std::uint64_t> clock_reads{0};  ///< the session's reads of the clock
  int device = 0;
  std::map<std::uint64_t, bool> blocking;
  std::set<std::uint64_t> under_capture;              ///< streams whose flags the driver will not give now
  std::map<std::uint64_t, int> flag_queries;          ///< streams' flags asked, by stream
  std::vector<std::string> stack{"program!main+0x10"};
  std::string caller;  ///< the library whose call this is (driver_api::calling_object)
  std::atomic<std::uint64_t> used{0};  ///< device memory in use (cuMemGetInfo: total - free)
  bool context = true;                 ///< a context is current (memory_used answers)
  /// What the driver's answers take on the clock: a graph's read, a call stack, a cuMemGetInfo
  /// (what recording costs the program is charged by part from the session's clock).
  std::atomic<double> read_graph_us{0}, call_stack_us{0}, memory_used_us{0};
  /// Graph reads and call stacks made while the calling thread's reading of the memory in use
  /// was under way (started, not yet finished: the real driver's helper thread reads meanwhile).
  std::atomic<int> graph_reads_while_reading{0}, stacks_while_reading{0};
  /// Called once inside read_graph, on the reading thread, outside the fake's lock.
  std::function<void()> inside_graph_read;
  /// Called once inside stream_blocking, which the session calls with its lock held (a hook for
  /// re-entrancy tests).
  std::function<void()> inside_lock;
};

inline fake_gpu*& current_gpu() {
  static fake_gpu* gpu = nullptr;
  return gpu;
}

/// The calling thread's reading of the memory in use, taken when started (as the real one is,
/// on the helper or at once) and answered when finished.
struct fake_reading {
  bool under_way = false, answered = false;
  int device = 0;
  std::uint64_t used = 0;
};

inline fake_reading& this_threads_reading() {
  thread_local fake_reading r;
  return r;
}

inline driver_api fake_driver() {
  driver_api d;
  d.read_counters = [](int device) -> std::optional<counters> {
    std::lock_guard<std::mutex> l(current_gpu()->mutex);
    return current_gpu()->devices[device];
  };
  d.read_graph = [](std::uint64_t graph, profiler::graph_model& m, bool& has_alloc) {
    fake_gpu& g = *current_gpu();
    if (this_threads_reading().under_way) ++g.graph_reads_while_reading;
    if (g.inside_graph_read) {
      const std::function<void()> once = std::move(g.inside_graph_read);
      g.inside_graph_read = nullptr;
      once();
    }
    std::lock_guard<std::mutex> l(g.mutex);
    g.clock_us = g.clock_us.load() + g.read_graph_us.load();
    if (g.refused.count(graph) || !g.graphs.count(graph)) return false;
    m = g.graphs.at(graph);
    for (const auto& n : profiler::flatten(m).nodes) has_alloc = has_alloc || n.kind == profiler::node_kind::mem_alloc;
    return true;
  };
  d.current_device = [] { return current_gpu()->device; };
  d.stream_blocking = [](std::uint64_t stream) {
    if (current_gpu()->inside_lock) {
      const std::function<void()> once = std::move(current_gpu()->inside_lock);
      current_gpu()->inside_lock = nullptr;
      once();
    }
    std::lock_guard<std::mutex> l(current_gpu()->mutex);
    ++current_gpu()->flag_queries[stream];
    if (current_gpu()->under_capture.count(stream)) return std::optional<bool>();  // as the driver: not now
    const auto it = current_gpu()->blocking.find(stream);
    return std::optional<bool>(it != current_gpu()->blocking.end() && it->second);
  };
  d.call_stack = [] {
    if (this_threads_reading().under_way) ++current_gpu()->stacks_while_reading;
    std::lock_guard<std::mutex> l(current_gpu()->mutex);
    current_gpu()->clock_us = current_gpu()->clock_us.load() + current_gpu()->call_stack_us.load();
    return current_gpu()->stack;
  };
  d.calling_object = [] {
    std::lock_guard<std::mutex> l(current_gpu()->mutex);
    return current_gpu()->caller;
  };
  d.now_us = [] {
    ++current_gpu()->clock_reads;
    return current_gpu()->clock_us.load();
  };
  d.describe = [](int device, profiler::environment& env, std::uint64_t& granularity) {
    env.device_name = "Fake H100";
    env.device_index = device;
    env.granularity_bytes = profiler::probe::granule;
    granularity = profiler::probe::granule;
    return true;
  };
  d.is_host_pointer = [](std::uint64_t address) { return address >= (1ull << 47); };
  d.memory_used = [](int& device, std::uint64_t& used) {
    if (!current_gpu()->context) return false;
    current_gpu()->clock_us = current_gpu()->clock_us.load() + current_gpu()->memory_used_us.load();
    device = current_gpu()->device;
    used = current_gpu()->used.load();
    return true;
  };
  d.start_memory_reading = [] {
    fake_reading& r = this_threads_reading();
    r = fake_reading{};
    r.under_way = true;
    r.answered = current_gpu()->context;
    if (!r.answered) return;
    current_gpu()->clock_us = current_gpu()->clock_us.load() + current_gpu()->memory_used_us.load();
    r.device = current_gpu()->device;
    r.used = current_gpu()->used.load();
  };
  d.finish_memory_reading = [](int& device, std::uint64_t& used) {
    fake_reading& r = this_threads_reading();
    const bool answered = r.under_way && r.answered;
    r.under_way = false;
    device = r.device;
    used = r.used;
    return answered;
  };
  d.context_memory_used = [](std::uint64_t context, int& device, std::uint64_t& used) {
    if (context == 0) return false;  // a just-made context answers, current or not
    device = current_gpu()->device;
    used = current_gpu()->used.load();
    return true;
  };
  return d;
}

/// A session over a fake GPU, and the calls a program makes, as the injected library reports
/// them. Counters change inside a call (between its enter and exit), as the driver's do.
struct program {
  fake_gpu gpu;
  std::filesystem::path dir;
  std::string out;
  session s;

  static std::string temp_report(std::filesystem::path& dir) {
    dir = std::filesystem::temp_directory_path() /
          ("gmem-session-" + std::to_string(reinterpret_cast<std::uintptr_t>(&dir)) + "-" +
           std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
    std::filesystem::create_directories(dir);
    return (dir / "record.json").string();
  }
  explicit program(name_source names = name_source::stream)
      : out(temp_report(dir)), s((current_gpu() = &gpu, fake_driver()), names, out) {}
  ~program() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    current_gpu() = nullptr;
  }
  program(const program&) = delete;
  program& operator=(const program&) = delete;

  void tick(double us) { gpu.clock_us = gpu.clock_us.load() + us; }
  /// The process takes `bytes` more device memory (cuMemGetInfo sees it).
  void use(std::int64_t bytes) { gpu.used = static_cast<std::uint64_t>(static_cast<std::int64_t>(gpu.used.load()) + bytes); }
  void grow(std::uint64_t bytes, int device = 0) {
    std::lock_guard<std::mutex> l(gpu.mutex);
    counters& c = gpu.devices[device];
    c.reserved_current += bytes;
    c.reserved_high = std::max(c.reserved_high, c.reserved_current);
    c.used_current += bytes;
    c.used_high = std::max(c.used_high, c.used_current);
  }
  void set_reserved(std::uint64_t bytes, int device = 0) {
    std::lock_guard<std::mutex> l(gpu.mutex);
    counters& c = gpu.devices[device];
    c.reserved_current = c.used_current = bytes;
    c.reserved_high = std::max(c.reserved_high, bytes);
    c.used_high = std::max(c.used_high, bytes);
  }

  /// Captures `model` into `graph` on `stream`; `taken`: memory the capturing thread allocates
  /// meanwhile (a native allocator's private pool).
  void capture(std::uint64_t stream, std::uint64_t graph, const profiler::graph_model& model,
               const std::vector<std::uint64_t>& taken = {}) {
    s.capture_begin(stream);
    s.capture_began(stream, true);
    std::uint64_t handle = graph << 16;
    for (std::uint64_t bytes : taken) s.device_alloc(handle++, bytes, 0);
    {
      std::lock_guard<std::mutex> l(gpu.mutex);
      gpu.graphs[graph] = model;
    }
    s.capture_end(stream, graph);
  }
  void instantiate(std::uint64_t exec, std::uint64_t graph, bool auto_free = false) {
    s.instantiate_enter(graph);
    tick(40);
    profiler::instantiate_flags f;
    f.auto_free_on_launch = auto_free;
    s.instantiate_exit(exec, graph, "", f, std::nullopt);
  }
  /// A graph made by the program's own calls (not captured), as the driver reads it back.
  void define(std::uint64_t graph, const profiler::graph_model& model) {
    std::lock_guard<std::mutex> l(gpu.mutex);
    gpu.graphs[graph] = model;
  }
  /// cuGraphExecUpdate of `exec` with `graph`; `failure`: the driver refused it with this result.
  void update(std::uint64_t exec, std::uint64_t graph, const std::string& failure = "") {
    s.exec_update_enter(exec);
    tick(20);
    s.exec_update_exit(exec, graph, failure);
    tick(1);
  }
  /// A launch taking `host_us`, during which the pool grows by `grows`.
  void launch(std::uint64_t exec, std::uint64_t stream, double host_us = 4, std::uint64_t grows = 0) {
    s.launch_enter(exec, stream);
    tick(host_us);
    if (grows) grow(grows);
    s.launch_exit(exec, "");
    tick(1);
  }
  void destroy(std::uint64_t exec, std::uint64_t graph = 0) {
    s.exec_destroy(exec);
    if (graph) s.graph_destroy(graph);
  }
  void trim(std::uint64_t keep_bytes) {
    s.trim_enter(0);
    tick(100);
    set_reserved(keep_bytes);
    s.trim_exit(0);
  }
  /// Writes the report at exit and reads it back as gmemprof does.
  profiler::report finish() {
    std::string why;
    EXPECT_TRUE(s.write_at_exit(&why)) << why;
    return profiler::read_report(out);
  }
};

/// A graph of the probe's spec ("g=w512,o1": 512 MiB of working memory, a 1 MiB output left
/// allocated; probe_cases.hpp) as the driver reads it back, its allocations from `base`.
inline profiler::graph_model graph_of(const std::string& spec, std::uint64_t base) {
  return profiler::probe::model_of_spec(spec, base);
}

}  // namespace gmem::record::test
