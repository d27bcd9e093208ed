"""Bill program: a vLLM-style warm-up of piecewise CUDA graphs. For each batch size,
largest first, one eager run of the whole stack, then one graph per layer piece (layer norm, MLP
4x and the residual: the part of a transformer layer between two attentions), the same function
captured from one call site, each layer's input the previous piece's output, every graph alive
to the end, all in ONE shared pool (torch.cuda.graph_pool_handle()), on one capture stream.
Each graph is made with torch.cuda.CUDAGraph(keep_graph=True) and instantiated explicitly with
g.instantiate(), with the device's used bytes read right before and after (the executable
graph's state, outside every pool: 2 MiB pieces, often 0). Every graph is replayed once at the
end. Each capture (and its instantiation) runs inside the NVTX range "batch B layer I", so the
recording names the graph so. PyTorch's native allocator (PYTORCH_CUDA_ALLOC_CONF unset).
Without keep_graph (an older PyTorch) it prints SKIP and exits 0.

The program reads itself:
  - used bytes (torch.cuda.mem_get_info: total - free) at "start" (right after the first CUDA
    use, before any tensor exists), "before_warmup" (weights and inputs made, one eager pass at
    every batch size on the capture stream done so that CUDA's lazily loaded kernels and
    cuBLAS's handle and workspace for that stream are in place, the cache emptied) and
    "after_warmup" (every capture, instantiation and replay, torch.cuda.synchronize(), the cache
    emptied); the default pool's bytes at the last two;
  - the shared pool's bytes in PyTorch's snapshot before and after every capture, used bytes
    around every instantiate and every first replay, the pools after each batch and at the end.
It writes them and exits at once (the bill is taken at the program's end).

Usage: bill_piecewise.py [--layers 8] [--batches 256,128,64,32,16,8,4,2,1]
                         [--tokens-per-batch 64] [--no-prepass] SELF_JSON
SELF_JSON: {"program", "mode": "piecewise", "layers", "batches", "tokens_per_batch", "prepass",
"pool_id", "used": {"start", "before_warmup", "after_warmup"}, "default_pool": {"before_warmup",
"after_warmup"}, "graphs": [{"name", "batch", "layer", "pool_id", "pool_bytes_before",
"pool_bytes_after", "used_before_instantiate", "used_after_instantiate", "exec_state_bytes",
"used_before_replay", "used_after_replay"}], "exec_state_bytes": sum over graphs,
"pools_after_batch": [{"batch", "pools": {id: bytes}}], "pools_at_end": {id: bytes}};
{"skip": reason} when it cannot run.
stdout: deterministic lines only."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bill_readings as R  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("self_json")
ap.add_argument("--layers", type=int, default=8)
ap.add_argument("--batches", default="256,128,64,32,16,8,4,2,1", help="batch sizes, in capture order")
ap.add_argument("--tokens-per-batch", type=int, default=64, help="tokens per unit of batch size")
ap.add_argument("--no-prepass", action="store_true", help="no eager pass before the before_warmup reading")
args = ap.parse_args()

os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
try:
    import torch
except ImportError:
    R.skip(args.self_json, "torch is not installed"); sys.exit(0)
if not torch.cuda.is_available():
    R.skip(args.self_json, "no CUDA device"); sys.exit(0)
try:
    torch.cuda.CUDAGraph(keep_graph=True)
except TypeError:
    R.skip(args.self_json, "torch.cuda.CUDAGraph has no keep_graph"); sys.exit(0)
if not hasattr(torch.cuda.CUDAGraph, "instantiate"):
    R.skip(args.self_json, "torch.cuda.CUDAGraph has no instantiate()"); sys.exit(0)

torch.cuda.init()
used = {"start": R.used(torch)}  # the context exists, nothing allocated yet

import torch.nn.functional as F  # noqa: E402

D, HIDDEN, DTYPE = 1024, 4096, torch.float16
BATCHES = [int(b) for b in args.batches.split(",")]
T = args.tokens_per_batch

torch.manual_seed(0)
weights = [{"ln_w": torch.ones(D, device="cuda", dtype=DTYPE),
            "ln_b": torch.zeros(D, device="cuda", dtype=DTYPE),
            "w1": torch.randn(D, HIDDEN, device="cuda", dtype=DTYPE) / 32,
            "w2": torch.randn(HIDDEN, D, device="cuda", dtype=DTYPE) / 64}
           for _ in range(args.layers)]
inputs = {b: torch.randn(b * T, D, device="cuda", dtype=DTYPE) for b in BATCHES}
stream = torch.cuda.Stream()


def piece(x, w):
    """One layer's piece between two attentions: x + MLP(LayerNorm(x))."""
    h = F.layer_norm(x, (D,), w["ln_w"], w["ln_b"])
    h = F.gelu(h @ w["w1"])
    return x + h @ w["w2"]


