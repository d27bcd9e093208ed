#!/usr/bin/env python3
"""How often `gmemprof check` calls a row of two recordings of one unchanged program a regression
(or an improvement): each program recorded RUNS times by one build, then every pair of its
recordings checked, by that build's gmemprof and, with --previous, by an earlier build's, on the
same recordings. Programs: the C++ serving warm-up (six graphs, each its own site), the PyTorch
serving warm-up (nine), tests/record/scale/warmup.py with 2000 graphs of one site, and with 500
graphs of four decoder layers. Every verdict of a pair is a false one: nothing changed. And each
pair again with the second recording's instantiations made 2x and 4x as slow (its events and
launch costs, in the expanded JSON): a regression the check must catch, on the noise of real runs
(caught: the pair's check names a host.instantiate regression).
Writes one JSON: the device, the commits, and per program and pair the verdict counts.

Usage: check_noise.py BUILD_DIR OUT_JSON [--previous BUILD_DIR] [--runs N] [--cpp-runs N] [--keep DIR]
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile

import record_scale
import report_forms

HERE = os.path.dirname(os.path.abspath(__file__))
RECORD = os.path.join(HERE, "..", "tests", "record")


def programs(build):
    client = os.path.join(build, "tests", "gmem_record_client")
    warmup = os.path.join(RECORD, "scale", "warmup.py")
    return {
        "cpp_serving": lambda self_json: [client, "serving", self_json, "largest"],
        "torch_serving": lambda self_json: [sys.executable, os.path.join(RECORD, "torch_serving.py"), self_json],
        "warmup_2000": lambda self_json: [sys.executable, warmup, "2000", self_json],
        "warmup_500_layers4": lambda self_json: [sys.executable, warmup, "500", self_json, "--layers", "4"],
    }


def slower_instantiations(report, out, factor):
    """`report` with every graph's instantiation `factor` times as slow (its events and its launch
    cost), written expanded to `out`: a real regression on real noise, which the check must catch."""
    doc = report_forms.load(report)
    for scenario in doc["scenarios"]:
        scenario["phases_from_events"] = False  # the launch costs below are written, not derived again
        for cost in scenario.get("launch_costs", []):
            if cost.get("phase") == "instantiate":
                for key in ("median_us", "min_us", "max_us"):
                    if key in cost.get("host", {}):
                        cost["host"][key] *= factor
    for graph in doc.get("recorded", {}).get("graphs", []):
        for event in graph.get("events", []):
            if event.get("kind") == "instantiate" and "host_us" in event:
                event["host_us"] *= factor
    with open(out, "w") as f:
        json.dump(doc, f)


def check(gmemprof, a, b):
    p = subprocess.run([gmemprof, "check", a, b, "--format", "json"], capture_output=True, text=True)
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"exit": p.returncode, "error": p.stderr[-500:]}
    return {"exit": p.returncode, "counts": doc.get("counts", {}),
            "regressions": [r["scenario"] + " " + r["metric"] for r in doc.get("rows", [])
                            if r["verdict"] == "regression"][:5]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("out_json")
    ap.add_argument("--previous", help="an earlier build's folder: its gmemprof checks the same pairs")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cpp-runs", type=int, default=10, help="runs of the C++ warm-up (about 1 s each)")
    ap.add_argument("--keep", help="a folder to keep the recordings in")
    args = ap.parse_args()
    gmemprof = os.path.join(args.build_dir, "profiler", "gmemprof")
    previous = os.path.join(args.previous, "profiler", "gmemprof") if args.previous else None
    tmp = args.keep or tempfile.mkdtemp(prefix="gmem-check-noise-")
    os.makedirs(tmp, exist_ok=True)
    out = record_scale.run_header("gmemprof check of every pair of recordings of one unchanged program "
                                  "(tools/check_noise.py): every regression or improvement is a false one",
                                  args.build_dir)
    if previous:
        out["previous_commit"] = record_scale.build_commit(args.previous)
    out["programs"] = {}
    for name, command in programs(args.build_dir).items():
        runs = args.cpp_runs if name == "cpp_serving" else args.runs
        reports = []
        for k in range(1, runs + 1):
            report = os.path.join(tmp, f"{name}-{k}.json")
            p = subprocess.run([gmemprof, "record", "--out", report, "--"] + command(os.path.join(tmp, f"{name}-{k}-self.json")),
                               capture_output=True, text=True)
            if p.returncode != 0 or not os.path.exists(report):
                out["programs"].setdefault(name, {})["error"] = f"run {k}: exit {p.returncode}: {p.stderr[-1000:]}"
                break
            reports.append(report)
        pairs = []
        for a, b in itertools.combinations(range(len(reports)), 2):
            pair = {"pair": [a + 1, b + 1], "current": check(gmemprof, reports[a], reports[b])}
            if previous:
                pair["previous"] = check(previous, reports[a], reports[b])
            pairs.append(pair)
        # Injected: each pair's current recording with every instantiation 2x and 4x as slow (a
        # lone graph's single call is judged with a 3x tolerance; a site's graphs together, 1.5x).
        summary = {"recordings": len(reports), "pairs": pairs}
        for factor in (2, 4):
            injected = []
            for a, b in itertools.combinations(range(len(reports)), 2):
                slow = os.path.join(tmp, f"{name}-{b + 1}-instantiate-x{factor}.json")
                if not os.path.exists(slow):
                    slower_instantiations(reports[b], slow, factor)
                pair = {"pair": [a + 1, b + 1], "current": check(gmemprof, reports[a], slow)}
                if previous:
                    pair["previous"] = check(previous, reports[a], slow)
                injected.append(pair)
            summary[f"instantiations_x{factor}"] = injected
        for side in ("current", "previous"):
            judged = [p[side] for p in pairs if side in p]
            if judged:
                summary[side + "_failed_pairs"] = sum(1 for j in judged if j["exit"] != 0)
                summary[side + "_regressions"] = sum(j.get("counts", {}).get("regression", 0) for j in judged)
                summary[side + "_improvements"] = sum(j.get("counts", {}).get("improvement", 0) for j in judged)
                summary[side + "_unstable"] = sum(j.get("counts", {}).get("unstable", 0) for j in judged)
            for factor in (2, 4):
                caught = [p[side] for p in summary[f"instantiations_x{factor}"] if side in p]
                if caught:
                    summary[f"{side}_instantiations_x{factor}_caught"] = sum(
                        1 for j in caught if any(r.endswith(" host.instantiate") for r in j.get("regressions", [])))
        out["programs"].setdefault(name, {}).update(summary)
        print(name, {k: v for k, v in summary.items() if not isinstance(v, list)}, flush=True)
    with open(args.out_json, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
