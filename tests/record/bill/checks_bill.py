"""Checks of the bill programs (tests/record/bill/bill_*.py): the bill `gmemprof record`
wrote (REPORT's recorded.bills, recorded.framework_pools, recorded.graphs) against what the
program read itself (SELF_JSON: cudaMemGetInfo used bytes at start / before_warmup /
after_warmup, PyTorch's snapshot per graph pool, and for bill_piecewise.py the used bytes around
every instantiate and the shared pool's bytes around every capture).

    check(program, args, self_doc, report) -> [(ok, detail), ...]

program: the program's path or file name ("bill_piecewise.py"); args: its command line options;
self_doc and report: the parsed JSON. Every detail quotes both figures in MiB. A missing key is a
failed check with a detail that names it, never an exception. Lines whose detail starts with
"info:" only say what the recording holds and always pass. The report's writer
(profiler/report/recording_json.cpp) leaves out a kind of the bill the recording did not see,
and a graph's exec_state_bytes when it is 0 (-1: not measured). A report merged from several
processes prefixes graph names and pool ids with "[pK pid N] " and labels bills with "process":
the checks take device 0's bill of the process whose companion marked the program's end, and
that process's pools and graphs."""
import os
import re

MIB = 1 << 20
SEGMENT = 2 * MIB  # PyTorch's smallest segment and the driver's piece of executable-graph state
END = "the program's end"
KINDS = ("memory_node_pool", "framework_pools", "libraries_at_capture", "exec_state")
_PREFIX = re.compile(r"^\[(p\d+) pid -?\d+\] (.*)$", re.S)


def mib(v):
    """A figure in MiB for a detail; 'missing' for None."""
    if v is None:
        return "missing"
    return f"{v / MIB:.2f} MiB"


def _int(v):
    """v when it is an integer figure (not a bool), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _dict(v):
    return v if isinstance(v, dict) else {}


def _list(v):
    return v if isinstance(v, list) else []


def _opt(args, name, default):
    """The value of option NAME ('--mode') in args ('--mode x' or '--mode=x'), else default."""
    args = list(args or [])
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a[len(name) + 1:]
    return default


def _split(text):
    """('pK', rest) for a merged report's "[pK pid N] rest", else (None, text)."""
    m = _PREFIX.match(text) if isinstance(text, str) else None
    return (m.group(1), m.group(2)) if m else (None, text)


def _recorded(report):
    return _dict(_dict(report).get("recorded"))


def _diff(got, want, tol):
    """(ok, '+x.xx MiB') for |got - want| <= tol; ok False when either is missing."""
    if got is None or want is None:
        return False, "missing"
    return abs(got - want) <= tol, f"{(got - want) / MIB:+.2f} MiB"


# --------------------------------------------------------------------------------------------
# What the report holds, for the process the bill is about.

