// The checks gmem makes on an update of an executable graph before the driver: shapes built by
// hand, as the reader would return them from the driver.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gmem/detail/graph_shape.hpp"
#include "gmem/usage_error.hpp"

namespace {

using gmem::graph_shape;
using gmem::memory_signature;
using gmem::node_handle;
using gmem::graph_node_kind;
using gmem::shape_node;
using gmem::update_refusal;

constexpr std::size_t MiB = std::size_t{1} << 20;

shape_node plain(node_handle h, graph_node_kind k, std::vector<std::size_t> deps = {}) {
  shape_node n;
  n.handle = h;
  n.kind = k;
  n.deps = std::move(deps);
  return n;
}

shape_node alloc(node_handle h, std::uintptr_t address, std::size_t bytes,
                 std::vector<std::size_t> deps = {}, int device = 0, std::vector<int> peers = {}) {
  shape_node n = plain(h, graph_node_kind::mem_alloc, std::move(deps));
  n.address = address;
  n.bytes = bytes;
  n.device = device;
  n.peers = std::move(peers);
  return n;
}

shape_node free_of(node_handle h, std::uintptr_t address, std::vector<std::size_t> deps) {
  shape_node n = plain(h, graph_node_kind::mem_free, std::move(deps));
  n.address = address;
  return n;
}

/// alloc -> kernel -> free, handles from `base`, the allocation at `address`.
graph_shape chain(node_handle base, std::uintptr_t address, std::size_t bytes = MiB) {
  graph_shape s;
  s.nodes = {alloc(base, address, bytes), plain(base + 1, graph_node_kind::kernel, {0}),
             free_of(base + 2, address, {1})};
  return s;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GraphShapeUpdate, SameShapeWithOtherAddressesAndHandlesPasses) {
  const graph_shape a = chain(0xa0, 0x10000);
  const graph_shape b = chain(0xb0, 0x90000);
  EXPECT_FALSE(gmem::compare_topology(a, b, "A", "B"));
  EXPECT_FALSE(gmem::compare_memory(gmem::signature_of(a), gmem::signature_of(b), "A", "B"));
}

TEST(GraphShapeUpdate, ChangedAllocSizeIsRefusedNamingTheAllocNodeOfTheNewGraph) {
  const graph_shape a = chain(0xa0, 0x10000, MiB);
  const graph_shape b = chain(0xb0, 0x90000, 2 * MiB);
  EXPECT_FALSE(gmem::compare_topology(a, b, "A", "B"));  // the topology is the same
  const auto m = gmem::compare_memory(gmem::signature_of(a), gmem::signature_of(b), "A", "B");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reason, update_refusal::parameters_changed);
  EXPECT_EQ(m->node, node_handle{0xb0});
  EXPECT_EQ(m->from_node, node_handle{0});
  EXPECT_TRUE(has(m->message, "updating executable graph 'A' with graph 'B'")) << m->message;
  EXPECT_TRUE(has(m->message, "the 1st alloc node of graph 'B' (0xb0) asks for 2097152 B (2.0 MiB) "
                              "on device 0 where its pair in the executable graph (0xa0) asks "
                              "for 1048576 B (1.0 MiB) on device 0"))
      << m->message;
  EXPECT_TRUE(has(m->message, "instantiate a new executable graph from 'B' instead")) << m->message;
}

TEST(GraphShapeUpdate, ChangedDeviceOrPeersAreRefusedToo) {
  graph_shape a = chain(0xa0, 0x10000);
  graph_shape b = chain(0xb0, 0x90000);
  b.nodes[0].device = 1;
  auto m = gmem::compare_memory(gmem::signature_of(a), gmem::signature_of(b), "A", "B");
  ASSERT_TRUE(m);
  EXPECT_TRUE(has(m->message, "on device 1 where")) << m->message;

  b.nodes[0].device = 0;
  b.nodes[0].peers = {1};
  m = gmem::compare_memory(gmem::signature_of(a), gmem::signature_of(b), "A", "B");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reason, update_refusal::parameters_changed);
  EXPECT_TRUE(has(m->message, "on device 0 with read-write access for device 1 where"))
      << m->message;
}

TEST(GraphShapeUpdate, AnExtraNodeIsATopologyChangeThatGivesBothCounts) {
  const graph_shape a = chain(0xa0, 0x10000);
  graph_shape b = chain(0xb0, 0x90000);
  b.nodes.push_back(plain(0xb3, graph_node_kind::empty, {2}));
  const auto m = gmem::compare_topology(a, b, "A", "B");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reason, update_refusal::topology_changed);
  EXPECT_EQ(m->node, node_handle{0});
  EXPECT_TRUE(has(m->message, "graph 'B' has 4 nodes where the executable graph has 3"))
      << m->message;
}

