"""A copy of a CUDA graph that the driver will not clone: one with memory nodes. The driver refuses
cuGraphClone for such a graph and allows it one executable graph at a time, so what instantiating
it costs cannot be read from copies of it; a copy built node by node, each allocation node a new
one with the same parameters and each free node freeing the copy's allocation, can be instantiated
as often as wanted. The copy is for instantiating, never for launching: its kernels keep the
original's arguments, which point into the original's allocations.

Through the driver API (ctypes on libcuda); imports neither gmem's extension nor PyTorch."""

import ctypes

from ._readings import _cuda

# CUgraphNodeType
_KERNEL, _MEMCPY, _MEMSET, _HOST, _EMPTY, _WAIT_EVENT, _EVENT_RECORD, _MEM_ALLOC, _MEM_FREE = 0, 1, 2, 3, 5, 6, 7, 10, 11
# Sizes of the driver's node parameter structs (cuda.h, 64-bit), with room to spare for getters.
_PARAMS_BYTES = 256
_ALLOC_DPTR_AT = 112  # the offset of CUDA_MEM_ALLOC_NODE_PARAMS's dptr
_EDGE_BYTES = 8  # CUgraphEdgeData: ports and type; all zero for a plain dependency


class CopyError(RuntimeError):
    """The graph holds what a copy cannot reproduce (a node type or an edge it does not copy)."""


def _check(r, what):
    if r != 0:
        raise CopyError("%s returned %d" % (what, r))


def _nodes_and_edges(cuda, graph):
    n = ctypes.c_size_t()
    _check(cuda.cuGraphGetNodes(graph, None, ctypes.byref(n)), "cuGraphGetNodes")
    nodes = (ctypes.c_void_p * n.value)()
    _check(cuda.cuGraphGetNodes(graph, nodes, ctypes.byref(n)), "cuGraphGetNodes")
    m = ctypes.c_size_t()
    _check(cuda.cuGraphGetEdges_v2(graph, None, None, None, ctypes.byref(m)), "cuGraphGetEdges")
    src, dst = (ctypes.c_void_p * m.value)(), (ctypes.c_void_p * m.value)()
    data = (ctypes.c_uint8 * (_EDGE_BYTES * max(m.value, 1)))()
    _check(cuda.cuGraphGetEdges_v2(graph, src, dst, data, ctypes.byref(m)), "cuGraphGetEdges")
    return list(nodes), [(src[i], dst[i], bytes(data[_EDGE_BYTES * i: _EDGE_BYTES * (i + 1)])) for i in range(m.value)]


def _topological(nodes, edges):
    """Nodes in an order where each comes after every node it depends on, each with the nodes it
    depends on through plain edges (edges with data are added once every node is made)."""
    deps = {n: [] for n in nodes}
    users = {n: [] for n in nodes}
    for a, b, data in edges:
        if not any(data):
            deps[b].append(a)
        users[a].append(b)
    incoming = {n: 0 for n in nodes}
    for _, b, _ in edges:
        incoming[b] += 1
    waiting = dict(incoming)
    ready = [n for n in nodes if waiting[n] == 0]
    order = []
    while ready:
        n = ready.pop()
        order.append(n)
        for u in users[n]:
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    if len(order) != len(nodes):
        raise CopyError("the graph's edges hold a cycle")
    return [(n, deps[n]) for n in order]


