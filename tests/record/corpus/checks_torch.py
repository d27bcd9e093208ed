"""Checks of the PyTorch corpus programs (tests/record/corpus/torch_*.py): what `gmemprof record`
wrote (REPORT) against what the program read itself (SELF_JSON).

    check(program, args, self_doc, report) -> [(ok, detail), ...]

program: the program's path or file name ("torch_identical.py"); args: its command line options
(the SELF_JSON path among them or not); self_doc and report: the parsed JSON. Every detail
quotes both figures. A missing key is a failed check with a detail that names it, never an
exception. Two conventions of the report's writer (profiler/report/recording_json.cpp) are
read as it writes them: a graph without "instances" has one instance, an event without
"growth_bytes" grew the pool by 0. Lines whose detail starts with "info:" only say what the
recording holds and always pass."""
import os

MIB = 1 << 20
SEGMENT = 2 * MIB  # PyTorch's smallest segment: the tolerance of the private pool figures


def mib(v):
    """A figure in MiB for a detail; 'missing' for None."""
    if v is None:
        return "missing"
    return f"{v / MIB:.2f} MiB"


def _int(v):
    """v when it is an integer figure (not a bool), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _opt(args, name, default):
    """The value of option NAME ('--count') in args ('--count 8' or '--count=8'), else default."""
    args = list(args or [])
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a[len(name) + 1:]
    return default


def _flag(args, name):
    return name in (args or [])


def _recorded(report):
    rec = (report or {}).get("recorded")
    return rec if isinstance(rec, dict) else None


def _graphs(report):
    """The recorded graphs, in the report's order (instantiation order), or None."""
    rec = _recorded(report)
    graphs = rec.get("graphs") if rec else None
    return graphs if isinstance(graphs, list) else None


def _pool0(report):
    """The pool of device 0 (else the first pool), or None."""
    rec = _recorded(report)
    pools = rec.get("pools") if rec else None
    if not isinstance(pools, list) or not pools:
        return None
    return next((p for p in pools if p.get("device") == 0), pools[0])


def _first_launch(g):
    return next((e for e in g.get("events") or [] if e.get("kind") == "launch" and
                 str(e.get("class", "")).startswith("first_launch")), None)


def _instances(g):
    return g.get("instances", 1)


def _of_kind(graphs, kind):
    return [g for g in graphs if g.get("kind") == kind]


def _kinds(graphs):
    out = {}
    for g in graphs:
        out[g.get("kind", "?")] = out.get(g.get("kind", "?"), 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(out.items())) or "none"


def _count_check(report, kind, want):
    """(ok, detail) for 'exactly WANT recorded graphs of KIND', and the graphs of that kind."""
    graphs = _graphs(report)
    if graphs is None:
        return (False, "the report has no recorded.graphs"), []
    mine = _of_kind(graphs, kind)
    return (len(mine) == want and len(graphs) == want,
            f"{want} graph(s) of kind {kind} expected, recorded {len(mine)} "
            f"({len(graphs)} in all: {_kinds(graphs)})"), mine


def _instances_check(graphs, allowed=(1,)):
    bad = [f"'{g.get('name')}' {_instances(g)}" for g in graphs if _instances(g) not in allowed]
    return (not bad, f"every graph has instances {' or '.join(map(str, allowed))} "
                     f"(absent means 1): {'all do' if not bad else 'not ' + ', '.join(bad)}")


def _remap_checks(report):
    """No launch classed remap_contention and no pool diagnostic remap_contention; with an info
    line on slow launches and remap_unexplained, which are recorded, not judged."""
    out = []
    graphs = _graphs(report)
    rec = _recorded(report)
    if graphs is None or rec is None:
        return [(False, "the report has no recorded.graphs: cannot look for remap_contention")]
    events = [(g.get("name"), e) for g in graphs for e in g.get("events") or []
              if e.get("class") == "remap_contention"]
    names = sorted({str(n) for n, _ in events})
    out.append((not events, f"no launch classed remap_contention expected, recorded {len(events)}"
                            + (f" (graphs: {', '.join(names[:8])}"
                               f"{', ...' if len(names) > 8 else ''})" if events else "")))
    pools = rec.get("pools")
    if not isinstance(pools, list):
        out.append((False, "the report has no recorded.pools: cannot look for pool diagnostics"))
        pools = []
    else:
        diags = [d for p in pools for d in p.get("diagnostics") or []
                 if d.get("code") == "remap_contention"]
        out.append((not diags, f"no pool diagnostic remap_contention expected, recorded "
                               f"{len(diags)}" + (f" ({mib(_int(diags[0].get('bytes')))} of growth)"
                                                  if diags else "")))
    slow = sum(_int(g.get("slow_launches")) or 0 for g in graphs)
    unexplained = sum(1 for g in graphs for e in g.get("events") or []
                      if e.get("class") == "remap_unexplained")
    unexplained += sum(1 for p in pools for d in p.get("diagnostics") or []
                       if d.get("code") == "remap_unexplained")
    steady = sum(_int(g.get("steady_launches")) or 0 for g in graphs)
    out.append((True, f"info: {slow} slow launch(es), {steady} steady, {unexplained} "
                      f"remap_unexplained event(s) or diagnostic(s)"))
    return out


