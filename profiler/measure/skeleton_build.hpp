#pragma once
// Building a skeleton on the driver (memory nodes and empty nodes, in its creation order), shared
// by the skeleton replay and the set replay. Private to profiler/measure.

#include <cuda_runtime_api.h>

#include <string>
#include <utility>
#include <vector>

#include "gmem/error.hpp"
#include "gmem/profiler/skeleton.hpp"
#include "gmem/user_object.hpp"

namespace gmem::profiler::detail {

/// Owns what one replay made, so that an error midway leaves nothing behind.
struct built_graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::vector<void*> unfreed;  ///< what the graph leaves allocated, freed after the launches
  std::size_t distinct_addresses = 0;
  built_graph() = default;
  built_graph(const built_graph&) = delete;
  built_graph& operator=(const built_graph&) = delete;
  built_graph(built_graph&& o) noexcept
      : graph(std::exchange(o.graph, nullptr)), exec(std::exchange(o.exec, nullptr)),
        unfreed(std::move(o.unfreed)), distinct_addresses(o.distinct_addresses) {}
  built_graph& operator=(built_graph&&) = delete;
  ~built_graph() {
    if (exec) (void)cudaGraphExecDestroy(exec);
    if (graph) (void)cudaGraphDestroy(graph);
  }
  // Frees what the launches left allocated and destroys the graph, reporting errors.
  void finish(const std::string& ctx) {
    for (void* p : unfreed) GMEM_CUDA_TRY_CTX(cudaFree(p), ctx + ", freeing what the graph left allocated");
    unfreed.clear();
    GMEM_CUDA_TRY_CTX(cudaGraphExecDestroy(exec), ctx);
    exec = nullptr;
    GMEM_CUDA_TRY_CTX(cudaGraphDestroy(graph), ctx);
    graph = nullptr;
  }
};


/// "replaying the skeleton of graph 'g'": the context of every error of a replay.
std::string context_of(const skeleton& s);

/// Builds `s` (validated by the caller) on the current device in its creation order, moves the
/// references of `retained` into the graph (cudaGraphRetainUserObject, before the instantiation,
/// so that its executable graphs hold them too: a buffer outside the graph that it writes lives
/// as long as they do), and instantiates it with `instantiate_flags`. Throws cuda_error naming
/// the node; a user object the graph did not take keeps its reference (released with it).
built_graph build(const skeleton& s, unsigned long long instantiate_flags, std::vector<user_object> retained = {});

}  // namespace gmem::profiler::detail
