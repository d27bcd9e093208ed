"""Where the vLLM-style warm-up's device memory goes besides the pools, with either allocator:
per phase (eager run, capture, instantiation, first replay) the device memory in use less the
pools' growth, summed over every graph; then one instantiation of a copy of every graph
(gmem._graph_copy; memory nodes copied, then emptied), each round's copies destroyed after it.
Run from the repository root (with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync for that one):
    python3 tests/predict/probes/exec_state_by_phase.py vllm|all OUT.json"""
import json, os, sys, time, ctypes
import torch
sys.path.insert(0, "tests/predict"); sys.path.insert(0, "python")
import decoder_warmup as dw
import gmem.predict
from gmem import _graph_copy
from gmem._readings import _cuda
spec = sys.argv[1]; out = sys.argv[2]
dev = 0
def rd():
    torch.cuda.synchronize()
    r = gmem.predict.device_reading(dev)
    return r["used"], r["node_pool"]["reserved_current"], sum(r["framework_pools"].values())
model = dw.build(1)
m = model
pool = torch.cuda.graph_pool_handle()
sizes = sorted(dw.capture_sizes(spec), reverse=True)
phase = {"eager": 0, "capture": 0, "instantiate": 0, "replay": 0}
node = {"eager": 0, "capture": 0, "instantiate": 0, "replay": 0}
fw = dict(node)
graphs, keep = [], []
start = rd()
def acc(name, a, b):
    phase[name] += (b[0] - a[0]) - (b[1] - a[1]) - (b[2] - a[2]); node[name] += b[1] - a[1]; fw[name] += b[2] - a[2]
per_size = []
with torch.no_grad():
    for size in sizes:
        s0 = rd()
        x = torch.randint(0, 8192, (size,), device="cuda")
        pieces = m.pieces()
        a = rd()
        state = pieces[0](x)
        for piece in pieces[1:]:
            state = piece((state[0], m.attention(state[1])))
        state = None
        b = rd(); acc("eager", a, b)
        carried = x
        for k, piece in enumerate(pieces):
            g = torch.cuda.CUDAGraph(keep_graph=True)
            arg = carried if k == 0 else (carried[0], m.attention(carried[1]))
            a = rd()
            with torch.cuda.graph(g, pool=pool):
                o = piece(arg)
            b = rd(); acc("capture", a, b)
            g.instantiate()
            c = rd(); acc("instantiate", b, c)
            g.replay()
            d = rd(); acc("replay", c, d)
            graphs.append(g); carried = o
        keep.append((x, carried))
        s1 = rd(); per_size.append((size, s1[0] - s0[0], s1[1] - s0[1]))
end = rd()
res = {"allocator": gmem.predict.torch_allocator(), "sizes": len(sizes), "graphs": len(graphs),
       "phase_rest": phase, "phase_node": node, "phase_fw": fw,
       "total": {"used": end[0] - start[0], "node": end[1] - start[1], "fw": end[2] - start[2]},
       "per_size_head": per_size[:8]}
cuda = _cuda()
for mode in ("copy", "empty"):
    a = rd(); made = []; err = None; t0 = time.time()
    try:
        for g in graphs:
            h = _graph_copy.copy_graph(g.raw_cuda_graph(), mode)
            e = ctypes.c_void_p()
            r = cuda.cuGraphInstantiateWithFlags(ctypes.byref(e), ctypes.c_void_p(h), ctypes.c_ulonglong(0))
            if r != 0:
                err = "instantiate returned %d" % r; break
            made.append((h, e))
    except Exception as ex:
        err = repr(ex)
    b = rd()
    res["copies_" + mode] = {"n": len(made), "rest": (b[0] - a[0]) - (b[1] - a[1]), "node": b[1] - a[1], "error": err, "s": time.time() - t0}
    # a second round: copies of copies' state after the first round's were destroyed
    for h, e in made:
        cuda.cuGraphExecDestroy(e); _graph_copy.destroy_graph(h)
    c = rd(); res["copies_" + mode]["after_destroy"] = (c[0] - a[0])
if res["allocator"] == "native":
    a = rd(); made = []
    for g in graphs:
        e = ctypes.c_void_p()
        r = cuda.cuGraphInstantiateWithFlags(ctypes.byref(e), ctypes.c_void_p(g.raw_cuda_graph()), ctypes.c_ulonglong(0))
        made.append(e)
    b = rd(); res["copies_original"] = {"n": len(made), "rest": b[0] - a[0]}
    for e in made: cuda.cuGraphExecDestroy(e)
M = 1 << 20
print(json.dumps(res, indent=1))
json.dump(res, open(out, "w"), indent=1)
