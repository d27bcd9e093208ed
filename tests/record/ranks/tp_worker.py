"""One rank of a tensor-parallel engine's CUDA graph warm-up, captured as vLLM and SGLang capture:
the collectives warmed up on a side stream first, then one graph per batch size, largest first,
into one shared pool (torch.cuda.graph_pool_handle), each graph four linear layers whose outputs
NCCL all-reduces and an all-gather of the last one. Launched by torchrun on two GPUs or more, one
rank each. PyTorch's native allocator unless GMEM_RANK_ALLOCATOR=async (its cudaMallocAsync
backend: the graphs' memory is memory nodes).

The rank reads the device's memory in use (cudaMemGetInfo) before and after each capture (the
capture and its instantiation, PyTorch's own empty_cache done first so that no cached segment is
given back inside the window), and with the native allocator the shared pool's bytes in PyTorch's
snapshot after each capture; then replays every graph and checks the smallest batch's output
against an eager forward.

Usage: torchrun --nproc-per-node 2 tp_worker.py OUT_DIR
OUT_DIR/tp-rank-R.json: {"rank", "device", "allocator", "used_start" (the context made, nothing
allocated), "used_warm" (after the warm-up), "used_end" (after the replays), "captures": [{"batch",
"used_before", "used_after", "pool_bytes" (native only)}], "pool_end_bytes" (native only),
"replay_matches_eager"}."""
import json
import os
import sys

allocator = os.environ.get("GMEM_RANK_ALLOCATOR", "native")
if allocator == "async":
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
# NVLink multicast (NVLS) hung NCCL's first all-reduce on the lent 2 x H100 machine.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

rank, local, world = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0")), int(os.environ["WORLD_SIZE"])
device = local
torch.cuda.set_device(device)


def used():
    free, total = torch.cuda.mem_get_info(device)
    return total - free


used_start = used()
dist.init_process_group("nccl", device_id=torch.device("cuda", device))
torch.manual_seed(0)
HIDDEN = 1024
layers = [torch.nn.Linear(HIDDEN, HIDDEN, device="cuda", dtype=torch.half) for _ in range(4)]


def forward(x):
    for layer in layers:
        x = layer(x) * 0.5
        dist.all_reduce(x)  # a row-parallel layer's partial sums
    gathered = torch.empty(world * x.shape[0], HIDDEN, device="cuda", dtype=torch.half)
    dist.all_gather_into_tensor(gathered, x)  # the logits, gathered
    return gathered


sizes = [64, 32, 16, 8]
inputs = {b: torch.full((b, HIDDEN), 0.01, device="cuda", dtype=torch.half) for b in sizes}
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.no_grad(), torch.cuda.stream(side):
    for b in sizes:
        for _ in range(2):
            forward(inputs[b])
torch.cuda.current_stream().wait_stream(side)
torch.cuda.synchronize()
used_warm = used()


def pool_bytes(pool):
    if allocator != "native":
        return None
    return sum(seg["total_size"] for seg in torch.cuda.memory._snapshot()["segments"]
               if tuple(seg["segment_pool_id"]) == tuple(pool) and seg["device"] == device)


pool = torch.cuda.graph_pool_handle()
graphs, outputs, captures = [], {}, []
with torch.no_grad():
    for b in sizes:
        g = torch.cuda.CUDAGraph()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        before = used()
        with torch.cuda.graph(g, pool=pool):
            outputs[b] = forward(inputs[b])
        torch.cuda.synchronize()
        captures.append({"batch": b, "used_before": before, "used_after": used(), "pool_bytes": pool_bytes(pool)})
        graphs.append(g)
    for g in graphs:
        g.replay()
    matches = bool(torch.equal(outputs[sizes[-1]], forward(inputs[sizes[-1]])))
    torch.cuda.synchronize()
    used_end = used()
    pool_end = pool_bytes(pool)
out = {"rank": rank, "device": device, "allocator": allocator, "used_start": used_start, "used_warm": used_warm,
       "used_end": used_end, "captures": captures, "pool_end_bytes": pool_end, "replay_matches_eager": matches}
with open(os.path.join(sys.argv[1], f"tp-rank-{rank}.json"), "w") as f:
    json.dump(out, f)
# No barrier or destroy_process_group after graphs that hold NCCL kernels (rank_worker.py says
# why): the bill ends at the program's end, NCCL's buffers still held, as used_end reads them.
