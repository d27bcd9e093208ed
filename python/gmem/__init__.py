"""gmem: profile a CUDA graph's memory nodes from Python, and check its footprint.

    import gmem, gmem.testing
    report = gmem.profile_graph(torch_graph, "my_step")     # a torch.cuda.CUDAGraph(keep_graph=True)
    gmem.testing.assert_reserved_at_most(report, 64 << 20)

The graph is profiled as `gmemprof` profiles its scenarios: read into the model, analysed (lower
bound, reuse), launched once from a trimmed pool for its footprint, and its launch phases timed.
The graph itself is not changed; gmem instantiates its own executable graphs from it, so profile
a graph with memory nodes before its owner instantiates it (PyTorch instantiates on the first
replay or on instantiate(); CuPy on the first launch or upload).

`python -m gmem record -- CMD...` runs the gmemprof command installed with the package
(gmem/__main__.py).
"""

try:
    from ._core import (  # noqa: F401  (re-exported API)
        Analysis,
        Comparison,
        ComparisonRow,
        Counters,
        CudaError,
        Diagnostic,
        Environment,
        LaunchCost,
        PhaseCounters,
        Report,
        ReportError,
        ScenarioResult,
        Stats,
        Tolerances,
        UnsupportedError,
        UsageError,
        all_phases,
        device_count,
    )
except ImportError as _error:
    # The command line (`python -m gmem`, the gmemprof script) runs the bundled gmemprof and needs
    # no extension module: it works in a Python the wheel's gmem._core was not built for. Every
    # other name of the package raises ImportError saying why the extension is missing.
    from ._absent_core import module_getattr as _module_getattr

    __getattr__ = _module_getattr(_error)
    del _module_getattr
else:
    from . import _core
    from ._api import (  # noqa: F401  (re-exported API)
        check,
        graph_handle,
        phases,
        profile_graph,
        profile_graphs,
        read_report,
        report_from_json,
    )
    from .bill import Bill, bill_meter, device_reading  # noqa: F401  (the bill of a running process)

__all__ = [
    "profile_graph", "profile_graphs", "read_report", "report_from_json", "check", "graph_handle", "phases",
    "Bill", "bill_meter", "device_reading",
    "device_count", "Report", "ScenarioResult", "Analysis", "Diagnostic", "Comparison",
    "Tolerances", "UsageError", "CudaError", "ReportError", "UnsupportedError",
]
