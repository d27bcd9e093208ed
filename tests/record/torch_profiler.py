"""Record-mode client: the PyTorch profiler (Kineto, on CUPTI) beside gmemprof record, which also
needs CUPTI. Usage: torch_profiler.py first|later
  first: the profiler starts before any CUDA call (it may take CUPTI before the recording library)
  later: CUDA first (the recording library subscribes at cuInit), the profiler after
Either way the program must compute the right values and exit 0; prints one JSON line with what
the profiler saw."""
import json
import os
import sys

os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")
try:
    import torch
    from torch.profiler import ProfilerActivity, profile
except ImportError:
    print("SKIP: torch is not installed"); sys.exit(0)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device"); sys.exit(0)
mode = sys.argv[1]


def step():
    x = torch.ones(1 << 20, device="cuda")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = ((x * 2) + 1) * 3
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    assert torch.all(y == 9).item()
    return g, y


if mode == "first":
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
else:
    g, y = step()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        g.replay()
        torch.cuda.synchronize()
events = prof.events()
cuda_events = [e for e in events if str(getattr(e, "device_type", "")).endswith("CUDA")]
print(json.dumps({"mode": mode, "ok": True, "profiler_events": len(events),
                  "profiler_cuda_events": len(cuda_events)}), flush=True)