TEST(GraphShapeUpdate, AChangedNodeKindNamesTheNodeAndBothKinds) {
  const graph_shape a = chain(0xa0, 0x10000);
  graph_shape b = chain(0xb0, 0x90000);
  b.nodes[1].kind = graph_node_kind::memset;
  const auto m = gmem::compare_topology(a, b, "A", "B");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reason, update_refusal::node_type_changed);
  EXPECT_EQ(m->node, node_handle{0xb1});
  EXPECT_TRUE(has(m->message, "the memset node 0xb1 (the 2nd node created in graph 'B') pairs "
                              "with a kernel node of the executable graph"))
      << m->message;
}

TEST(GraphShapeUpdate, AChangedDependencyNamesTheNodeAndTheDependencyThatDoesNotMatch) {
  // A: alloc -> k1 -> k2 -> free; B: k2 depends on the alloc node instead of k1.
  graph_shape a;
  a.nodes = {alloc(0xa0, 0x10000, MiB), plain(0xa1, graph_node_kind::kernel, {0}),
             plain(0xa2, graph_node_kind::kernel, {1}), free_of(0xa3, 0x10000, {2})};
  graph_shape b;
  b.nodes = {alloc(0xb0, 0x90000, MiB), plain(0xb1, graph_node_kind::kernel, {0}),
             plain(0xb2, graph_node_kind::kernel, {0}), free_of(0xb3, 0x90000, {2})};
  const auto m = gmem::compare_topology(a, b, "A", "B");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reason, update_refusal::topology_changed);
  EXPECT_EQ(m->node, node_handle{0xb2});
  EXPECT_EQ(m->from_node, node_handle{0xb0});
  EXPECT_TRUE(has(m->message, "the kernel node 0xb2 (the 3rd node created in graph 'B') depends on "
                              "the alloc node 0xb0 (the 1st node created in graph 'B'), and its "
                              "pair in the executable graph does not (it depends on its 2nd node)"))
      << m->message;
}

TEST(GraphShapeUpdate, AnotherDependencyCountIsATopologyChangeAtThatNode) {
  graph_shape a = chain(0xa0, 0x10000);
  graph_shape b = chain(0xb0, 0x90000);
  b.nodes[2].deps = {0, 1};
  const auto m = gmem::compare_topology(a, b, "A", "B");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->node, node_handle{0xb2});
  EXPECT_TRUE(has(m->message, "has 2 dependencies where its pair in the executable graph has 1"))
      << m->message;
}

TEST(GraphShapeUpdate, ChildGraphsAreComparedLevelByLevel) {
  graph_shape a;
  a.nodes = {plain(0xa0, graph_node_kind::child_graph), plain(0xa1, graph_node_kind::kernel, {0})};
  a.nodes[0].child = 0;
  a.children = {chain(0xa10, 0x10000)};
  graph_shape b = a;
  b.nodes[0].handle = 0xb0;
  b.nodes[1].handle = 0xb1;
  b.children = {chain(0xb10, 0x90000)};
  EXPECT_FALSE(gmem::compare_topology(a, b, "A", "B"));

  b.children[0].nodes.push_back(plain(0xb13, graph_node_kind::empty, {2}));
  auto m = gmem::compare_topology(a, b, "A", "B");
  ASSERT_TRUE(m);
  EXPECT_TRUE(has(m->message, "the child graph of the 1st node of graph 'B' has 4 nodes where its "
                              "paired child graph in the executable graph has 3"))
      << m->message;

  b.children = {chain(0xb10, 0x90000, 3 * MiB)};  // same topology, a larger allocation
  EXPECT_FALSE(gmem::compare_topology(a, b, "A", "B"));
  m = gmem::compare_memory(gmem::signature_of(a), gmem::signature_of(b), "A", "B");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->node, node_handle{0xb10});  // the alloc node inside the child graph
  EXPECT_TRUE(has(m->message, "3145728 B (3.0 MiB)")) << m->message;
}

TEST(GraphShapeUpdate, AFreeOfAnotherAllocationIsRefusedNamingTheFreeNode) {
  // Both graphs free both allocations at the same places, but B's first free frees its second
  // allocation: the pairs of alloc and free nodes differ.
  graph_shape a;
  a.nodes = {alloc(0xa0, 0x10000, MiB), alloc(0xa1, 0x20000, MiB),
             free_of(0xa2, 0x10000, {0, 1}), free_of(0xa3, 0x20000, {2})};
  graph_shape b;
  b.nodes = {alloc(0xb0, 0x90000, MiB), alloc(0xb1, 0xa0000, MiB),
             free_of(0xb2, 0xa0000, {0, 1}), free_of(0xb3, 0x90000, {2})};
  EXPECT_FALSE(gmem::compare_topology(a, b, "A", "B"));
  const auto m = gmem::compare_memory(gmem::signature_of(a), gmem::signature_of(b), "A", "B");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reason, update_refusal::parameters_changed);
  EXPECT_EQ(m->node, node_handle{0xb3});
  EXPECT_TRUE(has(m->message, "the 1st alloc node of graph 'B' (0xb0) is freed by the 2nd free "
                              "node of graph 'B' (0xb3) where its pair in the executable graph "
                              "(0xa0) is freed by the executable graph's 1st free node"))
      << m->message;
}

