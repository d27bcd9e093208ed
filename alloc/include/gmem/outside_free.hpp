#pragma once
// Freeing a graph allocation outside the graph that made it, in a stream.
// (The other two ways are a graph with a free node, graph::add_free, and event record / wait
// nodes ordering every user before that free node.)

#include <cuda_runtime_api.h>

namespace gmem {

/// cudaFreeAsync of a graph allocation in `s`: ordered after the work already in `s`.
/// Throws usage_error, before the driver, when the allocation already has a free (a free node
/// in any graph, a captured cudaFreeAsync, or a free_in_stream / free_now since its graph last
/// launched), naming the allocation and that first free; cuda_error naming the address and
/// stream when the driver refuses.
void free_in_stream(void* ptr, cudaStream_t s);

/// cudaFree of a graph allocation: frees at once, after synchronizing the device.
/// Throws usage_error as free_in_stream does, cuda_error naming the address.
void free_now(void* ptr);

}  // namespace gmem
