// Every way gmem frees graph memory goes through one bookkeeping: a claim before the driver
// call, committed or given back after it. These tests drive the ledgers and the registry as
// each path does (no GPU): a free node in the allocating graph, a free node in another graph,
// capture::free_async, free_in_stream and free_now, and check that a second free by any two of
// them is refused naming the allocation and the first free.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmem/detail/graph_ledger.hpp"
#include "gmem/usage_error.hpp"

namespace {

using gmem::alloc_record;
using gmem::allocation_registry;
using gmem::graph_ledger;
using gmem::usage_error;

constexpr std::uintptr_t address = 0x7f0000200000;
constexpr std::size_t bytes = 12288;
constexpr const char* in_stream = "cudaFreeAsync in stream 0x5 (gmem::free_in_stream)";
constexpr const char* by_cuda_free = "cudaFree (gmem::free_now)";

enum class path { own_node, other_graph_node, capture, stream, cuda_free };

const char* name_of(path p) {
  switch (p) {
    case path::own_node: return "own_node";
    case path::other_graph_node: return "other_graph_node";
    case path::capture: return "capture";
    case path::stream: return "stream";
    case path::cuda_free: return "cuda_free";
  }
  return "?";
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}

// The allocating graph, and the graphs and captures the frees are made in, on one registry.
class FreePaths : public ::testing::Test {
 protected:
  allocation_registry registry;
  std::unique_ptr<graph_ledger> allocating = make("allocating");
  std::vector<std::unique_ptr<graph_ledger>> others;
  gmem::node_handle next_node = 100;

  std::unique_ptr<graph_ledger> make(const std::string& name) {
    return std::make_unique<graph_ledger>(name, graph_ledger::kind::ordinary, registry);
  }

  void allocate() { allocating->record_alloc({address, bytes, next_node++, std::nullopt, 0}); }

  // Frees `address` the way `p` does; `n` tells the graphs and captures of one test apart.
  void free_by(path p, int n) {
    switch (p) {
      case path::own_node: {  // graph::add_free
        const auto claim = allocating->claim_free(address);
        allocating->commit_free(claim, next_node++);
        return;
      }
      case path::other_graph_node: {
        others.push_back(make("freer " + std::to_string(n)));
        const auto claim = others.back()->claim_free(address);
        others.back()->commit_free(claim, next_node++);
        return;
      }
      case path::capture: {  // capture::free_async
        others.push_back(make("capture " + std::to_string(n)));
        const auto claim = others.back()->claim_captured_free(address);
        ASSERT_TRUE(claim.has_value());
        others.back()->commit_captured_free(*claim);
        return;
      }
      case path::stream:
      case path::cuda_free: {  // free_in_stream, free_now
        const auto claim =
            registry.claim_outside_free(address, p == path::stream ? in_stream : by_cuda_free);
        ASSERT_TRUE(claim.known);
        registry.commit_outside_free(claim);
        return;
      }
    }
  }

  // How the refusal of a second free by `second` names a first free by `first` (made as
  // free_by(first, 1)).
  static std::string first_named(path first, path second) {
    switch (first) {
      case path::own_node:
        return second == path::own_node ? "already has a free node in this graph"
                                        : "already has a free node in graph 'allocating'";
      case path::other_graph_node: return "already has a free node in graph 'freer 1'";
      case path::capture: return "already has a free node in graph 'capture 1'";
      case path::stream: return std::string("was already freed by ") + in_stream;
      case path::cuda_free: return std::string("was already freed by ") + by_cuda_free;
    }
    return "?";
  }

