"""Know the bill before the warm-up: capture a few batch sizes, predict the whole warm-up.

    import gmem.predict
    sample = gmem.predict.sample(runner.capture, [512, 128, 16, 1])   # the engine's own captures
    bill = gmem.predict.predict(sample, sizes=range(512, 0, -1))      # every size, largest first
    runner.release_graphs()                                           # the sample's, before sizing
    kv_cache_bytes = gmem.predict.memory_left(bill)["left_bytes"] - margin

`sample` calls the engine's `capture(size)` for each sampled size, in the order given (the
engine's capture order), and reads what each capture did: every allocation and free PyTorch's
caching allocator made in its graph pools (its memory history), the pools' segments, the
memory-node pool's counters, the device memory in use, and the executable graphs' own state
(instantiating copies of each captured graph, `copies` each, and reading what they took).
`predict` runs `gmemprof predict` on it: the allocations of every size fitted from the sampled
ones, replayed through a model of the caching allocator's rules in the engine's capture order.
The sampled graphs stay the engine's; release them (and their pool) before the real warm-up.
Reading needs PyTorch; neither function needs gmem's extension module.
"""

import json
import math
import os
import subprocess
import tempfile

from . import _graph_copy
from ._readings import _cuda, device_reading

__all__ = ["sample", "predict", "pick_sizes", "device_reading", "torch_allocator", "memory_left", "measured", "compare",
           "table", "assert_close", "graph_meter", "measured_graphs", "compare_graphs", "graphs_text"]

SAMPLE_FORMAT = "gmem.predict.sample"
SAMPLE_VERSION = 1


def torch_allocator():
    """PyTorch's CUDA allocator backend: "native" (the caching allocator) or "cudaMallocAsync"."""
    import torch
    return torch.cuda.memory.get_allocator_backend()


def pick_sizes(sizes, n):
    """`n` of `sizes` to sample, in their order: the first and the last, and between them sizes
    spread evenly on a log scale (where graph sizes change most)."""
    ordered = list(sizes)
    if n >= len(ordered):
        return ordered
    if n < 2:
        return ordered[:1]
    lo, hi = min(ordered), max(ordered)
    picked = {ordered[0], ordered[-1]}
    for k in range(1, n - 1):
        target = math.exp(math.log(hi) + (math.log(lo) - math.log(hi)) * k / (n - 1))
        rest = [s for s in ordered if s not in picked]
        if rest:
            picked.add(min(rest, key=lambda s: abs(math.log(s) - math.log(target))))
    return [s for s in ordered if s in picked]


class _GraphWatch:
    """While it is entered: calls `on_begin()` as each torch.cuda.CUDAGraph capture begins, and
    counts the graphs captured. With `keep`, each keeps its CUDA graph (PyTorch's keep_graph) and
    is instantiated at the end of its capture as PyTorch does without it, so that copies of it
    can be instantiated and measured; where PyTorch lacks keep_graph, graphs are only counted."""

    def __init__(self, torch, keep=True, on_begin=None):
        self.graphs = []
        self.cls = torch.cuda.CUDAGraph
        self.saved = {}
        self.keep = keep
        self.on_begin = on_begin

    def __enter__(self):
        cls, watch = self.cls, self
        self.saved = {k: cls.__dict__[k] for k in ("__init__", "capture_begin", "capture_end") if k in cls.__dict__}
        base_init = cls.__init__
        base_begin = cls.capture_begin
        base_end = cls.capture_end
        keeps = self.keep and hasattr(cls, "raw_cuda_graph") and hasattr(cls, "instantiate")

        if keeps:
            def init(g, keep_graph=False, *args, **kwargs):
                base_init(g, True, *args, **kwargs)
                g._gmem_engine_keeps = bool(keep_graph)
            cls.__init__ = init

        if self.on_begin is not None:
            def capture_begin(g, *args, **kwargs):
                watch.on_begin()
                base_begin(g, *args, **kwargs)
            cls.capture_begin = capture_begin

        def capture_end(g, *args, **kwargs):
            base_end(g, *args, **kwargs)
            if keeps and getattr(g, "_gmem_engine_keeps", True) is False:
                g.instantiate()  # where the engine's graph would have been instantiated
            watch.graphs.append(g)
        cls.capture_end = capture_end
        return self

    def __exit__(self, *exc):
        for k in ("__init__", "capture_begin", "capture_end"):
            if k in self.saved:
                setattr(self.cls, k, self.saved[k])
            elif k in self.cls.__dict__:
                delattr(self.cls, k)
        return False