TEST(GraphShapeUpdate, SignaturePairsAFreeWithTheLatestEarlierAllocationOfItsAddress) {
  // The driver reuses an address once its free is ordered before the next alloc node.
  graph_shape s;
  s.nodes = {alloc(1, 0x10000, MiB), free_of(2, 0x10000, {0}), alloc(3, 0x10000, MiB, {1}),
             free_of(4, 0x10000, {2}), free_of(5, 0x77000, {})};
  const memory_signature sig = gmem::signature_of(s);
  ASSERT_EQ(sig.allocations.size(), 2u);
  EXPECT_EQ(sig.allocations[0].free_node, node_handle{2});
  EXPECT_EQ(sig.allocations[0].free_position, 0u);
  EXPECT_EQ(sig.allocations[1].free_node, node_handle{4});
  // The foreign free is ready from the start but created last: read last.
  EXPECT_EQ(sig.allocations[1].free_position, 1u);
  ASSERT_EQ(sig.foreign_frees.size(), 1u);
  EXPECT_EQ(sig.foreign_frees[0].node, node_handle{5});
  EXPECT_EQ(sig.foreign_frees[0].address, 0x77000u);
}

TEST(GraphShapeUpdate, SignatureReadsTopologicallyLikeTheLedger) {
  // Node 0 was created first but depends on node 1 (an edge added later): read after it.
  graph_shape s;
  s.nodes = {alloc(1, 0x20000, 2 * MiB, {1}), alloc(2, 0x10000, MiB)};
  const memory_signature sig = gmem::signature_of(s);
  ASSERT_EQ(sig.allocations.size(), 2u);
  EXPECT_EQ(sig.allocations[0].node, node_handle{2});
  EXPECT_EQ(sig.allocations[1].node, node_handle{1});
}

TEST(GraphShapeUpdate, ALedgersSignatureChecksSizesAndFreesButNotPeers) {
  gmem::allocation_registry registry;
  gmem::graph_ledger ledger("A", gmem::graph_ledger::kind::ordinary, registry);
  ledger.record_alloc({0x10000, MiB, 0xa0, std::nullopt, 0});
  ledger.record_free(0x10000, 0xa2);
  const memory_signature from_ledger = gmem::signature_of(ledger);
  ASSERT_EQ(from_ledger.allocations.size(), 1u);
  EXPECT_FALSE(from_ledger.allocations[0].peers);  // a ledger keeps none
  EXPECT_TRUE(from_ledger.allocations[0].freed_here);
  EXPECT_FALSE(from_ledger.allocations[0].free_position);

  graph_shape b = chain(0xb0, 0x90000);
  b.nodes[0].peers = {1};  // not known on the ledger's side: not compared
  EXPECT_FALSE(gmem::compare_memory(from_ledger, gmem::signature_of(b), "A", "B"));

  b.nodes.pop_back();  // B leaves its allocation unfreed
  b.nodes.push_back(plain(0xb2, graph_node_kind::empty, {1}));
  const auto m = gmem::compare_memory(from_ledger, gmem::signature_of(b), "A", "B");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->node, node_handle{0xb0});
  EXPECT_TRUE(has(m->message, "is not freed in the graph where its pair in the executable graph "
                              "(0xa0) is (by free node 0xa2)"))
      << m->message;
}

TEST(GraphShapeUpdate, MemoryNodesAddedOrFreesOfOtherAddressesAreRefused) {
  const graph_shape a = chain(0xa0, 0x10000);
  graph_shape b = chain(0xb0, 0x90000);
  b.nodes.push_back(alloc(0xb3, 0x95000, MiB, {2}));
  auto m = gmem::compare_memory(gmem::signature_of(a), gmem::signature_of(b), "A", "B");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reason, update_refusal::topology_changed);
  EXPECT_EQ(m->node, node_handle{0xb3});
  EXPECT_TRUE(has(m->message, "graph 'B' has 2 alloc nodes where the executable graph has 1"))
      << m->message;

  graph_shape fa;
  fa.nodes = {free_of(0xa0, 0x50000, {})};
  graph_shape fb;
  fb.nodes = {free_of(0xb0, 0x60000, {})};
  m = gmem::compare_memory(gmem::signature_of(fa), gmem::signature_of(fb), "A", "B");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reason, update_refusal::parameters_changed);
  EXPECT_EQ(m->node, node_handle{0xb0});
  EXPECT_TRUE(has(m->message, "the free node 0xb0 of graph 'B' frees 0x60000 (an allocation of "
                              "another graph) where its pair in the executable graph (0xa0) "
                              "frees 0x50000"))
      << m->message;
}

