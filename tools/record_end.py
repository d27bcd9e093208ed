#!/usr/bin/env python3
"""The recording's end at scale, one build against another on one host.

Runs, in turn for the previous build and this one:
  - `gmemprof record` of 16,000 rounds of two graphs made, launched, destroyed and trimmed
    (tests/record/corpus_client.cu `rounds`, this build's client for both), --pairs times each:
    the end's line ("the report took ... at the program's exit: ...") and the report's size;
  - gmem_record_cost_bench (the session with a stand-in driver, no GPU) at 2000 graphs of a
    model's size (--layers 4) and at 16,000 made rounds, --bench times each: its JSON line.
Writes one JSON report (tools/record_scale.py's header: what, command, date, commit, device) with the
previous build's commit and each end's line and parts.

Usage: tools/record_end.py BUILD PREVIOUS_BUILD OUT.json [--pairs N] [--bench N] [--rounds N]
BUILD and PREVIOUS_BUILD: tools/device-slim.sh layouts (profiler/gmemprof,
record/libgmem_record.so, benchmarks/gmem_record_cost_bench, COMMIT); BUILD also
tests/gmem_corpus_client.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from record_scale import build_commit, end_parts, run_header

END = re.compile(r"the report took [^\n]*at the program's exit[^\n]*")


def record_rounds(build, client, rounds, out_dir, tag):
    report = os.path.join(out_dir, f"rounds-{tag}.json")
    run = subprocess.run([os.path.join(build, "profiler", "gmemprof"), "record", "--out", report, "--",
                          client, "rounds", os.path.join(out_dir, f"self-{tag}.json"), str(rounds)],
                         capture_output=True, text=True)
    said = run.stdout + run.stderr
    m = END.search(said)
    if run.returncode != 0 or not m:
        sys.exit(f"record_end: gmemprof record of {build} exited {run.returncode} without its end's line:\n{said[-2000:]}")
    return {"commit": build_commit(build), "end_line": m.group(0), "end_s": end_parts(said),
            "report_bytes": os.path.getsize(report)}


def bench(build, args):
    exe = os.path.join(build, "benchmarks", "gmem_record_cost_bench")
    run = subprocess.run([exe] + args, capture_output=True, text=True)
    lines = [l for l in run.stdout.splitlines() if l.startswith("{")]
    if run.returncode != 0 or not lines:
        sys.exit(f"record_end: {exe} {' '.join(args)} exited {run.returncode}:\n{(run.stdout + run.stderr)[-2000:]}")
    out = json.loads(lines[-1])
    out["commit"] = build_commit(build)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build")
    p.add_argument("previous")
    p.add_argument("out")
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--bench", type=int, default=3)
    p.add_argument("--rounds", type=int, default=16000)
    a = p.parse_args()
    client = os.path.join(a.build, "tests", "gmem_corpus_client")
    result = run_header(
        "The recording's end, one build against the previous on one host, in turn: "
        f"{a.rounds} rounds of two graphs made, launched, destroyed and trimmed recorded by each "
        "gmemprof (the end's line, the report's size), and gmem_record_cost_bench (a stand-in "
        "driver) at 2000 graphs of a model's size and at 16,000 made rounds", a.build)
    result.update({
        "previous_commit": build_commit(a.previous),
        "host_cpus": len(os.sched_getaffinity(0)),
        "rounds_recorded": [],
        "bench_layers4_2000": [],
        "bench_made_16000": [],
    })
    with tempfile.TemporaryDirectory() as d:
        if os.path.exists(client):
            for i in range(a.pairs):
                for b in (a.previous, a.build):
                    r = record_rounds(b, client, a.rounds, d, f"{i}-{len(result['rounds_recorded'])}")
                    r["order"] = len(result["rounds_recorded"]) + 1
                    result["rounds_recorded"].append(r)
        for i in range(a.bench):
            for b in (a.previous, a.build):
                result["bench_layers4_2000"].append(bench(b, ["2000", "3", "--layers", "4"]))
                result["bench_made_16000"].append(bench(b, ["--made", "16000"]))
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    os.replace(tmp, a.out)
    for key in ("bench_layers4_2000", "bench_made_16000"):
        for r in result[key]:
            print(key, r["commit"][:7], "exit", r["exit_s"], "parts", r["exit_parts_s"])
    for r in result["rounds_recorded"]:
        print("rounds", r["commit"][:7], r["end_line"], r["report_bytes"])


if __name__ == "__main__":
    main()
