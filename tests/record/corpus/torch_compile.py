"""Corpus program: torch.compile with CUDA graph trees, PyTorch's native allocator (graph trees
refuse the cudaMallocAsync backend). A small transformer-like model (2 pre-norm blocks,
d_model 256, 4 heads, sequence 64, random weights, inference) compiled with
torch.compile(backend="cudagraphs") or torch.compile(mode="reduce-overhead"), called at batch
sizes 8, 4, 2, 1, three calls each: graph trees warm a new shape up (in the graph pool), record
it at the next call, replay it after. dynamic=False: one static compilation, and one recorded
graph, per batch size.

Usage: torch_compile.py [--mode cudagraphs|reduce-overhead] [--batches 8,4,2,1] SELF_JSON
SELF_JSON: {"mode", "batches", "calls_per_batch", "pool_bytes_at_exit": the bytes of every
segment of PyTorch's snapshot whose segment_pool_id is not (0, 0), "pools_at_exit": {pool id:
bytes}}.
stdout: deterministic lines only."""
import argparse
import json
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("self_json")
ap.add_argument("--mode", choices=["cudagraphs", "reduce-overhead"], default="cudagraphs")
ap.add_argument("--batches", default="8,4,2,1", help="batch sizes, in call order")
args = ap.parse_args()

os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
try:
    import torch
except ImportError:
    print("SKIP: torch is not installed"); sys.exit(0)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device"); sys.exit(0)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

D, HEADS, SEQ, LAYERS = 256, 4, 64, 2
BATCHES, CALLS = [int(b) for b in args.batches.split(",")], 3


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, 4 * D)
        self.fc2 = nn.Linear(4 * D, D)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, HEADS, d // HEADS).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(D)

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return self.ln(x)


torch.manual_seed(0)
model = Model().cuda().eval()
inputs = {b: torch.randn(b, SEQ, D, device="cuda") for b in BATCHES}
if args.mode == "cudagraphs":
    compiled = torch.compile(model, backend="cudagraphs", dynamic=False)
else:
    compiled = torch.compile(model, mode="reduce-overhead", dynamic=False)

checksum = 0.0
with torch.no_grad():
    for b in BATCHES:
        for _ in range(CALLS):
            torch.compiler.cudagraph_mark_step_begin()
            y = compiled(inputs[b])
            # read now: graph trees overwrite a graph's outputs at its next replay
            checksum += float(y.double().abs().mean().item())
torch.cuda.synchronize()

pools = {}
for seg in torch.cuda.memory._snapshot()["segments"]:
    pid = tuple(seg.get("segment_pool_id", (0, 0)))
    if pid != (0, 0):
        key = f"{pid[0]},{pid[1]}"
        pools[key] = pools.get(key, 0) + seg["total_size"]
doc = {"mode": args.mode, "batches": BATCHES, "calls_per_batch": CALLS,
       "pool_bytes_at_exit": sum(pools.values()), "pools_at_exit": pools, "checksum": checksum}
with open(args.self_json, "w") as f:
    json.dump(doc, f, indent=1)
print(f"torch_compile ({args.mode}): batches {','.join(map(str, BATCHES))}, {CALLS} calls each, "
      f"checksum {checksum:.3f}")
print("torch_compile done")
