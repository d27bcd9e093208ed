#pragma once
// An owned CUDA graph whose memory nodes gmem keeps a ledger of, so that it can say what is
// wrong (unknown address, double free, forbidden instantiation...) before the driver does.

#include <cuda_runtime_api.h>

#include <initializer_list>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmem/alloc_request.hpp"
#include "gmem/detail/graph_ledger.hpp"
#include "gmem/detail/kernel_args.hpp"

namespace gmem {

class user_object;

/// The dependencies of a new node: a non-owning view, like std::span, over braces
/// (`{a, b}`) or a std::vector. It never allocates (adding a node costs no more than the raw
/// call); keep dependencies you build up in a std::vector<cudaGraphNode_t>, not in a node_list.
class node_list {
 public:
  node_list() noexcept = default;
// The braces' array lives until the end of the full expression that holds the call taking the
// node_list, which is all a node_list is for: the compiler's lifetime warning does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  node_list(std::initializer_list<cudaGraphNode_t> nodes) noexcept  // NOLINT: braces convert
      : data_(nodes.begin()), size_(nodes.size()) {}
#pragma GCC diagnostic pop
  node_list(const std::vector<cudaGraphNode_t>& nodes) noexcept  // NOLINT: vectors convert
      : data_(nodes.data()), size_(nodes.size()) {}
  [[nodiscard]] const cudaGraphNode_t* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }

 private:
  const cudaGraphNode_t* data_ = nullptr;
  std::size_t size_ = 0;
};

/// What an alloc node returned: the fixed virtual address and the node itself.
struct graph_allocation {
  void* ptr = nullptr;
  cudaGraphNode_t node = nullptr;
  std::size_t bytes = 0;
  int device = 0;
};

class graph {
 public:
  /// Creates an empty graph called `name` (the name appears in every error about it).
  /// Throws cuda_error.
  explicit graph(std::string name = "graph");

  /// Takes ownership of `g` (for example a captured graph) and reads its memory nodes, child
  /// graphs included, into the ledger. Throws cuda_error.
  static graph adopt(cudaGraph_t g, std::string name);
  /// Same, reading into `ledger` (a capture's, holding the claims of its cudaFreeAsync calls).
  static graph adopt(cudaGraph_t g, std::shared_ptr<graph_ledger> ledger);

  ~graph();
  graph(graph&& other) noexcept;
  graph& operator=(graph&& other) noexcept;
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;

  [[nodiscard]] cudaGraph_t get() const noexcept { return handle_; }
  [[nodiscard]] const std::string& name() const noexcept { return ledger_->name(); }
  [[nodiscard]] const graph_ledger& ledger() const noexcept { return *ledger_; }
  /// Shared with the executable graphs made from it (they count themselves in and out).
  [[nodiscard]] const std::shared_ptr<graph_ledger>& shared_ledger() const noexcept {
    return ledger_;
  }

  /// Adds an alloc node. Checks the request (size, devices, peer access) and the graph kind
  /// first and throws usage_error; throws cuda_error if the driver refuses.
  graph_allocation add_alloc(const alloc_request& request, const node_list& deps = {});

  /// Adds a free node for `ptr`, which an alloc node of this graph or of another gmem graph
  /// returned. Throws usage_error for an unknown address or a second free, cuda_error if the
  /// driver refuses.
  cudaGraphNode_t add_free(void* ptr, const node_list& deps);

  /// Adds a kernel node running `kernel<<<grid, block, shared_bytes>>>(args...)`. Throws
  /// usage_error for an empty graph, cuda_error if the driver refuses. (So do the adders below.)
  template <typename... Params, typename... Args>
  cudaGraphNode_t add_kernel(const node_list& deps, void (*kernel)(Params...), dim3 grid,
                             dim3 block, unsigned int shared_bytes, Args&&... args) {
    detail::kernel_args<Params...> packed(std::forward<Args>(args)...);
    return add_kernel_raw(deps, reinterpret_cast<void*>(kernel), grid, block, shared_bytes,
                          packed.get());
  }

  /// Adds a kernel node from raw parameters (`args` as for cudaLaunchKernel).
  cudaGraphNode_t add_kernel_raw(const node_list& deps, void* func, dim3 grid, dim3 block,
                                 unsigned int shared_bytes, void** args);

