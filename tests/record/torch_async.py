"""Record-mode client 1: PyTorch with its cudaMallocAsync backend; a small model's forward and
backward captured in one CUDA graph (inside an NVTX range, so the graph is named after it) and
replayed. Usage: torch_async.py SELF_JSON"""
import os
import sys

os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")
try:
    import torch
except ImportError:
    print("SKIP: torch is not installed"); sys.exit(0)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device"); sys.exit(0)
sys.path.insert(0, os.path.dirname(__file__))
import graphmem  # noqa: E402

p = graphmem.points("torch_async")
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                            torch.nn.Linear(4096, 1024)).cuda()
x = torch.randn(256, 1024, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        model.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
model.zero_grad(set_to_none=True)
torch.cuda.nvtx.range_push("train_step")
with torch.cuda.graph(g):
    loss = model(x).square().mean()
    loss.backward()
torch.cuda.nvtx.range_pop()
p.mark("after_instantiate", "instantiate")
g.replay()
p.mark("after_first_launch", "launch:first_launch")
for _ in range(50):
    g.replay()
torch.cuda.synchronize()
p.mark("after_steady")
graphmem.trim(0)
p.mark("after_trim", "trim")
g.replay()
p.mark("after_relaunch_after_trim", "launch@after_trim")
torch.cuda.synchronize()
p.write(sys.argv[1], loss=float(loss.item()))
print("torch_async done, loss", float(loss.item()))
