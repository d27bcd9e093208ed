"""The device memory a torchrun rank reads itself around NCCL work: after an all-reduce, and after
a captured graph with an all-reduce in it (warmed up on a side stream first, as engines do): run
unrecorded and under gmemprof record, the readings must be equal. Usage: torchrun
--nproc-per-node N own_memory_nccl.py TAG; each rank prints one line "MEM {json}"."""
import json, os, sys
import torch, torch.distributed as dist
dist.init_process_group("nccl")
rank = dist.get_rank(); torch.cuda.set_device(rank % torch.cuda.device_count())
x = torch.ones(1 << 20, device="cuda"); dist.all_reduce(x); torch.cuda.synchronize()
f0 = torch.cuda.mem_get_info()[0]
s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3): dist.all_reduce(x)
torch.cuda.current_stream().wait_stream(s); torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * 2; dist.all_reduce(y)
g.replay(); torch.cuda.synchronize()
f1 = torch.cuda.mem_get_info()[0]
print("MEM", json.dumps({"tag": sys.argv[1], "rank": rank, "free0_mib": f0 / 2**20, "free1_mib": f1 / 2**20}), flush=True)
dist.destroy_process_group()
