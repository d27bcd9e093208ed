"""The device memory a torchrun rank reads itself around NCCL work: when its context is made,
after an all-reduce, after a captured graph with an all-reduce in it (warmed up on a side stream
first, as engines do), and after the process group is destroyed. Run unrecorded and under gmemprof
record, the readings must be equal, and the recorded bill's process change must be the
unrecorded rank's own change (tests/record/check_own_memory.py). Usage: torchrun
--nproc-per-node N own_memory_nccl.py TAG; each rank prints one line "MEM {json}" (used MiB)."""
import json, os, sys
import torch, torch.distributed as dist
local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local % torch.cuda.device_count())
free, total = torch.cuda.mem_get_info()  # makes the context
used = lambda: (total - torch.cuda.mem_get_info()[0]) / 2**20
readings = {"start": (total - free) / 2**20}
dist.init_process_group("nccl")
rank = dist.get_rank()
x = torch.ones(1 << 20, device="cuda"); dist.all_reduce(x); torch.cuda.synchronize()
readings["all_reduce"] = used()
s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3): dist.all_reduce(x)
torch.cuda.current_stream().wait_stream(s); torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * 2; dist.all_reduce(y)
g.replay(); torch.cuda.synchronize()
readings["graph"] = used()
dist.destroy_process_group()
readings["end"] = used()
print("MEM", json.dumps({"tag": sys.argv[1], "rank": rank, "used_mib": readings}), flush=True)