def _high_check(report, self_doc):
    pool = _pool0(report)
    got = _int(pool.get("high_bytes")) if pool else None
    want = _int(self_doc.get("final_reserved_high"))
    return (got is not None and want is not None and got == want,
            f"pool high watermark: the program read {mib(want)} ({want} B), recorded {mib(got)} "
            f"({got} B)" + ("" if pool else " (the report has no recorded.pools)"))


def _first_launch_checks(mine, self_doc):
    """Graph k's first launch grew the pool by what the program read around graph k's first
    replay (graphs in instantiation order, which is capture order)."""
    out = []
    own = self_doc.get("graphs")
    if not isinstance(own, list):
        return [(False, "the program's self JSON has no graphs[]")]
    own = sorted(own, key=lambda e: e.get("index", 0))
    for k, entry in enumerate(own):
        before, after = _int(entry.get("reserved_before")), _int(entry.get("reserved_after"))
        want = after - before if before is not None and after is not None else None
        if k >= len(mine):
            out.append((False, f"graph #{k}: the program read {mib(want)} at its first replay, "
                               f"no recorded graph at that position"))
            continue
        g = mine[k]
        first = _first_launch(g)
        got = None if first is None else _int(first.get("growth_bytes", 0))
        out.append((want is not None and got is not None and got == want,
                    f"graph #{k} ('{g.get('name')}'): first launch grew the pool by {mib(want)} as "
                    f"read by the program, recorded {mib(got)}"
                    + (" (no first_launch event)" if first is None else "")))
    return out


# --------------------------------------------------------------------------------------------
# One function per program.

def check_torch_identical(args, self_doc, report):
    count = int(_opt(args, "--count", self_doc.get("count", 8)))
    allocator = _opt(args, "--allocator", self_doc.get("allocator", "async"))
    own = self_doc.get("graphs")
    out = [(isinstance(own, list) and len(own) == count,
            f"the program recorded {len(own) if isinstance(own, list) else 'no'} graph readings "
            f"itself, {count} expected")]
    if allocator == "async":
        c, mine = _count_check(report, "memory_nodes", count)
        out += [c, _instances_check(mine)]
        out += _first_launch_checks(mine, self_doc)
        out.append(_high_check(report, self_doc))
        out += _remap_checks(report)
        return out
    c, mine = _count_check(report, "private_pool", count)
    out += [c, _instances_check(mine)]
    growths = [_int(g.get("capture_pool_growth_bytes")) for g in mine]
    total = _int(self_doc.get("total_pool_bytes"))
    if mine and None not in growths and total is not None:
        s = sum(growths)
        out.append((abs(s - total) <= SEGMENT,
                    f"the graphs' capture growth sums to {mib(s)}, PyTorch's snapshot lists "
                    f"{mib(total)} for the shared pool at exit (within 2 MiB)"))
    else:
        out.append((False, f"sum of capture growth: recorded {'missing' if None in growths else mib(sum(growths))}"
                           f" over {len(mine)} graph(s), the program read {mib(total)} at exit"))
    own = sorted(own if isinstance(own, list) else [], key=lambda e: e.get("index", 0))
    for k, entry in enumerate(own):
        b, a = _int(entry.get("pool_bytes_before")), _int(entry.get("pool_bytes_after"))
        want = a - b if a is not None and b is not None else None
        got = growths[k] if k < len(growths) else None
        name = mine[k].get("name") if k < len(mine) else None
        out.append((want is not None and got is not None and abs(got - want) <= SEGMENT,
                    f"graph #{k} ('{name}'): the pool grew {mib(want)} across its capture in "
                    f"PyTorch's snapshot, recorded {mib(got)} (within 2 MiB)"))
    return out


