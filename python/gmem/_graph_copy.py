"""A copy of a CUDA graph that the driver will not clone: one with memory nodes. The driver refuses
cuGraphClone for such a graph and allows it one executable graph at a time, so what instantiating
it costs cannot be read from copies of it; a copy built node by node, each allocation node a new
one with the same parameters and each free node freeing the copy's allocation, can be instantiated
as often as wanted. The copy is for instantiating, never for launching: its kernels keep the
original's arguments, which point into the original's allocations. Its memcpy and memset nodes
point into its own (the driver checks their addresses when they are added).

Through the driver API (ctypes on libcuda); imports neither gmem's extension nor PyTorch."""

import ctypes

from ._readings import _cuda

# CUgraphNodeType
_KERNEL, _MEMCPY, _MEMSET, _HOST, _EMPTY, _WAIT_EVENT, _EVENT_RECORD, _MEM_ALLOC, _MEM_FREE = 0, 1, 2, 3, 5, 6, 7, 10, 11
# Sizes of the driver's node parameter structs (cuda.h, 64-bit), with room to spare for getters.
_PARAMS_BYTES = 256
_ALLOC_DPTR_AT = 112  # the offset of CUDA_MEM_ALLOC_NODE_PARAMS's dptr
_ALLOC_BYTES_AT = 104  # ... and of its bytesize
# CUDA_MEMCPY3D: (memory type, device pointer) offsets of the source and the destination;
# CUDA_MEMSET_NODE_PARAMS: its destination's offset.
_MEMCPY_ENDS = ((32, 48), (120, 136))
_MEMSET_DST_AT = 0
_DEVICE_MEMORY = (2, 4)  # CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_UNIFIED
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


def _moved(spans, address):
    """`address` in the copy: where an allocation of the original that holds it, (old, bytes,
    new) in `spans`, moved to; else unchanged."""
    for old, size, new in spans:
        if old <= address < old + size:
            return new + (address - old)
    return address


def _retarget(kind, params, spans):
    """A memcpy's or memset's parameter bytes with its device addresses moved (`_moved`)."""
    out = bytearray(params)
    if kind == _MEMCPY:
        for type_at, ptr_at in _MEMCPY_ENDS:
            if int.from_bytes(out[type_at:type_at + 4], "little") in _DEVICE_MEMORY:
                p = int.from_bytes(out[ptr_at:ptr_at + 8], "little")
                out[ptr_at:ptr_at + 8] = _moved(spans, p).to_bytes(8, "little")
    elif kind == _MEMSET:
        p = int.from_bytes(out[_MEMSET_DST_AT:_MEMSET_DST_AT + 8], "little")
        out[_MEMSET_DST_AT:_MEMSET_DST_AT + 8] = _moved(spans, p).to_bytes(8, "little")
    return bytes(out)