def _exec_state(torch, graphs, copies, device, keep):
    """For each graph, the device memory `copies` instantiations of it take, divided by `copies`:
    the executable-graph state of one instantiation of it (None where there are no graphs or no
    copies to make, where PyTorch lacks keep_graph, or where a copy fails). A graph with memory
    nodes allows one executable graph at a time and cannot be cloned: its copies are instantiated
    from copies built node by node (gmem._graph_copy), one each. The copies (and their graphs) are
    appended to `keep` and stay until the sample ends: the driver keeps what a destroyed
    executable graph took for later instantiations, which would read as nothing taken."""
    import ctypes
    if copies < 1 or not graphs or not all(hasattr(g, "raw_cuda_graph") for g in graphs):
        return None
    cuda = _cuda()

    def instantiate(handle):
        e = ctypes.c_void_p()
        r = cuda.cuGraphInstantiateWithFlags(ctypes.byref(e), ctypes.c_void_p(handle), ctypes.c_ulonglong(0))
        return e if r == 0 else None

    each = []
    try:
        for g in graphs:
            torch.cuda.synchronize(device)
            free0, _ = torch.cuda.mem_get_info(device)
            original = g.raw_cuda_graph()
            copier = None  # set where the original refuses its first copy (memory nodes)
            for i in range(copies):
                e = None if copier else instantiate(original)
                if e is None and i == 0:
                    copier = _graph_copy.GraphCopier(original)
                if e is None and copier:
                    handle = copier.make()
                    keep.append(("graph", handle))
                    e = instantiate(handle)
                if e is None:
                    return None
                keep.append(("exec", e))
            torch.cuda.synchronize(device)
            free1, _ = torch.cuda.mem_get_info(device)
            each.append((free0 - free1) / copies)
    except Exception:  # a driver without a call the copy needs, a node it cannot copy: no reading
        return None
    return each


def _destroy(kept):
    """Destroys what _exec_state kept: the executable graphs first, then the graphs they came from."""
    if not kept:
        return
    cuda = _cuda()
    for what, h in kept:
        if what == "exec":
            cuda.cuGraphExecDestroy(h)
    for what, h in kept:
        if what == "graph":
            _graph_copy.destroy_graph(h)
    del kept[:]


def _segments(snapshot, device):
    """Every segment of `device`: {address: (bytes, in a graph pool)}."""
    out = {}
    for seg in snapshot["segments"]:
        if int(seg.get("device", 0)) != device:
            continue
        pool = tuple(int(x) for x in seg.get("segment_pool_id", (0, 0)))
        out[int(seg["address"])] = (int(seg["total_size"]), pool != (0, 0))
    return out


def _pool_events(traces, start, end):
    """The allocator's calls in the graph pools, each with its index in `traces`: ["alloc",
    address, bytes, stream] (bytes requested; the stream where the trace names it), ["free",
    address], ["segment", address, bytes] (a new segment), in order. `start` and `end`
    are the segments (`_segments`) before and after `traces`. A segment belongs to a graph pool
    when the pool lists it at the end and it is not released within `traces` (a graph pool keeps
    its segments; torch.cuda.graph empties the cache of the others before each capture, and their
    addresses are then reused), or when it was a graph pool's at the start."""
    released = {}
    for i, t in enumerate(traces):
        if t.get("action") == "segment_free":
            released.setdefault(int(t["addr"]), []).append(i)
    live = {a: (b, private) for a, (b, private) in start.items()}
    ranges = None

    def segment_of(addr):
        nonlocal ranges
        if ranges is None:
            ranges = sorted((a, a + b, private) for a, (b, private) in live.items())
        lo, hi = 0, len(ranges)
        while lo < hi:
            mid = (lo + hi) // 2
            if ranges[mid][1] <= addr:
                lo = mid + 1
            else:
                hi = mid
        return ranges[lo] if lo < len(ranges) and ranges[lo][0] <= addr < ranges[lo][1] else None

    out = []
    for i, t in enumerate(traces):
        action, addr = t.get("action"), int(t.get("addr", 0))
        if action == "segment_alloc":
            later = [j for j in released.get(addr, []) if j > i]
            private = not later and end.get(addr, (0, False)) == (int(t["size"]), True)
            live[addr] = (int(t["size"]), private)
            ranges = None
            if private:
                out.append((i, ["segment", addr, int(t["size"])]))
        elif action == "segment_free":
            live.pop(addr, None)
            ranges = None
        elif action in ("alloc", "free_completed"):
            seg = segment_of(addr)
            if seg is None or not seg[2]:
                continue
            if action == "alloc":
                # The stream it was made for: a capture's side stream has its own blocks.
                out.append((i, ["alloc", addr, int(t["size"])] + ([int(t["stream"])] if "stream" in t else [])))
            else:
                out.append((i, ["free", addr]))
    return out


