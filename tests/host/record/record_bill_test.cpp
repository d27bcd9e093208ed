// The bill against a fake driver: what CUDA graphs cost a device by kind. The
// framework's graph pools as the Python companion names them (warm-up runs and captures into a
// pool, PyTorch's own figure at the program's end), the executable graphs' state (the device
// memory in use around each instantiation and upload, less a pool's growth), the memory-node
// pool, and the process's change, the rest of it not graph memory; a kind the recording did not
// see is absent, never a zero; the graph is named where the program captured it.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "fake_driver.hpp"
#include "views/bill_view.hpp"
#include "views/show.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gmem/profiler/size_text.hpp"

namespace gmem::record::test {
namespace {

using profiler::probe::granule;
using profiler::probe::MiB;

profiler::graph_model kernels() {
  profiler::graph_model m;
  m.nodes = {profiler::model_node{profiler::node_kind::kernel, 0, 0, 0, {}, std::nullopt}};
  return m;
}

// A capture as PyTorch makes it with the companion: the companion says its site and pool, the
// capture begins, the allocator takes segments (the process's memory grows), the capture ends.
// A capture on `stream` into `graph` whose allocator takes `segments` (handles from `handle` on),
// once the companion's word for it was said.
void capture_after_word(program& p, std::uint64_t stream, std::uint64_t graph, std::uint64_t handle,
                        const std::vector<std::uint64_t>& segments) {
  p.s.capture_begin(stream);
  p.s.capture_began(stream, true);
  for (std::uint64_t b : segments) {
    p.use(static_cast<std::int64_t>(b));
    p.s.device_alloc(handle++, b, 0);
  }
  {
    std::lock_guard<std::mutex> l(p.gpu.mutex);
    p.gpu.graphs[graph] = kernels();
  }
  p.s.capture_end(stream, graph);
}

void native_capture(program& p, std::uint64_t graph, const std::string& pool, const std::string& site,
                    std::vector<std::uint64_t> segments, const std::string& label = "") {
  p.s.nvtx_mark(("gmem:capture {\"pool\":\"" + pool + "\",\"device\":0,\"site\":\"" + site + "\",\"label\":\"" + label + "\"}").c_str());
  capture_after_word(p, 0xA, graph, graph << 20, segments);
}

// A view's text with its wrapping undone: runs of spaces and line breaks as one space.
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (space && !out.empty() && out.back() == ' ') continue;
    out += space ? ' ' : c;
  }
  return out;
}

// Two graphs captured on stream 0xA, 0x10 and 0x11, for tests of their instantiations' readings.
void capture_two(program& p) {
  p.capture(0xA, 0x10, graph_of("g=w2", 1ull << 40));
  p.capture(0xA, 0x11, graph_of("g=w2", 2ull << 40));
}

// An instantiation whose executable graph takes `state` bytes of the driver's own memory.
void instantiate(program& p, std::uint64_t exec, std::uint64_t graph, std::uint64_t state) {
  p.s.instantiate_enter(graph);
  p.use(static_cast<std::int64_t>(state));
  p.tick(40);
  p.s.instantiate_exit(exec, graph, "", {}, std::nullopt);
}

TEST(RecordBill, TorchCompileStyleWarmUpsCapturesAndStateAreEachTheirOwnKindAndSumToTheProcessChange) {
  program p(name_source::nvtx);
  p.gpu.used = 600 * MiB;  // the context, before the program's first allocation
  p.s.first_reading();
  p.use(300 * MiB);  // the program's weights: not graph memory
  // Graph trees: warm the shape up inside the pool, then capture it.
  p.s.nvtx_mark("gmem:warmup-begin {\"pool\":\"(0, 1)\",\"device\":0}");
  p.use(540 * MiB);
  p.s.device_alloc(0x9000, 540 * MiB, 0);
  p.s.nvtx_mark("gmem:warmup-end {}");
  native_capture(p, 0x10, "(0, 1)", "model.py:42 in forward", {250 * MiB}, "cudagraph tree node 0 [[16, 64]]");
  instantiate(p, 0x100, 0x10, 2 * MiB);
  p.launch(0x100, 0xA);
  native_capture(p, 0x11, "(0, 1)", "model.py:42 in forward", {}, "cudagraph tree node 1 [[8, 64]]");
  instantiate(p, 0x101, 0x11, 0);  // the driver's state came from the piece the first took
  p.s.nvtx_mark("gmem:end {\"why\":\"the program's end\",\"pools\":[{\"pool\":\"(0, 1)\",\"device\":0,\"bytes\":830472192}]}");
  // Teardown after the end: the pool given back, the process's memory down; the bill stays.
  p.s.device_free(0x9000, std::nullopt);
  p.use(-540 * static_cast<std::int64_t>(MiB));
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->bills.size(), 1u);
  const profiler::graph_bill& b = r.recorded->bills[0];
  EXPECT_EQ(b.end, "the program's end");
  EXPECT_FALSE(b.node_pool_seen);
  ASSERT_TRUE(b.framework_seen);
  EXPECT_TRUE(b.framework_named);
  EXPECT_EQ(b.framework_warmup_bytes, 540 * MiB);
  EXPECT_EQ(b.framework_capture_bytes, 250 * MiB);
  EXPECT_EQ(b.framework_retained_bytes, 790 * MiB);
  EXPECT_EQ(b.framework_peak_bytes, 790 * MiB);
  EXPECT_EQ(b.framework_snapshot_bytes, 830472192);
  ASSERT_TRUE(b.exec_state_measured);
  EXPECT_EQ(b.exec_state_bytes, 2 * MiB);
  EXPECT_EQ(b.exec_state_instantiations, 2u);
  ASSERT_TRUE(b.process_measured);
  EXPECT_EQ(b.process_delta_bytes, static_cast<std::int64_t>((300 + 540 + 250 + 2) * MiB));
  EXPECT_EQ(b.not_graph_bytes, static_cast<std::int64_t>(300 * MiB));
  ASSERT_EQ(r.recorded->framework_pools.size(), 1u);
  const profiler::framework_pool& pool = r.recorded->framework_pools[0];
  EXPECT_EQ(pool.id, "(0, 1)");
  EXPECT_EQ(pool.graphs.size(), 2u);
  // Named where the program captured it, with the framework's label; identities follow.
  ASSERT_EQ(r.recorded->graphs.size(), 2u);
  EXPECT_EQ(r.recorded->graphs[0].name, "model.py:42 in forward (cudagraph tree node 0 [[16, 64]])");
  EXPECT_EQ(r.recorded->graphs[0].identity, "python:model.py:42 in forward (cudagraph tree node 0 [[16, 64]])");
  EXPECT_EQ(r.recorded->graphs[0].exec_state_bytes, static_cast<std::int64_t>(2 * MiB));
  // Every line speaks of a kind in its own terms: no memory-node pool line, no zeros for it.
  const std::string shown = profiler::format_report(r);
  EXPECT_NE(shown.find("framework graph pools    790 MiB retained (the framework's own figure: 792 MiB)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("executable-graph state   2.00 MiB for 2 instantiation(s)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("not graph memory         +300 MiB"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("memory-node pool"), std::string::npos) << shown;
  // Everything shown (--all): no memory-node figures for graphs whose memory is the framework's,
  // no section of the device's memory-node pool that no graph used.
  profiler::show_options all;
  all.all = true;
  const std::string every = profiler::format_report(r, all);
  EXPECT_EQ(every.find("memory: requested"), std::string::npos) << every;
  EXPECT_EQ(every.find("ratios: va reuse"), std::string::npos) << every;
  EXPECT_EQ(every.find("high watermark  0 B"), std::string::npos) << every;
  EXPECT_EQ(every.find("\npool of device 0\n"), std::string::npos) << every;
  EXPECT_NE(every.find("(0, 1): warm-up 540 MiB, captures 250 MiB, retained 790 MiB"), std::string::npos) << every;
}

// torch.compile(mode="reduce-overhead"): the warm-up takes the pool's memory, the capture takes
// nothing. The capture the companion named is still the pool's graph.
TEST(RecordBill, ANamedCaptureThatTookNothingIsStillItsPoolsGraph) {
  program p(name_source::nvtx);
  p.s.first_reading();
  p.s.nvtx_mark("gmem:warmup-begin {\"pool\":\"(0, 1)\",\"device\":0}");
  p.use(592 * MiB);
  p.s.device_alloc(0x9000, 592 * MiB, 0);
  p.s.nvtx_mark("gmem:warmup-end {}");
  native_capture(p, 0x10, "(0, 1)", "model.py:9 in run", {}, "cudagraph tree node 0");
  instantiate(p, 0x100, 0x10, 2 * MiB);
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->graphs.size(), 1u);
  EXPECT_EQ(r.recorded->graphs[0].kind, "private_pool");
  EXPECT_EQ(r.recorded->graphs[0].capture_pool_growth_bytes, 0u);
  EXPECT_EQ(r.recorded->graphs_without_memory_nodes, 0u);
  const profiler::graph_bill& b = r.recorded->bills.at(0);
  EXPECT_EQ(b.framework_warmup_bytes, 592 * MiB);
  EXPECT_EQ(b.framework_retained_bytes, 592 * MiB);
  EXPECT_EQ(r.recorded->framework_pools.at(0).graphs, (std::vector<std::string>{"model.py:9 in run (cudagraph tree node 0)"}));
}

