#!/usr/bin/env python3
"""Graphs whose memory lives in PyTorch's native allocator's private pools.
Compares what the script read from PyTorch's own memory snapshot around each capture (SELF_JSON of
tests/record/torch_serving.py --allocator native) with what `gmemprof record` wrote (REPORT):
every graph's capture_pool_growth_bytes equals the growth of its pool across its capture
(segments of the snapshot with its segment_pool_id), and the graphs' growth sums to the pools'
total at the end. Usage: check_native.py SELF_JSON REPORT [--json OUT]   exit 0 when all hold."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import report_forms  # noqa: E402


def main():
    self_doc = json.load(open(sys.argv[1]))
    rep = report_forms.load(sys.argv[2])
    out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    graphs = {g["name"]: g for g in rep.get("recorded", {}).get("graphs", [])}
    checks = []

    def check(ok, what):
        checks.append({"ok": bool(ok), "detail": what})
        print(("PASS " if ok else "FAIL ") + what)

    total = 0
    for g in self_doc["graphs"]:
        r = graphs.get(g["name"])
        want = g["pool_bytes_after"] - g["pool_bytes_before"]
        got = r.get("capture_pool_growth_bytes") if r else None
        check(r is not None and r.get("kind") == "private_pool" and got == want,
              f"'{g['name']}' (pool {g['pool_id']}): PyTorch's snapshot grew by {want >> 20} MiB "
              f"({want} B), recorded {None if got is None else got >> 20} MiB "
              f"(kind {r.get('kind') if r else None})")
        total += got or 0
    check(total == self_doc["total"],
          f"the graphs' growth sums to {total >> 20} MiB, the pools hold {self_doc['total'] >> 20} MiB "
          f"in PyTorch's snapshot at the end")
    ok = all(c["ok"] for c in checks)
    if out:
        with open(out, "w") as f:
            json.dump({"ok": ok, "checks": checks}, f, indent=1)
    print(("PASS" if ok else "FAIL") + f": {sum(c['ok'] for c in checks)} of {len(checks)} checks hold")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