class _view:
    """Device 0's bill and, for the same process, its framework pools and graphs."""

    def __init__(self, report):
        rec = _recorded(report)
        every = [b for b in _list(rec.get("bills")) if isinstance(b, dict)]
        self.devices = sorted({str(b.get("device")) for b in every})
        bills = [b for b in every if b.get("device") == 0]
        marked = [b for b in bills if str(b.get("end", "")).startswith(END)]
        framed = [b for b in marked if "framework_pools" in b]
        self.bills = bills
        self.bill = (framed or marked or bills or [None])[0]
        self.process = self.bill.get("process") if self.bill else None

        def mine(label):
            return label == self.process if self.process else label is None

        self.pools = []  # (id without prefix, pool)
        for p in _list(rec.get("framework_pools")):
            if not isinstance(p, dict) or p.get("device", 0) != 0:
                continue
            label, pid = _split(p.get("id"))
            if mine(label):
                self.pools.append((str(pid), p))
        self.graphs = []  # (name without prefix, graph)
        for g in _list(rec.get("graphs")):
            if not isinstance(g, dict):
                continue
            label, name = _split(g.get("name"))
            if mine(label):
                self.graphs.append((name, g))
        self.all_graphs = [g for g in _list(rec.get("graphs")) if isinstance(g, dict)]

    def part(self, kind):
        return _dict(self.bill).get(kind) if isinstance(_dict(self.bill).get(kind), dict) else None

    def kinds(self):
        return [k for k in KINDS if self.part(k) is not None]

    def graph_parts(self):
        """(sum of the bill's graph parts or None, the terms as text)."""
        terms, total = [], 0
        node = self.part("memory_node_pool")
        if node is not None:
            v = _int(node.get("retained_bytes"))
            terms.append(f"memory-node pool retained {mib(v)}")
            total = None if v is None or total is None else total + v
        for kind, key, what in (("framework_pools", "retained_bytes", "framework pools retained"),
                                ("libraries_at_capture", "bytes", "libraries at capture"),
                                ("exec_state", "bytes", "executable-graph state")):
            part = self.part(kind)
            v = _int(part.get(key)) if part is not None else 0
            terms.append(f"{what} {mib(v) if part is not None else 'absent (0)'}")
            total = None if v is None or total is None else total + v
        return total, " + ".join(terms)


# --------------------------------------------------------------------------------------------
# Checks every bill program shares.

def _bill_check(v):
    if v.bill is None:
        return (False, f"the report has no bill for device 0 (recorded.bills has bills for device(s): "
                       f"{', '.join(v.devices) or 'none'})")
    end = v.bill.get("end")
    return (isinstance(end, str) and end.startswith(END),
            f"device 0's bill{' of ' + v.process if v.process else ''} ends at {end!r}: the companion's "
            f"mark of the program's end was {'seen' if isinstance(end, str) and end.startswith(END) else 'NOT seen'}")


def _pool_checks(v, self_doc):
    out = []
    at_end = self_doc.get("pools_at_end")
    if not isinstance(at_end, dict) or any(_int(b) is None for b in at_end.values()):
        return [(False, "the program's self JSON has no pools_at_end {pool id: bytes}")]
    want = sum(at_end.values())
    fw = v.part("framework_pools")
    got = _int(fw.get("retained_bytes")) if fw is not None else None
    ok, d = _diff(got, want, SEGMENT)
    out.append((ok, f"framework pools retained: the bill says {mib(got)}, PyTorch's snapshot at the end "
                    f"lists {mib(want)} in {len(at_end)} graph pool(s) (difference {d}, within 2 MiB)"
                    + ("" if fw is not None else "; the bill has no framework_pools")))
    snap = _int(fw.get("snapshot_bytes")) if fw is not None else None
    ok, d = _diff(snap, want, SEGMENT)
    out.append((ok, f"framework pools' snapshot in the bill {mib(snap)}, the program's snapshot at the end "
                    f"{mib(want)} (difference {d}, within 2 MiB: both are PyTorch's own at the end)"))
    by_id = {}
    for pid, p in v.pools:
        by_id.setdefault(pid, p)
    for pid, bytes_ in sorted(at_end.items()):
        p = by_id.get(pid)
        if p is None:
            out.append((False, f"pool {pid}: the program's snapshot lists {mib(bytes_)}, the report has no "
                               f"framework pool of that id (ids: {', '.join(sorted(by_id)) or 'none'})"))
            continue
        r = _int(p.get("retained_bytes"))
        ok, d = _diff(r, bytes_, SEGMENT)
        out.append((ok, f"pool {pid}: retained {mib(r)} recorded, {mib(bytes_)} in the program's snapshot at "
                        f"the end (difference {d}, within 2 MiB)"))
        s = _int(p.get("snapshot_bytes"))
        ok, d = _diff(s, bytes_, SEGMENT)
        out.append((ok, f"pool {pid}: snapshot_bytes {mib(s)} recorded (the companion's reading at exit), "
                        f"{mib(bytes_)} read by the program at its end (difference {d}, within 2 MiB)"))
    for pid, p in v.pools:
        out.append((True, f"info: pool {pid}: warm-up {mib(_int(p.get('warmup_bytes')))}, capture "
                          f"{mib(_int(p.get('capture_bytes')))}, released {mib(_int(p.get('released_bytes')))}, "
                          f"retained {mib(_int(p.get('retained_bytes')))}, peak {mib(_int(p.get('peak_bytes')))}; "
                          f"{len(_list(p.get('graphs')))} graph(s)"))
    return out


