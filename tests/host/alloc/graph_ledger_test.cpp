#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "gmem/detail/graph_ledger.hpp"
#include "gmem/usage_error.hpp"

namespace {

using gmem::alloc_record;
using gmem::allocation_registry;
using gmem::free_target;
using gmem::graph_ledger;
using gmem::usage_error;

alloc_record rec(std::uintptr_t address, std::size_t bytes, gmem::node_handle node) {
  return {address, bytes, node, std::nullopt, 0};
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

// Each test has its own registry so that addresses do not leak between tests.
class GraphLedger : public ::testing::Test {
 protected:
  allocation_registry registry;
};

TEST_F(GraphLedger, FreeOfOwnAllocationIsRecordedAgainstThatAllocation) {
  graph_ledger g("g", graph_ledger::kind::ordinary, registry);
  g.record_alloc(rec(0x1000, 4096, 11));
  g.record_alloc(rec(0x9000, 512, 12));
  EXPECT_EQ(g.check_free(0x1000), free_target::own_allocation);
  g.record_free(0x1000, 13);
  ASSERT_EQ(g.unfreed().size(), 1u);
  EXPECT_EQ(g.unfreed()[0].address, 0x9000u);
  EXPECT_EQ(g.allocations()[0].free_node, gmem::node_handle{13});
  EXPECT_EQ(g.free_count(), 1u);
  EXPECT_EQ(g.alloc_count(), 2u);
}

TEST_F(GraphLedger, FreeOfUnknownAddressIsRefusedNamingTheAddress) {
  graph_ledger g("consumer", graph_ledger::kind::ordinary, registry);
  const std::string msg = error_of([&] { (void)g.check_free(0xdead0000); });
  EXPECT_NE(msg.find("no alloc node returned 0xdead0000"), std::string::npos) << msg;
  EXPECT_NE(msg.find("graph 'consumer'"), std::string::npos) << msg;
  EXPECT_FALSE(g.has_memory_nodes());
}

TEST_F(GraphLedger, SecondFreeInTheSameGraphIsRefused) {
  graph_ledger g("g", graph_ledger::kind::ordinary, registry);
  g.record_alloc(rec(0x1000, 4096, 1));
  g.record_free(0x1000, 2);
  const std::string msg = error_of([&] { g.record_free(0x1000, 3); });
  EXPECT_NE(msg.find("already has a free node in this graph"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4096 B at 0x1000"), std::string::npos) << msg;
  EXPECT_EQ(g.free_count(), 1u);  // nothing changed
}

TEST_F(GraphLedger, FreeInAnotherGraphIsForeignAndOnlyOneGraphMayHoldIt) {
  graph_ledger alloc_graph("producer", graph_ledger::kind::ordinary, registry);
  graph_ledger free_graph("freer", graph_ledger::kind::ordinary, registry);
  graph_ledger third("third", graph_ledger::kind::ordinary, registry);
  alloc_graph.record_alloc(rec(0x2000, 1 << 20, 1));
  EXPECT_EQ(free_graph.check_free(0x2000), free_target::foreign_allocation);
  free_graph.record_free(0x2000, 7);
  ASSERT_EQ(free_graph.foreign_frees().size(), 1u);
  EXPECT_TRUE(free_graph.has_memory_nodes());

  const std::string msg = error_of([&] { third.record_free(0x2000, 8); });
  EXPECT_NE(msg.find("already has a free node in graph 'freer'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("made by graph 'producer'"), std::string::npos) << msg;
  // The allocating graph itself can no longer free it either.
  EXPECT_NE(error_of([&] { alloc_graph.record_free(0x2000, 9); }), "");
}

TEST_F(GraphLedger, AllocationFreedInsideItsGraphCannotBeFreedByAnother) {
  graph_ledger a("a", graph_ledger::kind::ordinary, registry);
  graph_ledger b("b", graph_ledger::kind::ordinary, registry);
  a.record_alloc(rec(0x3000, 64, 1));
  a.record_free(0x3000, 2);
  const std::string msg = error_of([&] { b.record_free(0x3000, 3); });
  EXPECT_NE(msg.find("already has a free node in graph 'a'"), std::string::npos) << msg;
}

TEST_F(GraphLedger, DestroyingTheFreeingGraphReleasesItsClaim) {
  graph_ledger a("a", graph_ledger::kind::ordinary, registry);
  a.record_alloc(rec(0x4000, 64, 1));
  {
    graph_ledger b("b", graph_ledger::kind::ordinary, registry);
    b.record_free(0x4000, 2);
  }
  graph_ledger c("c", graph_ledger::kind::ordinary, registry);
  EXPECT_NO_THROW(c.record_free(0x4000, 3));
}

TEST_F(GraphLedger, UnfreedAllocationOutlivesItsGraphInTheRegistry) {
  {
    graph_ledger a("a", graph_ledger::kind::ordinary, registry);
    a.record_alloc(rec(0x5000, 64, 1));
    a.record_alloc(rec(0x6000, 64, 2));
    a.record_free(0x6000, 3);
  }
  // Destroying a graph does not free its allocations: 0x5000 can still be freed elsewhere,
  // while 0x6000 (freed in its graph) is forgotten.
  EXPECT_TRUE(registry.find(0x5000).has_value());
  EXPECT_FALSE(registry.find(0x6000).has_value());
  graph_ledger b("b", graph_ledger::kind::ordinary, registry);
  EXPECT_EQ(b.check_free(0x5000), free_target::foreign_allocation);
}

TEST_F(GraphLedger, AddressReusedAfterFreeInTheSameGraphPairsEachFreeWithItsAlloc) {
  graph_ledger g("g", graph_ledger::kind::ordinary, registry);
  g.record_alloc(rec(0x7000, 256, 1));
  g.record_free(0x7000, 2);
  g.record_alloc(rec(0x7000, 128, 3));  // the driver reused the address after the free
  EXPECT_EQ(g.unfreed().size(), 1u);
  EXPECT_EQ(g.unfreed()[0].bytes, 128u);
  g.record_free(0x7000, 4);
  EXPECT_TRUE(g.unfreed().empty());
  EXPECT_EQ(g.free_count(), 2u);
}

TEST_F(GraphLedger, SameAddressTwiceWhileUnfreedIsRefused) {
  graph_ledger g("g", graph_ledger::kind::ordinary, registry);
  g.record_alloc(rec(0x8000, 256, 1));
  EXPECT_NE(error_of([&] { g.record_alloc(rec(0x8000, 256, 2)); }), "");
}

TEST_F(GraphLedger, DeviceLaunchOfGraphWithMemoryNodesIsRefused) {
  graph_ledger g("g", graph_ledger::kind::ordinary, registry);
  EXPECT_NO_THROW(g.check_instantiate({false, true}));  // no memory nodes: allowed
  g.record_alloc(rec(0x9000, 256, 1));
  const std::string msg = error_of([&] { g.check_instantiate({false, true}); });
  EXPECT_NE(msg.find("for device launch"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 alloc node(s) and 0 free node(s)"), std::string::npos) << msg;
  EXPECT_NO_THROW(g.check_instantiate({true, false}));
}

TEST_F(GraphLedger, ForeignFreeAloneMakesDeviceLaunchRefused) {
  graph_ledger a("a", graph_ledger::kind::ordinary, registry);
  graph_ledger b("b", graph_ledger::kind::ordinary, registry);
  a.record_alloc(rec(0xa000, 256, 1));
  b.record_free(0xa000, 2);
  EXPECT_NE(error_of([&] { b.check_instantiate({false, true}); }), "");
}

TEST_F(GraphLedger, AutoFreeWithDeviceLaunchIsRefusedEvenWithoutMemoryNodes) {
  graph_ledger g("g", graph_ledger::kind::ordinary, registry);
  const std::string msg = error_of([&] { g.check_instantiate({true, true}); });
  EXPECT_NE(msg.find("AutoFreeOnLaunch cannot be combined with device launch"),
            std::string::npos)
      << msg;
}

TEST_F(GraphLedger, SecondExecutableGraphIsRefusedOnlyWithMemoryNodes) {
  graph_ledger plain("plain", graph_ledger::kind::ordinary, registry);
  plain.exec_created();
  EXPECT_NO_THROW(plain.check_instantiate({}));

  graph_ledger g("g", graph_ledger::kind::ordinary, registry);
  g.record_alloc(rec(0xb000, 256, 1));
  EXPECT_NO_THROW(g.check_instantiate({}));
  g.exec_created();
  const std::string msg = error_of([&] { g.check_instantiate({}); });
  EXPECT_NE(msg.find("already exists"), std::string::npos) << msg;
  g.exec_destroyed();
  EXPECT_NO_THROW(g.check_instantiate({}));
}

TEST_F(GraphLedger, CloneIsRefusedWithMemoryNodes) {
  graph_ledger g("g", graph_ledger::kind::ordinary, registry);
  EXPECT_NO_THROW(g.check_clone());
  g.record_alloc(rec(0xc000, 256, 1));
  const std::string msg = error_of([&] { g.check_clone(); });
  EXPECT_NE(msg.find("cannot be cloned"), std::string::npos) << msg;
}

TEST_F(GraphLedger, ConditionalBodyAndMovedChildRefuseMemoryNodes) {
  graph_ledger body("body", graph_ledger::kind::conditional_body, registry);
  const std::string msg = error_of([&] { body.check_can_add_memory_node("alloc node"); });
  EXPECT_NE(msg.find("body of a conditional node"), std::string::npos) << msg;

  graph_ledger child("child", graph_ledger::kind::ordinary, registry);
  EXPECT_NO_THROW(child.check_can_add_memory_node("alloc node"));
  child.mark_moved();
  EXPECT_NE(error_of([&] { child.check_can_add_memory_node("free node"); }), "");
}

TEST_F(GraphLedger, AbsorbedChildRecordsBelongToTheParent) {
  graph_ledger parent("parent", graph_ledger::kind::ordinary, registry);
  graph_ledger child("child", graph_ledger::kind::ordinary, registry);
  child.record_alloc(rec(0xd000, 4096, 1));
  child.record_alloc(rec(0xe000, 4096, 2));
  child.record_free(0xe000, 3);
  parent.absorb_child(child);
  EXPECT_EQ(parent.alloc_count(), 2u);
  EXPECT_EQ(parent.free_count(), 1u);
  EXPECT_FALSE(child.has_memory_nodes());
  EXPECT_EQ(child.graph_kind(), graph_ledger::kind::moved_child);
  // The parent may now free the child's allocation as its own.
  EXPECT_EQ(parent.check_free(0xd000), free_target::own_allocation);
  EXPECT_EQ(registry.find(0xd000)->allocating_graph_name, "parent");
}

TEST_F(GraphLedger, AClaimGivenBackLeavesTheAllocationUnfreedAndFreeable) {
  graph_ledger g("g", graph_ledger::kind::ordinary, registry);
  g.record_alloc(rec(0x11000, 256, 1));
  const gmem::free_claim claim = g.claim_free(0x11000);
  EXPECT_EQ(claim.target, free_target::own_allocation);
  EXPECT_TRUE(g.unfreed().empty());  // claimed: no other free node may take it meanwhile
  EXPECT_NE(error_of([&] { (void)g.claim_free(0x11000); }), "");
  g.unclaim_free(claim);  // the driver refused the free node
  ASSERT_EQ(g.unfreed().size(), 1u);
  EXPECT_EQ(g.free_count(), 0u);
  g.record_free(0x11000, 2);
  EXPECT_TRUE(g.unfreed().empty());
  EXPECT_EQ(g.allocations()[0].free_node, gmem::node_handle{2});
}

TEST_F(GraphLedger, ForeignClaimGivenBackLetsAnotherGraphFree) {
  graph_ledger a("a", graph_ledger::kind::ordinary, registry);
  graph_ledger b("b", graph_ledger::kind::ordinary, registry);
  a.record_alloc(rec(0x12000, 256, 1));
  const gmem::free_claim claim = b.claim_free(0x12000);
  EXPECT_EQ(claim.target, free_target::foreign_allocation);
  EXPECT_NE(error_of([&] { a.record_free(0x12000, 2); }), "");
  b.unclaim_free(claim);
  EXPECT_NO_THROW(a.record_free(0x12000, 3));
  EXPECT_TRUE(b.foreign_frees().empty());
}

TEST_F(GraphLedger, AbsorbedChildsUnfreedAllocationsAreTheParentsUnfreed) {
  graph_ledger parent("parent", graph_ledger::kind::ordinary, registry);
  graph_ledger child("child", graph_ledger::kind::ordinary, registry);
  parent.record_alloc(rec(0x13000, 64, 1));
  child.record_alloc(rec(0x14000, 128, 2));
  child.record_alloc(rec(0x15000, 256, 3));
  child.record_free(0x15000, 4);
  parent.absorb_child(child);
  EXPECT_TRUE(child.unfreed().empty());
  const auto unfreed = parent.unfreed();
  ASSERT_EQ(unfreed.size(), 2u);
  EXPECT_EQ(unfreed[0].bytes + unfreed[1].bytes, 64u + 128u);
}

// Another thread's graph, reading this graph's records through the registry while they are
// added and their storage grows, finds every allocation announced to it and claims some of
// them; this graph then refuses those frees. (tools/sanitize.sh runs it under ThreadSanitizer.)
TEST_F(GraphLedger, AllocationsRecordedWhileAnotherThreadsGraphFreesThemAreAllFound) {
  constexpr std::size_t n = 20000;
  const auto address = [](std::size_t i) { return std::uintptr_t{0x7d0000000000} + (i << 21); };
  graph_ledger owner("owner", graph_ledger::kind::ordinary, registry);
  graph_ledger consumer("consumer", graph_ledger::kind::ordinary, registry);  // used by `other`
  std::atomic<std::size_t> announced{0};
  std::atomic<std::size_t> missed{0};
  std::thread other([&] {
    std::size_t done = 0;
    while (done < n) {
      const std::size_t upto = announced.load(std::memory_order_acquire);
      for (std::size_t i = done; i < upto; ++i) {
        try {
          if (i % 7 == 0) {
            consumer.record_free(address(i), 1000000 + i);  // claims it in the owner's ledger
          } else if (consumer.check_free(address(i)) != free_target::foreign_allocation) {
            ++missed;
          }
        } catch (const usage_error&) {
          ++missed;
        }
      }
      done = upto;
    }
  });
  for (std::size_t i = 0; i < n; ++i) {  // the storage grows from 256 records up
    owner.record_alloc(rec(address(i), 64, i + 1));
    announced.store(i + 1, std::memory_order_release);
  }
  other.join();
  EXPECT_EQ(missed.load(), 0u);
  const std::string msg = error_of([&] { (void)owner.check_free(address(7)); });
  EXPECT_NE(msg.find("already has a free node in graph 'consumer'"), std::string::npos) << msg;
  EXPECT_EQ(owner.check_free(address(8)), free_target::own_allocation);
  EXPECT_EQ(owner.unfreed().size(), n);
}

// The index is made only when a lookup looks past the newest records: an address
// at or below the highest one seen is looked up at once, and refused while it is held.
TEST_F(GraphLedger, AddressBelowTheHighestIsLookedUpAndRefusedWhileHeld) {
  graph_ledger g("g", graph_ledger::kind::ordinary, registry);
  const auto address = [](std::uintptr_t i) { return 0x7c0000000000 + (i << 21); };
  for (std::uintptr_t i = 0; i < 10; ++i) g.record_alloc(rec(address(i), 64, i + 1));
  const std::string msg = error_of([&] { g.record_alloc(rec(address(0), 128, 99)); });
  EXPECT_NE(msg.find("already held by an unfreed 64 B allocation"), std::string::npos) << msg;
  EXPECT_EQ(g.alloc_count(), 10u);
  g.record_free(address(1), 50);                  // past the newest four: indexed now
  g.record_alloc(rec(address(1), 256, 51));       // the driver reusing the freed address
  g.record_alloc(rec(0x100000, 64, 52));          // below them all, new
  EXPECT_NE(error_of([&] { g.record_alloc(rec(address(1), 64, 53)); }), "");
  g.record_free(address(1), 54);                  // the newest allocation of the address
  ASSERT_EQ(g.alloc_count(), 12u);
  EXPECT_EQ(g.allocations()[1].free_node, gmem::node_handle{50});
  EXPECT_EQ(g.allocations()[10].free_node, gmem::node_handle{54});
  EXPECT_EQ(g.unfreed().size(), 10u);
  EXPECT_NE(error_of([&] { g.record_free(address(1), 55); }), "");  // freed twice
}

// The ledger against a plain model, through growth, address reuse, refused calls and claims
// given back: what is unfreed, how many frees, and which node freed each allocation.
TEST_F(GraphLedger, AgreesWithAPlainModelOverRandomOperations) {
  graph_ledger g("g", graph_ledger::kind::ordinary, registry);
  struct model_alloc {
    std::uintptr_t address;
    std::size_t bytes;
    std::optional<gmem::node_handle> free_node;
  };
  std::vector<model_alloc> model;
  std::vector<std::uintptr_t> live, freed;  // addresses
  std::mt19937 rng(7);
  gmem::node_handle node = 1;
  std::uintptr_t next_address = 0x7f0000000000;
  const auto take = [&](std::vector<std::uintptr_t>& from) {
    const std::size_t i = rng() % from.size();
    const std::uintptr_t a = from[i];
    from[i] = from.back();
    from.pop_back();
    return a;
  };
  for (int step = 0; step < 5000; ++step) {
    const unsigned op = rng() % 6;
    if (op <= 1 || live.empty()) {  // a new address, or the driver reusing a freed one
      std::uintptr_t a = next_address;
      if (op == 1 && !freed.empty()) {
        a = take(freed);
      } else {
        next_address += 0x200000;
      }
      const std::size_t bytes = 64 * (1 + rng() % 1000);
      g.record_alloc(rec(a, bytes, node++));
      model.push_back({a, bytes, std::nullopt});
      live.push_back(a);
    } else if (op == 2) {  // the same address again while unfreed: refused, nothing changes
      const std::uintptr_t a = live[rng() % live.size()];
      EXPECT_NE(error_of([&] { g.record_alloc(rec(a, 64, node++)); }), "");
    } else if (op == 3) {  // claimed, then the driver refuses the free node
      const std::uintptr_t a = live[rng() % live.size()];
      g.unclaim_free(g.claim_free(a));
    } else {
      const std::uintptr_t a = take(live);
      g.record_free(a, node);
      for (auto it = model.rbegin(); it != model.rend(); ++it) {
        if (it->address == a) {
          it->free_node = node;
          break;
        }
      }
      ++node;
      freed.push_back(a);
    }
  }
  ASSERT_EQ(g.allocations().size(), model.size());
  std::size_t unfreed = 0, frees = 0;
  for (std::size_t i = 0; i < model.size(); ++i) {
    EXPECT_EQ(g.allocations()[i].address, model[i].address);
    EXPECT_EQ(g.allocations()[i].free_node, model[i].free_node) << i;
    (model[i].free_node ? frees : unfreed) += 1;
  }
  EXPECT_EQ(g.unfreed().size(), unfreed);
  EXPECT_EQ(g.unfreed().size(), live.size());
  EXPECT_EQ(g.free_count(), frees);
}

TEST_F(GraphLedger, ObservedFreeOfUnknownAddressIsKeptAsForeign) {
  graph_ledger g("captured", graph_ledger::kind::ordinary, registry);
  g.record_observed_free(0xf000, 1);
  ASSERT_EQ(g.foreign_frees().size(), 1u);
  EXPECT_EQ(g.foreign_frees()[0].address, 0xf000u);
}

TEST(DescribeAllocations, ListsSizeAddressAndDevice) {
  const std::string s =
      gmem::describe_allocations({rec(0x10, 4096, 1), {0x20, 3u << 20, 2, std::nullopt, 1}});
  EXPECT_EQ(s, "4096 B at 0x10 on device 0, 3145728 B (3.0 MiB) at 0x20 on device 1");
}

}  // namespace
