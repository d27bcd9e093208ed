"""Bill program: torch.cuda.make_graphed_callables on a small MLP (4 linear layers,
width 2048, GELU; random weights), whose forward and backward are captured into one graph pool,
then a few training steps (SGD without momentum: no optimizer state) through the graphed module.
PyTorch's native allocator (PYTORCH_CUDA_ALLOC_CONF unset).

The program reads itself:
  - used bytes (torch.cuda.mem_get_info: total - free) at "start" (right after the first CUDA
    use, before the model exists), "before_warmup" (model, data and optimizer made, one eager
    training step done so that CUDA's lazily loaded kernels and cuBLAS's handle are in place,
    gradients dropped, the cache emptied) and "after_warmup" (make_graphed_callables, the
    training steps, gradients dropped, torch.cuda.synchronize(), the cache emptied); the default
    pool's bytes at the last two (not graph memory the program holds);
  - PyTorch's snapshot per graph pool after make_graphed_callables and at the end.
It writes them and exits at once (the bill is taken at the program's end).

Usage: bill_graphed_callables.py [--steps 5] [--batch 512] [--no-prepass] SELF_JSON
SELF_JSON: {"program", "mode": "graphed-callables", "steps", "batch", "prepass", "used":
{"start", "before_warmup", "after_warmup"}, "default_pool": {"before_warmup", "after_warmup"},
"pools_after_capture": {id: bytes}, "pools_at_end": {id: bytes}}; {"skip": reason} when it
cannot run.
stdout: deterministic lines only."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bill_readings as R  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("self_json")
ap.add_argument("--steps", type=int, default=5)
ap.add_argument("--batch", type=int, default=512)
ap.add_argument("--no-prepass", action="store_true", help="no eager step before the before_warmup reading")
args = ap.parse_args()

os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
try:
    import torch
except ImportError:
    R.skip(args.self_json, "torch is not installed"); sys.exit(0)
if not torch.cuda.is_available():
    R.skip(args.self_json, "no CUDA device"); sys.exit(0)
if not hasattr(torch.cuda, "make_graphed_callables"):
    R.skip(args.self_json, "torch.cuda has no make_graphed_callables"); sys.exit(0)

torch.cuda.init()
used = {"start": R.used(torch)}  # the context exists, nothing allocated yet

import torch.nn as nn  # noqa: E402

WIDTH, LAYERS = 2048, 4
torch.manual_seed(0)
layers = []
for _ in range(LAYERS):
    layers += [nn.Linear(WIDTH, WIDTH), nn.GELU()]
model = nn.Sequential(*layers[:-1]).cuda().train()
data = [torch.randn(args.batch, WIDTH, device="cuda") for _ in range(args.steps)]
target = torch.randn(args.batch, WIDTH, device="cuda")
sample = torch.randn(args.batch, WIDTH, device="cuda")  # make_graphed_callables' sample input
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)


def train_step(module, x):
    loss = torch.nn.functional.mse_loss(module(x), target)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


if not args.no_prepass:
    with torch.no_grad():
        before = [p.detach().clone() for p in model.parameters()]
    train_step(model, data[0])
    with torch.no_grad():  # the eager step leaves the weights as they were
        for p, b in zip(model.parameters(), before):
            p.copy_(b)
    del before
used["before_warmup"], default_before = R.reading(torch)

graphed = torch.cuda.make_graphed_callables(model, (sample,))
torch.cuda.synchronize()
pools_after_capture = R.pools(torch)
for x in data:
    train_step(graphed, x)
used["after_warmup"], default_after = R.reading(torch)
pools_at_end = R.pools(torch)

R.write(args.self_json, {
    "program": "bill_graphed_callables.py", "mode": "graphed-callables", "steps": args.steps,
    "batch": args.batch, "prepass": not args.no_prepass, "used": used,
    "default_pool": {"before_warmup": default_before, "after_warmup": default_after},
    "pools_after_capture": pools_after_capture, "pools_at_end": pools_at_end})
print(f"bill_graphed_callables: MLP of {LAYERS} layers, width {WIDTH}, batch {args.batch}, "
      f"{args.steps} training steps through the graphed module")
print("bill_graphed_callables done")
