"""Checks of the corpus's C++ programs (tests/record/corpus_client.cu) against what each read
itself. check(mode, self_doc, report, entry) -> [(ok, detail)]."""

MIB = 1 << 20


def _mib(b):
    return f"{b / MIB:.0f} MiB"


def _rec(report):
    return report.get("recorded") or {}


def _graphs(report, kind="memory_nodes"):
    return [g for g in _rec(report).get("graphs", []) if g.get("kind", "memory_nodes") == kind]


def _first_launch(g):
    return next((e for e in g.get("events", []) if e.get("kind") == "launch" and
                 e.get("class", "").startswith("first_launch")), None)


def _high(report):
    pools = _rec(report).get("pools", [])
    return pools[0].get("high_bytes") if pools else None


def _no_remap(report):
    events = sum(1 for g in _rec(report).get("graphs", []) for e in g.get("events", []) if e.get("class") == "remap_contention")
    diags = [d for p in _rec(report).get("pools", []) for d in p.get("diagnostics", []) if d.get("code") == "remap_contention"]
    return [(events == 0 and not diags, f"no remap_contention: {events} event(s), {len(diags)} diagnostic(s)")]


def _first_growth(out, g, before, after, what):
    e = _first_launch(g) if g else None
    want = after["reserved_current"] - before["reserved_current"]
    got = e.get("growth_bytes", 0) if e else None
    out.append((got == want, f"{what}: first launch grew the pool by {_mib(want)} as read by the program, "
                             f"recorded {'no first launch' if got is None else _mib(got)}"))


def _high_is(out, report, want):
    got = _high(report)
    out.append((got == want, f"pool high watermark {_mib(want)} as read by the program, recorded "
                             f"{'none' if got is None else _mib(got)}"))


def check(mode, self_doc, report, entry):
    out = []
    graphs = _graphs(report) if report else []
    if mode == "pdl":
        out.append((self_doc.get("programmatic_edges", 0) >= 1,
                    f"the capture made {self_doc.get('programmatic_edges', 0)} programmatic edge(s)"))
        out.append((len(graphs) == 1, f"the PDL graph is recorded ({len(graphs)} graph(s) with memory nodes)"))
        if graphs:
            _first_growth(out, graphs[0], self_doc["before"], self_doc["after"], "the PDL graph")
        _high_is(out, report, self_doc["final"]["reserved_high"])
    elif mode == "events":
        # Each pair is made from the same site after the last was destroyed: two records, one
        # instance per pair, the second stream's graph's first launches in pair order.
        variants = self_doc.get("variants", [])
        out.append((len(graphs) == 2 and all(g.get("instances", 1) == len(variants) for g in graphs),
                    f"{len(graphs)} graph records for {len(variants)} pairs made one after another, "
                    f"instances {[g.get('instances', 1) for g in graphs]}"))
        if len(graphs) == 2:
            firsts = [e for e in graphs[1].get("events", []) if e.get("kind") == "launch" and
                      e.get("class", "").startswith("first_launch")]
            for v, e in zip(variants, firsts):
                r0 = v["second_launches"][0]
                want = r0["after"]["reserved_current"] - r0["before"]["reserved_current"]
                got = e.get("growth_bytes", 0)
                out.append((got == want, f"{v['way']}: the second stream's first launch grew the pool by {_mib(want)} "
                                         f"as read by the program, recorded {_mib(got)}"))
            total = sum(max(0, r["after"]["reserved_current"] - r["before"]["reserved_current"])
                        for v in variants for r in v["second_launches"])
            got = graphs[1].get("growth_bytes", 0)
            out.append((got == total, f"the second stream's graph grew the pool by {_mib(total)} in all as read by "
                                      f"the program, recorded {_mib(got)}"))
        _high_is(out, report, max(v["final"]["reserved_high"] for v in variants) if variants else 0)
        pool = (_rec(report).get("pools") or [{}])[0]
        out.append((pool.get("model_high_bytes") == pool.get("high_bytes"),
                    f"the pool model at the high watermark {_mib(pool.get('model_high_bytes') or 0)}, "
                    f"measured {_mib(pool.get('high_bytes') or 0)}"))
        waited = [d for d in pool.get("diagnostics", []) if d.get("code") == "separate_streams"]
        out.append((len(waited) == 1, "separate_streams at the high watermark, which the stream-wait pair reached "
                                      f"while the first stream's graph ran ({len(waited)} diagnostic(s))"))
        out += _no_remap(report)
    elif mode in ("tight", "driver-linked"):
        # driver-linked: calls through the PLT of a program linked to libcuda, seen by either hook.
        out.append((len(graphs) == 1, f"{len(graphs)} graph(s) with memory nodes recorded, 1 made"))
        if graphs:
            out.append((graphs[0].get("launches") == self_doc["launches"],
                        f"{graphs[0].get('launches')} launches recorded, {self_doc['launches']} made"))
        _high_is(out, report, self_doc["final"]["reserved_high"])
        if mode == "tight":
            out += _no_remap(report)
    elif mode == "back-to-back":
        out.append((len(graphs) == self_doc["graphs"], f"{len(graphs)} graphs recorded, {self_doc['graphs']} made"))
        _high_is(out, report, self_doc["final"]["reserved_high"])
        out += _no_remap(report)
    elif mode == "identical":
        firsts = self_doc.get("first_launches", [])
        out.append((len(graphs) == len(firsts) and all(g.get("instances", 1) == 1 for g in graphs),
                    f"{len(graphs)} graphs recorded, {len(firsts)} alive together, each one instance"))
        for k, f in enumerate(firsts[:len(graphs)]):
            _first_growth(out, graphs[k], f["before"], f["after"], f"graph {k + 1}")
        _high_is(out, report, self_doc["final"]["reserved_high"])
        # Each graph's first launch put its output in a granule the graph before had mapped for
        # its working memory (the last slots take granules already in the pool): at their
        # second launch graphs 1 to 7 map their working memory again, from granules in the pool
        # (the pool probe's P1), the last one does not.
        remaps = [(g.get("name"), e.get("host_us", 0)) for g in graphs for e in g.get("events", [])
                  if e.get("class") == "remap_contention"]
        out.append((len(remaps) == len(firsts) - 1 and all(us >= 15 for _, us in remaps),
                    f"{len(remaps)} remap_contention relaunch(es), each 15 us or more: "
                    f"{[round(us) for _, us in remaps]} us (want {len(firsts) - 1}: every graph but the last)"))
    elif mode == "segv-handled":
        out.append((self_doc.get("recovered") == 200, f"{self_doc.get('recovered')} of 200 faults recovered recorded"))
        out.append((self_doc.get("fault_loop_s", 99) < 0.5,
                    f"200 handled faults took {self_doc.get('fault_loop_s', 0):.3f} s recorded (nothing written on a handled fault)"))
        out.append((not _rec(report).get("partial"), "the report is the whole one written at exit, not a signal's"))
    elif mode == "sigterm-exit":
        runs = entry.get("runs", [])
        out.append((all(r["recorded"]["exit"] == 3 and r["unrecorded"]["exit"] == 3 for r in runs),
                    f"exit() from the SIGTERM handler ended every run with 3: recorded "
                    f"{[r['recorded']['exit'] for r in runs]}, unrecorded {[r['unrecorded']['exit'] for r in runs]}"))
    else:
        out.append((False, f"no check for mode {mode}"))
    return out
