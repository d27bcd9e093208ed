"""Corpus program: fork without exec after CUDA is initialised. The child does no CUDA at all,
sleeps 0.1 s and leaves with os._exit(0); the parent waits for it, then captures one function
twice from the same call site (two identical graphs, both alive until exit) and replays each
twice, reading the device's graph memory counters around each graph's first replay. The child
must write no report over its parent's, and the parent's recording must be whole.

Usage: torch_fork.py SELF_JSON
SELF_JSON: {"allocator": "async", "graphs": [{"index", "reserved_before", "reserved_after"}],
"final_reserved_high", "final_reserved_current", "launches_per_graph", "child_exit"}.
stdout: deterministic lines only."""
import argparse
import json
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("self_json")
args = ap.parse_args()

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
try:
    import torch
except ImportError:
    print("SKIP: torch is not installed"); sys.exit(0)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device"); sys.exit(0)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import graphmem  # noqa: E402

COUNT, REPLAYS = 2, 2
torch.manual_seed(0)
w1 = torch.randn(256, 4096, device="cuda") / 16
w2 = torch.randn(4096, 1024, device="cuda") / 64
bias = torch.randn(1024, device="cuda")
inputs = [torch.randn(256, 256, device="cuda") for _ in range(COUNT)]
torch.cuda.synchronize()  # CUDA is initialised and has done work before the fork

sys.stdout.flush()
sys.stderr.flush()
pid = os.fork()
if pid == 0:  # the child: no CUDA, no Python cleanup
    time.sleep(0.1)
    os._exit(0)
_, status = os.waitpid(pid, 0)
child_exit = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status


def layer(x):
    h = torch.nn.functional.gelu(x @ w1)
    return (h @ w2) * 0.5 + bias


s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        layer(inputs[0])
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()


def capture(i):
    """The one call site both graphs are captured from."""
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = layer(inputs[i])
    return g, out


graphs, outputs = [], []
for i in range(COUNT):
    g, out = capture(i)
    graphs.append(g)
    outputs.append(out)

entries = []
for i, g in enumerate(graphs):
    before = graphmem.counters(0)["reserved_current"]
    g.replay()
    after = graphmem.counters(0)["reserved_current"]
    entries.append({"index": i, "reserved_before": before, "reserved_after": after})
torch.cuda.synchronize()
for _ in range(REPLAYS - 1):
    for g in graphs:
        g.replay()
torch.cuda.synchronize()

checksum = sum(float(o.double().sum().item()) for o in outputs)
c = graphmem.counters(0)
doc = {"allocator": "async", "count": COUNT, "graphs": entries,
       "final_reserved_high": c["reserved_high"], "final_reserved_current": c["reserved_current"],
       "launches_per_graph": REPLAYS, "child_exit": child_exit, "checksum": checksum}
with open(args.self_json, "w") as f:
    json.dump(doc, f, indent=1)
print(f"torch_fork: child exit {child_exit}, {COUNT} graphs, checksum {checksum:.3f}")
print("torch_fork done")
