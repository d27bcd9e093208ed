"""One rank of a tensor-parallel-shaped warm-up, launched by torchrun (RANK, LOCAL_RANK,
WORLD_SIZE in its environment) on one GPU or several: PyTorch with its cudaMallocAsync backend
captures one graph per batch size (an MLP step on this rank's shard, outputs held), and rank 0
also captures a sampler graph (as an engine's rank 0 samples for all), then replays each graph.
Ranks share a GPU when there is one: no collective runs (NCCL refuses two ranks on one device).
Each rank reads its own graph memory counters at the end.

Usage: torchrun --nproc-per-node N rank_worker.py OUT_DIR
OUT_DIR/rank-R.json: {"rank", "local_rank", "device", "graphs", "reserved_high", "reserved_current"}."""
import json
import os
import sys

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import graphmem  # noqa: E402

rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
device = local % torch.cuda.device_count()
torch.cuda.set_device(device)
torch.manual_seed(rank)
w = torch.randn(1024, 2048, device="cuda") * 0.02


def step(x):
    return torch.relu(x @ w)[:, :256] * 2.0


def sample(x):
    return torch.softmax(x @ w, dim=-1).argmax(dim=-1)


s = torch.cuda.Stream()
graphs, outputs = [], []
plan = [(step, bs) for bs in (64, 32, 16, 8)] + ([(sample, 64)] if rank == 0 else [])
for fn, bs in plan:
    x = torch.randn(bs, 1024, device="cuda")
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        out = fn(x)
    graphs.append(g)
    outputs.append(out)
for _ in range(3):
    for g in graphs:
        g.replay()
torch.cuda.synchronize()
c = graphmem.counters(device)
with open(os.path.join(sys.argv[1], f"rank-{rank}.json"), "w") as f:
    json.dump({"rank": rank, "local_rank": local, "device": device, "graphs": len(graphs),
               "reserved_high": c["reserved_high"], "reserved_current": c["reserved_current"]}, f)
print(f"rank {rank}: {len(graphs)} graphs")
