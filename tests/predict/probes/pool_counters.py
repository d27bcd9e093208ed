"""The vLLM-style warm-up (each size's input a new tensor, kept), every counter read after each
size without a synchronize (VARIANT none) or after one (sync): the device memory in use, the
memory-node pool's, the current memory pool's (cudaMallocAsync's) and PyTorch's reserved bytes;
then after a synchronize and after torch.cuda.empty_cache. Run from the repository root:
    python3 tests/predict/probes/pool_counters.py none|sync all"""
import json, sys, ctypes
import torch
sys.path.insert(0, "tests/predict"); sys.path.insert(0, "tests/predict/probes"); sys.path.insert(0, "python")
import decoder_warmup as dw
from gmem._readings import _node_pool, _cuda

from per_size_inputs import PerSizeInputs

variant, spec = sys.argv[1], sys.argv[2]
cuda = _cuda()
model = dw.build(1); runner = PerSizeInputs(model)
dev = ctypes.c_int(); cuda.cuDeviceGet(ctypes.byref(dev), 0)
def pool_attr(pool, a):
    v = ctypes.c_uint64(); cuda.cuMemPoolGetAttribute(pool, a, ctypes.byref(v)); return v.value
cur = ctypes.c_void_p(); cuda.cuDeviceGetMemPool(ctypes.byref(cur), dev)
dflt = ctypes.c_void_p(); cuda.cuDeviceGetDefaultMemPool(ctypes.byref(dflt), dev)
def rd():
    f, t = torch.cuda.mem_get_info(0); n = _node_pool(0)
    return {"used": t - f, "node_res": n["reserved_current"], "node_used": n["used_current"],
            "pool_res": pool_attr(cur, 5), "pool_used": pool_attr(cur, 7), "torch_res": torch.cuda.memory_reserved(0)}
sizes = sorted(dw.capture_sizes(spec), reverse=True)
torch.cuda.synchronize()
r0 = rd(); rs = [r0]
for s in sizes:
    runner.capture(s)
    if variant == "sync": torch.cuda.synchronize()
    rs.append(rd())
torch.cuda.synchronize(); end = rd()
torch.cuda.empty_cache(); trimmed = rd()
M = 1 << 20
out = {"variant": variant, "same_pool": cur.value == dflt.value,
       "end_minus_start": {k: (end[k] - r0[k]) / M for k in end},
       "first_size": {k: (rs[1][k] - r0[k]) / M for k in end},
       "later_sizes": {k: (rs[-1][k] - rs[1][k]) / M for k in end},
       "after_empty_cache_minus_start": {k: (trimmed[k] - r0[k]) / M for k in end},
       "last_read_vs_end": {k: (end[k] - rs[-1][k]) / M for k in end}}
print(json.dumps(out))
