"""Does a driver query the recording makes, issued between an event record into a capture and
another stream's wait on that event, change what the wait returns? No gmem involved.

Usage (on a GPU machine with PyTorch and cuda-python): tools/stream_flags_probe.py VARIANT
VARIANT: none, flags-s0 (cuStreamGetFlags of the capturing stream), flags-s1 (of the other),
iscapturing-s0, ctxdevice, meminfo, graphmem, ptrattr. Prints the call's result, the wait's and
the capture end's (reports/gpu-runs/*-stream-flags-during-capture.txt)."""
import sys, torch
from cuda.bindings import driver as cu
which = sys.argv[1]
cu.cuInit(0); cu.cuDriverGetVersion()
x = torch.ones(1 << 20, device="cuda"); torch.cuda.synchronize()
s0, s1 = torch.cuda.Stream(), torch.cuda.Stream()
dev = cu.cuCtxGetDevice()[1]
g = torch.cuda.CUDAGraph()
s0.wait_stream(torch.cuda.current_stream())
out = {}
with torch.cuda.stream(s0):
    g.capture_begin()
    z = x + 1
    ev = torch.cuda.Event()
    ev.record(s0)
    h0, h1 = cu.CUstream(s0.cuda_stream), cu.CUstream(s1.cuda_stream)
    if which == "flags-s0": out["call"] = cu.cuStreamGetFlags(h0)[0]
    if which == "flags-s1": out["call"] = cu.cuStreamGetFlags(h1)[0]
    if which == "ctxdevice": out["call"] = cu.cuCtxGetDevice()[0]
    if which == "meminfo": out["call"] = cu.cuMemGetInfo()[0]
    if which == "graphmem": out["call"] = cu.cuDeviceGetGraphMemAttribute(dev, cu.CUgraphMem_attribute.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)[0]
    if which == "iscapturing-s0": out["call"] = cu.cuStreamIsCapturing(h0)
    if which == "ptrattr": out["call"] = cu.cuPointerGetAttribute(cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, x.data_ptr())[0]
    try:
        s1.wait_event(ev)
        out["wait"] = "ok"
    except Exception as e:
        out["wait"] = str(e).splitlines()[0]
    try:
        with torch.cuda.stream(s1):
            z2 = z + 1
        s0.wait_stream(s1)
        g.capture_end()
        out["end"] = "ok"
    except Exception as e:
        out["end"] = str(e).splitlines()[0]
print(which, out, flush=True)
