"""The device memory a PyTorch program reads itself (cudaMemGetInfo through torch): when its
context is made (before its first allocation), after its first allocation, after a captured
graph's first replay. Run unrecorded and under gmemprof record, the readings must be equal
(recording takes no device memory of the program's), and the recorded bill's process change must
be the unrecorded program's own change (tests/record/check_own_memory.py). Usage:
own_memory_torch.py TAG; prints one line "MEM {json}" (used MiB, total - free)."""
import json, os, subprocess, sys
import torch
free, total = torch.cuda.mem_get_info()  # makes the context
start = total - free
x = torch.ones(1 << 20, device="cuda"); torch.cuda.synchronize()
after_alloc = total - torch.cuda.mem_get_info()[0]
g = torch.cuda.CUDAGraph(); s = torch.cuda.Stream()
with torch.cuda.graph(g):
    y = x * 2
g.replay(); torch.cuda.synchronize()
end = total - torch.cuda.mem_get_info()[0]
apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"],
                      capture_output=True, text=True).stdout.strip()
print("MEM", json.dumps({"tag": sys.argv[1], "pid": os.getpid(), "used_mib": {
    "start": start / 2**20, "allocated": after_alloc / 2**20, "end": end / 2**20}, "apps": apps}), flush=True)
