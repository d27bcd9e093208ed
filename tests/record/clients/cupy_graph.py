"""Record mode's corpus, CuPy: a graph captured on a stream with CuPy's stream-ordered pool
(MemoryAsyncPool, cudaMallocAsync), whose two 16 MiB temporaries are allocated and freed inside
the capture (two memory alloc and two free nodes), launched three times; the program reads the
device's graph memory counters itself (tests/record/graphmem.py: libcuda through ctypes).

Usage: cupy_graph.py SELF_JSON
SELF_JSON: {"launches", "reserved_high", "used_high", "result"}. stdout: one line."""
import json
import os
import sys

try:
    import cupy as cp
except ImportError:
    print("SKIP: CuPy is not installed")
    sys.exit(0)

MIB = 1 << 20
pool = cp.cuda.MemoryAsyncPool()
cp.cuda.set_allocator(pool.malloc)
stream = cp.cuda.Stream(non_blocking=True)
with stream:
    out = cp.zeros((), dtype=cp.float32)       # outside the graph: the result's home
    stream.synchronize()
    stream.begin_capture()
    a = cp.empty(16 * MIB // 4, dtype=cp.float32)
    a.fill(1.0)
    b = a * 2.0
    cp.sum(b, out=out)
    del a, b                                   # freed in the capture: free nodes
    graph = stream.end_capture()
    launches = 3
    for _ in range(launches):
        graph.launch(stream)
    stream.synchronize()

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import graphmem  # noqa: E402

counters = graphmem.counters(0)
doc = {"launches": launches, "reserved_high": counters["reserved_high"], "used_high": counters["used_high"],
       "result": float(out.get())}
with open(sys.argv[1], "w") as f:
    json.dump(doc, f)
print(f"cupy: graph launched {launches} times, sum {doc['result']:.0f}")
