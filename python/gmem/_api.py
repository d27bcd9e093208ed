"""gmem's functions over its extension module gmem._core; the package (gmem/__init__.py)
re-exports them, with the extension's classes."""

from ._core import Report, Tolerances, UsageError, all_phases
from . import _core


def phases():
    """The launch phases profile_graph can time (all of them by default)."""
    return list(all_phases())


def graph_handle(graph):
    """The cudaGraph_t of `graph` as an int.

    Accepts an int (a raw handle), an object with raw_cuda_graph() (PyTorch's
    torch.cuda.CUDAGraph made with keep_graph=True), CuPy's cupy.cuda.Graph (its `graph`
    attribute), or a cuda-python cudaGraph_t / CUgraph (int(handle) is its address)."""
    if isinstance(graph, bool):
        raise UsageError("a graph handle cannot be a bool; pass the cudaGraph_t as an int")
    if isinstance(graph, int):
        return graph
    raw = getattr(graph, "raw_cuda_graph", None)
    if callable(raw):
        return int(raw())
    inner = getattr(graph, "graph", None)
    if isinstance(inner, int) and not isinstance(inner, bool):
        return inner
    get_ptr = getattr(graph, "getPtr", None)  # cuda-python's cudaGraph_t / CUgraph
    if callable(get_ptr):
        return int(graph)
    try:
        return int(graph)
    except (TypeError, ValueError):
        pass
    raise UsageError(
        "cannot find a cudaGraph_t in an object of type " + type(graph).__name__ + ": pass an int, "
        "a torch.cuda.CUDAGraph(keep_graph=True), a cupy.cuda.Graph or a cuda-python cudaGraph_t")


def profile_graph(handle, name, device=0, reps=10, phases=None, warmups=2,
                  auto_free_on_launch=False, excess_ratio_threshold=1.5, price_advice=True):
    """Profiles one graph and returns a Report holding it as its only scenario.

    The report carries the environment (GPU, driver, granularity) like gmemprof's reports, so it
    can be written (report.write(path)) and checked against a baseline (gmem.check). Its
    `result`, `analysis`, `diagnostics`, `launch_costs` and `counters_after_phase` attributes are
    the scenario's. Raises UsageError for an unknown phase or a bad handle, CudaError when the
    driver fails (its .code is the cudaError_t).

    Profile a framework's graph before the framework instantiates it (one live executable graph
    per graph with memory nodes). gmem frees what its launches leave unfreed, so the graph's
    outputs are unmapped afterwards: replay the graph (PyTorch: g.replay()) before reading or
    dropping them.

    `price_advice`: the advice's launch-time prices come from three launches traced with CUPTI's
    activity API, which is process-wide; pass False while torch.profiler (or another CUPTI
    tracer) runs in this process, or it loses its activity buffers."""
    h = graph_handle(handle)
    result = _core.profile_graph(h, str(name), int(device), int(reps), int(warmups),
                                 list(phases or []), bool(auto_free_on_launch),
                                 float(excess_ratio_threshold), bool(price_advice))
    return _core.make_report([result], int(device), "python: gmem.profile_graph(" + str(name) + ")")


def profile_graphs(graphs, names=None, device=0, rounds=2, auto_free_on_launch=True):
    """Profiles a set of graphs sharing the device's graph memory pool, as a program launches
    them: instantiated (with AutoFreeOnLaunch by default, as PyTorch does), launched in the given
    order into one stream, `rounds` times, from a trimmed pool. Returns a Report with a scenario
    per graph (its own figures: the graph alone) and `report.recorded`: each graph's pool growth
    (`recorded.graphs[i].growth_bytes`), and the pool (`recorded.pools[0]`): its high watermark,
    what was mapped there by graph (`attribution`) and diagnostics about the set.

    `graphs`: handles as for profile_graph, or (handle, name) pairs; `names`: the graphs' names
    (default "graph 0", ...). As with profile_graph, profile before the framework instantiates
    the graphs, and replay them before reading or dropping their outputs."""
    graphs = list(graphs)
    if names is None:
        names = []
        for i, g in enumerate(graphs):
            names.append(str(g[1]) if isinstance(g, tuple) and len(g) == 2 else "graph %d" % i)
    handles = [graph_handle(g[0] if isinstance(g, tuple) and len(g) == 2 else g) for g in graphs]
    if not handles:
        raise UsageError("profile_graphs: no graphs given")
    return _core.profile_graphs(handles, [str(n) for n in names], int(device), int(rounds),
                                bool(auto_free_on_launch))


def read_report(path):
    """Reads and validates a report file (gmemprof's or report.write's); raises ReportError
    (with .kind: missing, unreadable, not_json, wrong_schema_version, invalid)."""
    return _core.read_report(str(path))


def report_from_json(text, source="<string>"):
    """Parses a report from JSON text; raises ReportError naming `source`."""
    return _core.report_from_json(text, source)


def _as_report(r):
    if isinstance(r, Report):
        return r
    return read_report(r)


def check(baseline, current, tolerances=None):
    """The regression check of `gmemprof check`: `current` against `baseline` (Reports or
    report paths). `tolerances` is a Tolerances, or a dict of NAME -> FRACTION as gmemprof's
    --tolerance takes (NAME: memory, reuse, time, time_floor_us or a metric name). Returns a
    Comparison: its rows (with .verdict), notes, regressed() and str() (the table)."""
    t = tolerances
    if t is None or isinstance(t, dict):
        t = Tolerances()
        for k, v in (tolerances or {}).items():
            t.set(str(k) + "=" + repr(float(v)))
    return _core.compare_reports(_as_report(baseline), _as_report(current), t)


def _one_scenario(report):
    if len(report.scenarios) != 1:
        raise UsageError("this report holds " + str(len(report.scenarios)) + " scenarios; pick "
                         "one from report.scenarios")
    return report.scenarios[0]


# A Report from profile_graph holds one scenario: let it be read as that scenario.
Report.result = property(_one_scenario, doc="The only scenario (profile_graph's graph).")
for _attr in ("analysis", "diagnostics", "launch_costs", "counters_after_phase", "status",
              "status_message", "name"):
    setattr(Report, _attr, property(lambda self, a=_attr: getattr(_one_scenario(self), a)))
del _attr
