"""pytest helpers: assert a profiled graph's footprint; a failure says what the graph reserved,
its lower bound and the diagnostics that explain the excess.

    report = gmem.profile_graph(graph, "step")
    gmem.testing.assert_reserved_at_most(report, 64 << 20)
    gmem.testing.assert_within_bound(report, 1.25)
"""

from . import Report, ScenarioResult, UsageError, _one_scenario

__all__ = ["assert_reserved_at_most", "assert_within_bound", "describe"]


def _scenario(result):
    if isinstance(result, Report):
        return _one_scenario(result)
    if isinstance(result, ScenarioResult):
        return result
    raise UsageError("expected a gmem.Report (from gmem.profile_graph) or a gmem.ScenarioResult, "
                     "got " + type(result).__name__)


def _mib(b):
    return "%d B (%.2f MiB)" % (b, b / 1048576.0)


def describe(result):
    """The measured footprint and the diagnostics, as lines of text."""
    r = _scenario(result)
    a = r.analysis
    lines = ["graph '%s': reserved %s, used %s, lower bound %s (rounded %s), %d alloc node(s), "
             "%d unfreed" % (r.name, _mib(a.reserved_high_bytes), _mib(a.used_high_bytes),
                             _mib(a.lower_bound_bytes), _mib(a.lower_bound_rounded_bytes),
                             a.alloc_nodes, a.unfreed_allocations)]
    if r.diagnostics:
        lines.append("diagnostics:")
        lines += ["  [%s] %s: %s" % (d.severity, d.code, d.message) for d in r.diagnostics]
    else:
        lines.append("diagnostics: none")
    return "\n".join(lines)


def _measured(r):
    if r.status != "ok":
        raise AssertionError("graph '%s' was not measured (%s): %s" % (r.name, r.status,
                                                                        r.status_message))


def assert_reserved_at_most(result, max_bytes):
    """Fails unless the graph's reserved high watermark is at most `max_bytes`."""
    r = _scenario(result)
    _measured(r)
    reserved = r.analysis.reserved_high_bytes
    if reserved > max_bytes:
        raise AssertionError("graph '%s' reserved %s of graph memory, more than the %s allowed\n%s"
                             % (r.name, _mib(reserved), _mib(int(max_bytes)), describe(r)))


def assert_within_bound(result, max_ratio):
    """Fails unless reserved high / rounded lower bound is at most `max_ratio` (1 = the driver
    reserved only what the graph must have)."""
    r = _scenario(result)
    _measured(r)
    a = r.analysis
    if a.lower_bound_rounded_bytes == 0:
        raise AssertionError("graph '%s' has no graph memory to bound (lower bound 0): nothing "
                             "to compare its reservation of %s with\n%s"
                             % (r.name, _mib(a.reserved_high_bytes), describe(r)))
    if not a.bound_ratio <= max_ratio:
        raise AssertionError("graph '%s' reserved %.3fx its lower bound (allowed %gx)\n%s"
                             % (r.name, a.bound_ratio, max_ratio, describe(r)))