def _used(self_doc):
    u = _dict(self_doc.get("used"))
    return _int(u.get("start")), _int(u.get("before_warmup")), _int(u.get("after_warmup"))


def _sum_checks(v, self_doc, strict=True):
    """The bill's graph parts against the process's change over the warm-up, as the program read it.
    strict: the warm-up takes graph memory only (a warm-up of captures into a pool), so the two are
    equal; otherwise (torch.compile and make_graphed_callables run eager passes and load compiled
    kernels inside their warm-up, device memory outside every pool) the graph parts are at most
    the change, and the rest is said as not graph memory."""
    out = []
    _, before, after = _used(self_doc)
    want = after - before if before is not None and after is not None else None
    got, terms = v.graph_parts()
    kinds = v.kinds()
    tol = SEGMENT * max(1, len(kinds))
    ok, d = _diff(got, want, tol)
    dp = _dict(self_doc.get("default_pool"))
    db, da = _int(dp.get("before_warmup")), _int(dp.get("after_warmup"))
    other = da - db if da is not None and db is not None else None
    out.append((True, f"info: the bill's graph parts {mib(got)} ({terms}); the program's used bytes grew "
                      f"{mib(want)} over the warm-up (before_warmup -> after_warmup); difference {d}; "
                      f"the default pool (not graph memory the program holds) changed {mib(other)} "
                      f"over the warm-up, which leaves "
                      + (f"{(want - got - other) / MIB:+.2f} MiB" if None not in (want, got, other) else "missing")
                      + " of the change unexplained by graph memory or the default pool"))
    if strict:
        out.append((ok, f"the bill's graph parts {mib(got)} equal the process's change over the warm-up "
                        f"{mib(want)} (difference {d}, within {mib(tol)}: 2 MiB for each of {len(kinds)} "
                        f"kind(s) seen: {', '.join(kinds) or 'none'})"))
    else:
        within = got is not None and want is not None and got <= want + tol
        out.append((within, f"the bill's graph parts {mib(got)} are at most the process's change over the "
                            f"warm-up {mib(want)} (+{mib(tol)}); the rest, {d} the other way, is the warm-up's "
                            "memory outside graph memory (compiled kernels loaded, eager passes' caches)"))
    return out


def _process_checks(v, self_doc):
    out = []
    start, _, after = _used(self_doc)
    want = after - start if after is not None and start is not None else None
    pm = v.part("process_memory")
    got = _int(pm.get("delta_bytes")) if pm is not None else None
    tol = SEGMENT * (len(v.kinds()) + 1)
    ok, d = _diff(got, want, tol)
    not_graph = _int(pm.get("not_graph_bytes")) if pm is not None else None
    out.append((True, f"info: process memory: the bill's delta {mib(got)} (not graph memory {mib(not_graph)}), "
                      f"the program's used bytes grew {mib(want)} from its start to its end (difference {d})"))
    out.append((ok, f"the bill's process delta {mib(got)} equals the program's change from start to "
                    f"after_warmup {mib(want)} (difference {d}, within {mib(tol)})"
                    + ("" if pm is not None else "; the bill has no process_memory")))
    return out


