"""One rank of a tensor-parallel-shaped warm-up, launched by torchrun (RANK, LOCAL_RANK,
WORLD_SIZE in its environment) on one GPU or several: PyTorch with its cudaMallocAsync backend
(or, with GMEM_RANK_ALLOCATOR=native, its native allocator: a private pool per graph) captures
one graph per batch size (an MLP step on this rank's shard, outputs held), and rank 0
also captures a sampler graph (as an engine's rank 0 samples for all), then replays each graph.
Where each rank has a GPU of its own, each also captures a tensor-parallel step whose output is
all-reduced across the ranks by NCCL inside the graph, and checks the sum after its replays; ranks
that share a GPU run no collective (NCCL refuses two ranks on one device). Each rank reads its own
graph memory counters at the end.

Usage: torchrun --nproc-per-node N rank_worker.py OUT_DIR
OUT_DIR/rank-R.json: {"rank", "local_rank", "device", "graphs", "reserved_high", "reserved_current",
"allocator" ("async" or "native"), "collective", "own_gpu" (no other rank on its device),
"used_start" and "used_end" (the device's memory in use, cudaMemGetInfo, once the context is made
and at the end), "capture_growth" (per graph, in capture order, the memory in use after its
capture and instantiation less before: NCCL's share of a collective graph included), with the
native allocator "snapshot_pool_bytes" (what PyTorch's memory snapshot lists in graph pools at the
end: segments whose segment_pool_id is not (0, 0)), and with a collective "all_reduce" (what the
captured all-reduce gave) and "all_reduce_expected"}."""
import json
import os
import sys

allocator = os.environ.get("GMEM_RANK_ALLOCATOR", "async")
if allocator == "async":
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import graphmem  # noqa: E402

rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
device = local % torch.cuda.device_count()
torch.cuda.set_device(device)


def used():
    free, total = torch.cuda.mem_get_info(device)
    return total - free


used_start = used()                # the context made, nothing allocated yet
torch.manual_seed(rank)
w = torch.randn(1024, 2048, device="cuda") * 0.02
world = int(os.environ.get("WORLD_SIZE", "1"))
collective = world > 1 and torch.cuda.device_count() >= world
if collective:
    import torch.distributed as dist
    # NVLink multicast (NVLS) hung NCCL's first all-reduce on the lent 2 x H100 machine, whose
    # notes say to leave it off.
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    dist.init_process_group("nccl", device_id=torch.device("cuda", device))
    warm = torch.ones(1, device="cuda")
    dist.all_reduce(warm)  # NCCL's communicator made outside any capture
    torch.cuda.synchronize()


def step(x):
    return torch.relu(x @ w)[:, :256] * 2.0


def sample(x):
    return torch.softmax(x @ w, dim=-1).argmax(dim=-1)


def reduced_step(x):               # a row-parallel layer: each rank's partial sum, all-reduced
    y = torch.relu(x @ w)[:, :256] * 2.0
    dist.all_reduce(y)
    return y


def reduced_ones(x):               # every rank gives rank + 1: the sum is world * (world + 1) / 2
    y = torch.full((1,), float(rank + 1), device="cuda") + 0 * x[:1, 0]
    dist.all_reduce(y)
    return y


s = torch.cuda.Stream()
graphs, outputs, capture_growth = [], [], []
plan = [(step, bs) for bs in (64, 32, 16, 8)] + ([(sample, 64)] if rank == 0 else [])
plan += [(reduced_step, 32), (reduced_ones, 8)] if collective else []
for fn, bs in plan:
    x = torch.randn(bs, 1024, device="cuda")
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn(x)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    before = used()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        out = fn(x)
    torch.cuda.synchronize()
    capture_growth.append(used() - before)  # what capturing and instantiating took (NCCL's too)
    graphs.append(g)
    outputs.append(out)
for _ in range(3):
    for g in graphs:
        g.replay()
torch.cuda.synchronize()
c = graphmem.counters(device)
doc = {"rank": rank, "local_rank": local, "device": device, "graphs": len(graphs), "allocator": allocator,
       "reserved_high": c["reserved_high"], "reserved_current": c["reserved_current"], "collective": collective,
       "own_gpu": torch.cuda.device_count() >= world, "used_start": used_start, "used_end": used(),
       "capture_growth": capture_growth}
if allocator == "native":
    doc["snapshot_pool_bytes"] = sum(
        seg["total_size"] for seg in torch.cuda.memory._snapshot()["segments"]
        if int(seg.get("device", device)) == device and tuple(seg.get("segment_pool_id", (0, 0))) != (0, 0))
if collective:
    # No barrier or destroy_process_group after graphs that hold NCCL kernels: on 2 x H100 (NVLS
    # off, under record) both ranks replayed and synchronized, then hung where those came next.
    # The process group ends with the process.
    doc["all_reduce"] = float(outputs[-1].item())
    doc["all_reduce_expected"] = world * (world + 1) / 2
with open(os.path.join(sys.argv[1], f"rank-{rank}.json"), "w") as f:
    json.dump(doc, f)
print(f"rank {rank}: {len(graphs)} graphs" + (f", all-reduce in a graph gave {doc['all_reduce']}" if collective else ""),
      flush=True)