class GraphCopier:
    """Reads `graph` (a CUgraph handle) once: its nodes in an order that creates each after those
    it depends on, each node's parameters, and its edges; make() then builds a copy from what was
    read (the source must outlive the copies: a kernel node's arguments are read from it).
    memory_nodes="copy": each allocation node a new one with the same parameters, each free node
    freeing the copy's allocation (or, for an allocation made in another graph, the same address);
    "empty": each memory node an empty node. Kernel, memcpy, memset, host, event record and wait,
    and empty nodes are copied; anything else raises CopyError, as does a driver call that fails."""

    def __init__(self, graph, memory_nodes="copy"):
        if memory_nodes not in ("copy", "empty"):
            raise ValueError("memory_nodes is 'copy' or 'empty', not %r" % (memory_nodes,))
        cuda = self._cuda = _cuda()
        self._ctx = ctypes.c_void_p()
        _check(cuda.cuCtxGetCurrent(ctypes.byref(self._ctx)), "cuCtxGetCurrent")
        nodes, edges = _nodes_and_edges(cuda, ctypes.c_void_p(graph))
        self._nodes = []  # (source node, kind, what its adder takes, dependencies)
        for node, deps in _topological(nodes, edges):
            self._nodes.append((node,) + self._read(node, memory_nodes) + (deps,))
        self._rich = [(a, b, data) for a, b, data in edges if any(data)]

    def _read(self, node, memory_nodes):
        """(kind, params): the parameter bytes (an event for event nodes, the address for a free)."""
        cuda, src = self._cuda, ctypes.c_void_p(node)
        kind = ctypes.c_int()
        _check(cuda.cuGraphNodeGetType(src, ctypes.byref(kind)), "cuGraphNodeGetType")
        kind = kind.value
        if kind == _EMPTY or (kind in (_MEM_ALLOC, _MEM_FREE) and memory_nodes == "empty"):
            return _EMPTY, None
        getters = {_KERNEL: "cuGraphKernelNodeGetParams_v2", _MEMCPY: "cuGraphMemcpyNodeGetParams",
                   _MEMSET: "cuGraphMemsetNodeGetParams", _HOST: "cuGraphHostNodeGetParams",
                   _MEM_ALLOC: "cuGraphMemAllocNodeGetParams", _EVENT_RECORD: "cuGraphEventRecordNodeGetEvent",
                   _WAIT_EVENT: "cuGraphEventWaitNodeGetEvent", _MEM_FREE: "cuGraphMemFreeNodeGetParams"}
        if kind not in getters:
            raise CopyError("a node of type %d" % kind)
        if kind in (_EVENT_RECORD, _WAIT_EVENT, _MEM_FREE):
            value = ctypes.c_uint64()
            _check(getattr(cuda, getters[kind])(src, ctypes.byref(value)), getters[kind])
            return kind, value.value
        params = (ctypes.c_uint8 * _PARAMS_BYTES)()
        _check(getattr(cuda, getters[kind])(src, params), getters[kind])
        return kind, bytes(params)

    def make(self):
        """A new CUgraph (an int handle; destroy it with destroy_graph): a copy of the graph read."""
        cuda, ctx = self._cuda, self._ctx
        out = ctypes.c_void_p()
        _check(cuda.cuGraphCreate(ctypes.byref(out), 0), "cuGraphCreate")
        try:
            made, moved, spans = {}, {}, []
            for node, kind, params, deps in self._nodes:
                d = (ctypes.c_void_p * max(len(deps), 1))(*[made[x] for x in deps])
                nd = ctypes.c_size_t(len(deps))
                new = ctypes.c_void_p()
                if kind in (_MEMCPY, _MEMSET) and spans:
                    params = _retarget(kind, params, spans)
                p = (ctypes.c_uint8 * _PARAMS_BYTES).from_buffer_copy(params) if isinstance(params, bytes) else None
                if kind == _KERNEL:
                    _check(cuda.cuGraphAddKernelNode_v2(ctypes.byref(new), out, d, nd, p), "cuGraphAddKernelNode")
                    _check(cuda.cuGraphKernelNodeCopyAttributes(new, ctypes.c_void_p(node)),
                           "cuGraphKernelNodeCopyAttributes")
                elif kind == _MEMCPY:
                    _check(cuda.cuGraphAddMemcpyNode(ctypes.byref(new), out, d, nd, p, ctx), "cuGraphAddMemcpyNode")
                elif kind == _MEMSET:
                    _check(cuda.cuGraphAddMemsetNode(ctypes.byref(new), out, d, nd, p, ctx), "cuGraphAddMemsetNode")
                elif kind == _HOST:
                    _check(cuda.cuGraphAddHostNode(ctypes.byref(new), out, d, nd, p), "cuGraphAddHostNode")
                elif kind == _EVENT_RECORD:
                    _check(cuda.cuGraphAddEventRecordNode(ctypes.byref(new), out, d, nd, ctypes.c_void_p(params)),
                           "cuGraphAddEventRecordNode")
                elif kind == _WAIT_EVENT:
                    _check(cuda.cuGraphAddEventWaitNode(ctypes.byref(new), out, d, nd, ctypes.c_void_p(params)),
                           "cuGraphAddEventWaitNode")
                elif kind == _EMPTY:
                    _check(cuda.cuGraphAddEmptyNode(ctypes.byref(new), out, d, nd), "cuGraphAddEmptyNode")
                elif kind == _MEM_ALLOC:
                    old = ctypes.c_uint64.from_buffer(p, _ALLOC_DPTR_AT).value
                    _check(cuda.cuGraphAddMemAllocNode(ctypes.byref(new), out, d, nd, p), "cuGraphAddMemAllocNode")
                    moved[old] = ctypes.c_uint64.from_buffer(p, _ALLOC_DPTR_AT).value
                    spans.append((old, ctypes.c_uint64.from_buffer(p, _ALLOC_BYTES_AT).value, moved[old]))
                else:  # _MEM_FREE
                    target = ctypes.c_uint64(moved.get(params, params))
                    _check(cuda.cuGraphAddMemFreeNode(ctypes.byref(new), out, d, nd, target), "cuGraphAddMemFreeNode")
                made[node] = new.value
            if self._rich:
                n = len(self._rich)
                _check(cuda.cuGraphAddDependencies_v2(
                    out, (ctypes.c_void_p * n)(*[made[a] for a, _, _ in self._rich]),
                    (ctypes.c_void_p * n)(*[made[b] for _, b, _ in self._rich]),
                    (ctypes.c_uint8 * (_EDGE_BYTES * n)).from_buffer_copy(b"".join(d for _, _, d in self._rich)),
                    ctypes.c_size_t(n)), "cuGraphAddDependencies")
        except BaseException:
            cuda.cuGraphDestroy(out)
            raise
        return out.value


def copy_graph(graph, memory_nodes="copy"):
    """One copy of `graph` (GraphCopier); destroy it with destroy_graph."""
    return GraphCopier(graph, memory_nodes).make()


def destroy_graph(graph):
    _cuda().cuGraphDestroy(ctypes.c_void_p(graph))