// torch.cuda.graph(g) with no pool: PyTorch makes the pool inside capture_begin, and the
// companion names it after the capture ends; a second capture into that pool is the same pool.
TEST(RecordBill, APoolPyTorchMadeIsNamedAfterItsCaptureAndTheNextCaptureIntoItIsThatPool) {
  program p(name_source::nvtx);
  native_capture(p, 0x10, "", "a.py:3 in f", {64 * MiB});
  p.s.nvtx_mark("gmem:captured {\"pool\":\"(0, 5)\",\"device\":0}");
  instantiate(p, 0x100, 0x10, 0);
  native_capture(p, 0x11, "(0, 5)", "a.py:9 in g", {32 * MiB});
  instantiate(p, 0x101, 0x11, 0);
  native_capture(p, 0x12, "", "a.py:12 in h", {2 * MiB});  // another new pool, then merged by name
  p.s.nvtx_mark("gmem:captured {\"pool\":\"(0, 5)\",\"device\":0}");
  instantiate(p, 0x102, 0x12, 0);
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->framework_pools.size(), 1u);
  const profiler::framework_pool& pool = r.recorded->framework_pools[0];
  EXPECT_EQ(pool.id, "(0, 5)");
  EXPECT_EQ(pool.capture_bytes, 98 * MiB);
  EXPECT_EQ(pool.retained_bytes, 98 * MiB);
  EXPECT_EQ(pool.graphs, (std::vector<std::string>{"a.py:3 in f", "a.py:9 in g", "a.py:12 in h"}));
  EXPECT_EQ(r.recorded->bills.at(0).framework_capture_bytes, 98 * MiB);
}

// The companion's capture word said with its fields (gmem_record_next_capture, no JSON) gives
// the recording what the JSON word gives: same pools, same names.
TEST(RecordBill, TheCaptureWordSaidWithItsFieldsRecordsWhatTheJsonWordRecords) {
  const auto run = [](bool typed) {
    program p(name_source::nvtx);
    const auto capture = [&](std::uint64_t graph, const char* previous, const char* pool, const char* site,
                             std::uint64_t bytes) {
      if (typed) {
        p.s.companion_next_capture(previous, pool, 0, site, "cudagraph tree node 7");
      } else {
        p.s.nvtx_mark(("gmem:capture {\"pool\":\"" + std::string(pool) + "\",\"device\":0,\"site\":\"" + site +
                       "\",\"label\":\"cudagraph tree node 7\",\"previous_pool\":\"" + previous + "\"}")
                          .c_str());
      }
      capture_after_word(p, 0xA, graph, graph << 20, {bytes});
    };
    capture(0x10, "", "", "a.py:3 in f", 64 * MiB);
    instantiate(p, 0x100, 0x10, 0);
    p.s.graph_destroy(0x10);  // as PyTorch's capture_end: instantiated, then destroyed
    capture(0x11, "(0, 5)", "(0, 5)", "a.py:9 in g", 32 * MiB);
    instantiate(p, 0x101, 0x11, 0);
    return p.finish();
  };
  const profiler::report json_words = run(false), typed_words = run(true);
  for (const profiler::report* r : {&json_words, &typed_words}) {
    ASSERT_EQ(r->recorded->framework_pools.size(), 1u);
    EXPECT_EQ(r->recorded->framework_pools[0].id, "(0, 5)");
    EXPECT_EQ(r->recorded->framework_pools[0].capture_bytes, 96 * MiB);
    EXPECT_EQ(r->recorded->framework_pools[0].graphs,
              (std::vector<std::string>{"a.py:3 in f (cudagraph tree node 7)", "a.py:9 in g (cudagraph tree node 7)"}));
  }
  ASSERT_EQ(typed_words.recorded->graphs.size(), json_words.recorded->graphs.size());
  for (std::size_t i = 0; i < json_words.recorded->graphs.size(); ++i) {
    EXPECT_EQ(typed_words.recorded->graphs[i].name, json_words.recorded->graphs[i].name);
  }
}

