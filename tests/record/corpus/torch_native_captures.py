"""Corpus program: PyTorch's native caching allocator, nine captures (batch 256 down to 1,
largest first, outputs held by the script, each capture inside an NVTX range "batch N" so that
the recorder names the graph so), into one shared private pool or a pool per graph. Every graph
is replayed once except the last, which is never replayed; with --keep-graph the graphs are
made with torch.cuda.CUDAGraph(keep_graph=True), instantiated at their first replay, so the
last one is never instantiated either. The recorder must still record all nine captures.

Usage: torch_native_captures.py [--pool shared|per-graph] [--expandable] [--keep-graph] SELF_JSON
SELF_JSON: {"pool", "expandable", "keep_graph", "graphs": [{"name": "batch N", "pool_id",
"pool_bytes_before", "pool_bytes_after", "replayed"}], "total"}: the bytes of the graph's private
pool (segments of PyTorch's snapshot with its segment_pool_id) before and after its capture;
total, the sum over the distinct pools at exit. Without keep_graph (--keep-graph on an older
PyTorch) it prints SKIP and writes {"skip": reason}.
stdout: deterministic lines only."""
import argparse
import json
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("self_json")
ap.add_argument("--pool", choices=["shared", "per-graph"], default="shared")
ap.add_argument("--expandable", action="store_true", help="expandable_segments:True")
ap.add_argument("--keep-graph", action="store_true", help="CUDAGraph(keep_graph=True)")
args = ap.parse_args()

if args.expandable:
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
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


def new_graph():
    if not args.keep_graph:
        return torch.cuda.CUDAGraph()
    return torch.cuda.CUDAGraph(keep_graph=True)


if args.keep_graph:
    try:
        new_graph()
    except TypeError:
        with open(args.self_json, "w") as f:
            json.dump({"skip": "torch.cuda.CUDAGraph has no keep_graph"}, f, indent=1)
        print("SKIP: torch.cuda.CUDAGraph has no keep_graph"); sys.exit(0)

batches = [256, 128, 64, 32, 16, 8, 4, 2, 1]
row = (1 << 20) // 4  # floats per output row: the output of batch B is B MiB
torch.manual_seed(0)
w1 = torch.randn(64, row, device="cuda") / 8
bias = torch.randn(row, device="cuda")
inputs = {b: torch.randn(b, 64, device="cuda") for b in batches}


def step(x):
    h = x @ w1              # B x row: working memory, freed inside the graph
    h = torch.nn.functional.gelu(h)
    return h * 0.5 + bias   # the output, held by the script


s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for b in batches:
        step(inputs[b])
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()


pool_bytes = graphmem.pool_bytes


shared = torch.cuda.graph_pool_handle() if args.pool == "shared" else None
graphs, outputs, entries = {}, {}, []
for b in batches:
    g = new_graph()
    name = f"batch {b}"
    before = pool_bytes(shared) if shared is not None else 0  # a new pool per graph holds 0
    torch.cuda.nvtx.range_push(name)
    with torch.cuda.graph(g, pool=shared):
        outputs[b] = step(inputs[b])
    torch.cuda.nvtx.range_pop()
    graphs[b] = g
    pool_id = tuple(g.pool())
    entries.append({"name": name, "pool_id": list(pool_id), "pool_bytes_before": before,
                    "pool_bytes_after": pool_bytes(pool_id), "replayed": b != batches[-1]})

for b in batches[:-1]:  # the last graph is never replayed
    graphs[b].replay()
torch.cuda.synchronize()

checksum = sum(float(outputs[b].double().sum().item()) for b in batches[:-1])
pools = {tuple(e["pool_id"]) for e in entries}
doc = {"pool": args.pool, "expandable": args.expandable, "keep_graph": args.keep_graph,
       "graphs": entries, "total": sum(pool_bytes(p) for p in pools), "checksum": checksum}
with open(args.self_json, "w") as f:
    json.dump(doc, f, indent=1)
print(f"torch_native_captures ({args.pool}{', expandable' if args.expandable else ''}"
      f"{', keep_graph' if args.keep_graph else ''}): {len(entries)} captures, "
      f"{len(pools)} pool(s), checksum {checksum:.3f}")
print("torch_native_captures done")
