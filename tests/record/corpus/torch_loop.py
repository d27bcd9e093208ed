"""Corpus program: launch loops without synchronization (cudaMallocAsync backend, graph memory
nodes). Launches that wait for room in the launch queue take 15 us or more without mapping
anything: none of them is a remap.

  tight:        one small graph (a few MiB of working memory, tiny kernels, a 16 KiB output)
                replayed once and synchronized, then REPLAYS times with no synchronization
                between replays, then synchronized;
  back-to-back: GRAPHS small graphs (each holding a 256 KiB output, 256 KiB of working memory),
                captured from one call site, then replayed in 3 rounds back to back on one
                stream without synchronization (each held output takes a granule of its own).

Usage: torch_loop.py [--mode tight|back-to-back] [--graphs 1000] [--replays 20000] SELF_JSON
SELF_JSON: {"mode", "graphs" (how many were captured), "replays" (tight: REPLAYS, the loop's;
back-to-back: the rounds, 3), "launches" (launches of each graph in all: tight 1 + REPLAYS,
back-to-back 3), "final_reserved_high", "final_reserved_current"}.
stdout: deterministic lines only."""
import argparse
import json
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("self_json")
ap.add_argument("--mode", choices=["tight", "back-to-back"], default="tight")
ap.add_argument("--graphs", type=int, default=1000)
ap.add_argument("--replays", type=int, default=20000)
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

ROUNDS = 3
torch.manual_seed(0)


def tight_step(x):                 # x: 4096 floats (16 KiB)
    h = x.repeat(128)              # 2 MiB of working memory
    h = h * 1.5 + 1.0              # 4 MiB more (two temporaries)
    return h[:4096] * 0.5          # the output, 16 KiB


def small_step(x):                 # x: 65536 floats (256 KiB)
    h = x * 2.0                    # 256 KiB of working memory
    return h + 1.0                 # the output, 256 KiB, held by the script


step = tight_step if args.mode == "tight" else small_step
x = torch.randn(4096 if args.mode == "tight" else 65536, device="cuda")

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        step(x)
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()

# Captured with capture_begin / capture_end on the side stream (what torch.cuda.graph does
# inside), without its synchronize and cache emptying per capture, which a thousand captures
# would pay a thousand times.
cap = s


def capture():
    """The one call site every graph is captured from."""
    g = torch.cuda.CUDAGraph()
    cap.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(cap):
        g.capture_begin()
        out = step(x)
        g.capture_end()
    torch.cuda.current_stream().wait_stream(cap)
    return g, out


if args.mode == "tight":
    g, out = capture()
    outputs = [out]
    g.replay()                     # the first launch (maps the graph's memory), then a sync
    torch.cuda.synchronize()
    for _ in range(args.replays):
        g.replay()
    torch.cuda.synchronize()
    graphs_n, launches = 1, 1 + args.replays
else:
    graphs, outputs = [], []
    for _ in range(args.graphs):
        g, out = capture()
        graphs.append(g)
        outputs.append(out)
    torch.cuda.synchronize()
    for _ in range(ROUNDS):        # round 1 holds every first launch; no sync in between
        for g in graphs:
            g.replay()
    torch.cuda.synchronize()
    graphs_n, launches = args.graphs, ROUNDS

checksum = sum(float(o.double().sum().item()) for o in outputs)
c = graphmem.counters(0)
doc = {"mode": args.mode, "graphs": graphs_n, "replays": args.replays if args.mode == "tight" else ROUNDS,
       "launches": launches, "final_reserved_high": c["reserved_high"],
       "final_reserved_current": c["reserved_current"], "checksum": checksum}
with open(args.self_json, "w") as f:
    json.dump(doc, f, indent=1)
print(f"torch_loop ({args.mode}): {graphs_n} graph(s), {launches} launch(es) each, "
      f"checksum {checksum:.3f}")
print("torch_loop done")
