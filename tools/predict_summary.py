#!/usr/bin/env python3
"""The prediction of committed warm-up runs (tests/predict/compare_warmup.py's files: NAME-sample,
NAME-measured, one per rank) made again with this gmemprof, against the bills the runs measured,
and linear extrapolation beside it: one table per run and rank. Exit 1 when a kind of a native
run is off by more than 5% or 64 MiB.

Usage: predict_summary.py DIR --gmemprof PATH"""
import argparse
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))
import gmem.predict  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--gmemprof", required=True)
a = ap.parse_args()
status = 0
for sample_path in sorted(glob.glob(os.path.join(a.dir, "*-sample*.json"))):
    measured_path = sample_path.replace("-sample", "-measured")
    name = re.sub(r"-sample", "", os.path.basename(sample_path))[:-len(".json")]
    sample = json.load(open(sample_path))
    full = json.load(open(measured_path))
    prediction = gmem.predict.predict(sample_path, gmemprof=a.gmemprof)
    rows = gmem.predict.compare(prediction, gmem.predict.measured(full["before"], full["after"]))
    judged = sample["allocator"] == "native"
    off = [r["kind"] for r in rows if r["within"] is False]
    print("%s: %s, %d sizes, %d graphs, sampled %s%s" % (
        name, sample["allocator"], len(full["sizes"]), full["graphs"], [s["size"] for s in sample["sizes"]],
        "" if judged else " (not judged: the state of graphs with memory nodes is not read by copies)"))
    print(gmem.predict.table(rows))
    print("  allocator model on the sample: %s" % ("exact" if all(
        c["simulated_bytes"] == c["measured_bytes"] for c in prediction["model_checks"]) else "OFF"))
    for n in prediction["notes"]:
        print("  note:", n)
    if judged and off:
        status = 1
sys.exit(status)