  /// Changes kernel node `node` of this graph to run `kernel<<<grid, block, shared_bytes>>>
  /// (args...)` (cudaGraphKernelNodeSetParams): executable graphs made before keep theirs until
  /// updated with this graph (graph_exec::update). Throws update_error when `node` is not a
  /// kernel node (memory nodes' parameters are fixed), cuda_error if the driver refuses.
  template <typename... Params, typename... Args>
  void set_kernel(cudaGraphNode_t node, void (*kernel)(Params...), dim3 grid, dim3 block,
                  unsigned int shared_bytes, Args&&... args) {
    detail::kernel_args<Params...> packed(std::forward<Args>(args)...);
    set_kernel_raw(node, reinterpret_cast<void*>(kernel), grid, block, shared_bytes,
                   packed.get());
  }

  /// set_kernel from raw parameters (`args` as for cudaLaunchKernel).
  void set_kernel_raw(cudaGraphNode_t node, void* func, dim3 grid, dim3 block,
                      unsigned int shared_bytes, void** args);

  /// Adds a memset node setting `bytes` bytes at `dst` (device memory of the current device)
  /// to `value`.
  cudaGraphNode_t add_memset(const node_list& deps, void* dst, unsigned char value,
                             std::size_t bytes);

  /// Adds a 1-D memcpy node.
  cudaGraphNode_t add_memcpy(const node_list& deps, void* dst, const void* src, std::size_t bytes,
                             cudaMemcpyKind kind = cudaMemcpyDefault);

  /// Adds an empty node (a join point).
  cudaGraphNode_t add_empty(const node_list& deps);

  /// Adds a node recording `e` when its dependencies are done.
  cudaGraphNode_t add_event_record(const node_list& deps, cudaEvent_t e);

  /// Adds a node waiting for `e` before its dependents run.
  cudaGraphNode_t add_event_wait(const node_list& deps, cudaEvent_t e);

  /// Moves `child` (which may hold memory nodes) into a child-graph node of this graph: its
  /// allocations and frees become this graph's. `child` is left empty. Throws usage_error if
  /// `child` is not an ordinary graph or has live executable graphs, cuda_error otherwise.
  cudaGraphNode_t add_child_graph(const node_list& deps, graph&& child);

  /// Creates a handle for a conditional node of this graph. Throws cuda_error.
  cudaGraphConditionalHandle make_conditional_handle(unsigned int default_value = 0,
                                                     unsigned int flags = 0);

  /// Adds a conditional node and returns its body graphs (owned by the node; the returned
  /// graphs do not destroy them). A later add_alloc / add_free on a body throws usage_error.
  /// Throws cuda_error if the driver refuses the node.
  std::vector<graph> add_conditional(const node_list& deps, cudaGraphConditionalHandle handle,
                                     cudaGraphConditionalNodeType type, unsigned int size = 1,
                                     cudaGraphNode_t* node_out = nullptr);

  /// Gives the graph a reference of its own to `object` (cudaGraphRetainUserObject): the
  /// graph, its clones and its executable graphs keep the object alive; `object` keeps its own
  /// reference. Throws usage_error for an empty graph or object, cuda_error.
  void retain(const user_object& object);
  /// Moves `object`'s reference into the graph (cudaGraphUserObjectMove), leaving `object`
  /// empty: from now on the graph and its executable graphs hold the object. Throws as above
  /// (`object` unchanged then).
  void retain(user_object&& object);

  /// Clones the graph. Throws usage_error if it holds memory nodes (the driver cannot clone
  /// them), cuda_error otherwise.
  [[nodiscard]] graph clone(std::string name) const;

  /// Number of nodes at the top level of the graph. Throws cuda_error.
  [[nodiscard]] std::size_t node_count() const;

 private:
  graph(cudaGraph_t handle, bool owning, std::shared_ptr<graph_ledger> ledger) noexcept;
  /// Destroys the driver's graph if this graph owns it.
  void destroy() noexcept;
  cudaGraphNode_t add_node(const node_list& deps, cudaGraphNodeParams& params, const char* what);
  void require_ordinary(const char* what) const {
    if (!handle_ || !ledger_) refuse_empty(what);
  }
  [[noreturn]] static void refuse_empty(const char* what);
  /// add_alloc's path for a request with peers or one that fails validation (which throws
  /// usage_error): validates, describes the peers' access and adds the node (the runtime's
  /// call), its address into `ptr`.
  cudaError_t add_alloc_node_checked(const alloc_request& request, int devices,
                                     const node_list& deps, cudaGraphNode_t& node, void*& ptr);

  cudaGraph_t handle_ = nullptr;
  bool owning_ = true;
  std::shared_ptr<graph_ledger> ledger_;
};

/// Reads the memory nodes of `g` (recursing into child graphs) into `ledger`. Addresses freed
/// here but allocated by an unknown graph are recorded as foreign frees without a check: the
/// driver already accepted them. Throws cuda_error.
void read_memory_nodes(cudaGraph_t g, graph_ledger& ledger);

}  // namespace gmem
