#include "measure/skeleton_build.hpp"

#include <set>

namespace gmem::profiler::detail {

std::string context_of(const skeleton& s) { return "replaying the skeleton of graph '" + s.name + "'"; }

built_graph build(const skeleton& s, unsigned long long instantiate_flags, std::vector<user_object> retained) {
  const std::string ctx = context_of(s);
  built_graph b;
  GMEM_CUDA_TRY_CTX(cudaGraphCreate(&b.graph, 0), ctx);
  const std::size_t n = s.nodes.size();
  std::vector<cudaGraphNode_t> made(n, nullptr);
  std::vector<void*> address(n, nullptr);
  std::vector<bool> freed(n, false);
  std::vector<cudaGraphNode_t> deps;
  for (std::size_t v = 0; v < n; ++v) {
    const skeleton_node& node = s.nodes[v];
    deps.clear();
    for (std::size_t d : node.deps) deps.push_back(made[d]);
    const std::string at = ctx + ", creating node #" + std::to_string(v) +
                           (node.label.empty() ? std::string() : " (" + node.label + ")");
    if (node.kind == skeleton_kind::alloc) {
      cudaMemAllocNodeParams p{};
      p.poolProps.allocType = cudaMemAllocationTypePinned;
      p.poolProps.location.type = cudaMemLocationTypeDevice;
      p.poolProps.location.id = node.device;
      std::vector<cudaMemAccessDesc> access;
      for (int peer : node.peers) {
        cudaMemAccessDesc a{};
        a.location.type = cudaMemLocationTypeDevice;
        a.location.id = peer;
        a.flags = cudaMemAccessFlagsProtReadWrite;
        access.push_back(a);
      }
      p.accessDescs = access.empty() ? nullptr : access.data();
      p.accessDescCount = access.size();
      p.bytesize = node.bytes;
      GMEM_CUDA_TRY_CTX(cudaGraphAddMemAllocNode(&made[v], b.graph, deps.data(), deps.size(), &p), at);
      address[v] = p.dptr;
    } else if (node.kind == skeleton_kind::free) {
      GMEM_CUDA_TRY_CTX(cudaGraphAddMemFreeNode(&made[v], b.graph, deps.data(), deps.size(),
                                                address[node.frees]),
                        at);
      freed[node.frees] = true;
    } else {
      GMEM_CUDA_TRY_CTX(cudaGraphAddEmptyNode(&made[v], b.graph, deps.data(), deps.size()), at);
    }
  }
  for (const auto& [from, to] : s.late_edges) {
    GMEM_CUDA_TRY_CTX(cudaGraphAddDependencies(b.graph, &made[from], &made[to], nullptr, 1),
                      ctx + ", adding the late edge " + std::to_string(from) + " -> " + std::to_string(to));
  }
  std::set<void*> distinct;
  for (std::size_t v = 0; v < n; ++v) {
    if (s.nodes[v].kind != skeleton_kind::alloc) continue;
    distinct.insert(address[v]);
    if (!freed[v]) b.unfreed.push_back(address[v]);
  }
  b.distinct_addresses = distinct.size();
  for (user_object& o : retained) {
    GMEM_CUDA_TRY_CTX(cudaGraphRetainUserObject(b.graph, o.get(), 1, cudaGraphUserObjectMove),
                      ctx + ", retaining a user object");
    (void)o.release();  // the graph holds the reference now
  }
  GMEM_CUDA_TRY_CTX(cudaGraphInstantiateWithFlags(&b.exec, b.graph, instantiate_flags), ctx);
  return b;
}

}  // namespace gmem::profiler::detail
