"""Profile a PyTorch CUDA graph with gmem and assert its footprint (the README's example).

Needs a GPU and PyTorch with the cudaMallocAsync allocator backend (set here before torch is
imported), whose allocations during capture become graph memory nodes. Skips with the reason
elsewhere. The graph handle comes from PyTorch's CUDA runtime and gmem links its own (static)
one: both use the driver's primary context, and a cudaGraph_t is a driver object (CUgraph), so
gmem reads and instantiates PyTorch's graph directly."""

import os

os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")

import pytest  # noqa: E402

import gmem  # noqa: E402
import gmem.testing  # noqa: E402

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU visible to PyTorch", allow_module_level=True)

MiB = 1 << 20
N = 4 * MiB  # float32 elements: 16 MiB per tensor


def capture_step():
    """A graph whose temporaries are allocated and freed inside it, and whose output is not."""
    if torch.cuda.get_allocator_backend() != "cudaMallocAsync":
        pytest.skip("PyTorch's allocator backend is " + torch.cuda.get_allocator_backend() +
                    "; set PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync before importing torch")
    x = torch.ones(N, device="cuda")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g):
        out = ((x * 2) + 1) * 3  # two 16 MiB temporaries, freed in the graph; out is not
    return g, x, out


def test_profile_torch_graph_and_assert_footprint():
    g, x, out = capture_step()
    report = gmem.profile_graph(g, "torch_step", reps=3)
    a = report.analysis
    assert report.status == "ok", report.status_message
    assert report.environment.device_name  # the GPU as the driver names it
    assert a.alloc_nodes >= 1
    assert a.requested_bytes >= N * 4  # at least the output tensor
    assert a.unfreed_allocations >= 1  # `out` outlives the graph
    # The lower bound is a bound: no reservation can be below it.
    assert a.reserved_high_bytes >= a.lower_bound_rounded_bytes > 0
    assert a.used_high_bytes <= a.reserved_high_bytes
    # The footprint assertion a user writes: three 16 MiB tensors at most live together.
    gmem.testing.assert_reserved_at_most(report, 3 * 16 * MiB + report.environment.granularity_bytes)
    gmem.testing.assert_within_bound(report, 2.0)
    # A budget below what was reserved fails, and the message carries the diagnostics.
    with pytest.raises(AssertionError) as e:
        gmem.testing.assert_reserved_at_most(report, a.reserved_high_bytes - 1)
    assert "torch_step" in str(e.value) and "diagnostics:" in str(e.value)
    assert "unfreed_allocation" in [d.code for d in report.diagnostics]
    assert {c.phase for c in report.launch_costs} == set(gmem.phases())
    # Every phase timed the reference launch beside each of its samples
    assert all(c.reference_host.count == c.host.count > 0 for c in report.launch_costs)
    # The report checks against itself, and round-trips through JSON.
    assert not gmem.check(report, report).regressed()
    assert gmem.report_from_json(report.to_json()).analysis.reserved_high_bytes == \
        a.reserved_high_bytes

    # Cross-runtime safety: after gmem instantiated, launched and destroyed its own executable
    # graphs of PyTorch's graph, PyTorch still replays it and computes the right values.
    g.replay()
    torch.cuda.synchronize()
    assert torch.all(out == 9).item()
    x.fill_(2)
    g.replay()
    torch.cuda.synchronize()
    assert torch.all(out == 15).item()


def test_profiling_after_pytorch_instantiated_raises_a_gmem_error():
    """A graph with memory nodes may have one live executable graph at a time: once PyTorch
    has instantiated it, gmem's own instantiation fails, as a gmem exception (not a crash)."""
    g, x, out = capture_step()
    g.replay()
    torch.cuda.synchronize()
    with pytest.raises((gmem.CudaError, gmem.UsageError)) as e:
        gmem.profile_graph(g, "torch_step_instantiated", reps=1)
    if isinstance(e.value, gmem.CudaError):
        assert e.value.code != 0 and e.value.name in str(e.value)
    # PyTorch's executable graph is untouched.
    g.replay()
    torch.cuda.synchronize()
    assert torch.all(out == 9).item()


