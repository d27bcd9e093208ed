#!/usr/bin/env python3
"""A real engine's recording (gpt2_compile.py, hf_generate.py under `gmemprof record`) against
the program's own readings (its OUT JSON):
- the framework pools at the end equal PyTorch's snapshot of its graph pools at the end, and the
  recording's pool equals PyTorch's figure after every capture (the companion read it then);
- the bill's process change equals the program's own cudaMemGetInfo change (from the context
  made to the end) within 2 MiB, and the bill's kinds with "not graph memory" sum to it;
- nothing of 2 MiB or more is left to an unknown library;
- every graph is named by the compiled module's method and a batch size the program ran, at the
  program's own line, and no name holds inductor's cache file.

Usage: check_engines.py REPORT SELF_JSON    exit 0 when all hold, 1 otherwise; one PASS or FAIL
line each."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
import report_forms  # noqa: E402

MIB = 1 << 20
PREFIX = re.compile(r"^\[[^\]]* pid -?\d+\] ")


def mib(n):
    return "?" if n is None else f"{n / MIB:.2f} MiB"


def checks(rec, me):
    out = []

    def check(ok, what):
        out.append((bool(ok), what))

    bill = next(iter(rec.get("bills", [])), {})
    fw = bill.get("framework_pools", {})
    want = sum(s["size"] for s in me["end"]["segments"] if s["pool"] != "(0, 0)")
    check(fw.get("retained_bytes") == want,
          f"framework pools retained {mib(fw.get('retained_bytes'))} = PyTorch's graph pools at the end {mib(want)}")
    after = [c for p in rec.get("framework_pools", []) for c in p.get("after_captures", [])]
    check(after and all(c.get("retained_bytes") == c.get("framework_bytes") for c in after),
          f"the recording's pool equals PyTorch's figure after each of {len(after)} captures "
          f"(differing: {[c.get('graph') for c in after if c.get('retained_bytes') != c.get('framework_bytes')]})")
    pm = bill.get("process_memory", {})
    got, change = pm.get("delta_bytes"), me["end"]["used"] - me["start"]
    check(got is not None and abs(got - change) <= 2 * MIB,
          f"the bill's process change {mib(got)} = the program's own cudaMemGetInfo change {mib(change)} (within 2 MiB)")
    kinds = (bill.get("memory_node_pool", {}).get("retained_bytes", 0) + fw.get("retained_bytes", 0) +
             bill.get("libraries_at_capture", {}).get("bytes", 0) + bill.get("exec_state", {}).get("bytes", 0) +
             pm.get("not_graph_bytes", 0))
    check(got is not None and kinds == got, f"the bill's kinds and not graph memory sum to {mib(kinds)}, its change {mib(got)}")
    unknown = [t for t in bill.get("libraries_at_capture", {}).get("by_library", []) if t.get("library") == "unknown"]
    check(sum(t.get("bytes", 0) for t in unknown) < 2 * MIB,
          f"libraries at capture left to an unknown library: {mib(sum(t.get('bytes', 0) for t in unknown))}")
    batches = {s["batch"] for s in me["sizes"]}
    graphs = rec.get("graphs", [])
    check(graphs, f"{len(graphs)} graphs recorded")
    script = me["program"] + ".py:"
    named = set()
    for g in graphs:
        name = PREFIX.sub("", g.get("name", ""))  # a merged recording's "[p1 pid N] "
        # A graph tree's node captured with no dynamic input has no batch to name.
        m = re.fullmatch(r"(\S+) in <module> \((\w+)\.forward(?:, batch (\d+)[^)]*)?\)", name)
        ok = bool(m) and m.group(1).startswith(script) and m.group(2) == me["model"] and \
            (m.group(3) is None or int(m.group(3)) in batches)
        if ok and m.group(3):
            named.add(int(m.group(3)))
        check(ok, f"graph {name!r}: the compiled {me['model']}.forward at the program's own line, batch sizes it ran")
    check(named == batches, f"every batch size the program ran names a graph: {sorted(named)} of {sorted(batches)}")
    return out


def main():
    report, self_path = sys.argv[1:3]
    results = checks(report_forms.load(report)["recorded"], json.load(open(self_path)))
    for ok, what in results:
        print(("PASS " if ok else "FAIL ") + what)
    return 0 if results and all(ok for ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