def _kind_checks(v, label_check):
    """No memory-node graphs (native allocator); every private-pool graph named by the companion;
    label_check(label) -> (ok, what was wanted)."""
    out = []
    nodes = [g.get("name") for g in v.all_graphs if g.get("kind", "memory_nodes") == "memory_nodes"]
    out.append((not nodes, f"no graph of kind memory_nodes with the native allocator: recorded {len(nodes)}"
                           + (f" ({', '.join(map(str, nodes[:4]))}{', ...' if len(nodes) > 4 else ''})" if nodes else "")))
    mine = [(n, g) for n, g in v.graphs if g.get("kind") == "private_pool"]
    out.append((bool(mine), f"private_pool graphs recorded: {len(mine)} ({len(v.all_graphs)} graph(s) in all)"))
    no_site = [n for n, g in mine if not g.get("python_site")]
    out.append((bool(mine) and not no_site,
                f"every private_pool graph has a python_site (the companion named its capture): "
                + ("none recorded" if not mine else "all do" if not no_site else
                   f"{len(no_site)} of {len(mine)} have none (first: '{no_site[0]}')")))
    if label_check is not None:
        bad = []
        wanted = ""
        # A capture that was never launched (CUDA graph trees capture an empty graph to make their
        # pool) is no framework graph of the program's: said, not judged.
        unlaunched = [n for n, g in mine if not g.get("launches")]
        if unlaunched:
            out.append((True, f"info: {len(unlaunched)} unlabelled capture(s) never launched (the pool's own "
                              f"empty capture): {', '.join(unlaunched[:3])}"))
        for n, g in mine:
            if n in unlaunched:
                continue
            ok, wanted = label_check(g.get("framework_label"))
            if not ok:
                bad.append(f"'{n}': {g.get('framework_label')!r}")
        if not mine:
            wanted = label_check(None)[1]
        out.append((bool(mine) and not bad,
                    f"every private_pool graph has a framework_label {wanted}: "
                    + ("none recorded" if not mine else "all do" if not bad else
                       f"{len(bad)} of {len(mine)} do not ({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''})")))
    sites = sorted({str(g.get("python_site")) for _, g in mine})
    out.append((True, f"info: {len(mine)} private_pool graph(s), python_site(s): "
                      f"{'; '.join(sites[:4])}{'; ...' if len(sites) > 4 else ''}"))
    return out


def _exec_state_info(v):
    es = v.part("exec_state")
    if es is None:
        return [(True, "info: the bill has no exec_state (no instantiation measured)")]
    return [(True, f"info: executable-graph state {mib(_int(es.get('bytes')))} for {es.get('instantiations')} "
                   f"instantiation(s) and upload(s), {es.get('unmeasured')} not measured")]


def _common(v, self_doc, label_check, strict_sum=False):
    out = [_bill_check(v)]
    out += _pool_checks(v, self_doc)
    out += _sum_checks(v, self_doc, strict=strict_sum)
    out += _process_checks(v, self_doc)
    out += _kind_checks(v, label_check)
    return out


# --------------------------------------------------------------------------------------------
# One function per program.

COMPILED_LABEL = re.compile(r"^\w+\.forward, batch \d+(, sequence \d+)?$")


