"""Record-mode client 3: PyTorch with its native caching allocator. The captured graph has no
memory nodes (its memory is the allocator's private graph pool): the recording must say so,
not fail. Usage: torch_native.py SELF_JSON"""
import os
import sys

if "cudaMallocAsync" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""):
    del os.environ["PYTORCH_CUDA_ALLOC_CONF"]
try:
    import torch
except ImportError:
    print("SKIP: torch is not installed"); sys.exit(0)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device"); sys.exit(0)
sys.path.insert(0, os.path.dirname(__file__))
import graphmem  # noqa: E402

p = graphmem.points("torch_native")
model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(),
                            torch.nn.Linear(2048, 512)).cuda()
x = torch.randn(128, 512, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        model(x).sum().backward()
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = model(x).sum()
    y.backward()
g.replay()
torch.cuda.synchronize()
p.mark("after_first_launch")
p.write(sys.argv[1], private_pool_reserved=torch.cuda.memory_reserved())
print("torch_native done")