def copy_graph(graph, memory_nodes="copy"):
    """A new CUgraph (an int handle; destroy it with destroy_graph) with the nodes and edges of
    `graph` (a CUgraph handle). memory_nodes="copy": each allocation node a new one with the same
    parameters, each free node freeing the copy's allocation (or, for an allocation made in
    another graph, the same address); "empty": each memory node an empty node. Kernel, memcpy,
    memset, host, event record and wait, and empty nodes are copied; anything else raises
    CopyError, as does a driver call that fails."""
    if memory_nodes not in ("copy", "empty"):
        raise ValueError("memory_nodes is 'copy' or 'empty', not %r" % (memory_nodes,))
    cuda = _cuda()
    graph = ctypes.c_void_p(graph)
    ctx = ctypes.c_void_p()
    _check(cuda.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    nodes, edges = _nodes_and_edges(cuda, graph)
    out = ctypes.c_void_p()
    _check(cuda.cuGraphCreate(ctypes.byref(out), 0), "cuGraphCreate")
    try:
        made, moved = {}, {}
        for node, deps in _topological(nodes, edges):
            kind = ctypes.c_int()
            _check(cuda.cuGraphNodeGetType(ctypes.c_void_p(node), ctypes.byref(kind)), "cuGraphNodeGetType")
            kind = kind.value
            d = (ctypes.c_void_p * max(len(deps), 1))(*[made[x] for x in deps])
            nd = ctypes.c_size_t(len(deps))
            new = ctypes.c_void_p()
            src = ctypes.c_void_p(node)
            params = (ctypes.c_uint8 * _PARAMS_BYTES)()
            if kind == _KERNEL:
                _check(cuda.cuGraphKernelNodeGetParams_v2(src, params), "cuGraphKernelNodeGetParams")
                _check(cuda.cuGraphAddKernelNode_v2(ctypes.byref(new), out, d, nd, params), "cuGraphAddKernelNode")
                _check(cuda.cuGraphKernelNodeCopyAttributes(new, src), "cuGraphKernelNodeCopyAttributes")
            elif kind == _MEMCPY:
                _check(cuda.cuGraphMemcpyNodeGetParams(src, params), "cuGraphMemcpyNodeGetParams")
                _check(cuda.cuGraphAddMemcpyNode(ctypes.byref(new), out, d, nd, params, ctx), "cuGraphAddMemcpyNode")
            elif kind == _MEMSET:
                _check(cuda.cuGraphMemsetNodeGetParams(src, params), "cuGraphMemsetNodeGetParams")
                _check(cuda.cuGraphAddMemsetNode(ctypes.byref(new), out, d, nd, params, ctx), "cuGraphAddMemsetNode")
            elif kind == _HOST:
                _check(cuda.cuGraphHostNodeGetParams(src, params), "cuGraphHostNodeGetParams")
                _check(cuda.cuGraphAddHostNode(ctypes.byref(new), out, d, nd, params), "cuGraphAddHostNode")
            elif kind in (_EVENT_RECORD, _WAIT_EVENT):
                ev = ctypes.c_void_p()
                get, add = (("cuGraphEventRecordNodeGetEvent", "cuGraphAddEventRecordNode") if kind == _EVENT_RECORD
                            else ("cuGraphEventWaitNodeGetEvent", "cuGraphAddEventWaitNode"))
                _check(getattr(cuda, get)(src, ctypes.byref(ev)), get)
                _check(getattr(cuda, add)(ctypes.byref(new), out, d, nd, ev), add)
            elif kind == _EMPTY or (kind in (_MEM_ALLOC, _MEM_FREE) and memory_nodes == "empty"):
                _check(cuda.cuGraphAddEmptyNode(ctypes.byref(new), out, d, nd), "cuGraphAddEmptyNode")
            elif kind == _MEM_ALLOC:
                _check(cuda.cuGraphMemAllocNodeGetParams(src, params), "cuGraphMemAllocNodeGetParams")
                old = ctypes.c_uint64.from_buffer(params, _ALLOC_DPTR_AT).value
                _check(cuda.cuGraphAddMemAllocNode(ctypes.byref(new), out, d, nd, params), "cuGraphAddMemAllocNode")
                moved[old] = ctypes.c_uint64.from_buffer(params, _ALLOC_DPTR_AT).value
            elif kind == _MEM_FREE:
                ptr = ctypes.c_uint64()
                _check(cuda.cuGraphMemFreeNodeGetParams(src, ctypes.byref(ptr)), "cuGraphMemFreeNodeGetParams")
                target = ctypes.c_uint64(moved.get(ptr.value, ptr.value))
                _check(cuda.cuGraphAddMemFreeNode(ctypes.byref(new), out, d, nd, target), "cuGraphAddMemFreeNode")
            else:
                raise CopyError("a node of type %d" % kind)
            made[node] = new.value
        rich = [(a, b, data) for a, b, data in edges if any(data)]
        if rich:
            n = len(rich)
            _check(cuda.cuGraphAddDependencies_v2(
                out, (ctypes.c_void_p * n)(*[made[a] for a, _, _ in rich]),
                (ctypes.c_void_p * n)(*[made[b] for _, b, _ in rich]),
                (ctypes.c_uint8 * (_EDGE_BYTES * n)).from_buffer_copy(b"".join(d for _, _, d in rich)),
                ctypes.c_size_t(n)), "cuGraphAddDependencies")
    except BaseException:
        cuda.cuGraphDestroy(out)
        raise
    return out.value


def destroy_graph(graph):
    _cuda().cuGraphDestroy(ctypes.c_void_p(graph))
