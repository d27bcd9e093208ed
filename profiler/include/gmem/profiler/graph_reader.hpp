#pragma once
// Reads a cudaGraph_t into the plain graph model (the only part of the model that touches the
// driver).

#include <cuda_runtime_api.h>

#include <string>

#include "gmem/profiler/graph_model.hpp"

namespace gmem::profiler {

/// Reads the nodes, edges, node types, alloc parameters and addresses, free addresses and
/// child graphs of `g` (recursively). Throws cuda_error.
[[nodiscard]] graph_model read_graph(cudaGraph_t g, const std::string& name);

}  // namespace gmem::profiler