// PyTorch's capture_end instantiates the graph and destroys it before the companion could speak:
// the pool PyTorch made for a capture is told with the thread's next capture word, and the last
// capture's at the end, and each names that capture's pool though its graph is gone. Pools made
// for captures on one thread stay apart; PyTorch's figures at the end are each pool's.
TEST(RecordBill, PoolsPyTorchMadeAreNamedAtTheNextCaptureAndAtTheEndOnceTheirGraphsAreGone) {
  program p(name_source::nvtx);
  const auto capture = [&](std::uint64_t graph, const char* previous, std::uint64_t bytes) {
    p.s.companion_next_capture(previous, "", -1, "serve.py:7 in capture", "");
    capture_after_word(p, 0xA, graph, graph << 20, {bytes});
    instantiate(p, graph << 4, graph, 0);
    p.s.graph_destroy(graph);
  };
  capture(0x10, "", 64 * MiB);
  capture(0x11, "(0, 1)", 32 * MiB);
  capture(0x12, "(0, 2)", 16 * MiB);
  p.s.nvtx_mark("gmem:end {\"why\":\"the program's end\",\"previous_pool\":\"(0, 3)\",\"pools\":["
                "{\"pool\":\"(0, 1)\",\"device\":0,\"bytes\":67108864},"
                "{\"pool\":\"(0, 3)\",\"device\":0,\"bytes\":16777216}]}");
  const profiler::report r = p.finish();
  std::map<std::string, std::pair<std::uint64_t, std::int64_t>> pools;  // id: capture bytes, snapshot
  for (const profiler::framework_pool& f : r.recorded->framework_pools) pools[f.id] = {f.capture_bytes, f.snapshot_bytes};
  const std::map<std::string, std::pair<std::uint64_t, std::int64_t>> expected{
      {"(0, 1)", {64 * MiB, static_cast<std::int64_t>(64 * MiB)}},
      {"(0, 2)", {32 * MiB, -1}},
      {"(0, 3)", {16 * MiB, static_cast<std::int64_t>(16 * MiB)}}};
  EXPECT_EQ(pools, expected);
}

// The driver may give a destroyed graph's handle to the next graph another thread captures: the
// pool the companion names at this thread's next capture is this thread's last capture's, not the
// pool of the graph that holds the handle now.
TEST(RecordBill, APoolIsNamedForTheCaptureThatTookItThoughItsGraphHandleWasGivenAgain) {
  program p(name_source::nvtx);
  const auto capture = [&](std::uint64_t stream, std::uint64_t graph, std::uint64_t exec, const char* previous,
                           const char* pool, std::uint64_t bytes, bool destroy) {
    p.s.companion_next_capture(previous, pool, -1, "serve.py:7 in capture", "");
    capture_after_word(p, stream, graph, exec << 20, {bytes});
    instantiate(p, exec, graph, 0);
    if (destroy) p.s.graph_destroy(graph);
  };
  capture(0xA, 0x10, 0x100, "", "", 64 * MiB, true);  // PyTorch makes its pool, (0, 1)
  // The handle again, for a graph kept alive (keep_graph, or a C++ program's).
  std::thread([&] { capture(0xB, 0x10, 0x101, "", "(0, 9)", 32 * MiB, false); }).join();
  capture(0xA, 0x11, 0x102, "(0, 1)", "", 16 * MiB, true);
  const profiler::report r = p.finish();
  std::map<std::string, std::uint64_t> pools;  // id: capture bytes
  for (const profiler::framework_pool& f : r.recorded->framework_pools) {
    if (f.id == "(0, 1)" || f.id == "(0, 9)") pools[f.id] = f.capture_bytes;
  }
  EXPECT_EQ(pools, (std::map<std::string, std::uint64_t>{{"(0, 1)", 64 * MiB}, {"(0, 9)", 32 * MiB}}));
}

// The companion leaves the device to the library (device -1: no torch.cuda.current_device() in
// the program's capture): the capturing thread's current device, read where the capture begins
// and where its pool is named, is the pool's device, so PyTorch's figure for the pool on that
// device at the end is the pool's.
TEST(RecordBill, ACaptureWordWithoutADeviceIsTheCapturingThreadsDevice) {
  program p(name_source::nvtx);
  p.gpu.device = 1;
  p.s.companion_next_capture("", "", -1, "a.py:3 in f", "");
  p.s.capture_begin(0xA);
  p.s.capture_began(0xA, true);
  p.use(static_cast<std::int64_t>(64 * MiB));
  p.s.device_alloc(0x10 << 20, 64 * MiB, 1);
  {
    std::lock_guard<std::mutex> l(p.gpu.mutex);
    p.gpu.graphs[0x10] = kernels();
  }
  p.s.capture_end(0xA, 0x10);
  instantiate(p, 0x100, 0x10, 0);
  p.s.nvtx_mark("gmem:end {\"why\":\"the program's end\",\"previous_pool\":\"(1, 5)\","
                "\"pools\":[{\"pool\":\"(1, 5)\",\"device\":1,\"bytes\":67108864}]}");
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->framework_pools.size(), 1u);
  const profiler::framework_pool& pool = r.recorded->framework_pools[0];
  EXPECT_EQ(pool.id, "(1, 5)");
  EXPECT_EQ(pool.device, 1);
  EXPECT_EQ(pool.capture_bytes, 64 * MiB);
  EXPECT_EQ(pool.snapshot_bytes, static_cast<std::int64_t>(64 * MiB));
}

// The bill's process change starts when the device's context is made, before the program
// allocates anything: an allocator whose allocations pass no call the library watches
// (PyTorch's cudaMallocAsync backend: 1350 MiB on an H100 where the bill said 222 MiB when the
// first reading waited for the first watched call) is in it all the same.
TEST(RecordBill, TheProcessChangeStartsWhenTheContextIsMadeWhateverTheProgramAllocatesWith) {
  const auto run = [](bool context_made) {
    program p(name_source::nvtx);
    p.gpu.used = 500 * MiB;  // the context
    p.gpu.context = false;   // made, not yet current
    if (context_made) p.s.context_made(0xC0);
    p.gpu.context = true;
    p.use(1024 * MiB);  // the weights, through cudaMallocAsync: no call the library watches
    p.s.first_reading();  // the first watched call
    if (context_made) {
      p.use(64 * MiB);
      p.s.context_made(0xC1);  // retained again: not a new start
    } else {
      p.use(64 * MiB);
    }
    native_capture(p, 0x10, "", "a.py:3 in f", {32 * MiB});
    instantiate(p, 0x100, 0x10, 2 * MiB);
    return p.finish();
  };
  const profiler::graph_bill with = run(true).recorded->bills.at(0);
  EXPECT_EQ(with.process_delta_bytes, static_cast<std::int64_t>((1024 + 64 + 32 + 2) * MiB));
  EXPECT_EQ(with.not_graph_bytes, static_cast<std::int64_t>((1024 + 64) * MiB));
  // Without the context's reading the bill starts at the first watched call, after the weights.
  const profiler::graph_bill late = run(false).recorded->bills.at(0);
  EXPECT_EQ(late.process_delta_bytes, static_cast<std::int64_t>((64 + 32 + 2) * MiB));
}