def test_torch_stream_and_event_are_usable_around_profiling():
    """Streams and events are driver objects too: work PyTorch queued on its stream before the
    profile is complete after it, and its events still time."""
    g, x, out = capture_step()
    s = torch.cuda.Stream()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(s):
        start.record()
        y = x * 5
        end.record()
    gmem.profile_graph(g, "torch_step_streams", reps=1)
    s.synchronize()
    assert torch.all(y == 5).item()
    assert start.elapsed_time(end) >= 0
    # gmem freed what its launches left unfreed (`out`'s memory): PyTorch's replay maps it
    # again before `out` is read or dropped (dropping it unreplayed makes PyTorch's
    # cudaFreeAsync fail, and PyTorch aborts the process; seen on an H100).
    g.replay()
    torch.cuda.synchronize()
    assert torch.all(out == 9).item()


DROP_UNREPLAYED_SCRIPT = """
import os, sys
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
import torch, gmem
x = torch.ones(%d, device="cuda")
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph(keep_graph=True)
with torch.cuda.graph(g):
    out = ((x * 2) + 1) * 3
gmem.profile_graph(g, "dropped", reps=1)
if sys.argv[1] == "replay":
    g.replay()
    torch.cuda.synchronize()
    assert torch.all(out == 9).item()
print("profiled", flush=True)
del out, g
torch.cuda.synchronize()
print("dropped", flush=True)
""" % N


@pytest.mark.parametrize("mode", ["replay", "no_replay"])
def test_graph_outputs_after_profiling_need_a_replay(mode, record_property):
    """The rule the README gives, measured: gmem frees what its launches left unfreed, so a
    PyTorch graph's outputs are unmapped after profiling until PyTorch replays the graph. With a
    replay the process ends cleanly; dropping the outputs unreplayed makes PyTorch's own free of
    them fail (child process: PyTorch aborts it)."""
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-c", DROP_UNREPLAYED_SCRIPT, mode], capture_output=True,
                       text=True, timeout=120)
    log = "rc %d\n%s\n%s" % (p.returncode, p.stdout, p.stderr[-2000:])
    record_property("child_rc", p.returncode)  # kept in the junit report: what the child met
    record_property("child_stderr_tail", p.stderr[-600:])
    assert "profiled" in p.stdout, log
    if mode == "replay":
        assert p.returncode == 0 and "dropped" in p.stdout, log
    else:
        assert p.returncode != 0, log


def test_profile_a_set_of_torch_graphs_and_assert_the_pool():
    """Three graphs of a serving warm-up (largest first, outputs held by the script):
    gmem.profile_graphs gives each graph's growth and the set's high watermark, explained."""
    if torch.cuda.get_allocator_backend() != "cudaMallocAsync":
        pytest.skip("needs PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync before importing torch")
    graphs, inputs, outs = [], [], []
    for rows in (64, 16, 4):  # 64 MiB, 16 MiB, 4 MiB of float32 per temporary
        inputs.append(torch.ones(rows * (MiB // 4), device="cuda"))  # alive while graphs read it
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph(keep_graph=True)
        with torch.cuda.graph(g):
            outs.append(((inputs[-1] * 2) + 1) * 3)
        graphs.append((g, "rows %d" % rows))
    report = gmem.profile_graphs(graphs, rounds=2)
    pool = report.recorded.pools[0]
    granule = report.environment.granularity_bytes
    # The pool model predicts the measured high watermark, and the attribution sums to it.
    assert pool.model_high_bytes == pool.high_bytes
    assert sum(s.bytes for s in pool.attribution) == pool.high_bytes
    # Every byte the pool gained is some graph's growth (above what other graphs of this process,
    # the earlier tests', held before: start_bytes); the largest graph reached the high.
    assert sum(g.growth_bytes for g in report.recorded.graphs) + pool.start_bytes == pool.high_bytes
    assert pool.high_graph == "rows 64"
    # Each graph's own figure is its own (alone), not the device's watermark.
    small = report.scenarios[2].analysis
    assert small.reserved_high_bytes < pool.high_bytes
    assert small.reserved_high_bytes <= small.lower_bound_rounded_bytes + granule
    gmem.testing.assert_pool_at_most(report, pool.high_bytes)
    with pytest.raises(AssertionError) as e:
        gmem.testing.assert_pool_at_most(report, pool.high_bytes - 1)
    assert "rows 64" in str(e.value) and "working_set" in str(e.value)
    for g, _ in graphs:  # map the outputs again before they are read or dropped (README)
        g.replay()
    torch.cuda.synchronize()
    assert float(outs[2][0].item()) == 9.0
