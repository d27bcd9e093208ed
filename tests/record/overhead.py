#!/usr/bin/env python3
"""Record mode's overhead, paired runs: (1) a loop of N launches of a captured graph with
memory nodes (record_client bench N), its loop wall time with and without `gmemprof record`;
(2) the PyTorch capture-and-replay script's whole wall time with and without it. Alternates the
order in each pair. Writes a JSON with medians, spreads, ratios and the run's metadata.
Usage: overhead.py BIN_DIR OUT_JSON [PAIRS] [TORCH_PAIRS]"""
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

bin_dir, out = sys.argv[1], sys.argv[2]
pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 11
torch_pairs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
here = os.path.dirname(os.path.abspath(__file__))
gmemprof = os.path.join(bin_dir, "gmemprof")
client = os.path.join(bin_dir, "gmem_record_client")
tmp = tempfile.mkdtemp()


def recorded(cmd):
    return [gmemprof, "record", "--out", os.path.join(tmp, "r.json"), "--"] + cmd


def loop_us(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    line = [l for l in r.stdout.splitlines() if l.startswith("{")][-1]
    return json.loads(line)["loop_us"]


def wall_s(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - t0


def summary(plain, rec):
    ratios = [r / p for p, r in zip(plain, rec)]
    return {"pairs": len(ratios), "plain_median": statistics.median(plain),
            "recorded_median": statistics.median(rec), "ratio_median": statistics.median(ratios),
            "ratio_min": min(ratios), "ratio_max": max(ratios),
            "overhead_percent_median": 100 * (statistics.median(ratios) - 1),
            "plain": plain, "recorded": rec}


bench = [client, "bench", "1000"]
plain, rec = [], []
loop_us(bench)  # warm the driver and the files
for i in range(pairs):
    if i % 2:
        rec.append(loop_us(recorded(bench))); plain.append(loop_us(bench))
    else:
        plain.append(loop_us(bench)); rec.append(loop_us(recorded(bench)))
loop = summary(plain, rec)

script = [sys.executable, os.path.join(here, "torch_async.py"), os.path.join(tmp, "self.json")]
plain, rec = [], []
for i in range(torch_pairs):
    if i % 2:
        rec.append(wall_s(recorded(script))); plain.append(wall_s(script))
    else:
        plain.append(wall_s(script)); rec.append(wall_s(recorded(script)))
torch_wall = summary(plain, rec)

smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip().splitlines()
commit = open(os.path.join(bin_dir, "COMMIT")).read().strip()
doc = {"what": "gmemprof record overhead (paired runs, order alternated)",
       "device": smi[0] if smi else "unknown", "commit": commit,
       "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "command": "tests/record/overhead.py BIN " + " ".join(sys.argv[3:]),
       "launch_loop": {"units": "microseconds of a loop of 1000 launches + one synchronize",
                       "target_percent": 2, **loop},
       "torch_script": {"units": "seconds of wall time of tests/record/torch_async.py",
                        "target_percent": 5, **torch_wall}}
with open(out, "w") as f:
    json.dump(doc, f, indent=2)
print(f"launch loop: {loop['overhead_percent_median']:+.2f}% (ratios {loop['ratio_min']:.3f}-"
      f"{loop['ratio_max']:.3f}); torch script: {torch_wall['overhead_percent_median']:+.2f}% "
      f"(ratios {torch_wall['ratio_min']:.3f}-{torch_wall['ratio_max']:.3f})")
