#!/usr/bin/env python3
"""A report as a compact table: scenario, requested, bound, reserved, first launch, steady.
Usage: tools/baseline_table.py REPORT. Memory in MiB (reserved: the trials' values when they
differ); times: wall medians in microseconds (the median of the trials' medians)."""
import json, sys

with open(sys.argv[1]) as f:
    rep = json.load(f)
env = rep["environment"]
print(f"{sys.argv[1]}: {env['device_name']}, driver {env.get('driver_release') or env['driver_version']}, "
      f"commit {env['git_commit']}, {env['date']}")
rows = [("scenario", "requested", "bound", "reserved", "first launch", "steady")]
mib = lambda b: f"{b / 2**20:.0f} MiB"
for s in rep["scenarios"]:
    params = ",".join(f"{k}={json.dumps(v)}" for k, v in s["parameters"].items())
    name = f"{s['name']}[{params}]" if params else s["name"]
    if s["status"] != "ok":
        rows.append((name, s["status"], "", "", "", ""))
        continue
    a = s["analysis"]
    seen = sorted({t["reserved_high_bytes"] for t in s.get("trials", [])} or {a["reserved_high_bytes"]})
    reserved = "/".join(f"{b / 2**20:.0f}" for b in seen) + " MiB"
    costs = {c["phase"]: c["wall"]["median_us"] for c in s["launch_costs"]}
    first = next((costs[p] for p in costs if p.startswith("first_launch") or p == "cold_iteration"), None)
    steady = next((costs[p] for p in costs if p in ("steady_launch", "steady_iteration")), None)
    us = lambda v: "-" if v is None else f"{v:.1f} us"
    rows.append((name, mib(a["requested_bytes"]), mib(a["lower_bound_rounded_bytes"]), reserved,
                 us(first), us(steady)))
w = [max(len(r[i]) for r in rows) for i in range(6)]
for r in rows:
    print("  ".join(r[i].ljust(w[i]) if i == 0 else r[i].rjust(w[i]) for i in range(6)))
