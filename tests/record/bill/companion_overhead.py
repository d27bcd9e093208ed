"""What the Python companion costs a program (docs/record.md, "The bill"): N captures of a small
step into one shared pool with PyTorch's native allocator (as vLLM warms up), timed by the
script itself around the capture loop, and the time of the companion's end mark (one memory
snapshot). Run it unrecorded, recorded with GMEM_RECORD_COMPANION=0, and recorded with the
companion (tools/record_bill.sh does).

Usage: companion_overhead.py [--captures 400] SELF_JSON
SELF_JSON: {"captures", "capture_loop_s", "per_capture_us"}"""
import argparse
import json
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("self_json")
ap.add_argument("--captures", type=int, default=400)
args = ap.parse_args()
os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
try:
    import torch
except ImportError:
    print("SKIP: torch is not installed"); sys.exit(0)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device"); sys.exit(0)

w = torch.randn(256, 256, device="cuda")
x = torch.randn(64, 256, device="cuda")


def step():
    return torch.relu(x @ w) * 0.5


s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    step()
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()
pool = torch.cuda.graph_pool_handle()
graphs, outputs = [], []
t0 = time.perf_counter()
for _ in range(args.captures):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, pool=pool):
        outputs.append(step())
    graphs.append(g)
elapsed = time.perf_counter() - t0
with open(args.self_json, "w") as f:
    json.dump({"captures": args.captures, "capture_loop_s": elapsed,
               "per_capture_us": elapsed / args.captures * 1e6}, f, indent=1)
print("companion_overhead done")
