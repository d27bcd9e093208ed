#include "gmem/graph_exec.hpp"

#include <utility>

#include "gmem/error.hpp"
#include "gmem/handles.hpp"
#include "graph_shape_reader.hpp"
#include "kernel_node_params.hpp"

namespace gmem {
namespace {

const char* instantiate_result_text(cudaGraphInstantiateResult r) {
  switch (r) {
    case cudaGraphInstantiateSuccess: return "success";
    case cudaGraphInstantiateError: return "an unexpected error (see the CUDA error)";
    case cudaGraphInstantiateInvalidStructure: return "an invalid structure, such as a cycle";
    case cudaGraphInstantiateNodeOperationNotSupported:
      return "a node operation that is not supported where it stands (in a conditional body, "
             "or for device launch)";
    case cudaGraphInstantiateMultipleDevicesNotSupported:
      return "nodes on several devices, which device launch does not support";
    case cudaGraphInstantiateConditionalHandleUnused:
      return "a conditional handle not used by any conditional node";
  }
  return "an unknown reason";
}

}  // namespace

namespace {

const std::shared_ptr<graph_ledger>& ledger_of(const graph& g, const std::string& what) {
  if (!g.get() || !g.shared_ledger()) {
    throw usage_error(what + " an empty gmem::graph (moved from, or moved into a parent)");
  }
  return g.shared_ledger();
}

const char* update_result_text(cudaGraphExecUpdateResult r) {
  switch (r) {
    case cudaGraphExecUpdateSuccess: return "success";
    case cudaGraphExecUpdateError: return "an unexpected error (see the CUDA error)";
    case cudaGraphExecUpdateErrorTopologyChanged:
      return "a changed topology (node count, exit nodes, or a node's dependencies)";
    case cudaGraphExecUpdateErrorNodeTypeChanged: return "a node whose type changed";
    case cudaGraphExecUpdateErrorFunctionChanged: return "a kernel node whose function changed";
    case cudaGraphExecUpdateErrorParametersChanged:
      return "node parameters changed in a way an update does not support";
    case cudaGraphExecUpdateErrorNotSupported:
      return "a node an update does not support (its type or configuration)";
    case cudaGraphExecUpdateErrorUnsupportedFunctionChange:
      return "a kernel function changed in a way an update does not support (another context, "
             "dynamic parallelism, device-side launch or update, cooperative launch)";
    case cudaGraphExecUpdateErrorAttributesChanged:
      return "node attributes changed in a way an update does not support (such as a priority "
             "under node priorities)";
  }
  return "an unknown reason";
}

cudaGraphExecUpdateResult result_of(update_refusal r) {
  switch (r) {
    case update_refusal::topology_changed: return cudaGraphExecUpdateErrorTopologyChanged;
    case update_refusal::node_type_changed: return cudaGraphExecUpdateErrorNodeTypeChanged;
    case update_refusal::parameters_changed: return cudaGraphExecUpdateErrorParametersChanged;
    case update_refusal::not_supported:
    case update_refusal::instantiated_elsewhere: break;
  }
  return cudaGraphExecUpdateErrorNotSupported;
}

update_result refused(const update_mismatch& m) {
  update_result r;
  r.result = result_of(m.reason);
  r.refused_by_gmem = true;
  r.refusal = m.reason;
  r.node = reinterpret_cast<cudaGraphNode_t>(m.node);
  r.from_node = reinterpret_cast<cudaGraphNode_t>(m.from_node);
  r.message = m.message;
  return r;
}

std::string in_exec(const std::string& name) { return "executable graph '" + name + "'"; }

}  // namespace

graph_exec::graph_exec(const graph& g, const instantiate_options& options)
    : ledger_(ledger_of(g, "instantiating")), name_(ledger_->name()), options_(options) {
  ledger_->check_instantiate({options.auto_free_on_launch, options.device_launch});

  cudaGraphInstantiateParams params{};
  if (options.auto_free_on_launch) params.flags |= cudaGraphInstantiateFlagAutoFreeOnLaunch;
  if (options.device_launch) params.flags |= cudaGraphInstantiateFlagDeviceLaunch;
  if (options.use_node_priority) params.flags |= cudaGraphInstantiateFlagUseNodePriority;
  if (options.upload_stream) {
    params.flags |= cudaGraphInstantiateFlagUpload;
    params.uploadStream = *options.upload_stream;
  }
  // The plain call unless an upload is asked for: it is the one raw code makes, and measurably
  // cheaper for large graphs. Only a failure pays for asking the driver why (with params).
  cudaError_t err = options.upload_stream
                        ? cudaGraphInstantiateWithParams(&handle_, g.get(), &params)
                        : cudaGraphInstantiate(&handle_, g.get(), params.flags);
  if (err != cudaSuccess && !options.upload_stream) {
    (void)cudaGetLastError();
    cudaGraphExec_t again = nullptr;
    err = cudaGraphInstantiateWithParams(&again, g.get(), &params);
    if (err == cudaSuccess) {  // it succeeded this time: keep it
      handle_ = again;
    }
  }
  if (err != cudaSuccess) {
    std::string ctx = "instantiating graph '" + name_ + "' failed for " +
                      instantiate_result_text(params.result_out);
    if (params.errNode_out) {
      ctx += " at node " + format_address(reinterpret_cast<std::uintptr_t>(params.errNode_out));
    }
    detail::throw_cuda_error(err, "cudaGraphInstantiateWithParams", __FILE__, __LINE__, ctx);
  }
  ledger_->exec_created();
  unfreed_ = ledger_->unfreed();
  source_ = g.get();
}

void graph_exec::release() noexcept {
  if (handle_) {
    GMEM_CUDA_TRY_NOTHROW(cudaGraphExecDestroy(handle_));
    handle_ = nullptr;
    ledger_->exec_destroyed();
  }
}

graph_exec::~graph_exec() { release(); }

graph_exec::graph_exec(graph_exec&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      ledger_(std::move(other.ledger_)),
      name_(std::move(other.name_)),
      options_(other.options_),
      unfreed_(std::move(other.unfreed_)),
      launches_(other.launches_),
      source_(std::exchange(other.source_, nullptr)),
      shape_(std::move(other.shape_)) {}

graph_exec& graph_exec::operator=(graph_exec&& other) noexcept {
  if (this != &other) {
    release();
    handle_ = std::exchange(other.handle_, nullptr);
    ledger_ = std::move(other.ledger_);
    name_ = std::move(other.name_);
    options_ = other.options_;
    unfreed_ = std::move(other.unfreed_);
    launches_ = other.launches_;
    source_ = std::exchange(other.source_, nullptr);
    shape_ = std::move(other.shape_);
  }
  return *this;
}

void graph_exec::upload(cudaStream_t s) {
  GMEM_CUDA_TRY_CTX(cudaGraphUpload(handle_, s),
                    "uploading graph '" + name_ + "' into " + describe_stream(s));
}

void graph_exec::launch(cudaStream_t s) {
  const cudaError_t err = cudaGraphLaunch(handle_, s);
  if (err != cudaSuccess) {
    std::string ctx = "launching graph '" + name_ + "' into " + describe_stream(s);
    if (err == cudaErrorInvalidValue && launches_ > 0 && !options_.auto_free_on_launch &&
        !unfreed_.empty()) {
      ctx += ": the previous launch left " + std::to_string(unfreed_.size()) +
             " allocation(s) unfreed (" + describe_allocations(unfreed_) +
             "), and a graph instantiated without AutoFreeOnLaunch cannot be relaunched while "
             "they live. Free them first (cudaFreeAsync in a stream, or a graph with their free "
             "nodes), or instantiate with auto_free_on_launch";
    }
    detail::throw_cuda_error(err, "cudaGraphLaunch", __FILE__, __LINE__, ctx);
  }
  ++launches_;
  ledger_->launched();  // its allocations are made anew: earlier frees in streams are past
}

std::optional<update_mismatch> graph_exec::check_update(const graph& g,
                                                        std::unique_ptr<graph_shape>& next) {
  if (auto m = check_update_source(*ledger_, *g.shared_ledger(), name_)) return m;
  next = std::make_unique<graph_shape>(detail::read_graph_shape(g.get()));
  const bool own_graph = g.shared_ledger() == ledger_;
  if (!shape_ && !own_graph && ledger_->graph_alive()) {
    shape_ = std::make_unique<graph_shape>(detail::read_graph_shape(source_));
  }
  if (shape_) {
    if (auto m = compare_topology(*shape_, *next, name_, g.name())) return m;
    return compare_memory(signature_of(*shape_), signature_of(*next), name_, g.name());
  }
  // Its own graph, never read: the executable graph's memory nodes are the graph's, and a node
  // added since is the driver's to refuse.
  if (own_graph) return std::nullopt;
  // The graph it came from is gone: what the ledger kept of its memory nodes.
  return compare_memory(signature_of(*ledger_), signature_of(*next), name_, g.name());
}

void graph_exec::adopt_source(const graph& g, std::unique_ptr<graph_shape> shape) {
  const std::shared_ptr<graph_ledger>& next = g.shared_ledger();
  if (next != ledger_) {
    next->exec_created();
    ledger_->exec_destroyed();  // the graph it came from may be instantiated again
    ledger_ = next;
    name_ = ledger_->name();
  }
  source_ = g.get();
  shape_ = std::move(shape);
  unfreed_ = ledger_->unfreed();
}

update_result graph_exec::try_update(const graph& g) {
  if (!handle_) throw usage_error("updating an empty gmem::graph_exec (moved from)");
  const std::shared_ptr<graph_ledger>& next = ledger_of(g, "updating executable graph '" +
                                                               name_ + "' with");
  std::unique_ptr<graph_shape> next_shape;
  if (ledger_->has_memory_nodes() || next->has_memory_nodes()) {
    if (const auto m = check_update(g, next_shape)) return refused(*m);
  }
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t err = cudaGraphExecUpdate(handle_, g.get(), &info);
  // The message is made only where the driver refused or failed.
  const auto head = [&] { return "updating " + in_exec(name_) + " with graph '" + g.name() + "'"; };
  if (err == cudaErrorGraphExecUpdateFailure) {
    (void)cudaGetLastError();
    update_result r;
    r.result = info.result;
    r.node = info.errorNode;
    r.from_node = info.errorFromNode;
    r.message = head() + ": the driver refused it for " + update_result_text(info.result);
    if (info.errorNode) {
      r.message += ", at " + detail::describe_node(info.errorNode, g.get(), g.name());
    }
    if (info.errorFromNode) {
      r.message += ", whose dependency on " +
                   detail::describe_node(info.errorFromNode, g.get(), g.name()) +
                   " has no match in the executable graph";
    }
    r.message += "; nothing changed: instantiate a new executable graph from '" + g.name() +
                 "' instead";
    return r;
  }
  if (err != cudaSuccess) {
    detail::throw_cuda_error(err, "cudaGraphExecUpdate", __FILE__, __LINE__,
                             head() + " (" + update_result_text(info.result) + ")");
  }
  adopt_source(g, std::move(next_shape));
  update_result r;
  r.updated = true;
  return r;
}

void graph_exec::update(const graph& g) {
  const update_result r = try_update(g);
  if (r) return;
  if (r.refused_by_gmem) {
    throw update_error(*r.refusal, reinterpret_cast<node_handle>(r.node),
                       reinterpret_cast<node_handle>(r.from_node), r.message);
  }
  throw cuda_error(cudaErrorGraphExecUpdateFailure,
                   detail::cuda_error_message(cudaErrorGraphExecUpdateFailure,
                                              "cudaGraphExecUpdate", r.message));
}

void graph_exec::set_kernel_raw(cudaGraphNode_t node, void* func, dim3 grid, dim3 block,
                                unsigned int shared_bytes, void** args) {
  if (!handle_) {
    throw usage_error("setting a kernel node of an empty gmem::graph_exec (moved from)");
  }
  const node_handle h = reinterpret_cast<node_handle>(node);
  if (const auto m = check_node_update(detail::read_node_kind(node), graph_node_kind::kernel, h,
                                       in_exec(name_))) {
    throw_update_error(*m);
  }
  const cudaKernelNodeParams p =
      detail::kernel_node_params(func, grid, block, shared_bytes, args);
  GMEM_CUDA_TRY_CTX(cudaGraphExecKernelNodeSetParams(handle_, node, &p),
                    "setting the parameters of kernel node " + format_address(h) + " in " +
                        in_exec(name_));
}

void graph_exec::set_node_params(cudaGraphNode_t node, cudaGraphNodeParams& params) {
  if (!handle_) throw usage_error("setting a node of an empty gmem::graph_exec (moved from)");
  const node_handle h = reinterpret_cast<node_handle>(node);
  if (const auto m = check_node_update(detail::read_node_kind(node), detail::kind_of(params.type),
                                       h, in_exec(name_))) {
    throw_update_error(*m);
  }
  // The node is described (a walk of the graph's nodes) only where the driver refused it.
  GMEM_CUDA_TRY_CTX(cudaGraphExecNodeSetParams(handle_, node, &params),
                    "setting the parameters of " +
                        (ledger_->graph_alive() ? detail::describe_node(node, source_, name_)
                                                : "node " + format_address(h)) +
                        " in " + in_exec(name_));
}

}  // namespace gmem
