"""The bill's process change for a program whose allocator passes no call the recording library
watches: PyTorch's cudaMallocAsync backend (cudaMallocAsync, not cuMemAlloc). It reads the device's
memory in use once CUDA's context is made and before it allocates anything, allocates 1 GiB of
weights, captures and replays one graph, and reads the memory in use again.

Usage: async_process_change.py SELF_JSON    SELF_JSON: {"start", "end"} (cudaMemGetInfo: used)
Checked by `tools/gpu-record-runs.sh async`: the bill's process change equals end - start."""
import json
import os
import sys

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
import torch  # noqa: E402

free, total = torch.cuda.mem_get_info(0)
start = total - free
w = torch.randn(256 << 20, device="cuda")   # 1 GiB, before any call the library watches
x = torch.randn(64, 1024, device="cuda")
m = torch.randn(1024, 1024, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    y = x @ m
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g, stream=s):
    y = x @ m
g.replay()
torch.cuda.synchronize()
free, total = torch.cuda.mem_get_info(0)
with open(sys.argv[1], "w") as f:
    json.dump({"start": start, "end": total - free}, f)
