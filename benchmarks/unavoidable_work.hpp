// The experiments (cupti_floor.cpp, interpose_floor.cpp): the work a recording cannot move
// out of an instantiation, done the same way under both interceptions. Before the call: a reading
// of the device's memory in use (cuMemGetInfo) and the graph's read (its nodes, their kinds, each
// allocation's and free's parameters, its edges: the calls gmem's recording library makes, without
// building its model). After the call: the second reading. Driver calls only, no allocation after
// the first graphs (the buffers are kept per thread).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <vector>

namespace gmem_experiment {

// The graph's read and the first reading; returns the nodes read.
inline std::size_t before_instantiation(CUgraph graph) {
  std::size_t free_bytes = 0, total = 0;
  cuMemGetInfo(&free_bytes, &total);
  thread_local std::vector<CUgraphNode> nodes, from, to;
  thread_local std::vector<CUgraphEdgeData> data;
  std::size_t n = 0;
  if (cuGraphGetNodes(graph, nullptr, &n) != CUDA_SUCCESS) return 0;
  nodes.resize(n);
  if (n && cuGraphGetNodes(graph, nodes.data(), &n) != CUDA_SUCCESS) return 0;
  for (std::size_t k = 0; k < n; ++k) {
    CUgraphNodeType t{};
    if (cuGraphNodeGetType(nodes[k], &t) != CUDA_SUCCESS) continue;
    if (t == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
      CUDA_MEM_ALLOC_NODE_PARAMS p{};
      cuGraphMemAllocNodeGetParams(nodes[k], &p);
    } else if (t == CU_GRAPH_NODE_TYPE_MEM_FREE) {
      CUdeviceptr d = 0;
      cuGraphMemFreeNodeGetParams(nodes[k], &d);
    }
  }
  std::size_t e = 0;
  if (cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &e) == CUDA_SUCCESS && e) {
    from.resize(e);
    to.resize(e);
    data.resize(e);
    cuGraphGetEdges(graph, from.data(), to.data(), data.data(), &e);
  }
  return n;
}

// The second reading.
inline void after_instantiation() {
  std::size_t free_bytes = 0, total = 0;
  cuMemGetInfo(&free_bytes, &total);
}

}  // namespace gmem_experiment