  // Checks that a second free by `second` after a first by `first` is refused, names the
  // allocation and the first free, and changes nothing.
  void expect_second_refused(path first, path second) {
    SCOPED_TRACE(std::string(name_of(first)) + " then " + name_of(second));
    const auto before = registry.find(address);
    ASSERT_TRUE(before.has_value());
    ASSERT_TRUE(before->freed_by.has_value());
    const std::string msg = error_of([&] { free_by(second, 2); });
    ASSERT_FALSE(msg.empty()) << "the second free was accepted";
    EXPECT_NE(msg.find(std::to_string(bytes) + " B at " + gmem::format_address(address)),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find(first_named(first, second)), std::string::npos) << msg;
    EXPECT_NE(msg.find("freed once"), std::string::npos) << msg;
    const auto after = registry.find(address);
    ASSERT_TRUE(after.has_value());
    EXPECT_EQ(after->freed_by, before->freed_by);
    EXPECT_EQ(after->freed_by_name, before->freed_by_name);
  }
};

const path all_paths[] = {path::own_node, path::other_graph_node, path::capture, path::stream,
                          path::cuda_free};

TEST_F(FreePaths, EachPathAloneIsAccepted) {
  for (path p : all_paths) {
    SCOPED_TRACE(name_of(p));
    allocating = make("allocating");
    allocate();
    free_by(p, 1);
    const auto known = registry.find(address);
    ASSERT_TRUE(known.has_value());
    EXPECT_TRUE(known->freed_by.has_value());
    EXPECT_EQ(gmem::is_outside_free(*known->freed_by),
              p == path::stream || p == path::cuda_free);
  }
}

TEST_F(FreePaths, SecondFreeByAnyTwoPathsIsRefusedNamingTheFirst) {
  for (path first : all_paths) {
    for (path second : all_paths) {
      allocating = make("allocating");
      others.clear();
      allocate();
      free_by(first, 1);
      expect_second_refused(first, second);
    }
  }
}

TEST_F(FreePaths, SecondFreeAfterTheAllocatingGraphIsDestroyedIsRefusedNamingTheFirst) {
  // Its free node goes with the graph, so a first free in the allocating graph is left out;
  // so is a second one there.
  for (path first : all_paths) {
    if (first == path::own_node) continue;
    for (path second : all_paths) {
      if (second == path::own_node) continue;
      allocating = make("allocating");
      others.clear();
      allocate();
      free_by(first, 1);
      allocating.reset();
      expect_second_refused(first, second);
    }
  }
}

TEST_F(FreePaths, AnOrphanFreedInAStreamIsForgottenAndStillRefusedASecondTime) {
  allocate();
  allocating.reset();
  EXPECT_EQ(registry.size().orphans, 1u);
  free_by(path::stream, 1);
  EXPECT_EQ(registry.size().orphans, 0u);
  EXPECT_EQ(registry.size().remembered_frees, 1u);
  expect_second_refused(path::stream, path::other_graph_node);
  expect_second_refused(path::stream, path::cuda_free);
}

TEST_F(FreePaths, AnAllocationFreedInAStreamBeforeItsGraphGoesLeavesNoOrphan) {
  allocate();
  free_by(path::cuda_free, 1);
  allocating.reset();
  EXPECT_EQ(registry.size().orphans, 0u);
  EXPECT_EQ(registry.size().remembered_frees, 1u);
  expect_second_refused(path::cuda_free, path::stream);
}

TEST_F(FreePaths, ALaunchMakesTheAllocationAnewSoItCanBeFreedInAStreamAgain) {
  allocate();
  free_by(path::stream, 1);
  allocating->launched();  // graph_exec::launch
  free_by(path::stream, 1);
  expect_second_refused(path::stream, path::stream);
  allocating->launched();
  free_by(path::other_graph_node, 1);  // the user switches to a graph holding the free node
  allocating->launched();              // which a launch does not undo
  expect_second_refused(path::other_graph_node, path::stream);
}

TEST_F(FreePaths, AFreeGivenBackWhenTheDriverRefusesLeavesTheAllocationFreeable) {
  allocate();
  const auto claim = registry.claim_outside_free(address, in_stream);
  ASSERT_TRUE(claim.known);
  registry.unclaim_outside_free(claim);  // cudaFreeAsync failed
  EXPECT_FALSE(registry.find(address)->freed_by.has_value());

  auto capture = make("capture");
  const auto captured = capture->claim_captured_free(address);
  ASSERT_TRUE(captured.has_value());
  capture->unclaim_free(*captured);  // the captured cudaFreeAsync failed
  EXPECT_FALSE(registry.find(address)->freed_by.has_value());
  free_by(path::other_graph_node, 1);
  expect_second_refused(path::other_graph_node, path::stream);
}

TEST_F(FreePaths, AFreeInFlightHoldsItsClaimUntilCommitted) {
  allocate();
  const auto claim = registry.claim_outside_free(address, by_cuda_free);
  const std::string msg = error_of([&] { free_by(path::other_graph_node, 2); });
  EXPECT_NE(msg.find(std::string("was already freed by ") + by_cuda_free), std::string::npos)
      << msg;
  allocating.reset();  // the graph goes while the driver call runs
  EXPECT_EQ(registry.size().orphans, 1u);
  registry.commit_outside_free(claim);
  EXPECT_EQ(registry.size().orphans, 0u);
  expect_second_refused(path::cuda_free, path::capture);
}

TEST_F(FreePaths, AnAddressGmemDoesNotKnowIsLeftToTheDriver) {
  const auto claim = registry.claim_outside_free(0xabc000, in_stream);
  EXPECT_FALSE(claim.known);
  registry.commit_outside_free(claim);
  EXPECT_FALSE(registry.find(0xabc000).has_value());
  auto capture = make("capture");
  EXPECT_FALSE(capture->claim_captured_free(0xabc000).has_value());  // an allocation of its own
  EXPECT_FALSE(capture->has_memory_nodes());
}

TEST_F(FreePaths, ACapturedFreeGetsItsNodeWhenTheCaptureEndsAndKeepsItsClaim) {
  allocate();
  auto capture = make("captured");
  const auto claim = capture->claim_captured_free(address);
  ASSERT_TRUE(claim.has_value());
  capture->commit_captured_free(*claim);
  capture->record_observed_free(address, 0x77);  // graph::adopt reads the captured graph
  ASSERT_EQ(capture->foreign_frees().size(), 1u);
  EXPECT_EQ(capture->foreign_frees()[0].free_node, gmem::node_handle{0x77});
  EXPECT_EQ(registry.find(address)->freed_by_name, "captured");
  capture.reset();  // the captured graph is destroyed: its claim is given back
  EXPECT_FALSE(registry.find(address)->freed_by.has_value());
  free_by(path::stream, 1);
}

TEST_F(FreePaths, AGraphReusingAFreedOrphansAddressIsNotConfusedWithIt) {
  allocate();
  allocating.reset();
  free_by(path::stream, 1);
  allocating = make("allocating again");  // the driver hands the address out again
  allocate();
  free_by(path::stream, 1);
  expect_second_refused(path::stream, path::capture);
  allocating.reset();
  EXPECT_EQ(registry.size().remembered_frees, 1u);
}

// 10,000 graphs that each leave an allocation freed in a stream (half before the graph goes,
// half after): the registry holds no orphan and a bounded memory of the frees.
TEST_F(FreePaths, TenThousandGraphsFreedInStreamsLeaveTheRegistryBounded) {
  allocating.reset();
  for (int i = 0; i < 10000; ++i) {
    // Addresses as the driver hands them out: reused (64 of them) half the time, new otherwise.
    const std::uintptr_t k = static_cast<std::uintptr_t>(i);
    const std::uintptr_t a = i % 2 ? 0x10000000 + (k % 64) * 0x200000 : 0x80000000 + k * 0x200000;
    auto g = make("graph " + std::to_string(i));
    g->record_alloc({a, bytes, next_node++, std::nullopt, 0});
    if (i % 4 < 2) g.reset();  // an orphan first
    const auto claim = registry.claim_outside_free(a, in_stream);
    ASSERT_TRUE(claim.known) << i;
    registry.commit_outside_free(claim);
    g.reset();
    const auto n = registry.size();
    ASSERT_EQ(n.live_graphs, 0u) << i;
    ASSERT_EQ(n.orphans, 0u) << i;
    ASSERT_LE(n.remembered_frees, allocation_registry::remembered_frees_max) << i;
  }
  EXPECT_EQ(registry.size().remembered_frees, allocation_registry::remembered_frees_max);
}

}  // namespace
