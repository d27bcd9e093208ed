"""Bill program: a small transformer (4 pre-norm blocks, d_model 512, 8 heads, sequence
128, MLP 4x, random weights, nothing downloaded), inference under torch.no_grad(), compiled with
torch.compile(mode="reduce-overhead") or torch.compile(backend="cudagraphs"), dynamic=False,
called at each batch size, largest first, 3 times (CUDA graph trees warm the shape up inside the
graph pool, record it, replay it). PyTorch's native allocator (PYTORCH_CUDA_ALLOC_CONF unset:
graph trees refuse the cudaMallocAsync backend).

The program reads itself:
  - used bytes (torch.cuda.mem_get_info: total - free) at "start" (right after the first CUDA
    use, before the model exists), "before_warmup" (model and inputs made, one eager pass at
    every batch size done so that CUDA's lazily loaded kernels and cuBLAS's handle are in place,
    the cache emptied) and "after_warmup" (every batch's 3 calls, torch.cuda.synchronize(), the
    cache emptied); the default pool's bytes at the last two (not graph memory the program holds);
  - PyTorch's snapshot per graph pool after each batch's 3 calls and at the end.
It writes them and exits at once: the last reading is the state at the program's end, where the
companion of `gmemprof record` takes the bill.

Usage: bill_compile.py [--mode reduce-overhead|cudagraphs] [--batches 16,8,4,1]
                       [--compile-threads N] [--no-prepass] SELF_JSON
SELF_JSON: {"program", "mode", "batches", "calls_per_batch", "prepass", "compile_threads",
"used": {"start", "before_warmup", "after_warmup"}, "default_pool": {"before_warmup",
"after_warmup"}, "pools_after_batch": [{"batch", "pools": {id: bytes}}], "pools_at_end":
{id: bytes}}; {"skip": reason} when it cannot run.
stdout: deterministic lines only."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bill_readings as R  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("self_json")
ap.add_argument("--mode", choices=["reduce-overhead", "cudagraphs"], default="reduce-overhead")
ap.add_argument("--batches", default="16,8,4,1", help="batch sizes, in call order (largest first)")
ap.add_argument("--compile-threads", type=int, default=None,
                help="TORCHINDUCTOR_COMPILE_THREADS (1: no compile worker processes); PyTorch's default if unset")
ap.add_argument("--no-prepass", action="store_true",
                help="no eager pass before the before_warmup reading")
args = ap.parse_args()

os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
if args.compile_threads is not None:
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(args.compile_threads)
try:
    import torch
except ImportError:
    R.skip(args.self_json, "torch is not installed"); sys.exit(0)
if not torch.cuda.is_available():
    R.skip(args.self_json, "no CUDA device"); sys.exit(0)

torch.cuda.init()
used = {"start": R.used(torch)}  # the context exists, nothing allocated yet

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

D, HEADS, SEQ, LAYERS, MLP = 512, 8, 128, 4, 4
BATCHES = [int(b) for b in args.batches.split(",")]
CALLS = 3


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, MLP * D)
        self.fc2 = nn.Linear(MLP * D, D)

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
if not args.no_prepass:
    with torch.no_grad():
        for b in BATCHES:
            model(inputs[b])
if args.mode == "cudagraphs":
    compiled = torch.compile(model, backend="cudagraphs", dynamic=False)
else:
    compiled = torch.compile(model, mode="reduce-overhead", dynamic=False)
used["before_warmup"], default_before = R.reading(torch)

pools_after_batch = []
shapes = []
with torch.no_grad():
    for b in BATCHES:
        for _ in range(CALLS):
            torch.compiler.cudagraph_mark_step_begin()
            y = compiled(inputs[b])
            shapes.append(tuple(y.shape))
            del y  # graph trees overwrite a graph's outputs at its next replay
        torch.cuda.synchronize()
        pools_after_batch.append({"batch": b, "pools": R.pools(torch)})
used["after_warmup"], default_after = R.reading(torch)
pools_at_end = R.pools(torch)

R.write(args.self_json, {
    "program": "bill_compile.py", "mode": args.mode, "batches": BATCHES, "calls_per_batch": CALLS,
    "prepass": not args.no_prepass, "compile_threads": args.compile_threads,
    "used": used, "default_pool": {"before_warmup": default_before, "after_warmup": default_after},
    "pools_after_batch": pools_after_batch, "pools_at_end": pools_at_end})
ok = all(s == (b, SEQ, D) for s, b in zip(shapes, [b for b in BATCHES for _ in range(CALLS)]))
print(f"bill_compile ({args.mode}): batches {','.join(map(str, BATCHES))}, {CALLS} calls each, "
      f"outputs {'of the input shapes' if ok else 'of OTHER shapes'}")
print("bill_compile done")