def check_bill_compile(args, self_doc, v):
    def label(text):
        return (isinstance(text, str) and COMPILED_LABEL.match(text) is not None,
                "naming the compiled module's forward and the batch ('Net.forward, batch 16, sequence 128')")

    out = _common(v, self_doc, label)
    mine = [(n, g) for n, g in v.graphs if g.get("kind") == "private_pool" and g.get("launches")]
    nodes = [n for n, g in mine if not str(g.get("framework_detail", "")).startswith("cudagraph tree node")]
    out.append((bool(mine) and not nodes,
                "every launched private_pool graph keeps the framework's own words apart (framework_detail "
                "'cudagraph tree node ...'): " + ("all do" if mine and not nodes else
                                                  f"{len(nodes)} of {len(mine)} do not" if mine else "none launched")))
    lib = v.part("libraries_at_capture")
    out.append((True, "info: libraries at capture: " + (f"{mib(_int(lib.get('bytes')))} in {lib.get('allocations')} "
                                                        "allocation(s)" if lib is not None else "none")))
    out += _exec_state_info(v)
    batches = _list(self_doc.get("batches"))
    mine = [(n, g) for n, g in v.graphs if g.get("kind") == "private_pool"]
    out.append((True, f"info: {len(mine)} private_pool graph(s) for {len(batches)} batch size(s) "
                      f"({self_doc.get('mode', _opt(args, '--mode', '?'))}); labels: "
                      + "; ".join(str(g.get("framework_label")) for _, g in mine[:6])
                      + ("; ..." if len(mine) > 6 else "")))
    rows = []
    for row in _list(self_doc.get("pools_after_batch")):
        pools = _dict(_dict(row).get("pools"))
        total = sum(b for b in pools.values() if _int(b) is not None)
        rows.append(f"batch {_dict(row).get('batch')}: {mib(total)}")
    out.append((True, "info: graph pools in the program's snapshot after each batch's calls: "
                      + (", ".join(rows) or "none read")))
    return out


def check_bill_graphed_callables(args, self_doc, v):
    def label(text):
        return text == "make_graphed_callables", "'make_graphed_callables'"

    out = _common(v, self_doc, label)
    out += _exec_state_info(v)
    mine = [(n, g) for n, g in v.graphs if g.get("kind") == "private_pool"]
    out.append((len(mine) == 2, f"make_graphed_callables captured one forward and one backward graph: "
                                f"{len(mine)} private_pool graph(s) recorded, 2 expected"))
    return out


def check_bill_piecewise(args, self_doc, v):
    out = _common(v, self_doc, None, strict_sum=True)
    own = self_doc.get("graphs")
    if not isinstance(own, list) or not own:
        return out + [(False, "the program's self JSON has no graphs[] (its readings around each capture "
                              "and instantiate)")]
    by_name = {}
    for name, g in v.graphs:
        for key in (name, _split(g.get("nvtx"))[1]):
            if isinstance(key, str) and key and key not in by_name:
                by_name[key] = g
    mine = [g for _, g in v.graphs if g.get("kind") == "private_pool"]
    out.append((len(mine) == len(own),
                f"one private_pool graph per capture: {len(own)} captures by the program, {len(mine)} "
                f"private_pool graph(s) recorded"))
    sites = {str(g.get("python_site")) for g in mine}
    out.append((len(sites) == 1 and all(s.startswith("bill_piecewise.py:") for s in sites),
                f"every piece was captured from one call site in bill_piecewise.py: python_site(s) "
                f"{', '.join(sorted(sites)[:3]) or 'none'}"))
    exec_sum, exec_complete = 0, True
    missing = []
    for e in own:
        e = _dict(e)
        name = e.get("name")
        g = by_name.get(name)
        if g is None:
            missing.append(str(name))
            exec_complete = False
            continue
        want = _int(e.get("exec_state_bytes"))
        raw = g.get("exec_state_bytes", 0)  # absent: 0
        got = _int(raw)
        if got is not None and got < 0:
            out.append((False, f"'{name}': exec_state_bytes not measured by the recording (-1: another "
                               f"thread's call overlapped); the program read {mib(want)} around its instantiate"))
            exec_complete = False
        else:
            ok, d = _diff(got, want, SEGMENT)
            out.append((ok, f"'{name}': executable-graph state {mib(got)} recorded, {mib(want)} read by the "
                            f"program around its instantiate (difference {d}, within 2 MiB)"))
            if got is None:
                exec_complete = False
            else:
                exec_sum += got
        b, a = _int(e.get("pool_bytes_before")), _int(e.get("pool_bytes_after"))
        want = a - b if a is not None and b is not None else None
        got = _int(g.get("capture_pool_growth_bytes"))
        ok, d = _diff(got, want, SEGMENT)
        out.append((ok, f"'{name}': capture_pool_growth_bytes {mib(got)} recorded, the shared pool grew "
                        f"{mib(want)} across its capture in PyTorch's snapshot (difference {d}, within 2 MiB)"))
    if missing:
        out.append((False, f"{len(missing)} of {len(own)} graphs the program captured have no recorded graph "
                           f"of that name (first: {', '.join(missing[:3])}); recorded names: "
                           f"{', '.join(str(n) for n, _ in v.graphs[:3])}{', ...' if len(v.graphs) > 3 else ''}"))
    want = sum(_int(_dict(e).get("exec_state_bytes")) or 0 for e in own)
    if isinstance(self_doc.get("exec_state_bytes"), int):
        want = self_doc["exec_state_bytes"]
    es = v.part("exec_state")
    got = _int(es.get("bytes")) if es is not None else None
    ok, d = _diff(got, want, SEGMENT)
    out.append((ok, f"the bill's executable-graph state {mib(got)} equals the sum of the program's readings "
                    f"around its {len(own)} instantiates {mib(want)} (difference {d}, within 2 MiB)"
                    + ("" if es is not None else "; the bill has no exec_state")))
    if exec_complete:
        out.append((True, f"info: the graphs' exec_state_bytes sum to {mib(exec_sum)}; the bill's "
                          f"{es.get('instantiations') if es else '?'} instantiation(s), "
                          f"{es.get('unmeasured') if es else '?'} unmeasured"))
    steps = [f"'{_dict(e).get('name')}' {mib(_int(_dict(e).get('exec_state_bytes')))}" for e in own
             if _int(_dict(e).get("exec_state_bytes"))]
    out.append((True, f"info: instantiates that took memory by the program's readings: {len(steps)} of "
                      f"{len(own)}" + (f" ({', '.join(steps[:8])}{', ...' if len(steps) > 8 else ''})" if steps else "")))
    replay = [_int(_dict(e).get("used_after_replay")) - _int(_dict(e).get("used_before_replay"))
              for e in own if _int(_dict(e).get("used_after_replay")) is not None
              and _int(_dict(e).get("used_before_replay")) is not None]
    out.append((True, f"info: first replays took {mib(sum(replay))} by the program's readings "
                      f"({sum(1 for r in replay if r)} of {len(replay)} took anything)"))
    return out