def sample(capture, sizes, device=0, copies=64):
    """Calls `capture(size)` for each of `sizes` in order and returns the sample (a dict, JSON as
    `gmemprof predict` reads it). With the caching allocator (backend native) PyTorch's memory
    history is on for the sample's duration (it costs host time, not device memory) and off
    after it (a program that records its own memory history has its settings replaced, and the
    history off after the sample); with cudaMallocAsync, whose captures allocate in the
    memory-node pool, there is no history and the sample holds no calls. While `capture` runs, every
    torch.cuda.CUDAGraph made keeps its CUDA graph (keep_graph), and is instantiated at the end of
    its capture as it would have been; as each capture begins the device is read, so that each
    size's graphs are read apart ("each_graph": the size's calls made before the next graph
    began, the memory-node pool's change, the graph's own state)."""
    import torch
    native = torch_allocator() == "native"
    torch.cuda.synchronize(device)
    record = torch.cuda.memory._record_memory_history if native else (lambda **kw: None)
    taken, copied = [], []

    def snapshot():
        return torch.cuda.memory._snapshot() if native else {"segments": [], "device_traces": [[]] * (device + 1)}

    def read():
        """The device's reading and the allocator's trace so far, from one snapshot."""
        snap = snapshot()
        return device_reading(device, snap if native else None), len(snap["device_traces"][device])

    record(enabled="all", context=None, max_entries=1 << 24)
    try:
        first = snapshot()
        before = device_reading(device, first if native else None)
        start, seen = _segments(first, device), len(first["device_traces"][device])
        bounds, begins = [], []  # the traces by the end of each size, and by each graph's capture begin

        def on_begin():
            reading, traced = read()
            begins[-1].append((traced, reading))

        for size in sizes:
            begins.append([])
            with _GraphWatch(torch, on_begin=on_begin) as watch:
                r0 = device_reading(device)
                capture(size)
                torch.cuda.synchronize(device)
                r1, traced = read()
            bounds.append(traced)
            state = _exec_state(torch, watch.graphs, copies, device, copied)
            taken.append({
                "size": int(size),
                "graphs": len(watch.graphs),
                "pools_after": {k: v for k, v in r1["framework_pools"].items()},
                "node_pool_change": r1["node_pool"]["reserved_current"] - r0["node_pool"]["reserved_current"],
                "used_change": r1["used"] - r0["used"],
                "exec_state_bytes": None if state is None else sum(state),
            })
            if len(begins[-1]) == len(watch.graphs):
                # Graph k: from its capture's begin (the size's start for the first) to the next's.
                readings = [r0] + [r for _, r in begins[-1][1:]] + [r1]
                taken[-1]["each_graph"] = [{
                    "ends_at": (begins[-1][k + 1][0] if k + 1 < len(watch.graphs) else bounds[-1]),
                    "node_pool_change": readings[k + 1]["node_pool"]["reserved_current"]
                                        - readings[k]["node_pool"]["reserved_current"],
                    "used_change": readings[k + 1]["used"] - readings[k]["used"],
                    "exec_state_bytes": None if state is None else state[k],
                } for k in range(len(watch.graphs))]
        last = snapshot()
        traces = last["device_traces"][device][seen:bounds[-1]] if bounds else []
        for t in taken:
            t["calls"], t["traced_at"] = [], []
        k = 0
        for at, call in _pool_events(traces, start, _segments(last, device)):
            while at + seen >= bounds[k]:
                k += 1
            taken[k]["calls"].append(call)
            taken[k]["traced_at"].append(at + seen)
        for t in taken:
            for g in t.get("each_graph", []):  # the size's calls made before the graph after it began
                ends_at = g.pop("ends_at")
                g["calls"] = sum(1 for at in t["traced_at"] if at < ends_at)
            del t["traced_at"]
    finally:
        try:
            record(enabled=None)
        finally:
            _destroy(copied)
    return {
        "format": SAMPLE_FORMAT,
        "version": SAMPLE_VERSION,
        "device": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "allocator": torch_allocator(),
        "copies": copies,
        "before": before,
        "sizes": taken,
    }


