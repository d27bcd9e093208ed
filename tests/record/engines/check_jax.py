#!/usr/bin/env python3
"""A recording of the JAX program (jax_command_buffers.py under `gmemprof record`) against the
program's own readings (its SELF_JSON):
- the recording is whole, and counts the instantiations of graphs without memory nodes (XLA's
  command buffers), more than none;
- it states what the program did to those graphs once instantiated (updates in place taken and
  refused, node parameter calls): a recording made by a build that does not count them fails;
- its graph memory figures for the program's device (the bill's memory node pool, the pool's
  high watermark and end) equal the program's own graph memory counters: the high watermark its
  highest reading, the end its last; where the recording holds no graph with memory nodes, the
  program read 0 at every step;
- with --unrecorded SELF_JSON2 (the program run unrecorded), the program read the same graph
  memory counters after every step.
It prints the counts, and the program's device memory in use from its first step to its last
(recorded and unrecorded) beside the bill's process change, as INFO lines.

Usage: check_jax.py REPORT SELF_JSON [--unrecorded SELF_JSON2]    exit 0 when all hold, 1
otherwise; one PASS or FAIL line each."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
import report_forms  # noqa: E402

MIB = 1 << 20
COUNTERS = ("used_current", "used_high", "reserved_current", "reserved_high")
CALLS = ("updates_without_memory_nodes", "refused_updates_without_memory_nodes",
         "node_param_sets_without_memory_nodes")


def mib(n):
    return "?" if n is None else f"{n / MIB:.2f} MiB"


def checks(rec, me, plain=None):
    """(ok, text) for each check; None for ok: an INFO line."""
    out = []

    def check(ok, what):
        out.append((bool(ok), what))

    def info(what):
        out.append((None, what))

    check(not rec.get("partial"), f"the recording is whole ({rec.get('partial_reason', '')})")
    without = rec.get("graphs_without_memory_nodes", 0)
    check(without > 0, f"instantiations of graphs without memory nodes: {without}")
    check(all(k in rec for k in CALLS),
          "the recording states what the program did to its graphs without memory nodes "
          f"(missing: {[k for k in CALLS if k not in rec]})")
    info(f"updates in place of graphs without memory nodes: {rec.get(CALLS[0], '?')} taken, "
         f"{rec.get(CALLS[1], '?')} refused; node parameter calls: {rec.get(CALLS[2], '?')}")

    device = me.get("device", 0)
    readings = me["graph_memory"]
    check(len(readings) == me["steps"], f"the program read its graph memory after each of its {me['steps']} steps "
          f"({len(readings)} readings)")
    own_high = max((r["reserved_high"] for r in readings), default=0)
    own_end = readings[-1]["reserved_current"] if readings else 0
    bill = next((b for b in rec.get("bills", []) if b.get("device", 0) == device), {})
    node_pool = bill.get("memory_node_pool")  # absent: the recording saw no graph memory
    rec_high = node_pool["high_bytes"] if node_pool else 0
    rec_end = node_pool["retained_bytes"] if node_pool else 0
    check(rec_high == own_high, f"the bill's graph memory high {mib(rec_high)}"
          f"{'' if node_pool else ' (none seen)'} = the program's own reserved high {mib(own_high)}")
    check(rec_end == own_end, f"the bill's graph memory at the end {mib(rec_end)} = the program's own reserved "
          f"after its last step {mib(own_end)}")
    pools = [p for p in rec.get("pools", []) if p.get("device", 0) == device]
    pool_high = max((p["high_bytes"] for p in pools), default=0)
    pool_end = max((p["end_bytes"] for p in pools), default=0)
    check(pool_high == own_high and pool_end == own_end,
          f"the recorded pool's high {mib(pool_high)} and end {mib(pool_end)}{'' if pools else ' (no pool)'} = the "
          f"program's own {mib(own_high)} and {mib(own_end)}")
    memory_node_graphs = [g for g in rec.get("graphs", []) if g.get("kind", "memory_nodes") == "memory_nodes"]
    if not memory_node_graphs:
        nonzero = [r["step"] for r in readings if any(r[k] for k in COUNTERS)]
        check(not nonzero, "no graph with memory nodes recorded, and the program read 0 B of graph memory at every "
              f"step (not at steps {nonzero})")

    if plain is not None:
        theirs = plain["graph_memory"]
        same = len(theirs) == len(readings) and all(
            all(a[k] == b[k] for k in COUNTERS) for a, b in zip(theirs, readings))
        check(same, "unrecorded, the program read the same graph memory counters after every step")
    for name, doc in (("recorded", me), ("unrecorded", plain)):
        if doc is not None and doc.get("used_after_step1") is not None:
            info(f"{name}: device memory in use from step 1 to step {doc['steps']} "
                 f"{mib(doc['used_after'] - doc['used_after_step1'])}, from before JAX was imported "
                 f"{mib(doc['used_after'] - doc['used_before'])}")
    pm = bill.get("process_memory", {})
    if "delta_bytes" in pm:
        info(f"the bill's process change {mib(pm['delta_bytes'])} (from the recording's first reading), executable-graph "
             f"state {mib(bill.get('exec_state', {}).get('bytes'))}")
    return out


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    report, self_path = argv[1:3]
    plain = json.load(open(argv[argv.index("--unrecorded") + 1])) if "--unrecorded" in argv else None
    rep = report_forms.load(report)
    if "recorded" not in rep:
        print("FAIL the report has no recorded section")
        return 1
    results = checks(rep["recorded"], json.load(open(self_path)), plain)
    for ok, what in results:
        print(("INFO " if ok is None else "PASS " if ok else "FAIL ") + what)
    return 0 if all(ok is not False for ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
