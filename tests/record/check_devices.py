#!/usr/bin/env python3
"""On two GPUs: a graph that allocates on both devices, recorded. Its growth on each
device (the recorded first launch's events, one per device) must equal what the program read on
that device itself, and each device's pool must have that device's high watermark.
Usage: check_devices.py SELF_JSON REPORT   exit 0 when all hold."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import report_forms  # noqa: E402

self_doc = json.load(open(sys.argv[1]))
rep = report_forms.load(sys.argv[2])
rec = rep["recorded"]
# The program makes one graph with memory nodes (explicit nodes: no NVTX range names it).
g = rec["graphs"][0] if len(rec["graphs"]) == 1 else next(x for x in rec["graphs"] if x["name"] == self_doc["graph"])
pools = {p["device"]: p for p in rec["pools"]}
fails = 0
for d in self_doc["devices"]:
    dev = d["device"]
    first = [e for e in g["events"] if e["kind"] == "launch" and e.get("class") == "first_launch" and e["device"] == dev]
    want = d["reserved_after"] - d["reserved_before"]
    got = first[0].get("growth_bytes", 0) if first else None
    ok = got == want
    print(("PASS" if ok else "FAIL") + f" device {dev}: first launch grew the pool by {want >> 20} MiB read by the "
          f"program, recorded {None if got is None else got >> 20} MiB")
    fails += not ok
    p = pools.get(dev)
    ok = p is not None and p["high_bytes"] == d["final_reserved_high"]
    print(("PASS" if ok else "FAIL") + f" device {dev}: pool high {p['high_bytes'] >> 20 if p else None} MiB recorded, "
          f"{d['final_reserved_high'] >> 20} MiB read")
    fails += not ok
print("devices of the graph:", g["devices"], "; growth in all", g["growth_bytes"] >> 20, "MiB")
sys.exit(1 if fails else 0)
