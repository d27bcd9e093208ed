#include "gmem/graph_exec.hpp"

#include <utility>

#include "gmem/error.hpp"
#include "gmem/handles.hpp"

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

const std::shared_ptr<graph_ledger>& ledger_of(const graph& g) {
  if (!g.get() || !g.shared_ledger()) {
    throw usage_error("instantiating an empty gmem::graph (moved from, or moved into a parent)");
  }
  return g.shared_ledger();
}

}  // namespace

graph_exec::graph_exec(const graph& g, const instantiate_options& options)
    : ledger_(ledger_of(g)), name_(ledger_->name()), options_(options) {
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
      launches_(other.launches_) {}

graph_exec& graph_exec::operator=(graph_exec&& other) noexcept {
  if (this != &other) {
    release();
    handle_ = std::exchange(other.handle_, nullptr);
    ledger_ = std::move(other.ledger_);
    name_ = std::move(other.name_);
    options_ = other.options_;
    unfreed_ = std::move(other.unfreed_);
    launches_ = other.launches_;
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

}  // namespace gmem
