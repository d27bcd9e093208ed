#include "gmem/graph.hpp"

#include <map>
#include <set>
#include <utility>

#include "gmem/capability.hpp"
#include "gmem/detail/graph_shape.hpp"
#include "gmem/error.hpp"
#include "gmem/user_object.hpp"
#include "graph_shape_reader.hpp"
#include "kernel_node_params.hpp"
#include "memory_node_calls.hpp"

namespace gmem {
namespace {

std::uintptr_t as_uint(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

std::string in_graph(const std::string& name) { return "graph '" + name + "'"; }

// The driver's refusals of memory nodes, out of line: the path of every node stays short (the
// driver's calls in between evict the instruction cache).
[[noreturn, gnu::cold, gnu::noinline]] void refuse_alloc_node(cudaError_t err, std::size_t bytes,
                                                             int device, const std::string& graph) {
  detail::throw_cuda_error(err, "cudaGraphAddMemAllocNode", __FILE__, __LINE__,
                           "alloc node of " + format_bytes(bytes) + " on device " +
                               std::to_string(device) + " in " + in_graph(graph));
}

[[noreturn, gnu::cold, gnu::noinline]] void refuse_free_node(cudaError_t err, const void* ptr,
                                                            const std::string& graph) {
  detail::throw_cuda_error(err, "cudaGraphAddMemFreeNode", __FILE__, __LINE__,
                           "free node of " + format_address(as_uint(ptr)) + " in " +
                               in_graph(graph));
}

}  // namespace

graph::graph(std::string name) : ledger_(std::make_shared<graph_ledger>(std::move(name))) {
  GMEM_CUDA_TRY_CTX(cudaGraphCreate(&handle_, 0), "creating " + in_graph(ledger_->name()));
  ledger_->set_graph_alive(true);
}

graph::graph(cudaGraph_t handle, bool owning, std::shared_ptr<graph_ledger> ledger) noexcept
    : handle_(handle), owning_(owning), ledger_(std::move(ledger)) {
  if (owning_ && handle_ && ledger_) ledger_->set_graph_alive(true);
}

void graph::destroy() noexcept {
  if (owning_ && handle_) {
    GMEM_CUDA_TRY_NOTHROW(cudaGraphDestroy(handle_));
    if (ledger_) ledger_->set_graph_alive(false);
  }
}

graph graph::adopt(cudaGraph_t g, std::string name) {
  return adopt(g, std::make_shared<graph_ledger>(std::move(name)));
}

graph graph::adopt(cudaGraph_t g, std::shared_ptr<graph_ledger> ledger) {
  graph out(g, true, std::move(ledger));
  read_memory_nodes(g, *out.ledger_);
  return out;
}

graph::~graph() { destroy(); }

graph::graph(graph&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      owning_(other.owning_),
      ledger_(std::move(other.ledger_)) {}

graph& graph::operator=(graph&& other) noexcept {
  if (this != &other) {
    destroy();
    handle_ = std::exchange(other.handle_, nullptr);
    owning_ = other.owning_;
    ledger_ = std::move(other.ledger_);
  }
  return *this;
}

void graph::refuse_empty(const char* what) {
  throw usage_error(std::string(what) + ": this gmem::graph is empty (moved from, or moved "
                    "into a parent as a child graph); use the graph it was moved to");
}

graph_allocation graph::add_alloc(const alloc_request& request, const node_list& deps) {
  require_ordinary("adding an alloc node");
  ledger_->check_can_add_memory_node("alloc node");
  static const int devices = device_count();  // fixed for the process
  void* ptr = nullptr;
  cudaGraphNode_t node = nullptr;
  const cudaError_t err =
      is_plain_request(request, devices)
          ? detail::add_mem_alloc_node(&node, handle_, deps.data(), deps.size(), request.device,
                                       request.bytes, &ptr)
          : add_alloc_node_checked(request, devices, deps, node, ptr);
  if (err != cudaSuccess) refuse_alloc_node(err, request.bytes, request.device, name());
  ledger_->record_alloc(
      {as_uint(ptr), request.bytes, as_uint(node), std::nullopt, request.device});
  return {ptr, node, request.bytes, request.device};
}

cudaError_t graph::add_alloc_node_checked(const alloc_request& request, int devices,
                                          const node_list& deps, cudaGraphNode_t& node,
                                          void*& ptr) {
  static const peer_access_query query = can_access_peer;
  const std::vector<int> peers = validate_alloc_request(request, devices, query, name());
  std::vector<cudaMemAccessDesc> descs(peers.size());
  for (std::size_t i = 0; i < peers.size(); ++i) {
    descs[i].flags = cudaMemAccessFlagsProtReadWrite;
    descs[i].location.type = cudaMemLocationTypeDevice;
    descs[i].location.id = peers[i];
  }
  cudaMemAllocNodeParams params = detail::pinned_alloc_params(request.device, request.bytes);
  params.accessDescs = descs.empty() ? nullptr : descs.data();
  params.accessDescCount = descs.size();
  const cudaError_t err =
      cudaGraphAddMemAllocNode(&node, handle_, deps.data(), deps.size(), &params);
  ptr = params.dptr;
  return err;
}

cudaGraphNode_t graph::add_free(void* ptr, const node_list& deps) {
  require_ordinary("adding a free node");
  ledger_->check_can_add_memory_node("free node");
  cudaGraphNode_t node = nullptr;
  cudaError_t err = cudaSuccess;
  const auto added = ledger_->free_in_one_step(as_uint(ptr), [&]() noexcept -> std::optional<node_handle> {
    err = detail::add_mem_free_node(&node, handle_, deps.data(), deps.size(), ptr);
    return err == cudaSuccess ? std::optional<node_handle>(as_uint(node)) : std::nullopt;
  });
  if (!added) refuse_free_node(err, ptr, name());  // nothing was added, the claim given back
  return node;
}

cudaGraphNode_t graph::add_kernel_raw(const node_list& deps, void* func, dim3 grid, dim3 block,
                                      unsigned int shared_bytes, void** args) {
  require_ordinary("adding a kernel node");
  const cudaKernelNodeParams p =
      detail::kernel_node_params(func, grid, block, shared_bytes, args);
  cudaGraphNode_t node = nullptr;
  GMEM_CUDA_TRY_CTX(cudaGraphAddKernelNode(&node, handle_, deps.data(), deps.size(), &p),
                    "kernel node in " + in_graph(name()));
  return node;
}

void graph::set_kernel_raw(cudaGraphNode_t node, void* func, dim3 grid, dim3 block,
                           unsigned int shared_bytes, void** args) {
  require_ordinary("setting a kernel node's parameters");
  const graph_node_kind actual = detail::read_node_kind(node);
  if (const auto refused = check_node_update(actual, graph_node_kind::kernel,
                                             reinterpret_cast<node_handle>(node),
                                             in_graph(name()))) {
    throw_update_error(*refused);
  }
  const cudaKernelNodeParams p =
      detail::kernel_node_params(func, grid, block, shared_bytes, args);
  GMEM_CUDA_TRY_CTX(cudaGraphKernelNodeSetParams(node, &p),
                    "setting the parameters of kernel node " +
                        format_address(reinterpret_cast<std::uintptr_t>(node)) + " in " +
                        in_graph(name()));
}

cudaGraphNode_t graph::add_memset(const node_list& deps, void* dst, unsigned char value,
                                  std::size_t bytes) {
  require_ordinary("adding a memset node");
  cudaMemsetParams p{};
  p.dst = dst;
  p.value = value;
  p.elementSize = 1;
  p.width = bytes;
  p.height = 1;
  cudaGraphNode_t node = nullptr;
  GMEM_CUDA_TRY_CTX(cudaGraphAddMemsetNode(&node, handle_, deps.data(), deps.size(), &p),
                    "memset node of " + format_bytes(bytes) + " at " + format_address(as_uint(dst)) +
                        " in " + in_graph(name()));
  return node;
}

cudaGraphNode_t graph::add_memcpy(const node_list& deps, void* dst, const void* src,
                                  std::size_t bytes, cudaMemcpyKind kind) {
  require_ordinary("adding a memcpy node");
  cudaGraphNode_t node = nullptr;
  GMEM_CUDA_TRY_CTX(
      cudaGraphAddMemcpyNode1D(&node, handle_, deps.data(), deps.size(), dst, src, bytes, kind),
      "memcpy node of " + format_bytes(bytes) + " in " + in_graph(name()));
  return node;
}

cudaGraphNode_t graph::add_empty(const node_list& deps) {
  require_ordinary("adding an empty node");
  cudaGraphNode_t node = nullptr;
  GMEM_CUDA_TRY_CTX(cudaGraphAddEmptyNode(&node, handle_, deps.data(), deps.size()),
                    "empty node in " + in_graph(name()));
  return node;
}

cudaGraphNode_t graph::add_event_record(const node_list& deps, cudaEvent_t e) {
  require_ordinary("adding an event record node");
  cudaGraphNode_t node = nullptr;
  GMEM_CUDA_TRY_CTX(cudaGraphAddEventRecordNode(&node, handle_, deps.data(), deps.size(), e),
                    "event record node in " + in_graph(name()));
  return node;
}

cudaGraphNode_t graph::add_event_wait(const node_list& deps, cudaEvent_t e) {
  require_ordinary("adding an event wait node");
  cudaGraphNode_t node = nullptr;
  GMEM_CUDA_TRY_CTX(cudaGraphAddEventWaitNode(&node, handle_, deps.data(), deps.size(), e),
                    "event wait node in " + in_graph(name()));
  return node;
}

cudaGraphNode_t graph::add_node(const node_list& deps, cudaGraphNodeParams& params,
                                const char* what) {
  cudaGraphNode_t node = nullptr;
  GMEM_CUDA_TRY_CTX(
      cudaGraphAddNode(&node, handle_, deps.data(), nullptr, deps.size(), &params),
      std::string(what) + " in " + in_graph(name()));
  return node;
}

cudaGraphNode_t graph::add_child_graph(const node_list& deps, graph&& child) {
  require_ordinary("adding a child graph node");
  child.require_ordinary("moving a child graph");
  if (!child.owning_ || child.ledger_->graph_kind() != graph_ledger::kind::ordinary) {
    throw usage_error("moving graph '" + child.name() + "' into " + in_graph(name()) +
                      ": only an ordinary graph that gmem owns can be moved into a parent");
  }
  if (child.ledger_->has_memory_nodes()) {
    ledger_->check_can_add_memory_node("child graph node carrying memory nodes");
  }
  if (child.ledger_->live_execs() > 0) {
    throw usage_error("moving graph '" + child.name() + "' into " + in_graph(name()) +
                      ": it has a live executable graph; destroy that first (a moved child "
                      "cannot be instantiated on its own)");
  }
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeGraph;
  params.graph.graph = child.handle_;
  params.graph.ownership = cudaGraphChildGraphOwnershipMove;
  cudaGraphNode_t node = add_node(deps, params, "child graph node (ownership moved)");
  child.handle_ = nullptr;  // the parent owns it now, whatever happens next
  child.owning_ = false;
  child.ledger_->set_graph_alive(false);
  ledger_->absorb_child(*child.ledger_);
  return node;
}

cudaGraphConditionalHandle graph::make_conditional_handle(unsigned int default_value,
                                                          unsigned int flags) {
  require_ordinary("creating a conditional handle");
  cudaGraphConditionalHandle h{};
  GMEM_CUDA_TRY_CTX(cudaGraphConditionalHandleCreate(&h, handle_, default_value, flags),
                    "conditional handle of " + in_graph(name()));
  return h;
}

std::vector<graph> graph::add_conditional(const node_list& deps,
                                          cudaGraphConditionalHandle handle,
                                          cudaGraphConditionalNodeType type, unsigned int size,
                                          cudaGraphNode_t* node_out) {
  require_ordinary("adding a conditional node");
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = type;
  params.conditional.size = size;
  cudaGraphNode_t node = add_node(deps, params, "conditional node");
  if (node_out) *node_out = node;
  std::vector<graph> bodies;
  for (unsigned int i = 0; i < size; ++i) {
    bodies.push_back(graph(params.conditional.phGraph_out[i], false,
                           std::make_shared<graph_ledger>(
                               name() + " / conditional body " + std::to_string(i),
                               graph_ledger::kind::conditional_body)));
  }
  return bodies;
}

void graph::retain(const user_object& object) {
  require_ordinary("retaining a user object");
  if (!object) {
    throw usage_error("retaining an empty gmem::user_object in " + in_graph(name()) +
                      " (moved from, or released): retain the user object it was moved to");
  }
  GMEM_CUDA_TRY_CTX(cudaGraphRetainUserObject(handle_, object.get(), 1, 0),
                    "retaining user object " +
                        format_address(reinterpret_cast<std::uintptr_t>(object.get())) + " in " +
                        in_graph(name()));
}

void graph::retain(user_object&& object) {
  require_ordinary("retaining a user object");
  if (!object) {
    throw usage_error("moving an empty gmem::user_object into " + in_graph(name()) +
                      " (moved from, or released): retain the user object it was moved to");
  }
  GMEM_CUDA_TRY_CTX(cudaGraphRetainUserObject(handle_, object.get(), 1, cudaGraphUserObjectMove),
                    "moving user object " +
                        format_address(reinterpret_cast<std::uintptr_t>(object.get())) +
                        " into " + in_graph(name()));
  (void)object.release();  // the graph holds that reference now
}

graph graph::clone(std::string clone_name) const {
  require_ordinary("cloning a graph");
  ledger_->check_clone();
  cudaGraph_t out = nullptr;
  GMEM_CUDA_TRY_CTX(cudaGraphClone(&out, handle_), "cloning " + in_graph(name()));
  return adopt(out, std::move(clone_name));
}

std::size_t graph::node_count() const {
  require_ordinary("counting nodes");
  std::size_t n = 0;
  GMEM_CUDA_TRY(cudaGraphGetNodes(handle_, nullptr, &n));
  return n;
}

namespace {

// The nodes of `g` in a topological order (creation order among independent nodes), so that
// with in-graph address reuse each free node pairs with the alloc node it follows.
std::vector<cudaGraphNode_t> topological_nodes(cudaGraph_t g) {
  std::size_t n = 0;
  GMEM_CUDA_TRY(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  GMEM_CUDA_TRY(cudaGraphGetNodes(g, nodes.data(), &n));
  std::size_t e = 0;
  GMEM_CUDA_TRY(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &e));
  std::vector<cudaGraphNode_t> from(e), to(e);
  if (e) GMEM_CUDA_TRY(cudaGraphGetEdges(g, from.data(), to.data(), nullptr, &e));

  std::map<cudaGraphNode_t, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i) index[nodes[i]] = i;
  std::vector<std::vector<std::size_t>> out(n);
  std::vector<std::size_t> indegree(n, 0);
  for (std::size_t i = 0; i < e; ++i) {
    out[index.at(from[i])].push_back(index.at(to[i]));
    ++indegree[index.at(to[i])];
  }
  std::set<std::size_t> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (indegree[i] == 0) ready.insert(i);
  }
  std::vector<cudaGraphNode_t> order;
  while (!ready.empty()) {
    const std::size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(nodes[i]);
    for (std::size_t j : out[i]) {
      if (--indegree[j] == 0) ready.insert(j);
    }
  }
  return order;
}

void read_in_order(cudaGraph_t g, graph_ledger& ledger) {
  for (cudaGraphNode_t node : topological_nodes(g)) {
    cudaGraphNodeType type{};
    GMEM_CUDA_TRY(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeMemAlloc) {
      cudaMemAllocNodeParams p{};
      GMEM_CUDA_TRY(cudaGraphMemAllocNodeGetParams(node, &p));
      ledger.record_alloc(
          {as_uint(p.dptr), p.bytesize, as_uint(node), std::nullopt, p.poolProps.location.id});
    } else if (type == cudaGraphNodeTypeMemFree) {
      void* dptr = nullptr;
      GMEM_CUDA_TRY(cudaGraphMemFreeNodeGetParams(node, &dptr));
      ledger.record_observed_free(as_uint(dptr), as_uint(node));
    } else if (type == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = nullptr;
      GMEM_CUDA_TRY(cudaGraphChildGraphNodeGetGraph(node, &child));
      read_in_order(child, ledger);
    }
  }
}

}  // namespace

void read_memory_nodes(cudaGraph_t g, graph_ledger& ledger) { read_in_order(g, ledger); }

}  // namespace gmem