def predict(sample_or_path, sizes=None, gmemprof=None, sampled_sizes=None):
    """`gmemprof predict` of a sample (a dict from `sample`, or its JSON file's path) for every
    size of `sizes` in the order given (default: the sample's capture_order); returns the
    prediction (a dict: per size, per kind, per graph, totals, and linear extrapolation beside
    it). A path may also name a `gmemprof record` recording of a program that captured
    `sampled_sizes`, in that order (graphs with memory nodes only)."""
    from . import _gmemprof
    exe = gmemprof or os.environ.get("GMEMPROF") or _gmemprof.executable()
    if exe is None:
        raise RuntimeError("gmem.predict: no gmemprof found (install gmem from a checkout, or set GMEMPROF)")
    with tempfile.TemporaryDirectory() as d:
        path = sample_or_path
        if not isinstance(sample_or_path, (str, os.PathLike)):
            path = os.path.join(d, "sample.json")
            with open(path, "w") as f:
                json.dump(sample_or_path, f)
        out = os.path.join(d, "prediction.json")
        cmd = [exe, "predict", str(path), "--json", out]
        if sizes is not None:
            cmd += ["--sizes", ",".join(str(int(s)) for s in sizes), "--order", "as-given"]
        if sampled_sizes is not None:
            cmd += ["--sampled-sizes", ",".join(str(int(s)) for s in sampled_sizes)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("gmemprof predict failed (exit %d): %s" % (r.returncode, r.stderr.strip()))
        with open(out) as f:
            return json.load(f)


def memory_left(prediction, device=0, free_bytes=None):
    """What the device has left once the predicted warm-up is captured: its free memory now
    (`free_bytes`, else cudaMemGetInfo through PyTorch) less the predicted total and its
    uncertainty. Call it after releasing the sample's graphs and pool. Returns {"free_bytes",
    "graphs_bytes" (predicted + uncertainty), "left_bytes"}."""
    if free_bytes is None:
        import torch
        free_bytes, _ = torch.cuda.mem_get_info(device)
    graphs = prediction["total"]["predicted_bytes"] + prediction["total"]["uncertainty_bytes"]
    return {"free_bytes": int(free_bytes), "graphs_bytes": int(graphs), "left_bytes": int(free_bytes) - int(graphs)}


def measured(before, after):
    """The bill a warm-up measured, by the prediction's kinds, from two `device_reading`s taken
    around it: PyTorch's graph pools, the memory-node pool's reservation, the rest of the device
    memory in use (the executable graphs' state and what captures take outside the pools),
    and the total."""
    pools = sum(after["framework_pools"].values()) - sum(before["framework_pools"].values())
    node = after["node_pool"]["reserved_current"] - before["node_pool"]["reserved_current"]
    total = after["used"] - before["used"]
    return {"framework_pool": pools, "node_pool": node, "rest": total - pools - node, "total": total}


class graph_meter:
    """For a measured warm-up: reads the device (`device_reading`) as each torch.cuda.CUDAGraph
    capture begins and once more on leaving, and changes nothing else (graphs are neither kept nor
    instantiated by it). `readings` then holds one more reading than graphs were captured;
    `measured_graphs(meter.readings)` is what each graph cost.

        with gmem.predict.graph_meter() as meter:
            warm_up()
    """

    def __init__(self, device=0):
        self.device = device
        self.readings = []
        self._watch = None

    def __enter__(self):
        import torch
        self._watch = _GraphWatch(torch, keep=False, on_begin=lambda: self.readings.append(device_reading(self.device)))
        self._watch.__enter__()
        return self

    def __exit__(self, *exc):
        import torch
        try:
            torch.cuda.synchronize(self.device)
            self.readings.append(device_reading(self.device))
        finally:
            self._watch.__exit__(*exc)
        return False


def measured_graphs(readings):
    """What each graph of a warm-up cost, from `graph_meter`'s readings: graph k is everything from
    its capture's begin to the next graph's (to the meter's end for the last), by the prediction's
    kinds that belong to graphs: PyTorch's graph pools and the memory-node pool's reservation,
    with the device memory in use beside them (in 2 MiB pieces: not a graph's own figure)."""
    out = []
    for a, b in zip(readings, readings[1:]):
        out.append({"framework_pool": sum(b["framework_pools"].values()) - sum(a["framework_pools"].values()),
                    "node_pool": b["node_pool"]["reserved_current"] - a["node_pool"]["reserved_current"],
                    "used": b["used"] - a["used"]})
    return out


def compare_graphs(prediction, graphs):
    """The prediction's graphs against what each graph of the warm-up measured (`measured_graphs`),
    matched in capture order: for the graph pool and the memory-node pool, how many graphs are
    predicted to the byte, the largest error and the graph that has it, and the sum of the errors'
    sizes. None where the prediction has no graphs or the two count different graphs."""
    predicted = prediction.get("graphs") or []
    if not predicted or len(predicted) != len(graphs):
        return None
    out = {"graphs": len(graphs)}
    for kind, key in (("framework_pool", "pool_growth_bytes"), ("node_pool", "node_pool_bytes")):
        errors = [p[key] - m[kind] for p, m in zip(predicted, graphs)]
        worst = max(range(len(errors)), key=lambda i: abs(errors[i]))
        out[kind] = {"exact": sum(1 for e in errors if e == 0), "max_error": errors[worst],
                     "worst": {"size": predicted[worst]["size"], "index": predicted[worst]["index"],
                               "predicted": predicted[worst][key], "measured": graphs[worst][kind]},
                     "sum_abs_error": sum(abs(e) for e in errors),
                     "measured": sum(m[kind] for m in graphs)}
    return out


def graphs_text(compared):
    """`compare_graphs`'s result as lines, one a pool."""
    out = []
    for kind in ("framework_pool", "node_pool"):
        k = compared[kind]
        out.append("each graph, %s: %d of %d to the byte, largest error %.2f MiB (size %d graph %d), errors' "
                   "sizes sum to %.2f MiB of %.2f MiB measured" % (
                       kind, k["exact"], compared["graphs"], k["max_error"] / 2**20, k["worst"]["size"],
                       k["worst"]["index"], k["sum_abs_error"] / 2**20, k["measured"] / 2**20))
    return out


def compare(prediction, bill, rel=0.05, abs_bytes=64 << 20):
    """The prediction against a measured bill (`measured`), kind by kind: rows of (kind,
    predicted, measured, error, within) where within is |error| <= rel of the measured and
    <= abs_bytes; the linear extrapolation's row last (never judged)."""
    k = prediction["kinds"]
    pairs = [("framework_pool", k["framework_pool"]["predicted_bytes"], bill["framework_pool"]),
             ("node_pool", k.get("node_pool", {}).get("predicted_bytes", 0), bill["node_pool"]),
             ("rest", k["exec_state"]["predicted_bytes"] + k["outside"]["predicted_bytes"], bill["rest"]),
             ("total", prediction["total"]["predicted_bytes"], bill["total"])]
    rows = []
    for kind, p, m in pairs:
        err = p - m
        rows.append({"kind": kind, "predicted": p, "measured": m, "error": err,
                     "within": abs(err) <= rel * abs(m) and abs(err) <= abs_bytes})
    lin = prediction["linear"]["predicted_bytes"]
    rows.append({"kind": "linear (total)", "predicted": lin, "measured": bill["total"],
                 "error": lin - bill["total"], "within": None})
    return rows


def _mib(b):
    return "%.1f MiB" % (b / 1048576.0)


def table(rows):
    """The rows of `compare` as text."""
    out = ["%-16s %14s %14s %14s %8s" % ("kind", "predicted", "measured", "error", "")]
    for r in rows:
        rel = (100.0 * r["error"] / r["measured"]) if r["measured"] else 0.0
        verdict = "" if r["within"] is None else ("ok" if r["within"] else "OFF")
        out.append("%-16s %14s %14s %14s %+6.1f%% %s" % (r["kind"], _mib(r["predicted"]), _mib(r["measured"]),
                                                        _mib(r["error"]), rel, verdict))
    return "\n".join(out)


def assert_close(prediction, bill, rel=0.05, abs_bytes=64 << 20):
    """For pytest: fails, with the table, when a kind of the prediction and of the measured bill
    (`measured`) drift apart by more than `rel` of the measured or more than `abs_bytes`."""
    rows = compare(prediction, bill, rel, abs_bytes)
    off = [r["kind"] for r in rows if r["within"] is False]
    if off:
        raise AssertionError("the predicted bill drifted from the measured one (%s; allowed %.0f%% and %s):\n%s"
                             % (", ".join(off), 100 * rel, _mib(abs_bytes), table(rows)))
    return rows