CHECKS = {
    "bill_compile.py": check_bill_compile,
    "bill_graphed_callables.py": check_bill_graphed_callables,
    "bill_piecewise.py": check_bill_piecewise,
}


def check(program: str, args: list, self_doc: dict, report: dict) -> list:
    """The checks of one run of PROGRAM: [(ok, detail), ...]; never raises on a missing key."""
    base = os.path.basename(program or "")
    fn = CHECKS.get(base)
    if fn is None:
        return [(False, f"no checks for program {program!r}")]
    if not isinstance(self_doc, dict) or not self_doc:
        return [(False, f"{base}: the program's self JSON is missing or not an object")]
    if not isinstance(report, dict) or not report:
        return [(False, f"{base}: the report is missing or not an object")]
    if self_doc.get("skip"):
        return [(True, f"info: {base} skipped: {self_doc['skip']}")]
    try:
        return fn(list(args or []), self_doc, _view(report))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as e:
        return [(False, f"{base}: the checks could not read a figure ({type(e).__name__}: {e})")]


if __name__ == "__main__":
    import json
    import sys
    if len(sys.argv) < 4:
        print("usage: checks_bill.py PROGRAM SELF_JSON REPORT [PROGRAM OPTIONS...]")
        sys.exit(2)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
    import report_forms
    results = check(sys.argv[1], sys.argv[4:], json.load(open(sys.argv[2])), report_forms.load(sys.argv[3]))
    for ok, detail in results:
        print(("PASS " if ok else "FAIL ") + detail)
    sys.exit(0 if all(ok for ok, _ in results) else 1)
