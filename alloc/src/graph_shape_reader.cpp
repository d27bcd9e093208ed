#include "graph_shape_reader.hpp"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "gmem/error.hpp"

namespace gmem::detail {
namespace {

node_handle handle_of(cudaGraphNode_t n) { return reinterpret_cast<node_handle>(n); }

std::vector<cudaGraphNode_t> nodes_of(cudaGraph_t g) {
  std::size_t n = 0;
  GMEM_CUDA_TRY(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n) GMEM_CUDA_TRY(cudaGraphGetNodes(g, nodes.data(), &n));
  nodes.resize(n);
  return nodes;
}

void read_memory_node(cudaGraphNode_t node, shape_node& out) {
  if (out.kind == graph_node_kind::mem_alloc) {
    cudaMemAllocNodeParams p{};
    GMEM_CUDA_TRY(cudaGraphMemAllocNodeGetParams(node, &p));
    out.address = reinterpret_cast<std::uintptr_t>(p.dptr);
    out.bytes = p.bytesize;
    out.device = p.poolProps.location.id;
    for (std::size_t i = 0; i < p.accessDescCount; ++i) {
      const cudaMemAccessDesc& d = p.accessDescs[i];
      // The resident device always has access: listing it changes nothing.
      if (d.location.type == cudaMemLocationTypeDevice && d.location.id != out.device &&
          d.flags == cudaMemAccessFlagsProtReadWrite) {
        out.peers.push_back(d.location.id);
      }
    }
    std::sort(out.peers.begin(), out.peers.end());
    out.peers.erase(std::unique(out.peers.begin(), out.peers.end()), out.peers.end());
  } else {
    void* dptr = nullptr;
    GMEM_CUDA_TRY(cudaGraphMemFreeNodeGetParams(node, &dptr));
    out.address = reinterpret_cast<std::uintptr_t>(dptr);
  }
}

void read_level(cudaGraph_t g, graph_shape& shape) {
  const std::vector<cudaGraphNode_t> nodes = nodes_of(g);
  std::unordered_map<cudaGraphNode_t, std::size_t> index;
  index.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) index.emplace(nodes[i], i);

  shape.nodes.resize(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    shape_node& out = shape.nodes[i];
    out.handle = handle_of(nodes[i]);
    cudaGraphNodeType type{};
    GMEM_CUDA_TRY(cudaGraphNodeGetType(nodes[i], &type));
    out.kind = kind_of(type);
    if (out.kind == graph_node_kind::mem_alloc || out.kind == graph_node_kind::mem_free) {
      read_memory_node(nodes[i], out);
    } else if (out.kind == graph_node_kind::child_graph) {
      cudaGraph_t child = nullptr;
      GMEM_CUDA_TRY(cudaGraphChildGraphNodeGetGraph(nodes[i], &child));
      out.child = shape.children.size();
      shape.children.emplace_back();
      read_level(child, shape.children.back());
    }
  }

  // Every edge in one call; the edge data is asked for too, since the driver refuses a query
  // that would drop it (programmatic dependencies carry some).
  std::size_t e = 0;
  GMEM_CUDA_TRY(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &e));
  if (e) {
    std::vector<cudaGraphNode_t> from(e), to(e);
    std::vector<cudaGraphEdgeData> data(e);
    GMEM_CUDA_TRY(cudaGraphGetEdges(g, from.data(), to.data(), data.data(), &e));
    for (std::size_t k = 0; k < e; ++k) {
      const auto f = index.find(from[k]);
      const auto t = index.find(to[k]);
      if (f != index.end() && t != index.end()) shape.nodes[t->second].deps.push_back(f->second);
    }
  }
  for (shape_node& n : shape.nodes) std::sort(n.deps.begin(), n.deps.end());
}

}  // namespace

graph_node_kind kind_of(cudaGraphNodeType type) noexcept {
  switch (type) {
    case cudaGraphNodeTypeKernel: return graph_node_kind::kernel;
    case cudaGraphNodeTypeMemcpy: return graph_node_kind::memcpy;
    case cudaGraphNodeTypeMemset: return graph_node_kind::memset;
    case cudaGraphNodeTypeHost: return graph_node_kind::host;
    case cudaGraphNodeTypeGraph: return graph_node_kind::child_graph;
    case cudaGraphNodeTypeEmpty: return graph_node_kind::empty;
    case cudaGraphNodeTypeWaitEvent: return graph_node_kind::event_wait;
    case cudaGraphNodeTypeEventRecord: return graph_node_kind::event_record;
    case cudaGraphNodeTypeExtSemaphoreSignal: return graph_node_kind::semaphore_signal;
    case cudaGraphNodeTypeExtSemaphoreWait: return graph_node_kind::semaphore_wait;
    case cudaGraphNodeTypeMemAlloc: return graph_node_kind::mem_alloc;
    case cudaGraphNodeTypeMemFree: return graph_node_kind::mem_free;
    case cudaGraphNodeTypeConditional: return graph_node_kind::conditional;
    default: return graph_node_kind::other;
  }
}

graph_node_kind read_node_kind(cudaGraphNode_t node) {
  cudaGraphNodeType type{};
  GMEM_CUDA_TRY_CTX(cudaGraphNodeGetType(node, &type),
                    "reading the type of node " + format_address(handle_of(node)));
  return kind_of(type);
}

graph_shape read_graph_shape(cudaGraph_t g) {
  graph_shape shape;
  read_level(g, shape);
  return shape;
}

std::string describe_node(cudaGraphNode_t node, cudaGraph_t g,
                          const std::string& graph_name) noexcept {
  try {
    std::string kind = "node";
    cudaGraphNodeType type{};
    if (cudaGraphNodeGetType(node, &type) == cudaSuccess) {
      kind = std::string(graph_node_kind_name(kind_of(type))) + " node";
    } else {
      (void)cudaGetLastError();
    }
    std::string out = "the " + kind + " " + format_address(handle_of(node));
    const std::vector<cudaGraphNode_t> nodes = nodes_of(g);
    const auto at = std::find(nodes.begin(), nodes.end(), node);
    if (at != nodes.end()) {
      return out + " (the " + ordinal(static_cast<std::size_t>(at - nodes.begin()) + 1) +
             " node created in graph '" + graph_name + "')";
    }
    return out + " (in a child graph of graph '" + graph_name + "')";
  } catch (...) {
    (void)cudaGetLastError();
    return "node " + format_address(handle_of(node));
  }
}

}  // namespace gmem::detail
