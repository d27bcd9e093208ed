#!/usr/bin/env python3
"""On a recording of several graphs: compares what the program read itself
(SELF_JSON of tests/record/torch_serving.py or `gmem_record_client serving|threads`) with what
`gmemprof record` wrote (REPORT).

  serving (a self file with "graphs"): every graph's recorded growth equals the growth the
    program read around its own launches (first launch: reserved after - before; in all: the sum
    of its positive deltas); the pool's high watermark equals the program's final reading;
  threads (no "graphs"): the graphs' growth sums to the device's final reservation, and no
    graph's growth exceeds its own footprint;
  both: the attribution at the high watermark sums to the high watermark within one granule;
    no graph's analysis.reserved_high_bytes exceeds its rounded lower bound by more than 1.5x
    or two granules, whichever is larger (it is the graph's own figure).

Usage: check_pool.py SELF_JSON REPORT [--json OUT]   exit 0 all hold, 1 otherwise."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import report_forms  # noqa: E402


def main():
    self_doc = json.load(open(sys.argv[1]))
    rep = report_forms.load(sys.argv[2])
    out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    rec = rep.get("recorded") or {}
    granule = rep["environment"]["granularity_bytes"]
    checks = []

    def check(ok, what):
        checks.append({"ok": bool(ok), "detail": what})
        print(("PASS " if ok else "FAIL ") + what)

    graphs = {g["name"]: g for g in rec.get("graphs", [])}
    pools = rec.get("pools", [])
    check(pools, f"the recording has a pool ({len(pools)})")
    if not pools:
        return finish(checks, out)
    pool = pools[0]
    if "graphs" in self_doc:
        for g in self_doc["graphs"]:
            r = graphs.get(g["name"])
            if r is None:
                check(False, f"graph '{g['name']}' is in the recording")
                continue
            first = next((e for e in r["events"] if e["kind"] == "launch" and
                          e.get("class", "").startswith("first_launch")), None)
            own_first = g["reserved_after"] - g["reserved_before"]
            check(first is not None and first.get("growth_bytes", 0) == own_first,
                  f"'{g['name']}' first launch grew the pool by {own_first >> 20} MiB as read by the "
                  f"program, recorded {(first or {}).get('growth_bytes', 0) >> 20} MiB")
            check(r["growth_bytes"] == g["growth_total"],
                  f"'{g['name']}' grew the pool by {g['growth_total'] >> 20} MiB in all as read by "
                  f"the program, recorded {r['growth_bytes'] >> 20} MiB")
        check(pool["high_bytes"] == self_doc["final_reserved_high"],
              f"pool high watermark {pool['high_bytes'] >> 20} MiB recorded, "
              f"{self_doc['final_reserved_high'] >> 20} MiB read by the program")
    else:
        total = sum(g["growth_bytes"] for g in graphs.values())
        check(total == self_doc["final_reserved_current"],
              f"the graphs' growth sums to {total >> 20} MiB, the device reserved "
              f"{self_doc['final_reserved_current'] >> 20} MiB at the end")
        for g in graphs.values():
            check(g["growth_bytes"] <= g["own_footprint_bytes"],
                  f"'{g['name']}' grew the pool by {g['growth_bytes'] >> 20} MiB, at most its own "
                  f"footprint {g['own_footprint_bytes'] >> 20} MiB")
        concurrent = sum(1 for g in graphs.values() for e in g["events"] if e.get("concurrent"))
        print(f"info: {concurrent} recorded call(s) overlapped another thread's (concurrent)")
    attributed = sum(a["bytes"] for a in pool["attribution"])
    check(abs(attributed - pool["high_bytes"]) <= granule,
          f"the attribution sums to {attributed >> 20} MiB, the high watermark is "
          f"{pool['high_bytes'] >> 20} MiB (model {pool['model_high_bytes'] >> 20} MiB)")
    for s in rep["scenarios"]:
        a = s["analysis"]
        bound = a["lower_bound_rounded_bytes"]
        limit = max(1.5 * bound, bound + 2 * granule)
        check(a["reserved_high_bytes"] <= limit,
              f"'{s['name']}' reserved_high {a['reserved_high_bytes'] >> 20} MiB (its own), "
              f"bound {bound >> 20} MiB")
    return finish(checks, out)


def finish(checks, out):
    ok = all(c["ok"] for c in checks)
    if out:
        with open(out, "w") as f:
            json.dump({"ok": ok, "checks": checks}, f, indent=1)
    print(("PASS" if ok else "FAIL") + f": {sum(c['ok'] for c in checks)} of {len(checks)} checks hold")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
