#!/usr/bin/env python3
"""The README's first command, tools/main.sh, run end to end on a machine without a GPU: it
builds (nothing to do in a built folder), says in one line that there is no usable GPU, prints
the committed H100 baseline as a table and checks the committed report against it, exit 0.
On a machine with a GPU the main job runs the suite instead, which this test does not cover:
it exits 77 (ctest's skip) and says so.

Usage: check_main_job.py SOURCE_DIR BUILD_DIR    exit 0 when all hold, 1 otherwise (naming each)."""
import json
import os
import subprocess
import sys

root, build = (os.path.abspath(a) for a in sys.argv[1:3])
gmemprof = os.path.join(build, "profiler", "gmemprof")

info = subprocess.run([gmemprof, "info"], capture_output=True, text=True)
if info.returncode == 0:
    print("SKIPPED: this machine has a usable GPU, where tools/main.sh runs the suite; "
          "this test covers the main job without one")
    sys.exit(77)

env = dict(os.environ, GMEM_BUILD_DIR=build)
# Run from another folder: the script finds the repository from its own path.
p = subprocess.run(["bash", os.path.join(root, "tools", "main.sh")], capture_output=True, text=True,
                   env=env, cwd=build)
out = p.stdout
lines = out.splitlines()
failures = []


def expect(what, ok):
    if not ok:
        failures.append(what)


expect(f"exit status 0, got {p.returncode}", p.returncode == 0)
notices = [l for l in lines if "no usable CUDA GPU" in l]
expect(f"one line saying there is no usable GPU, got {len(notices)}", len(notices) == 1)
expect("the notice is the first line", bool(lines) and "no usable CUDA GPU" in lines[0])

# The baseline's table: a header, then one row per scenario of the committed baseline, each
# with the scenario's name.
baseline = os.path.join(root, "reports", "baseline", "h100.json")
with open(baseline) as f:
    scenarios = [s["name"] for s in json.load(f)["scenarios"]]
header = [i for i, l in enumerate(lines) if l.split()[:3] == ["scenario", "requested", "bound"]]
expect("the baseline table's header (scenario, requested, bound, ...)", len(header) == 1)
if header:
    rows = lines[header[0] + 1: header[0] + 1 + len(scenarios)]
    for name, row in zip(scenarios, rows):
        expect(f"a table row for scenario {name!r}, got {row!r}", row.startswith(name))
    expect(f"{len(scenarios)} table rows, got {len(rows)}", len(rows) == len(scenarios))

# The check of the committed report against the baseline, and its passing verdict at the end.
expect("the check is announced", any("checking the committed report" in l for l in lines))
check = subprocess.run([gmemprof, "check", "reports/baseline/h100.json", "reports/latest/h100.json"],
                       capture_output=True, text=True, cwd=root)
expect(f"the check alone exits 0, got {check.returncode}", check.returncode == 0)
verdict = check.stdout.rstrip().splitlines()[-1:] or ["(none)"]
expect(f"the check's verdict {verdict[0]!r} ends the output", lines[-1:] == verdict and " 0 regressed" in verdict[0])

if failures:
    print("tools/main.sh without a GPU:")
    for f in failures:
        print("  FAIL " + f)
    print("--- its output ---\n" + out + "--- stderr ---\n" + p.stderr[-4000:])
    sys.exit(1)
print(f"tools/main.sh without a GPU: the notice, the baseline's {len(scenarios)} rows, the passing check, exit 0")
