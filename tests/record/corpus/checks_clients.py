"""Checks of the corpus's other frameworks' programs (tests/record/clients/): CuPy and JAX, against
what each read itself (SELF_JSON).

    check(program, args, self_doc, report) -> [(ok, detail), ...]

A missing key is a failed check with a detail that names it, never an exception."""

from checks_cpp import MIB, _graphs, _high_is


def check(program, args, self_doc, report):
    out = []
    graphs = _graphs(report)
    if program == "cupy_graph.py":
        out.append((self_doc.get("result") == 16 * MIB // 4 * 2.0,
                    f"the graph's sum is {self_doc.get('result')} (the program's own check)"))
        out.append((len(graphs) == 1, f"{len(graphs)} graph(s) with memory nodes recorded, 1 captured"))
        if graphs:
            g = graphs[0]
            out.append((g.get("launches") == self_doc.get("launches"),
                        f"{g.get('launches')} launches recorded, {self_doc.get('launches')} made"))
        want = self_doc.get("reserved_high")
        if want is None:
            out.append((False, "the program's pool high watermark is missing"))
        else:
            _high_is(out, report, want)
    elif program == "jax_jit.py":
        out.append((self_doc.get("runs") == 10, f"{self_doc.get('runs')} runs made"))
        out.append((self_doc.get("backend") == "gpu", f"JAX ran on {self_doc.get('backend')}"))
        recorded = report.get("recorded") or {}
        out.append((bool(recorded), "the report holds the recording"))
        out.append((True, f"info: {len(graphs)} graph(s) with memory nodes, "
                          f"{recorded.get('graphs_without_memory_nodes', 0)} without"))
    else:
        out.append((False, f"no checks for {program}"))
    return out
