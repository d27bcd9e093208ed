#!/usr/bin/env python3
"""Tensor-parallel ranks recorded in one command (`gmemprof record -- torchrun --nproc-per-node N
tp_worker.py OUT_DIR`) against what each rank read itself (tp_worker.py):
- each rank's bill is for its own device and holds its four graphs;
- each capture: the device memory the rank saw the capture and its instantiation take equals the
  graph's own figures in the recording (what it added to the framework's pool, what libraries
  took at its capture, its executable-graph state), within 2 MiB: PyTorch's first capture makes
  its generators' graph state in the default pool (one 2 MiB segment), which is the program's;
- native allocator: the shared pool after every capture, in the recording (the companion read
  PyTorch's snapshot then), equals the rank's own snapshot after that capture, and the bill's
  pools equal the rank's at the end;
- the bill's process change equals the rank's own cudaMemGetInfo change within 2 MiB, and the
  bill's kinds and "not graph memory" sum to it;
- what NCCL took at capture is named NCCL;
- the graphs replayed under record give what the eager forward gives.

Usage: check_tp.py REPORT OUT_DIR    exit 0 when all hold, 1 otherwise; one PASS or FAIL line each."""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
import report_forms  # noqa: E402

MIB = 1 << 20
TOLERANCE = 2 * MIB


def mib(n):
    return "?" if n is None else f"{n / MIB:.2f} MiB"


def checks(rec, selves):
    """[(ok, what)] for the recording `rec` (the report's "recorded") and each rank's readings."""
    out = []

    def check(ok, what):
        out.append((bool(ok), what))

    bills = {b.get("process", ""): b for b in rec.get("bills", [])}
    check(len(selves) >= 2, f"{len(selves)} ranks wrote their readings")
    for r, me in sorted(selves.items()):
        label = f"rank {r}"
        b = bills.get(label)
        check(b is not None, f"{label}: a bill named by its rank (bills: {sorted(bills)})")
        if not b:
            continue
        check(b.get("device") == me["device"], f"{label}: its bill is for device {b.get('device')}, the rank's {me['device']}")
        graphs = [g for g in rec.get("graphs", []) if g.get("name", "").startswith(f"[{label} pid ")]
        check(len(graphs) == len(me["captures"]), f"{label}: {len(graphs)} recorded graphs = {len(me['captures'])} captured")
        for capture, g in zip(me["captures"], graphs):
            took = capture["used_after"] - capture["used_before"]
            pool = g.get("capture_pool_growth_bytes", 0)
            libraries = g.get("libraries_at_capture_bytes", 0)
            state = max(g.get("exec_state_bytes", 0), 0)
            figures = pool + libraries + state
            check(abs(took - figures) <= TOLERANCE,
                  f"{label}, batch {capture['batch']}: the capture took {mib(took)} by the rank's reading; the graph's "
                  f"figures {mib(figures)} (pool {mib(pool)}, libraries at capture {mib(libraries)}, "
                  f"executable-graph state {mib(state)})")
        if me["allocator"] == "native":
            pools = [p for p in rec.get("framework_pools", []) if p.get("id", "").startswith(f"[{label} pid ")]
            after = [c for p in pools for c in p.get("after_captures", [])]
            want = [c["pool_bytes"] for c in me["captures"]]
            check([c.get("retained_bytes") for c in after] == want,
                  f"{label}: the shared pool after each capture {[mib(c.get('retained_bytes')) for c in after]} = the "
                  f"rank's own snapshot then {[mib(w) for w in want]}")
            check(all(c.get("retained_bytes") == c.get("framework_bytes") for c in after) and after,
                  f"{label}: the recording's pool equals PyTorch's figure after each of its {len(after)} captures")
            fw = b.get("framework_pools", {})
            check(fw.get("retained_bytes") == me["pool_end_bytes"],
                  f"{label}: framework pools retained {mib(fw.get('retained_bytes'))} = the rank's snapshot at the end "
                  f"{mib(me['pool_end_bytes'])}")
        pm = b.get("process_memory", {})
        want = me["used_end"] - me["used_start"]
        got = pm.get("delta_bytes")
        check(got is not None and abs(got - want) <= TOLERANCE,
              f"{label}: the bill's process change {mib(got)} = the rank's own cudaMemGetInfo change {mib(want)} (within 2 MiB)")
        kinds = (b.get("memory_node_pool", {}).get("retained_bytes", 0) + b.get("framework_pools", {}).get("retained_bytes", 0) +
                 b.get("libraries_at_capture", {}).get("bytes", 0) + b.get("exec_state", {}).get("bytes", 0) +
                 pm.get("not_graph_bytes", 0))
        check(got is not None and kinds == got, f"{label}: the bill's kinds and not graph memory sum to {mib(kinds)}, its change {mib(got)}")
        by = {t.get("library"): t for t in b.get("libraries_at_capture", {}).get("by_library", [])}
        others = sorted(k for k in by if k != "NCCL")
        check("NCCL" in by and not others,
              f"{label}: what libraries took at capture is NCCL's ({mib(by.get('NCCL', {}).get('bytes'))}; others: {others})")
        check(me["replay_matches_eager"], f"{label}: the replayed graph's output equals the eager forward's under record")
    return out


def main():
    report_path, out_dir = sys.argv[1:3]
    rec = report_forms.load(report_path)["recorded"]
    selves = {str(d["rank"]): d for d in (json.load(open(p)) for p in glob.glob(os.path.join(out_dir, "tp-rank-*.json")))}
    results = checks(rec, selves)
    for ok, what in results:
        print(("PASS " if ok else "FAIL ") + what)
    return 0 if results and all(ok for ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