def check_torch_fork(args, self_doc, report):
    count = int(self_doc.get("count", 2))
    c, mine = _count_check(report, "memory_nodes", 2)
    out = [c, _instances_check(mine)]
    out += _first_launch_checks(mine, self_doc)
    out.append(_high_check(report, self_doc))
    out += _remap_checks(report)
    child = self_doc.get("child_exit")
    out.append((child == 0, f"the forked child exited with {child}, 0 expected"))
    own = self_doc.get("graphs")
    out.append((isinstance(own, list) and len(own) == count == 2,
                f"the program read {len(own) if isinstance(own, list) else 'no'} graph(s) itself, "
                f"2 expected"))
    rec = _recorded(report) or {}
    procs = rec.get("processes")
    out.append((True, f"info: {len(procs) if isinstance(procs, list) else 'no'} "
                      f"recorded.processes entr(ies); partial {rec.get('partial')}"))
    return out


def check_torch_native_captures(args, self_doc, report):
    out = []
    c, mine = _count_check(report, "private_pool", 9)
    out.append(c)
    own = self_doc.get("graphs")
    if not isinstance(own, list):
        return out + [(False, "the program's self JSON has no graphs[]")]
    by_name = {}
    for g in mine:
        for key in (g.get("name"), g.get("nvtx")):
            if key and key not in by_name:
                by_name[key] = g
    named = all(e.get("name") in by_name for e in own)
    how = "by name" if named else "by order (the report does not name every graph 'batch N')"
    growth_sum, complete = 0, True
    for k, entry in enumerate(own):
        g = by_name.get(entry.get("name")) if named else (mine[k] if k < len(mine) else None)
        b, a = _int(entry.get("pool_bytes_before")), _int(entry.get("pool_bytes_after"))
        want = a - b if a is not None and b is not None else None
        got = _int(g.get("capture_pool_growth_bytes")) if g else None
        if got is None:
            complete = False
        else:
            growth_sum += got
        out.append((want is not None and got is not None and abs(got - want) <= SEGMENT,
                    f"'{entry.get('name')}' (matched {how}: '{g.get('name') if g else None}'): the "
                    f"pool grew {mib(want)} across its capture in PyTorch's snapshot, recorded "
                    f"{mib(got)} (within 2 MiB)"))
    total = _int(self_doc.get("total"))
    tol = SEGMENT * len(own)
    out.append((complete and total is not None and abs(growth_sum - total) <= tol,
                f"the graphs' capture growth sums to {mib(growth_sum) if complete else 'missing'}, "
                f"PyTorch's snapshot lists {mib(total)} for the pools at exit "
                f"(within {mib(tol)})"))
    out.append((True, "info: instances " + ", ".join(f"'{g.get('name')}' {_instances(g)}"
                                                     for g in mine)))
    return out + _pool_id_checks(own, self_doc.get("pool") == "shared", report)


def _pool_id_checks(own, shared, report):
    """Each of PyTorch's pools the program's graphs were captured into is a framework pool of the
    report under PyTorch's own id, retaining what PyTorch's snapshot lists for it after the pool's
    last capture: a pool the program named (told as its capture begins) and a pool PyTorch made
    (told at the thread's next capture, or at the end: the graph is destroyed in capture_end)."""
    rec = _recorded(report) or {}
    pools = {p.get("id"): p for p in rec.get("framework_pools") or [] if isinstance(p, dict)}
    after = {}  # PyTorch's id: bytes after its last capture
    for entry in own:
        pid = entry.get("pool_id")
        if isinstance(pid, list) and len(pid) == 2:
            after["(%d, %d)" % tuple(pid)] = _int(entry.get("pool_bytes_after"))
    out = []
    for pid, want in after.items():
        p = pools.get(pid)
        got = _int(p.get("retained_bytes")) if p else None
        out.append((got is not None and want is not None and abs(got - want) <= SEGMENT,
                    f"pool {pid} ({'named by the program' if shared else 'made by PyTorch'}): retained "
                    f"{mib(got)} recorded, {mib(want)} in PyTorch's snapshot after its last capture (within "
                    f"2 MiB)" + ("" if p else f"; the report has no framework pool of that id (ids: "
                                              f"{', '.join(sorted(str(k) for k in pools)) or 'none'})")))
    if not after:
        out.append((False, "the program's self JSON names no graph's pool_id"))
    return out