// torch.compile's graphs: the companion names the program's line, the compiled module's method
// and the sizes a user knows; the framework's own words (the tree node, the generated code) come
// after a unit separator, kept for `show --all` and out of the name and the identity, so that two
// recordings whose tree nodes are numbered differently still pair their graphs.
TEST(RecordBill, ACapturesFrameworkDetailIsKeptOutOfItsNameAndIdentity) {
  const auto run = [](int node) {
    program p(name_source::nvtx);
    native_capture(p, 0x10, "(0, 1)", "gen.py:25 in main", {32 * MiB},
                   "LlamaForCausalLM.forward, batch 1, sequence 1\\u001fcudagraph tree node " + std::to_string(node) +
                       " [[1, 1]] from cabc.py:12 in call");
    instantiate(p, 0x100, 0x10, 0);
    return p.finish();
  };
  const profiler::report a = run(0), b = run(7);
  ASSERT_EQ(a.recorded->graphs.size(), 1u);
  const profiler::recorded_graph& g = a.recorded->graphs[0];
  EXPECT_EQ(g.name, "gen.py:25 in main (LlamaForCausalLM.forward, batch 1, sequence 1)");
  EXPECT_EQ(g.framework_label, "LlamaForCausalLM.forward, batch 1, sequence 1");
  EXPECT_EQ(g.framework_detail, "cudagraph tree node 0 [[1, 1]] from cabc.py:12 in call");
  EXPECT_EQ(g.identity, b.recorded->graphs.at(0).identity);
  EXPECT_NE(b.recorded->graphs.at(0).framework_detail, g.framework_detail);
  const profiler::report back = profiler::from_json_string(profiler::to_json_string(a), "back.json");
  EXPECT_EQ(back.recorded->graphs.at(0).framework_detail, g.framework_detail);
  // Shown where a graph's detail is: its name in the list, the framework's words under it.
  profiler::show_options all;
  all.all = true;
  const std::string every = profiler::format_report(a, all);
  EXPECT_NE(every.find("the framework's own words: cudagraph tree node 0"), std::string::npos) << every;
  EXPECT_EQ(profiler::format_report(a).find("cudagraph tree node"), std::string::npos);
}

// torch.compile's warm-up runs make a library's first handle and workspace on the warming-up
// thread (on an H100: 64 MiB and four small allocations at the first matmul of GPT-2's warm-up),
// and a collective captured for the first time makes its buffers on the capturing thread: they
// are allocated while the pool's thread is in the pool, but are not the pool's segments. At the
// end PyTorch's snapshot names the pool's segments by address: the rest is the libraries'.
TEST(RecordBill, WhatAWarmUpOrCaptureAllocatedOutsideThePoolsSegmentsIsTheLibrariesNotThePools) {
  const auto run = [](bool segments_told) {
    program p(name_source::nvtx);
    p.gpu.used = 500 * MiB;
    p.s.first_reading();
    const auto take = [&p](std::uint64_t address, std::uint64_t bytes, const char* caller = "libc10_cuda.so") {
      p.gpu.caller = caller;
      p.use(static_cast<std::int64_t>(bytes));
      p.s.device_alloc(address, bytes, std::nullopt);  // cuMemAlloc: the handle is the address
    };
    p.s.nvtx_mark("gmem:warmup-begin {\"pool\":\"(0, 1)\",\"device\":0}");
    take(0xA0000000, 100 * MiB);                      // the pool's segment
    take(0xB0000000, 64 * MiB, "libcublasLt.so.13");  // the library's workspace
    take(0xB8000000, 1024, "libcublas.so.13");        // and its handle
    take(0xC0000000, 200 * MiB);                      // the pool's segment: the pool's peak
    p.s.device_free(0xC0000000, std::nullopt);  // given back (an out-of-memory retry)
    p.use(-200 * static_cast<std::int64_t>(MiB));
    p.s.nvtx_mark("gmem:warmup-end {}");
    p.s.nvtx_mark("gmem:capture {\"pool\":\"(0, 1)\",\"device\":0,\"site\":\"m.py:9 in step\",\"label\":\"\"}");
    p.s.capture_begin(0xA);
    p.s.capture_began(0xA, true);
    take(0xD0000000, 50 * MiB);  // the pool's segment
    take(0xE0000000, 2 * MiB, "libnccl.so.2");  // the collective's buffer, after the pool's peak
    {
      std::lock_guard<std::mutex> l(p.gpu.mutex);
      p.gpu.graphs[0x10] = kernels();
    }
    p.s.capture_end(0xA, 0x10);
    instantiate(p, 0x100, 0x10, 0);
    const std::string segments = segments_told ? ",\"segments\":[" + std::to_string(0xD0000000) + "," +
                                                     std::to_string(0xA0000000) + "]" : "";
    p.s.nvtx_mark(("gmem:end {\"why\":\"the program's end\",\"pools\":[{\"pool\":\"(0, 1)\",\"device\":0,\"bytes\":" +
                   std::to_string(150 * MiB) + segments + "}]}").c_str());
    return p.finish();
  };
  const profiler::report told = run(true);
  const profiler::graph_bill& b = told.recorded->bills.at(0);
  EXPECT_EQ(b.framework_retained_bytes, 150 * MiB);  // PyTorch's figure, exactly
  EXPECT_EQ(b.framework_snapshot_bytes, static_cast<std::int64_t>(150 * MiB));
  EXPECT_EQ(b.framework_warmup_bytes, 300 * MiB);  // what the warm-up took, 200 MiB given back
  EXPECT_EQ(b.framework_capture_bytes, 50 * MiB);
  EXPECT_EQ(b.framework_peak_bytes, 300 * MiB);  // the workspace was alive at the peak: not the pool's
  EXPECT_EQ(b.library_bytes, 66 * MiB + 1024);
  EXPECT_EQ(b.library_allocations, 3u);
  EXPECT_EQ(b.not_graph_bytes, 0);  // every byte since the first reading is somebody's
  ASSERT_EQ(told.recorded->framework_pools.size(), 1u);
  EXPECT_EQ(told.recorded->framework_pools[0].retained_bytes, 150 * MiB);
  EXPECT_EQ(told.recorded->framework_pools[0].peak_bytes, 300 * MiB);
  ASSERT_EQ(told.recorded->graphs.size(), 1u);
  EXPECT_EQ(told.recorded->graphs[0].capture_pool_growth_bytes, 50 * MiB);
  // The section is written and read back.
  const profiler::report back = profiler::from_json_string(profiler::to_json_string(told), "back.json");
  EXPECT_EQ(back.recorded->bills.at(0).library_bytes, 66 * MiB + 1024);
  EXPECT_EQ(back.recorded->bills.at(0).library_allocations, 3u);
  const std::string shown = profiler::format_report(told);
  EXPECT_NE(shown.find("libraries at capture     66.0 MiB: cuBLAS 64.0 MiB (2 allocations), NCCL 2.00 MiB (1 allocation);"),
            std::string::npos) << shown;
  ASSERT_EQ(b.library_takers.size(), 2u);  // by library, most bytes first
  EXPECT_EQ(b.library_takers[0].library, "cuBLAS");
  EXPECT_EQ(b.library_takers[0].bytes, 64 * MiB + 1024);
  EXPECT_EQ(b.library_takers[1].library, "NCCL");
  EXPECT_EQ(b.library_takers[1].allocations, 1u);
  EXPECT_EQ(told.recorded->graphs[0].libraries_at_capture_bytes, 2 * MiB);  // the capture's, not the warm-up's
  ASSERT_EQ(back.recorded->bills.at(0).library_takers.size(), 2u);
  EXPECT_EQ(back.recorded->bills.at(0).library_takers[1].library, "NCCL");
  EXPECT_EQ(back.recorded->graphs.at(0).libraries_at_capture_bytes, 2 * MiB);
  EXPECT_NE(shown.find("graph memory in all      216 MiB"), std::string::npos) << shown;
  EXPECT_NE(shown.find("framework graph pools    150 MiB retained (the framework's own figure: 150 MiB)"),
            std::string::npos) << shown;
  // Without the segments' addresses (a companion that did not tell them, PyTorch's
  // cudaMallocAsync backend) nothing is taken out: the pools' figure is the bookkeeping's.
  const profiler::graph_bill untold = run(false).recorded->bills.at(0);
  EXPECT_EQ(untold.framework_retained_bytes, 216 * MiB + 1024);
  EXPECT_EQ(untold.library_allocations, 0u);
}

