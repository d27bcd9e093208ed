#include "gmem/profiler/graph_reader.hpp"

#include <map>
#include <vector>

#include "gmem/error.hpp"

namespace gmem::profiler {
namespace {

node_kind kind_of(cudaGraphNodeType t) {
  switch (t) {
    case cudaGraphNodeTypeKernel: return node_kind::kernel;
    case cudaGraphNodeTypeMemcpy: return node_kind::memcpy;
    case cudaGraphNodeTypeMemset: return node_kind::memset;
    case cudaGraphNodeTypeHost: return node_kind::host;
    case cudaGraphNodeTypeGraph: return node_kind::child_graph;
    case cudaGraphNodeTypeEmpty: return node_kind::empty;
    case cudaGraphNodeTypeWaitEvent: return node_kind::event_wait;
    case cudaGraphNodeTypeEventRecord: return node_kind::event_record;
    case cudaGraphNodeTypeMemAlloc: return node_kind::mem_alloc;
    case cudaGraphNodeTypeMemFree: return node_kind::mem_free;
    case cudaGraphNodeTypeConditional: return node_kind::conditional;
    default: return node_kind::other;
  }
}

}  // namespace

graph_model read_graph(cudaGraph_t g, const std::string& name) {
  graph_model m;
  m.name = name;
  const std::string ctx = "reading graph '" + name + "'";
  std::size_t n = 0;
  GMEM_CUDA_TRY_CTX(cudaGraphGetNodes(g, nullptr, &n), ctx);
  std::vector<cudaGraphNode_t> nodes(n);
  if (n) GMEM_CUDA_TRY_CTX(cudaGraphGetNodes(g, nodes.data(), &n), ctx);
  std::map<cudaGraphNode_t, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i) index[nodes[i]] = i;

  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t{};
    GMEM_CUDA_TRY_CTX(cudaGraphNodeGetType(node, &t), ctx);
    model_node mn;
    mn.kind = kind_of(t);
    if (mn.kind == node_kind::mem_alloc) {
      cudaMemAllocNodeParams p{};
      GMEM_CUDA_TRY_CTX(cudaGraphMemAllocNodeGetParams(node, &p), ctx);
      mn.address = reinterpret_cast<std::uint64_t>(p.dptr);
      mn.bytes = p.bytesize;
      mn.device = p.poolProps.location.id;
      for (std::size_t i = 0; i < p.accessDescCount; ++i) {
        if (p.accessDescs[i].location.id != mn.device) mn.peers.push_back(p.accessDescs[i].location.id);
      }
    } else if (mn.kind == node_kind::mem_free) {
      void* dptr = nullptr;
      GMEM_CUDA_TRY_CTX(cudaGraphMemFreeNodeGetParams(node, &dptr), ctx);
      mn.address = reinterpret_cast<std::uint64_t>(dptr);
    } else if (mn.kind == node_kind::child_graph) {
      cudaGraph_t child = nullptr;
      GMEM_CUDA_TRY_CTX(cudaGraphChildGraphNodeGetGraph(node, &child), ctx);
      mn.child = m.children.size();
      m.children.push_back(
          read_graph(child, name + " / child " + std::to_string(m.children.size())));
    }
    m.nodes.push_back(std::move(mn));
  }

  std::size_t e = 0;
  GMEM_CUDA_TRY_CTX(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &e), ctx);
  std::vector<cudaGraphNode_t> from(e), to(e);
  if (e) GMEM_CUDA_TRY_CTX(cudaGraphGetEdges(g, from.data(), to.data(), nullptr, &e), ctx);
  for (std::size_t i = 0; i < e; ++i) m.edges.emplace_back(index.at(from[i]), index.at(to[i]));
  return m;
}

}  // namespace gmem::profiler
