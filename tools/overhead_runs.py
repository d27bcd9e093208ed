#!/usr/bin/env python3
"""gmem_bench's overhead/build_instantiate in several processes, alternating between builds.

Each process reports the median over 5 repetitions of the median per-iteration ratio of gmem's
build and instantiate over the raw calls. One process's ratio moves with the host's
speed in that process (0.72 to 1.66 ms for the raw calls were seen in one session on H100s), so
this runs N processes of each build, interleaved, and writes every run and the medians.

Usage: tools/overhead_runs.py OUT.json N LABEL=GMEM_BENCH [LABEL=GMEM_BENCH ...]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

FILTER = "overhead/build_instantiate"
COUNTERS = ("ratio", "build_ratio", "instantiate_ratio", "ledger_only_build_ratio", "gmem_us",
            "raw_us", "driver_ratio", "driver_build_ratio")


def one_run(binary):
    """Runs one process; returns (its median row's counters, the benchmark context)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        subprocess.run([binary, "--benchmark_filter=" + FILTER, "--benchmark_out=" + path,
                        "--benchmark_out_format=json"], check=True, stdout=subprocess.DEVNULL)
        with open(path) as f:
            data = json.load(f)
    finally:
        os.unlink(path)
    rows = [b for b in data["benchmarks"] if b.get("aggregate_name") == "median"]
    if len(rows) != 1:
        raise SystemExit(f"overhead_runs: {binary} wrote {len(rows)} median rows for {FILTER}")
    return {k: rows[0][k] for k in COUNTERS if k in rows[0]}, data["context"]


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    out, n = sys.argv[1], int(sys.argv[2])
    builds = [arg.split("=", 1) for arg in sys.argv[3:]]
    runs, contexts = [], {}
    for i in range(n):
        for label, binary in builds:
            counters, context = one_run(binary)
            contexts.setdefault(label, context)
            runs.append({"build": label, "process": i + 1, **counters})
            driver = (f" driver_ratio {counters['driver_ratio']:.4f}"
                      if "driver_ratio" in counters else "")
            print(f"{label} {i + 1}: ratio {counters['ratio']:.4f} build_ratio "
                  f"{counters['build_ratio']:.4f} raw_us {counters['raw_us']:.0f}{driver}",
                  flush=True)
    summary = {}
    for label, _ in builds:
        mine = [r for r in runs if r["build"] == label]
        ratios = [r["ratio"] for r in mine]
        summary[label] = {"processes": len(ratios), "median_ratio": statistics.median(ratios),
                          "min_ratio": min(ratios), "max_ratio": max(ratios),
                          "median_build_ratio": statistics.median(r["build_ratio"] for r in mine),
                          "processes_at_most_1.02": sum(r <= 1.02 for r in ratios)}
        if all("driver_ratio" in r for r in mine):  # builds before the driver's calls lack it
            summary[label]["median_driver_ratio"] = statistics.median(r["driver_ratio"] for r in mine)
            summary[label]["median_driver_build_ratio"] = statistics.median(
                r["driver_build_ratio"] for r in mine)
    result = {"metadata": {"what": f"{FILTER}/nodes:1000 of gmem_bench, {n} processes of each "
                                   "build, interleaved, on one host (each process: the median of 5 "
                                   "repetitions of 51 paired iterations)",
                           "command": " ".join(["tools/overhead_runs.py", "OUT", str(n)] +
                                               [f"{l}={os.path.basename(b)}" for l, b in builds]),
                           "contexts": contexts},
              "summary": summary, "runs": runs}
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, out)  # a failed run never leaves half a file
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