// An NCCL collective captured for the first time, as measured on two H200s: NCCL allocates its
// buffer on the capturing thread and makes a stream there, whose driver memory (2 MiB) no
// allocation call shows; PyTorch's snapshot after each capture names the pool's segments. The
// pool's figure after every capture equals the snapshot's, a later segment (taken after the
// first capture's list) is still the pool's, and everything else is NCCL's, on its graph.
TEST(RecordBill, ThePoolAfterEachCaptureIsTheFrameworksFigureAndACollectivesBuffersAndStreamAreNcclsAtThatCapture) {
  program p(name_source::nvtx);
  p.gpu.used = 500 * MiB;
  p.s.first_reading();
  const auto take = [&p](std::uint64_t address, std::uint64_t bytes, const char* caller) {
    p.gpu.caller = caller;
    p.use(static_cast<std::int64_t>(bytes));
    p.s.device_alloc(address, bytes, std::nullopt);
  };
  const auto captured = [&p](std::uint64_t bytes, const std::vector<std::uint64_t>& segments) {
    std::string list;
    for (std::uint64_t a : segments) list += (list.empty() ? "" : ",") + std::to_string(a);
    p.s.nvtx_mark(("gmem:captured {\"pool\":\"(1, 0)\",\"device\":0,\"bytes\":" + std::to_string(bytes) +
                   ",\"segments\":[" + list + "]}").c_str());
  };
  const auto graph = [&p](std::uint64_t g) {
    std::lock_guard<std::mutex> l(p.gpu.mutex);
    p.gpu.graphs[g] = kernels();
  };
  // The first capture: PyTorch makes the pool (no pool in the word), NCCL its buffer and stream.
  p.s.nvtx_mark("gmem:capture {\"pool\":\"\",\"device\":0,\"site\":\"tp.py:30 in step\",\"label\":\"\"}");
  p.s.capture_begin(0xA);
  p.s.capture_began(0xA, true);
  take(0xA0000000, 2 * MiB, "libc10_cuda.so");
  take(0xB0000000, 2 * MiB, "libnccl.so.2");
  p.gpu.caller = "libnccl.so.2";
  p.s.stream_create_enter();
  p.use(2 * static_cast<std::int64_t>(MiB));  // the driver's memory for the stream
  p.s.stream_create_exit(true);
  take(0xA0200000, 32 * MiB, "libc10_cuda.so");
  graph(0x10);
  p.s.capture_end(0xA, 0x10);
  instantiate(p, 0x100, 0x10, 0);
  p.s.graph_destroy(0x10);  // PyTorch's capture_end destroys the graph it instantiated
  captured(34 * MiB, {0xA0000000, 0xA0200000});
  // The second capture into the same pool takes one more segment.
  p.s.nvtx_mark("gmem:capture {\"pool\":\"(1, 0)\",\"device\":0,\"site\":\"tp.py:31 in step\",\"label\":\"\"}");
  p.s.capture_begin(0xA);
  p.s.capture_began(0xA, true);
  take(0xA4000000, 20 * MiB, "libc10_cuda.so");
  graph(0x11);
  p.s.capture_end(0xA, 0x11);
  instantiate(p, 0x101, 0x11, 0);
  p.s.graph_destroy(0x11);
  captured(54 * MiB, {0xA0000000, 0xA0200000, 0xA4000000});
  // A stream made outside any capture is nobody's graph memory.
  p.s.stream_create_enter();
  p.use(2 * static_cast<std::int64_t>(MiB));
  p.s.stream_create_exit(true);
  p.s.nvtx_mark(("gmem:end {\"why\":\"the program's end\",\"pools\":[{\"pool\":\"(1, 0)\",\"device\":0,\"bytes\":" +
                 std::to_string(54 * MiB) + ",\"segments\":[" + std::to_string(0xA0000000) + "," +
                 std::to_string(0xA0200000) + "," + std::to_string(0xA4000000) + "]}]}").c_str());
  const profiler::report r = p.finish();
  const profiler::graph_bill& b = r.recorded->bills.at(0);
  EXPECT_EQ(b.framework_retained_bytes, 54 * MiB);
  EXPECT_EQ(b.framework_checked_captures, 2u);
  EXPECT_EQ(b.framework_differing_captures, 0u);
  ASSERT_EQ(r.recorded->framework_pools.size(), 1u);
  const auto& checks = r.recorded->framework_pools[0].after_captures;
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].retained_bytes, 34 * MiB);
  EXPECT_EQ(checks[0].framework_bytes, 34 * MiB);
  EXPECT_EQ(checks[1].retained_bytes, 54 * MiB);
  EXPECT_EQ(checks[0].graph, r.recorded->graphs.at(0).name);
  EXPECT_EQ(checks[1].graph, r.recorded->graphs.at(1).name);
  ASSERT_EQ(b.library_takers.size(), 1u);
  EXPECT_EQ(b.library_takers[0].library, "NCCL");
  EXPECT_EQ(b.library_takers[0].bytes, 4 * MiB);
  EXPECT_EQ(b.library_takers[0].allocations, 1u);
  EXPECT_EQ(b.library_takers[0].streams, 1u);
  EXPECT_EQ(b.library_bytes, 4 * MiB);
  EXPECT_EQ(r.recorded->graphs.at(0).libraries_at_capture_bytes, 4 * MiB);
  EXPECT_EQ(r.recorded->graphs.at(1).libraries_at_capture_bytes, 0u);
  EXPECT_EQ(r.recorded->graphs.at(0).capture_pool_growth_bytes, 34 * MiB);
  EXPECT_EQ(b.not_graph_bytes, static_cast<std::int64_t>(2 * MiB));  // the stream made outside the captures
  // What each capture added to the shared pool, by PyTorch's figure after each: the graph's cost.
  EXPECT_TRUE(r.recorded->graphs.at(0).framework_pool_added_known);
  EXPECT_EQ(r.recorded->graphs.at(0).framework_pool_added_bytes, static_cast<std::int64_t>(34 * MiB));
  EXPECT_EQ(r.recorded->graphs.at(1).framework_pool_added_bytes, static_cast<std::int64_t>(20 * MiB));
  const std::string shown = one_line(profiler::format_report(r));
  EXPECT_NE(shown.find("equal to the framework's figure after each of 2 captures"), std::string::npos) << shown;
  EXPECT_NE(shown.find("NCCL 4.00 MiB (1 allocation and 1 stream made in a capture)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("+20.0 MiB"), std::string::npos) << shown;
  EXPECT_NE(shown.find("cost: what a graph added to the device, what its framework pool grew by from the previous "
                       "capture into it (warm-up runs and capture), with its executable-graph state"),
            std::string::npos)
      << shown;
  const profiler::report back = profiler::from_json_string(profiler::to_json_string(r), "back.json");
  ASSERT_EQ(back.recorded->framework_pools.at(0).after_captures.size(), 2u);
  EXPECT_EQ(back.recorded->framework_pools[0].after_captures[1].framework_bytes, 54 * MiB);
  EXPECT_EQ(back.recorded->bills.at(0).framework_checked_captures, 2u);
  EXPECT_EQ(back.recorded->bills.at(0).library_streams, 1u);
  EXPECT_EQ(back.recorded->bills.at(0).library_takers.at(0).streams, 1u);
  EXPECT_EQ(back.recorded->graphs.at(1).framework_pool_added_bytes, static_cast<std::int64_t>(20 * MiB));
  EXPECT_TRUE(back.recorded->graphs.at(1).framework_pool_added_known);
}

// A segment the recording never saw (taken on a thread it does not watch) makes the recording's
// figure differ from the framework's after that capture: said, with both figures, never hidden.
TEST(RecordBill, APoolFigureThatDiffersFromTheFrameworksAfterACaptureIsCountedAndListed) {
  program p(name_source::nvtx);
  p.gpu.used = 500 * MiB;
  p.s.first_reading();
  native_capture(p, 0x10, "(1, 0)", "tp.py:30 in step", {32 * MiB});
  instantiate(p, 0x100, 0x10, 0);
  p.s.nvtx_mark(("gmem:captured {\"pool\":\"(1, 0)\",\"device\":0,\"bytes\":" + std::to_string(34 * MiB) +
                 ",\"segments\":[" + std::to_string(0x10ull << 20) + "," + std::to_string(0xF0000000ull) + "]}").c_str());
  const profiler::report r = p.finish();
  const profiler::graph_bill& b = r.recorded->bills.at(0);
  EXPECT_EQ(b.framework_checked_captures, 1u);
  EXPECT_EQ(b.framework_differing_captures, 1u);
  const std::string shown = one_line(profiler::format_report(r));
  EXPECT_NE(shown.find("differs from the framework's figure after 1 of 1 capture"), std::string::npos) << shown;
  profiler::show_options all;
  all.all = true;
  const std::string every = one_line(profiler::format_report(r, all));
  EXPECT_NE(every.find("32.0 MiB against the framework's 34.0 MiB"), std::string::npos) << every;
}

TEST(RecordBill, ALibraryIsNamedByItsFileAndAnUnknownFileKeepsItsNameWithoutTheVersion) {
  EXPECT_EQ(library_name("libnccl.so.2"), "NCCL");
  EXPECT_EQ(library_name("libcublasLt.so.13"), "cuBLAS");
  EXPECT_EQ(library_name("libc10_cuda.so"), "PyTorch");
  EXPECT_EQ(library_name("libtorch_cuda.so"), "PyTorch");
  EXPECT_EQ(library_name("libfoo.so.1.2"), "libfoo.so");
  EXPECT_EQ(library_name("_C.cpython-311-x86_64-linux-gnu.so"), "_C.cpython-311-x86_64-linux-gnu.so");
  EXPECT_EQ(library_name(""), "unknown");
}

// make_graphed_callables: the backward is captured while PyTorch's autograd thread runs it, so
// the pool's segments are allocated on another thread than the capturing one. While one
// capture is under way, another thread's allocation is that capture's; with none, nobody's.
TEST(RecordBill, AnotherThreadsAllocationDuringTheOnlyCaptureIsThatCapturesMemory) {
  program p(name_source::nvtx);
  p.s.nvtx_mark("gmem:capture {\"pool\":\"(0, 1)\",\"device\":0,\"site\":\"t.py:5 in step\",\"label\":\"make_graphed_callables\"}");
  p.s.capture_begin(0xA);
  p.s.capture_began(0xA, true);
  std::thread autograd([&] {
    p.use(96 * MiB);
    p.s.device_alloc(0x5000, 96 * MiB, 0);
  });
  autograd.join();
  {
    std::lock_guard<std::mutex> l(p.gpu.mutex);
    p.gpu.graphs[0x10] = kernels();
  }
  p.s.capture_end(0xA, 0x10);
  instantiate(p, 0x100, 0x10, 0);
  std::thread later([&] { p.s.device_alloc(0x6000, 64 * MiB, 0); });  // no capture under way
  later.join();
  const profiler::report r = p.finish();
  ASSERT_EQ(r.recorded->graphs.size(), 1u);
  EXPECT_EQ(r.recorded->graphs[0].capture_pool_growth_bytes, 96 * MiB);
  EXPECT_EQ(r.recorded->bills.at(0).framework_retained_bytes, 96 * MiB);
}

TEST(RecordBill, WithoutTheCompanionEachCaptureIsItsOwnPoolAndWarmUpsAreSaidUnseen) {
  program p;
  p.s.first_reading();
  p.s.capture_begin(0xA);
  p.s.capture_began(0xA, true);
  p.use(64 * MiB);
  p.s.device_alloc(0x7000, 64 * MiB, 0);
  {
    std::lock_guard<std::mutex> l(p.gpu.mutex);
    p.gpu.graphs[0x10] = kernels();
  }
  p.s.capture_end(0xA, 0x10);
  instantiate(p, 0x100, 0x10, 2 * MiB);
  const profiler::report r = p.finish();
  const profiler::graph_bill& b = r.recorded->bills.at(0);
  EXPECT_TRUE(b.framework_seen);
  EXPECT_FALSE(b.framework_named);
  EXPECT_EQ(b.framework_snapshot_bytes, -1);
  EXPECT_EQ(r.recorded->framework_pools.at(0).id, "capture of 'stream 1 #1'");
  EXPECT_EQ(b.end, "the end of the recording (exit)");
  const auto lines = profiler::bill_lines(b);
  bool unseen = false;
  for (const auto& l : lines) unseen = unseen || l.find("warm-ups unseen") != std::string::npos;
  EXPECT_TRUE(unseen);
}

TEST(RecordBill, TheMemoryNodePoolIsItsHighAndWhatItRetainsAndStateIsLessThePoolsGrowth) {
  program p;
  p.s.first_reading();
  p.capture(0xA, 0x10, graph_of("g=w64,o1", 1ull << 40));
  instantiate(p, 0x100, 0x10, 2 * MiB);
  p.s.launch_enter(0x100, 0xA);
  p.tick(300);
  p.grow(3 * granule);
  p.use(3 * granule);
  p.s.launch_exit(0x100, "");
  // An upload of another graph maps 2 granules and takes 2 MiB of state beside them.
  p.capture(0xA, 0x11, graph_of("g=w64", 2ull << 40));
  instantiate(p, 0x101, 0x11, 0);
  p.s.upload_enter(0x101, 0xA);
  p.grow(2 * granule);
  p.use(2 * granule + 2 * MiB);
  p.s.upload_exit(0x101, "");
  p.trim(granule);
  const profiler::report r = p.finish();
  const profiler::graph_bill& b = r.recorded->bills.at(0);
  EXPECT_TRUE(b.node_pool_seen);
  EXPECT_EQ(b.node_pool_high_bytes, 5 * granule);
  EXPECT_EQ(b.node_pool_retained_bytes, granule);
  EXPECT_FALSE(b.framework_seen);
  EXPECT_EQ(b.exec_state_bytes, 4 * MiB);
  EXPECT_EQ(b.exec_state_instantiations, 3u);
  const profiler::report back = profiler::from_json_string(profiler::to_json_string(r), "bill.json");
  EXPECT_EQ(back.recorded->bills.at(0).node_pool_retained_bytes, granule);
  EXPECT_FALSE(back.recorded->bills.at(0).framework_seen);
  EXPECT_TRUE(back.recorded->bills.at(0).exec_state_measured);
}

// The first instantiation of a memory-node program took a 2 MiB piece of executable-graph state
// on an H100, and destroying every graph gave none of it back: the bill keeps it, and says the
// destroys gave nothing. A destroy that gives a piece back takes it off the bill's state, so the
// kinds still sum to the process's change.
TEST(RecordBill, WhatADestroyGivesBackComesOffTheStateAndAStateKeptPastItsGraphsIsSaid) {
  const auto run = [](std::uint64_t given_back) {
    program p;
    p.s.first_reading();
    p.capture(0xA, 0x10, graph_of("g=w64", 1ull << 40));
    instantiate(p, 0x100, 0x10, 2 * MiB);
    p.capture(0xA, 0x11, graph_of("g=w64", 2ull << 40));
    instantiate(p, 0x101, 0x11, 0);
    p.s.exec_destroy(0x100);
    p.use(-static_cast<std::int64_t>(given_back));
    p.s.exec_destroy_exit(true);
    p.s.exec_destroy(0x101);
    p.s.exec_destroy_exit(true);
    return p.finish();
  };
  const profiler::report kept = run(0);
  const profiler::graph_bill& b = kept.recorded->bills.at(0);
  EXPECT_EQ(b.exec_state_bytes, 2 * MiB);
  EXPECT_EQ(b.exec_state_released_bytes, 0u);
  EXPECT_EQ(b.exec_state_destroys, 2u);
  EXPECT_NE(one_line(profiler::format_report(kept)).find("2 destroys of executable graphs gave back 0 B"),
            std::string::npos)
      << profiler::format_report(kept);
  const profiler::report given = run(2 * MiB);  // kept: the bill below is its
  const profiler::graph_bill& gone = given.recorded->bills.at(0);
  EXPECT_EQ(gone.exec_state_bytes, 0u);
  EXPECT_EQ(gone.exec_state_released_bytes, 2 * MiB);
  EXPECT_EQ(gone.exec_state_destroys, 1u);  // none outstanding at the second destroy: not read
  EXPECT_EQ(gone.not_graph_bytes, 0);
  const profiler::report back = profiler::from_json_string(profiler::to_json_string(kept), "bill.json");
  EXPECT_EQ(back.recorded->bills.at(0).exec_state_destroys, 2u);
  EXPECT_EQ(back.recorded->bills.at(0).exec_state_bytes, 2 * MiB);
}

TEST(RecordBill, StateReadWhileAnotherThreadsCallOverlappedIsCountedAsUnmeasured) {
  program p;
  capture_two(p);
  p.s.instantiate_enter(0x10);
  std::thread other([&] { instantiate(p, 0x101, 0x11, 2 * MiB); });  // inside the first's window
  other.join();
  p.s.instantiate_exit(0x100, 0x10, "", {}, std::nullopt);
  const profiler::report r = p.finish();
  const profiler::graph_bill& b = r.recorded->bills.at(0);
  EXPECT_EQ(b.exec_state_unmeasured, 2u);
  EXPECT_EQ(b.exec_state_instantiations, 0u);
}

// The graph is read while the reading before the call is taken, and recorded while the one after
// it is: each is answered before the program goes on, so the call itself and what the program
// does after it fall outside them.
TEST(RecordBill, TheReadingsAroundAnInstantiationOverlapTheLibrarysWorkAndStillBracketTheCallAlone) {
  program p;
  for (std::uint64_t k = 0; k < 3; ++k) {
    p.capture(0xA, 0x10 + k, graph_of("g=w2", (k + 1) << 40));
    p.s.instantiate_enter(0x10 + k);
    EXPECT_FALSE(this_threads_reading().under_way) << k;  // the call starts after the reading
    p.use(static_cast<std::int64_t>((k + 1) * 2 * MiB));
    p.tick(40);
    p.s.instantiate_exit(0x100 + k, 0x10 + k, "", {}, std::nullopt);
    EXPECT_FALSE(this_threads_reading().under_way) << k;
    p.use(64 * MiB);  // the program's own allocation after the call: not the graph's
  }
  EXPECT_EQ(p.gpu.graph_reads_while_reading.load(), 3);
  EXPECT_EQ(p.gpu.stacks_while_reading.load(), 3);
  const profiler::report r = p.finish();
  EXPECT_EQ(r.recorded->bills.at(0).exec_state_bytes, 12 * MiB);
  ASSERT_EQ(r.recorded->graphs.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(r.recorded->graphs[k].exec_state_bytes, static_cast<std::int64_t>((k + 1) * 2 * MiB)) << k;
  }
}

// Another thread's instantiation made while this one's graph is read (after its first reading
// began, before its call) falls between its readings: both are unmeasured, not charged to it.
TEST(RecordBill, AnotherThreadsCallMadeWhileTheGraphIsReadMarksTheReadings) {
  program p;
  capture_two(p);
  p.gpu.inside_graph_read = [&] {
    std::thread other([&] { instantiate(p, 0x101, 0x11, 2 * MiB); });
    other.join();
  };
  instantiate(p, 0x100, 0x10, 0);
  const profiler::report r = p.finish();
  const profiler::graph_bill& b = r.recorded->bills.at(0);
  EXPECT_EQ(b.exec_state_unmeasured, 2u);
  EXPECT_EQ(b.exec_state_bytes, 0u);
}

// After a call a handler failed in: the next instantiation (2 MiB of the driver's state) is
// measured from its own readings alone.
void expect_the_next_instantiation_measured_alone(program& p) {
  instantiate(p, 0x101, 0x11, 2 * MiB);
  const profiler::report r = p.finish();
  const profiler::graph_bill& b = r.recorded->bills.at(0);
  EXPECT_EQ(b.exec_state_bytes, 2 * MiB);
  EXPECT_EQ(b.exec_state_instantiations, 1u);
}

// A handler that fails between a reading's start and its answer (here the graph's read throws)
// answers it anyway: the readings' helper is not kept spinning for it, and the next instantiation
// is measured from its own readings, not from the failed one's.
TEST(RecordBill, AReadingBegunBeforeAFailureIsAnsweredAndTheNextCallMeasuresItsOwn) {
  program p;
  capture_two(p);
  p.gpu.inside_graph_read = [] { throw std::bad_alloc(); };
  p.s.instantiate_enter(0x10);
  EXPECT_FALSE(this_threads_reading().under_way);
  p.use(8 * MiB);
  p.s.instantiate_exit(0x100, 0x10, "", {}, std::nullopt);
  p.use(64 * MiB);  // between the calls: neither's
  expect_the_next_instantiation_measured_alone(p);
}

// A handler that fails while it records the graph (after the call, before the second reading's
// answer) still closes the call's window: later calls' readings are measured, not all counted as
// overlapped by a call that never ended.
TEST(RecordBill, AnExitThatFailsWhileRecordingStillClosesTheCallsWindow) {
  program p;
  capture_two(p);
  p.s.instantiate_enter(0x10);
  p.use(4 * MiB);
  p.gpu.inside_lock = [] { throw std::bad_alloc(); };  // the upload stream's first look
  profiler::instantiate_flags upload;
  upload.upload = true;
  p.s.instantiate_exit(0x100, 0x10, "", upload, std::uint64_t{0xB});
  EXPECT_FALSE(this_threads_reading().under_way);
  expect_the_next_instantiation_measured_alone(p);
}

// gmem's own line says what the way the calls were taken costs the device: nothing with the
// library's own interception (the bill's other figures are the program's), not told apart under
// CUPTI; a report that does not say (an older one) has no line, never a zero standing in.
TEST(RecordBill, GmemsOwnIsNothingUnderTheOwnInterceptionAndNotToldApartUnderCupti) {
  const auto bill_of = [](const std::string& hook) {
    program p;
    p.gpu.used = 500 * MiB;
    p.s.first_reading();
    p.s.info().hook = hook;
    capture_two(p);
    instantiate(p, 0x100, 0x10, 2 * MiB);
    return p.finish();
  };
  const profiler::report own = bill_of("interpose");
  ASSERT_EQ(own.recorded->bills.size(), 1u);
  const profiler::graph_bill& b = own.recorded->bills[0];
  EXPECT_EQ(b.own_hook, "interpose");
  EXPECT_TRUE(b.own_apart);
  EXPECT_EQ(b.own_bytes, 0u);
  EXPECT_EQ(b.not_graph_bytes, 0);
  std::string shown = profiler::format_report(own);
  EXPECT_NE(shown.find("gmem's own               0 B (the recording makes no context, module, stream or allocation"),
            std::string::npos) << shown;

  const profiler::report cupti = bill_of("cupti");
  EXPECT_EQ(cupti.recorded->bills[0].own_hook, "cupti");
  EXPECT_FALSE(cupti.recorded->bills[0].own_apart);
  shown = profiler::format_report(cupti);
  EXPECT_NE(shown.find("gmem's own               not told apart: CUPTI's own device memory"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("gmem's own               0 B"), std::string::npos) << shown;

  // A hook the report format does not know is named, not read as either.
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(profiler::to_json_string(own));
  j["recorded"]["bills"][0]["own"]["hook"] = "nvbit";
  try {
    (void)profiler::from_json_string(j.dump(), "own.json");
    ADD_FAILURE() << "read an unknown hook";
  } catch (const profiler::report_error& e) {
    EXPECT_NE(std::string(e.what()).find("bills[0].own.hook must be \"interpose\" or \"cupti\""), std::string::npos) << e.what();
  }

  // Nor a size for what CUPTI's hook does not tell apart (a bill saying "0 B" under CUPTI).
  j["recorded"]["bills"][0]["own"]["hook"] = "cupti";
  try {
    (void)profiler::from_json_string(j.dump(), "own.json");
    ADD_FAILURE() << "read a size of gmem's own under CUPTI";
  } catch (const profiler::report_error& e) {
    EXPECT_NE(std::string(e.what()).find("bills[0].own.bytes is given, but CUPTI's own memory is not told apart"),
              std::string::npos) << e.what();
  }

  const profiler::report unsaid = bill_of("");
  EXPECT_TRUE(unsaid.recorded->bills[0].own_hook.empty());
  EXPECT_EQ(profiler::format_report(unsaid).find("gmem's own"), std::string::npos);
}

TEST(SizeText, ThreeSignificantDigitsInTheUnitThatReadsBest) {
  EXPECT_EQ(profiler::size_text(0), "0 B");
  EXPECT_EQ(profiler::size_text(1000), "1000 B");
  EXPECT_EQ(profiler::size_text(512 << 10), "512 KiB");
  EXPECT_EQ(profiler::size_text(32 * MiB), "32.0 MiB");
  EXPECT_EQ(profiler::size_text(796 * MiB), "796 MiB");
  EXPECT_EQ(profiler::size_text(1188 * MiB), "1.16 GiB");
  EXPECT_EQ(profiler::size_text(1023 * MiB + 900 * 1024), "1.00 GiB");
  EXPECT_EQ(profiler::size_text(2 * MiB), "2.00 MiB");
  EXPECT_EQ(profiler::signed_size_text(-static_cast<std::int64_t>(2 * MiB)), "-2.00 MiB");
  EXPECT_EQ(profiler::signed_size_text(0), "0 B");
}

}  // namespace
}  // namespace gmem::record::test
