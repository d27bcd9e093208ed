# One NCCL rank as engines capture: warm-up all-reduces on a side stream, then one capture of a
# linear layer and an all-reduce; the process's used memory at each step.
import json, sys, torch, torch.distributed as dist
dist.init_process_group("nccl")
rank = dist.get_rank(); torch.cuda.set_device(rank % torch.cuda.device_count())
def used():
    f, t = torch.cuda.mem_get_info(); return t - f
def pools():
    out = {}
    for g in torch.cuda.memory._snapshot()["segments"]:
        k = str(tuple(g["segment_pool_id"])); out[k] = out.get(k, 0) + g["total_size"]
    return out
r = {"rank": rank}
lin = torch.nn.Linear(1024, 1024, device="cuda", dtype=torch.half)
x = torch.ones(64, 1024, device="cuda", dtype=torch.half)
r["made"] = used()
s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        y = lin(x); dist.all_reduce(y)
torch.cuda.current_stream().wait_stream(s); torch.cuda.synchronize()
r["warm"] = used(); r["pools_warm"] = pools()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = lin(x); dist.all_reduce(y)
torch.cuda.synchronize()
r["captured"] = used(); r["pools_captured"] = pools()
g.replay(); torch.cuda.synchronize()
r["replayed"] = used()
del g; torch.cuda.synchronize()
r["graph_deleted"] = used(); r["pools_end"] = pools()
print("STEPS", json.dumps(r), flush=True)
dist.destroy_process_group()
