"""Profile a CuPy graph and a cuda-python cudaGraph_t with gmem. Needs a GPU and CuPy (and
cuda-python for the second test); skips with the reason elsewhere."""

import pytest

import gmem
import gmem.testing

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
try:
    if cupy.cuda.runtime.getDeviceCount() < 1:
        raise RuntimeError("0 devices")
except Exception as exc:  # CuPy raises its own error types without a driver
    pytest.skip("no CUDA GPU visible to CuPy: %s" % exc, allow_module_level=True)

MiB = 1 << 20


def test_cupy_graph_with_memory_nodes_is_refused_with_a_cuda_error():
    """CuPy instantiates a graph at end_capture, and a graph with memory nodes may have one live
    executable graph: gmem's own instantiation then fails, as gmem.CudaError
    (cudaErrorNotSupported, seen on an H100), not as a crash, and CuPy's graph still runs."""
    # CuPy's stream-ordered pool allocates with cudaMallocAsync: in a capture, memory nodes.
    cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)
    try:
        s = cupy.cuda.Stream(non_blocking=True)
        with s:
            x = cupy.ones(2 * MiB, dtype=cupy.float32)  # 8 MiB
            s.synchronize()
            s.begin_capture()
            out = (x * 2) + 1
            graph = s.end_capture()
        assert gmem.graph_handle(graph) == graph.graph
        with pytest.raises(gmem.CudaError) as e:
            gmem.profile_graph(graph, "cupy_step", reps=2)
        assert e.value.name == "cudaErrorNotSupported"
        assert "instantiating graph 'cupy_step'" in str(e.value)
        graph.launch(s)
        s.synchronize()
        assert bool((out == 3).all())
    finally:
        cupy.cuda.set_allocator(cupy.cuda.MemoryPool().malloc)


EMPTY_GRAPH_SCRIPT = """
import gmem
from cuda.bindings import runtime
err, g = runtime.cudaGraphCreate(0)
assert err == runtime.cudaError_t.cudaSuccess
assert gmem.graph_handle(g) == int(g) != 0
print("handle", hex(int(g)), "storage", hex(g.getPtr()), flush=True)
report = gmem.profile_graph(g, "empty", reps=1)
assert report.analysis.alloc_nodes == 0, report.analysis.alloc_nodes
assert report.analysis.reserved_high_bytes == 0, report.analysis.reserved_high_bytes
runtime.cudaGraphDestroy(g)
print("ok", flush=True)
"""


def test_cuda_python_empty_graph_in_a_subprocess():
    """A cuda-python cudaGraph_t (int() is the handle, getPtr() the address of its storage),
    profiled in a child process so that a crash fails this test instead of the session."""
    pytest.importorskip("cuda.bindings.runtime", reason="cuda-python is not installed")
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-c", EMPTY_GRAPH_SCRIPT], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, "rc %d\n%s\n%s" % (p.returncode, p.stdout, p.stderr)
    assert "ok" in p.stdout


def test_bad_device_is_a_gmem_error():
    runtime = pytest.importorskip("cuda.bindings.runtime", reason="cuda-python is not installed")
    err, g = runtime.cudaGraphCreate(0)
    try:
        with pytest.raises((gmem.UsageError, gmem.CudaError)) as e:
            gmem.profile_graph(g, "empty", device=999, reps=1)
        assert "999" in str(e.value) or getattr(e.value, "code", 0) != 0
    finally:
        runtime.cudaGraphDestroy(g)