def eager(b):
    """The whole stack at batch b, on the capture stream (vLLM's warm-up run)."""
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        x = inputs[b]
        for w in weights:
            x = piece(x, w)
    torch.cuda.current_stream().wait_stream(stream)


if not args.no_prepass:
    for b in BATCHES:
        eager(b)
used["before_warmup"], default_before = R.reading(torch)

pool = torch.cuda.graph_pool_handle()
pool_id = R.pool_name(pool)
graphs, outputs, entries, pools_after_batch = [], [], [], []


def capture(b, i, x, w):
    """Layer i's piece at batch b: one graph in the shared pool, instantiated at once."""
    g = torch.cuda.CUDAGraph(keep_graph=True)
    name = f"batch {b} layer {i}"
    torch.cuda.nvtx.range_push(name)
    before = R.pool_bytes(torch, pool)
    with torch.cuda.graph(g, pool=pool, stream=stream):
        y = piece(x, w)
    after = R.pool_bytes(torch, pool)
    u0 = R.used(torch)
    g.instantiate()
    u1 = R.used(torch)
    torch.cuda.nvtx.range_pop()
    entries.append({"name": name, "batch": b, "layer": i, "pool_id": R.pool_name(g.pool()),
                    "pool_bytes_before": before, "pool_bytes_after": after,
                    "used_before_instantiate": u0, "used_after_instantiate": u1,
                    "exec_state_bytes": u1 - u0})
    return g, y


for b in BATCHES:
    eager(b)
    x = inputs[b]
    for i, w in enumerate(weights):
        g, x = capture(b, i, x, w)
        graphs.append(g)
        outputs.append(x)
    pools_after_batch.append({"batch": b, "pools": R.pools(torch)})

torch.cuda.current_stream().wait_stream(stream)
for g, e in zip(graphs, entries):
    u0 = R.used(torch)
    g.replay()
    e["used_before_replay"], e["used_after_replay"] = u0, R.used(torch)
torch.cuda.synchronize()
finite = all(bool(torch.isfinite(y).all()) for y in outputs[-args.layers:])
used["after_warmup"], default_after = R.reading(torch)
pools_at_end = R.pools(torch)

R.write(args.self_json, {
    "program": "bill_piecewise.py", "mode": "piecewise", "layers": args.layers, "batches": BATCHES,
    "tokens_per_batch": T, "prepass": not args.no_prepass, "pool_id": pool_id, "used": used,
    "default_pool": {"before_warmup": default_before, "after_warmup": default_after},
    "graphs": entries, "exec_state_bytes": sum(e["exec_state_bytes"] for e in entries),
    "pools_after_batch": pools_after_batch, "pools_at_end": pools_at_end})
print(f"bill_piecewise: {len(BATCHES)} batch sizes x {args.layers} layers = {len(entries)} graphs "
      f"in one shared pool, each replayed once, last batch's outputs {'finite' if finite else 'NOT finite'}")
print("bill_piecewise done")
