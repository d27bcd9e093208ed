#pragma once
// Reads a driver graph into a graph_shape: the adapter between the driver and the plain
// update checks of gmem/detail/graph_shape.hpp.

#include <cuda_runtime_api.h>

#include <string>

#include "gmem/detail/graph_shape.hpp"

namespace gmem::detail {

/// The kind of a cudaGraphNodeType.
[[nodiscard]] graph_node_kind kind_of(cudaGraphNodeType type) noexcept;

/// The kind of `node` (cudaGraphNodeGetType). Throws cuda_error.
[[nodiscard]] graph_node_kind read_node_kind(cudaGraphNode_t node);

/// Reads `g`: its nodes in the order the driver lists them (creation order), their kinds and
/// dependencies, the parameters of its alloc and free nodes, its child graphs recursively.
/// Throws cuda_error.
[[nodiscard]] graph_shape read_graph_shape(cudaGraph_t g);

/// "the kernel node 0x.. (the 3rd node created in graph 'B')" for a node the driver named:
/// finds its place among `g`'s nodes, or says it lies in one of its child graphs. Never throws.
[[nodiscard]] std::string describe_node(cudaGraphNode_t node, cudaGraph_t g,
                                        const std::string& graph_name) noexcept;

}  // namespace gmem::detail
