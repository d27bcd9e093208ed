#pragma once
// The driver calls the recording takes, one list for both ways of taking them: each by the
// driver's exported entry point (CUPTI names its callback ids after them), with the decoder
// inject.cpp hands it to, and its parameters in the order and types CUPTI's parameter struct for
// it lays them out (generated_cuda_meta.h), which the preloaded wrappers (preload.cpp) build.
//   X(entry point, decoder, parameter types...)   X0(entry point, decoder): no parameters
// A list of names, not of code: the file includes nothing and defines nothing else.

#define GMEM_RECORD_ROUTES(X, X0) \
  X(cuGraphLaunch, on_launch, CUgraphExec, CUstream)                                                                  \
  X(cuGraphLaunch_ptsz, on_launch, CUgraphExec, CUstream)                                                             \
  X(cuGraphUpload, on_upload, CUgraphExec, CUstream)                                                                  \
  X(cuGraphUpload_ptsz, on_upload, CUgraphExec, CUstream)                                                             \
  X(cuGraphInstantiate, on_instantiate, CUgraphExec*, CUgraph, CUgraphNode*, char*, size_t)                           \
  X(cuGraphInstantiate_v2, on_instantiate, CUgraphExec*, CUgraph, CUgraphNode*, char*, size_t)                        \
  X(cuGraphInstantiateWithFlags, on_instantiate, CUgraphExec*, CUgraph, unsigned long long)                           \
  X(cuGraphInstantiateWithParams, on_instantiate, CUgraphExec*, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS*)              \
  X(cuGraphInstantiateWithParams_ptsz, on_instantiate, CUgraphExec*, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS*)         \
  X(cuDeviceGraphMemTrim, on_trim, CUdevice)                                                                          \
  X(cuGraphExecDestroy, on_exec_destroy, CUgraphExec)                                                                 \
  X(cuGraphExecUpdate, on_exec_update, CUgraphExec, CUgraph, CUgraphNode*, CUgraphExecUpdateResult*)                  \
  X(cuGraphExecUpdate_v2, on_exec_update, CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*)                         \
  X(cuGraphExecKernelNodeSetParams, on_node_params, CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v1*)      \
  X(cuGraphExecKernelNodeSetParams_v2, on_node_params, CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*)      \
  X(cuGraphExecNodeSetParams, on_node_params, CUgraphExec, CUgraphNode, CUgraphNodeParams*)                           \
  X(cuGraphExecMemcpyNodeSetParams, on_node_params, CUgraphExec, CUgraphNode, const CUDA_MEMCPY3D*, CUcontext)        \
  X(cuGraphExecMemsetNodeSetParams, on_node_params, CUgraphExec, CUgraphNode, const CUDA_MEMSET_NODE_PARAMS*,         \
    CUcontext)                                                                                                        \
  X(cuGraphExecHostNodeSetParams, on_node_params, CUgraphExec, CUgraphNode, const CUDA_HOST_NODE_PARAMS*)             \
  X(cuGraphExecChildGraphNodeSetParams, on_node_params, CUgraphExec, CUgraphNode, CUgraph)                            \
  X(cuGraphExecEventRecordNodeSetEvent, on_node_params, CUgraphExec, CUgraphNode, CUevent)                            \
  X(cuGraphExecEventWaitNodeSetEvent, on_node_params, CUgraphExec, CUgraphNode, CUevent)                              \
  X(cuGraphExecExternalSemaphoresSignalNodeSetParams, on_node_params, CUgraphExec, CUgraphNode,                       \
    const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS*)                                                                           \
  X(cuGraphExecExternalSemaphoresWaitNodeSetParams, on_node_params, CUgraphExec, CUgraphNode,                         \
    const CUDA_EXT_SEM_WAIT_NODE_PARAMS*)                                                                             \
  X(cuGraphExecBatchMemOpNodeSetParams, on_node_params, CUgraphExec, CUgraphNode,                                     \
    const CUDA_BATCH_MEM_OP_NODE_PARAMS*)                                                                             \
  X(cuGraphNodeSetEnabled, on_node_params, CUgraphExec, CUgraphNode, unsigned int)                                    \
  X(cuGraphDestroy, on_graph_destroy, CUgraph)                                                                        \
  X(cuStreamBeginCapture, on_begin_capture, CUstream)                                                                 \
  X(cuStreamBeginCapture_ptsz, on_begin_capture, CUstream)                                                            \
  X(cuStreamBeginCapture_v2, on_begin_capture, CUstream, CUstreamCaptureMode)                                         \
  X(cuStreamBeginCapture_v2_ptsz, on_begin_capture, CUstream, CUstreamCaptureMode)                                    \
  X(cuStreamEndCapture, on_end_capture, CUstream, CUgraph*)                                                           \
  X(cuStreamEndCapture_ptsz, on_end_capture, CUstream, CUgraph*)                                                      \
  X(cuMemAlloc_v2, on_mem_alloc, CUdeviceptr*, size_t)                                                                \
  X(cuMemCreate, on_mem_alloc, CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long) \
  X(cuMemFreeAsync, on_mem_free, CUdeviceptr, CUstream)                                                               \
  X(cuMemFreeAsync_ptsz, on_mem_free, CUdeviceptr, CUstream)                                                          \
  X(cuMemFree_v2, on_mem_free, CUdeviceptr)                                                                           \
  X(cuMemRelease, on_mem_release, CUmemGenericAllocationHandle)                                                       \
  X(cuStreamCreate, on_stream_create, CUstream*, unsigned int)                                                        \
  X(cuStreamCreateWithPriority, on_stream_create, CUstream*, unsigned int, int)                                       \
  X0(cuCtxSynchronize, on_ctx_sync)                                                                                   \
  X(cuCtxSynchronize_v2, on_ctx_sync, CUcontext)                                                                      \
  X(cuStreamSynchronize, on_stream_sync, CUstream)                                                                    \
  X(cuStreamSynchronize_ptsz, on_stream_sync, CUstream)                                                               \
  X(cuStreamQuery, on_stream_sync, CUstream)                                                                          \
  X(cuStreamQuery_ptsz, on_stream_sync, CUstream)                                                                     \
  X(cuEventRecord, on_event_record, CUevent, CUstream)                                                                \
  X(cuEventRecord_ptsz, on_event_record, CUevent, CUstream)                                                           \
  X(cuEventRecordWithFlags, on_event_record, CUevent, CUstream, unsigned int)                                         \
  X(cuEventRecordWithFlags_ptsz, on_event_record, CUevent, CUstream, unsigned int)                                    \
  X(cuEventSynchronize, on_event_done, CUevent)                                                                       \
  X(cuEventQuery, on_event_done, CUevent)                                                                             \
  X(cuEventDestroy, on_event_destroy, CUevent)                                                                        \
  X(cuEventDestroy_v2, on_event_destroy, CUevent)                                                                     \
  X(cuMemcpyDtoH_v2, on_copy, void*, CUdeviceptr, size_t)                                                             \
  X(cuMemcpyDtoH_v2_ptds, on_copy, void*, CUdeviceptr, size_t)                                                        \
  X(cuMemcpy, on_copy, CUdeviceptr, CUdeviceptr, size_t)                                                              \
  X(cuMemcpy_ptds, on_copy, CUdeviceptr, CUdeviceptr, size_t)                                                         \
  X(cuDevicePrimaryCtxRetain, on_context, CUcontext*, CUdevice)                                                       \
  X(cuCtxCreate_v2, on_context, CUcontext*, unsigned int, CUdevice)                                                   \
  X(cuCtxCreate_v3, on_context, CUcontext*, CUexecAffinityParam*, int, unsigned int, CUdevice)                        \
  X(cuCtxCreate_v4, on_context, CUcontext*, CUctxCreateParams*, unsigned int, CUdevice)                              
