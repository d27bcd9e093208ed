"""cudaMallocAsync: what the vLLM-style warm-up (each size's input a new tensor, kept) leaves
besides the memory-node pool, with one call between sizes: none, sync, meminfo, nodeattr, gc,
empty (torch.cuda.empty_cache), all (a synchronize and gmem.predict.device_reading).
Run from the repository root with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync:
    python3 tests/predict/probes/call_between_sizes.py VARIANT all"""
import json, sys, ctypes
import torch
sys.path.insert(0, "tests/predict"); sys.path.insert(0, "tests/predict/probes"); sys.path.insert(0, "python")
import decoder_warmup as dw
import gmem.predict
from gmem._readings import _node_pool

from per_size_inputs import PerSizeInputs

variant, spec = sys.argv[1], sys.argv[2]
def rd():
    torch.cuda.synchronize()
    r = gmem.predict.device_reading(0)
    return r["used"], r["node_pool"]["reserved_current"]
calls = {"none": lambda: None, "sync": torch.cuda.synchronize, "meminfo": lambda: torch.cuda.mem_get_info(0),
         "nodeattr": lambda: _node_pool(0), "all": rd, "gc": lambda: __import__("gc").collect(),
         "empty": torch.cuda.empty_cache}
between = calls[variant]
model = dw.build(1); runner = PerSizeInputs(model)
sizes = sorted(dw.capture_sizes(spec), reverse=True)
b = rd()
for s in sizes:
    runner.capture(s); between()
a = rd()
print(json.dumps({"variant": variant, "sizes": len(sizes), "rest_mib": ((a[0] - b[0]) - (a[1] - b[1])) / (1 << 20), "node_mib": (a[1] - b[1]) / (1 << 20)}))