TEST(GraphShapeUpdate, AGraphWithMemoryNodesInstantiatedElsewhereIsRefused) {
  gmem::allocation_registry registry;
  gmem::graph_ledger current("A", gmem::graph_ledger::kind::ordinary, registry);
  gmem::graph_ledger next("B", gmem::graph_ledger::kind::ordinary, registry);
  next.record_alloc({0x90000, MiB, 0xb0, std::nullopt, 0});
  EXPECT_FALSE(gmem::check_update_source(current, next, "A"));  // not instantiated yet
  next.exec_created();
  const auto m = gmem::check_update_source(current, next, "A");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reason, update_refusal::instantiated_elsewhere);
  EXPECT_TRUE(has(m->message, "'B' holds memory nodes and is already instantiated as another "
                              "executable graph"))
      << m->message;
  // Its own graph is instantiated as this very executable graph: allowed.
  EXPECT_FALSE(gmem::check_update_source(next, next, "B"));
  // Without memory nodes a graph may have many executable graphs.
  gmem::graph_ledger plain_graph("C", gmem::graph_ledger::kind::ordinary, registry);
  plain_graph.exec_created();
  EXPECT_FALSE(gmem::check_update_source(current, plain_graph, "A"));
  next.exec_destroyed();
  plain_graph.exec_destroyed();
}

TEST(GraphShapeUpdate, MemoryNodesParametersCannotBeSetAndKindsMustAgree) {
  auto m = gmem::check_node_update(graph_node_kind::mem_alloc, graph_node_kind::mem_alloc, 0xa0,
                                   "executable graph 'A'");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reason, update_refusal::not_supported);
  EXPECT_EQ(m->node, node_handle{0xa0});
  EXPECT_TRUE(has(m->message, "setting the parameters of the alloc node 0xa0 in executable graph "
                              "'A': the parameters of alloc and free nodes are fixed"))
      << m->message;
  m = gmem::check_node_update(graph_node_kind::mem_free, graph_node_kind::kernel, 0xa2,
                              "graph 'A'");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reason, update_refusal::not_supported);
  m = gmem::check_node_update(graph_node_kind::memset, graph_node_kind::kernel, 0xa1,
                              "executable graph 'A'");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->reason, update_refusal::node_type_changed);
  EXPECT_TRUE(has(m->message, "the memset node 0xa1")) << m->message;
  EXPECT_TRUE(has(m->message, "the parameters given are a kernel node's")) << m->message;
  EXPECT_FALSE(gmem::check_node_update(graph_node_kind::kernel, graph_node_kind::kernel, 0xa1,
                                       "graph 'A'"));
}

TEST(GraphShapeUpdate, UpdateErrorIsAUsageErrorCarryingTheNodes) {
  const gmem::update_mismatch m{update_refusal::topology_changed, 0xb2, 0xb0, "why"};
  try {
    gmem::throw_update_error(m);
    FAIL() << "no throw";
  } catch (const gmem::usage_error& e) {
    const auto* u = dynamic_cast<const gmem::update_error*>(&e);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->reason(), update_refusal::topology_changed);
    EXPECT_EQ(u->node(), 0xb2u);
    EXPECT_EQ(u->from_node(), 0xb0u);
    EXPECT_STREQ(u->what(), "why");
  }
}

TEST(GraphShapeUpdate, OrdinalsReadAsWords) {
  const std::vector<std::pair<std::size_t, std::string>> cases = {
      {1, "1st"},   {2, "2nd"},   {3, "3rd"},   {4, "4th"},     {11, "11th"}, {12, "12th"},
      {13, "13th"}, {21, "21st"}, {22, "22nd"}, {101, "101st"}, {111, "111th"}};
  for (const auto& [n, word] : cases) EXPECT_EQ(gmem::ordinal(n), word);
}

TEST(GraphShapeUpdate, MemoryNodesAreFoundInChildGraphs) {
  graph_shape s;
  s.nodes = {plain(1, graph_node_kind::child_graph)};
  s.nodes[0].child = 0;
  s.children.emplace_back();
  EXPECT_FALSE(s.has_memory_nodes());
  s.children[0].nodes = {alloc(2, 0x1000, MiB)};
  EXPECT_TRUE(s.has_memory_nodes());
}

}  // namespace
