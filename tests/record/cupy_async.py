"""Record-mode client 2: CuPy with MemoryAsyncPool (cudaMallocAsync) under stream capture.
Usage: cupy_async.py SELF_JSON"""
import os
import sys

try:
    import cupy
except ImportError:
    print("SKIP: cupy is not installed"); sys.exit(0)
sys.path.insert(0, os.path.dirname(__file__))
import graphmem  # noqa: E402

cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)
p = graphmem.points("cupy_async")
a = cupy.random.random(1 << 24, dtype=cupy.float32)
total = cupy.zeros((), dtype=cupy.float32)  # the result lives outside the graph
stream = cupy.cuda.Stream(non_blocking=True)
with stream:
    stream.begin_capture()
    b = a * 2.0          # temporaries the graph allocates and frees
    c = cupy.sqrt(b) + a
    cupy.sum(c, out=total)
    del b, c
    graph = stream.end_capture()
p.mark("after_instantiate", "instantiate")
graph.launch(stream)
p.mark("after_first_launch", "launch:first_launch")
for _ in range(50):
    graph.launch(stream)
stream.synchronize()
p.mark("after_steady")
p.write(sys.argv[1], total=float(total.get()))
print("cupy_async done")
