"""The device memory a driver-API program (cuda.bindings) reads itself (cuMemGetInfo) at each
step: its context, an allocation and a stream, two graphs of a memset, two with memory nodes,
each captured, instantiated, uploaded and launched twice. Run unrecorded and under gmemprof
record, the readings show where a hook takes memory of its own; the recorded bill's process
change must be the unrecorded program's own change (tests/record/check_own_memory.py).
Usage: own_memory_driver.py TAG; prints one line "MEM {json}" (used MiB at each step)."""
import json, sys
from cuda.bindings import driver as cu
def ok(r):
    err = r[0] if isinstance(r, tuple) else r
    assert err == cu.CUresult.CUDA_SUCCESS, err
    return r[1:] if isinstance(r, tuple) else None
ok(cu.cuInit(0)); (dev,) = ok(cu.cuDeviceGet(0)); (ctx,) = ok(cu.cuDevicePrimaryCtxRetain(dev)); ok(cu.cuCtxSetCurrent(ctx))
steps = {}
def read(name):
    free, total = ok(cu.cuMemGetInfo())
    steps[name] = (total - free) / 2**20
read("context")
(buf,) = ok(cu.cuMemAlloc(1 << 20)); (s,) = ok(cu.cuStreamCreate(1)); read("alloc+stream")
ok(cu.cuMemsetD8Async(buf, 1, 1 << 20, s)); ok(cu.cuStreamSynchronize(s)); read("memset")
def graph(tag, nodes):
    ok(cu.cuStreamBeginCapture(s, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    ok(cu.cuMemsetD8Async(buf, 2, 1 << 20, s))
    if nodes:
        (p,) = ok(cu.cuMemAllocAsync(64 << 20, s)); ok(cu.cuMemsetD8Async(p, 3, 64 << 20, s)); ok(cu.cuMemFreeAsync(p, s))
    (g,) = ok(cu.cuStreamEndCapture(s)); read(tag + ":captured")
    (e,) = ok(cu.cuGraphInstantiate(g, 0)); read(tag + ":instantiated")
    ok(cu.cuGraphUpload(e, s)); ok(cu.cuStreamSynchronize(s)); read(tag + ":uploaded")
    ok(cu.cuGraphLaunch(e, s)); ok(cu.cuStreamSynchronize(s)); read(tag + ":launched")
    ok(cu.cuGraphLaunch(e, s)); ok(cu.cuStreamSynchronize(s)); read(tag + ":launched2")
    return g, e
keep = [graph("plain1", False), graph("plain2", False), graph("nodes1", True), graph("nodes2", True)]
steps["start"], steps["end"] = steps["context"], steps["nodes2:launched2"]
print("MEM", json.dumps({"tag": sys.argv[1], "used_mib": steps}), flush=True)
