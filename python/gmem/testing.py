"""pytest helpers: assert a profiled graph's footprint; a failure says what the graph reserved,
its lower bound and the diagnostics that explain the excess.

    report = gmem.profile_graph(graph, "step")
    gmem.testing.assert_reserved_at_most(report, 64 << 20)
    gmem.testing.assert_within_bound(report, 1.25)
"""

from . import Report, ScenarioResult, UsageError, _core
from ._api import _one_scenario

__all__ = ["assert_reserved_at_most", "assert_within_bound", "assert_pool_at_most", "describe",
           "describe_pool"]


def _scenario(result):
    if isinstance(result, Report):
        return _one_scenario(result)
    if isinstance(result, ScenarioResult):
        return result
    raise UsageError("expected a gmem.Report (from gmem.profile_graph) or a gmem.ScenarioResult, "
                     "got " + type(result).__name__)


def _mib(b):
    return _core.size_text(int(b))


def _over(value, limit):
    """'X, more than the Y allowed': sizes as gmem writes them, with the exact bytes where the
    two would read alike (64.0 MiB against a limit of 64 MiB - 1)."""
    v, l = _mib(value), _mib(int(limit))
    if v == l:
        v, l = "%s (%d B)" % (v, value), "%s (%d B)" % (l, int(limit))
    return "%s, more than the %s allowed" % (v, l)


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
        raise AssertionError("graph '%s' reserved graph memory %s\n%s"
                             % (r.name, _over(reserved, max_bytes), describe(r)))


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


def describe_pool(report):
    """The set's pool: its high watermark, what was mapped there by graph, each graph's growth and
    own footprint, and the diagnostics about the set, as lines of text."""
    rec = getattr(report, "recorded", None)
    if rec is None or not rec.pools:
        raise UsageError("expected a gmem.Report of gmem.profile_graphs or gmemprof record (with a "
                         "pool), got one without")
    lines = []
    for p in rec.pools:
        lines.append("pool of device %d: high watermark %s (reached by '%s', %s)"
                     % (p.device, _mib(p.high_bytes), p.high_graph, p.high_event))
        for s in p.attribution:
            lines.append("  %s %s: %s" % ("'%s'" % s.graph if s.graph else "no graph", s.why,
                                          _mib(s.bytes)))
        for d in p.diagnostics:
            lines.append("  [%s] %s: %s" % (d.severity, d.code, d.message))
    for g in rec.graphs:
        lines.append("graph '%s': alone %s, grew the pool by %s, holds %s between launches"
                     % (g.name, _mib(g.own_footprint_bytes), _mib(g.growth_bytes),
                        _mib(g.held_requested_bytes)))
    return "\n".join(lines)


def assert_pool_at_most(report, max_bytes, device=None):
    """Fails unless the set's pool high watermark (every device's, or `device`'s) is at most
    `max_bytes`; the message holds what was mapped there by graph and the set's diagnostics."""
    rec = getattr(report, "recorded", None)
    if rec is None or not rec.pools:
        raise UsageError("assert_pool_at_most needs a report of gmem.profile_graphs or gmemprof "
                         "record (it has a pool), not of gmem.profile_graph")
    for p in rec.pools:
        if device is not None and p.device != device:
            continue
        if p.high_bytes > max_bytes:
            raise AssertionError("the graphs' pool on device %d reached %s\n%s"
                                 % (p.device, _over(p.high_bytes, max_bytes), describe_pool(report)))


def assert_graph_bill_at_most(bill, max_bytes, node_pool=None, framework_pools=None):
    """Fails unless the graph memory of a gmem.Bill (gmem.bill_meter around an engine's warm-up:
    the memory-node pool's and the framework's graph pools' change) is at most `max_bytes`, and
    each kind at most its own limit where given; the message holds the whole bill."""
    from .bill import Bill
    if not isinstance(bill, Bill):
        raise UsageError("assert_graph_bill_at_most takes the gmem.Bill of gmem.bill_meter, got a "
                         + type(bill).__name__)
    over = []
    if bill.graph_bytes > max_bytes:
        over.append("graph memory " + _over(bill.graph_bytes, max_bytes))
    if node_pool is not None and bill.node_pool_retained_bytes > node_pool:
        over.append("the memory-node pool " + _over(bill.node_pool_retained_bytes, node_pool))
    if framework_pools is not None and bill.framework_bytes > framework_pools:
        over.append("the framework's graph pools " + _over(bill.framework_bytes, framework_pools))
    if over:
        raise AssertionError("; ".join(over) + "\n" + str(bill))

