"""The device memory a PyTorch program reads itself (cudaMemGetInfo through torch), after its first
allocation and after a captured graph's first replay, with the processes nvidia-smi lists: run
unrecorded and under gmemprof record, the readings must be equal (recording takes no device
memory of the program's). Usage: own_memory.py TAG; prints one line "MEM {json}"."""
import json, os, subprocess, sys
import torch
x = torch.ones(1 << 20, device="cuda"); torch.cuda.synchronize()
free0, total = torch.cuda.mem_get_info()
g = torch.cuda.CUDAGraph(); s = torch.cuda.Stream()
with torch.cuda.graph(g):
    y = x * 2
g.replay(); torch.cuda.synchronize()
free1, _ = torch.cuda.mem_get_info()
apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"],
                      capture_output=True, text=True).stdout.strip()
print("MEM", json.dumps({"tag": sys.argv[1], "pid": os.getpid(), "free0_mib": free0 / 2**20, "free1_mib": free1 / 2**20, "apps": apps}), flush=True)