def check_torch_loop(args, self_doc, report):
    mode = self_doc.get("mode", _opt(args, "--mode", "tight"))
    out = _remap_checks(report)
    graphs = _graphs(report)
    if mode == "tight":
        c, mine = _count_check(report, "memory_nodes", 1)
        out.append(c)
        want = _int(self_doc.get("launches"))
        got = _int(mine[0].get("launches")) if len(mine) == 1 else None
        out.append((want is not None and got is not None and got == want,
                    f"the graph was launched {want} times by the program (1 first launch + "
                    f"{self_doc.get('replays')} in the loop), recorded {got}"))
    else:
        n = _int(self_doc.get("graphs"))
        n = n if n is not None else int(_opt(args, "--graphs", 1000))
        c, mine = _count_check(report, "memory_nodes", n)
        out.append(c)
        want = _int(self_doc.get("launches"))
        wrong = [g for g in mine if _int(g.get("launches")) != want]
        out.append((want is not None and bool(mine) and not wrong,
                    f"every graph launched {want} times by the program, recorded: "
                    + ("all" if not wrong else f"{len(wrong)} of {len(mine)} differ (first: "
                       f"'{wrong[0].get('name')}' {wrong[0].get('launches')})")))
    out.append(_high_check(report, self_doc))
    granule = _int(((report or {}).get("environment") or {}).get("granularity_bytes"))
    pool = _pool0(report)
    high = _int(pool.get("high_bytes")) if pool else None
    if granule and high is not None:
        out.append((True, f"info: the high watermark {mib(high)} is {high / granule:.2f} granules "
                          f"of {mib(granule)} for {len(graphs or [])} graph(s)"))
    return out


def check_torch_compile(args, self_doc, report):
    out = _remap_checks(report)
    graphs = _graphs(report) or []
    mine = _of_kind(graphs, "private_pool")
    at_exit = _int(self_doc.get("pool_bytes_at_exit"))
    out.append((True, f"info: {len(graphs)} recorded graph(s) ({_kinds(graphs)}); the program's "
                      f"snapshot lists {mib(at_exit)} in graph pools at exit"))
    if not mine:
        out.append((True, "info: no private_pool graphs recorded: nothing to compare with the "
                          "snapshot"))
        return out
    growths = [_int(g.get("capture_pool_growth_bytes")) for g in mine]
    if None in growths or at_exit is None:
        out.append((False, f"capture growth of {len(mine)} private_pool graph(s): "
                           f"{'missing' if None in growths else mib(sum(growths))}; the program "
                           f"read {mib(at_exit)} at exit"))
        return out
    s = sum(growths)
    out.append((s <= at_exit + SEGMENT,
                f"the private_pool graphs' capture growth sums to {mib(s)}, at most the "
                f"{mib(at_exit)} PyTorch's snapshot lists in graph pools at exit (+2 MiB)"))
    pool = _pool0(report)
    ppb = _int(pool.get("private_pool_bytes", 0)) if pool else None
    out.append((True, "info: capture growth per graph: " +
                ", ".join(f"'{g.get('name')}' {mib(v)}" for g, v in zip(mine, growths)) +
                f"; the pool's private_pool_bytes {mib(ppb)}"))
    return out


CHECKS = {
    "torch_identical.py": check_torch_identical,
    "torch_fork.py": check_torch_fork,
    "torch_native_captures.py": check_torch_native_captures,
    "torch_loop.py": check_torch_loop,
    "torch_compile.py": check_torch_compile,
}


def check(program: str, args: list, self_doc: dict, report: dict) -> list:
    """The checks of one run of PROGRAM: [(ok, detail), ...]; never raises on a missing key."""
    fn = CHECKS.get(os.path.basename(program or ""))
    if fn is None:
        return [(False, f"no checks for program {program!r}")]
    if not isinstance(self_doc, dict):
        return [(False, f"{os.path.basename(program)}: the program's self JSON is missing or "
                        f"not an object")]
    if not isinstance(report, dict):
        return [(False, f"{os.path.basename(program)}: the report is missing or not an object")]
    if self_doc.get("skip"):
        return [(True, f"info: {os.path.basename(program)} skipped: {self_doc['skip']}")]
    try:
        return fn(list(args or []), self_doc, report)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        return [(False, f"{os.path.basename(program)}: the checks could not read a figure "
                        f"({type(e).__name__}: {e})")]


if __name__ == "__main__":
    import json
    import sys
    if len(sys.argv) < 4:
        print("usage: checks_torch.py PROGRAM SELF_JSON REPORT [PROGRAM OPTIONS...]")
        sys.exit(2)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
    import report_forms
    results = check(sys.argv[1], sys.argv[4:], json.load(open(sys.argv[2])), report_forms.load(sys.argv[3]))
    for ok, detail in results:
        print(("PASS " if ok else "FAIL ") + detail)
    sys.exit(0 if all(ok for ok, _ in results) else 1)
