"""A serving warm-up as inference engines do it (vLLM, SGLang): one CUDA graph captured per batch
size, each inside an NVTX range named "batch N" (so that `gmemprof record` names the graph so),
outputs held by the script between replays, then every graph replayed once, then mixed replays.
The script reads the device's graph memory counters itself around every replay, and (native
allocator) PyTorch's own memory snapshot around every capture.

Usage: torch_serving.py SELF_JSON [--order largest|smallest] [--mixed N] [--batches 256,128,...]
                        [--allocator async|native] [--pool shared|per-graph] [--row-mib M]
Default: cudaMallocAsync backend (graph memory nodes), largest first, 200 mixed replays, batch
sizes 256 down to 1; the output of batch B is B x M MiB (M = 1), the largest graph's working set
3 x its output.

SELF_JSON (async): {"graphs": [{"name", "reserved_before", "reserved_after", "growth_total",
"replays"}], "final_reserved_high", "final_reserved_current", "launches": [[name, before, after]]}
where before/after are ReservedMemCurrent around each replay, growth_total the sum of the graph's
positive deltas over all its replays.
SELF_JSON (native): {"graphs": [{"name", "pool_id", "pool_bytes_before", "pool_bytes_after"}],
"total"}: the bytes of the graph's private pool (segments of the snapshot with its
segment_pool_id) before and after its capture; total, the pools' sum at the end."""
import argparse
import json
import os
import random
import sys

ap = argparse.ArgumentParser()
ap.add_argument("self_json")
ap.add_argument("--order", choices=["largest", "smallest"], default="largest")
ap.add_argument("--mixed", type=int, default=200)
ap.add_argument("--batches", default="256,128,64,32,16,8,4,2,1")
ap.add_argument("--allocator", choices=["async", "native"], default="async")
ap.add_argument("--pool", choices=["shared", "per-graph"], default="shared")
ap.add_argument("--row-mib", type=float, default=1.0)
ap.add_argument("--expandable", action="store_true", help="native: expandable_segments:True")
args = ap.parse_args()

if args.allocator == "async":
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
elif args.expandable:
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
else:
    os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
try:
    import torch
except ImportError:
    print("SKIP: torch is not installed"); sys.exit(0)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device"); sys.exit(0)
sys.path.insert(0, os.path.dirname(__file__))
import graphmem  # noqa: E402

batches = [int(b) for b in args.batches.split(",")]
batches.sort(reverse=(args.order == "largest"))
row = int(args.row_mib * (1 << 20) / 4)  # floats per output row
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


graphs, outputs, names, natives = {}, {}, {}, []
shared = torch.cuda.graph_pool_handle() if args.pool == "shared" else None
for b in batches:
    g = torch.cuda.CUDAGraph()
    names[b] = f"batch {b}"
    pool_id = None
    if args.allocator == "native":
        pool_id = tuple(shared) if shared is not None else None
        before = pool_bytes(pool_id) if pool_id is not None else 0
    torch.cuda.nvtx.range_push(names[b])
    with torch.cuda.graph(g, pool=shared):
        outputs[b] = step(inputs[b])
    torch.cuda.nvtx.range_pop()
    graphs[b] = g
    if args.allocator == "native":
        pool_id = tuple(g.pool())
        if shared is None:
            before = 0
        natives.append({"name": names[b], "pool_id": list(pool_id),
                        "pool_bytes_before": before, "pool_bytes_after": pool_bytes(pool_id)})

launches, per_graph = [], {b: {"name": names[b], "growth_total": 0, "replays": 0} for b in batches}


def replay(b):
    before = graphmem.counters(0)["reserved_current"]
    graphs[b].replay()
    after = graphmem.counters(0)["reserved_current"]
    launches.append([names[b], before, after])
    pg = per_graph[b]
    if pg["replays"] == 0:
        pg["reserved_before"], pg["reserved_after"] = before, after
    pg["replays"] += 1
    pg["growth_total"] += max(0, after - before)


for b in batches:
    replay(b)
torch.cuda.synchronize()
rng = random.Random(1)
for _ in range(args.mixed):
    replay(rng.choice(batches))
torch.cuda.synchronize()
checksum = float(sum(outputs[b].float().sum().item() for b in batches))
c = graphmem.counters(0)
if args.allocator == "native":
    pools = {tuple(n["pool_id"]) for n in natives}
    doc = {"graphs": natives, "total": sum(pool_bytes(p) for p in pools)}
else:
    doc = {"graphs": [per_graph[b] for b in batches], "final_reserved_high": c["reserved_high"],
           "final_reserved_current": c["reserved_current"], "launches": launches}
doc["order"] = args.order
doc["checksum"] = checksum
with open(args.self_json, "w") as f:
    json.dump(doc, f, indent=1)
print(f"torch_serving ({args.allocator}, {args.order} first) done: reserved high "
      f"{c['reserved_high'] >> 20} MiB; first replays: " +
      ", ".join(f"{per_graph[b]['name']} +{(per_graph[b].get('reserved_after', 0) - per_graph[b].get('reserved_before', 0)) >> 20}"
                for b in batches) + f"; checksum {checksum:.3f}")
