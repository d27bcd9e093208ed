"""Corpus program: one function captured COUNT times from the same call site, every graph kept
alive until exit (as vLLM's piecewise layers: identical structure, identical instantiation
stack, each graph its own static input and its own held output). The recorder must keep COUNT
records (identical live graphs never fold into one).

Usage: torch_identical.py [--allocator async|native] [--count 8] SELF_JSON

async (backend:cudaMallocAsync, graph memory nodes): the script reads the device's graph memory
counters around each graph's first replay, then replays every graph in 3 rounds.
SELF_JSON: {"allocator", "graphs": [{"index", "reserved_before", "reserved_after"}],
"final_reserved_high", "final_reserved_current", "launches_per_graph"}.

native (PyTorch's caching allocator, one shared private pool from graph_pool_handle()): the
script reads the pool's bytes from PyTorch's memory snapshot around each capture.
SELF_JSON: {"allocator", "graphs": [{"index", "pool_bytes_before", "pool_bytes_after"}],
"pool_id", "total_pool_bytes", "launches_per_graph"}.
stdout: deterministic lines only (a checksum, "torch_identical done")."""
import argparse
import json
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("self_json")
ap.add_argument("--allocator", choices=["async", "native"], default="async")
ap.add_argument("--count", type=int, default=8)
args = ap.parse_args()

if args.allocator == "async":
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
else:
    os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
try:
    import torch
except ImportError:
    print("SKIP: torch is not installed"); sys.exit(0)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device"); sys.exit(0)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import graphmem  # noqa: E402

ROUNDS = 3
torch.manual_seed(0)
# 256 x 256 input -> 256 x 4096 hidden (4 MiB, twice: matmul and gelu) -> 256 x 1024 (1 MiB)
# -> the output, 256 x 1024 floats = 1 MiB, held by the script.
w1 = torch.randn(256, 4096, device="cuda") / 16
w2 = torch.randn(4096, 1024, device="cuda") / 64
bias = torch.randn(1024, device="cuda")
inputs = [torch.randn(256, 256, device="cuda") for _ in range(args.count)]


def layer(x):
    h = torch.nn.functional.gelu(x @ w1)
    return (h @ w2) * 0.5 + bias


# Warm-up on a side stream, as PyTorch requires before capturing.
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        layer(inputs[0])
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()


pool_bytes = graphmem.pool_bytes


shared = torch.cuda.graph_pool_handle() if args.allocator == "native" else None
graphs, outputs, entries = [], [], []


def capture(i):
    """The one call site every graph is captured from."""
    g = torch.cuda.CUDAGraph()
    before = pool_bytes(shared) if shared is not None else None
    with torch.cuda.graph(g, pool=shared):
        out = layer(inputs[i])
    if shared is not None:
        entries.append({"index": i, "pool_bytes_before": before,
                        "pool_bytes_after": pool_bytes(shared)})
    return g, out


for i in range(args.count):
    g, out = capture(i)
    graphs.append(g)
    outputs.append(out)

for i, g in enumerate(graphs):  # first replays, counters read around each (async)
    if args.allocator == "async":
        before = graphmem.counters(0)["reserved_current"]
        g.replay()
        after = graphmem.counters(0)["reserved_current"]
        entries.append({"index": i, "reserved_before": before, "reserved_after": after})
    else:
        g.replay()
torch.cuda.synchronize()
for _ in range(ROUNDS):
    for g in graphs:
        g.replay()
torch.cuda.synchronize()

checksum = sum(float(o.double().sum().item()) for o in outputs)
doc = {"allocator": args.allocator, "count": args.count, "graphs": entries,
       "launches_per_graph": 1 + ROUNDS}
if args.allocator == "async":
    c = graphmem.counters(0)
    doc["final_reserved_high"] = c["reserved_high"]
    doc["final_reserved_current"] = c["reserved_current"]
else:
    doc["pool_id"] = list(shared)
    doc["total_pool_bytes"] = pool_bytes(shared)
doc["checksum"] = checksum
with open(args.self_json, "w") as f:
    json.dump(doc, f, indent=1)
print(f"torch_identical ({args.allocator}, {args.count} graphs): checksum {checksum:.3f}")
print("torch_identical done")
