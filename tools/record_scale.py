#!/usr/bin/env python3
"""What recording costs a serving warm-up at scale: tests/record/scale/warmup.py with 500, 1000 and
2000 graphs (or the sizes given), each size run unrecorded and under `gmemprof record`, in
alternating order, PAIRS times. Per run: the warm-up's own timings (captures and instantiations,
the replays, the whole warm-up), the process's wall time and its time outside the warm-up (a
recording writes its report at exit: what that took, part by part, as the library says it),
split on the wall clock into the launch (to the script's first line), the setup (to its first
capture) and the exit (from its last line to the process's end), the report's size, and `gmemprof show`'s time on it; per size the medians and the ratios recorded /
unrecorded, and what the recording library says each part of recording cost per graph. Writes one
JSON with the device, the driver, the commit and the date.

Usage: record_scale.py BUILD_DIR OUT_JSON [--sizes 500,1000,2000] [--pairs 1] [--settle 1] [--keep DIR]
                       [--layers L] [--parts] [--previous BUILD_DIR] [--variant NAME=MODE:VAR=VALUE,...]...
(--layers: each graph a decode step of L decoder layers, warmup.py's --layers, instead of its
two-matmul step; the recording's median nodes per graph is reported beside it;
--settle: unrecorded runs before each size's pairs, not counted; --keep: copy each size's last
recording into DIR as record-scale-N.json; --parts: also run the Python companion alone and the
recording library alone, to see where recording's cost lies; --previous: also recorded by an
earlier build, so that a change shows as a ratio in one run; --variant: a mode run again with more
environment, as an experiment's)."""
import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import report_forms

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "..", "tests", "record", "scale", "warmup.py")


def run(cmd, env=None, epochs=None):
    """The process's result and wall time; `epochs` (a dict), where given, receives the wall
    clock's time.time() when it was started and when it had ended."""
    t0 = time.perf_counter()
    if epochs is not None:
        epochs["spawned"] = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if epochs is not None:
        epochs["exited"] = time.time()
    return p, time.perf_counter() - t0


SECONDS = r"([0-9.]+) (s|ms|us)"


def end_parts(stderr):
    """What the recording library says its report took at the program's exit ("the report took
    1.48 s at the program's exit: the last readings 2.0 ms, analysis 730.4 ms on 2 threads, its
    text ..."), in seconds by part with the analysis's threads; None from a build that does not
    say it."""
    m = re.search(r"the report took " + SECONDS + r" at the program's exit: the last readings " + SECONDS +
                  r", analysis " + SECONDS + r" on (\d+) threads?, its text " + SECONDS + r", read back " + SECONDS +
                  r", written " + SECONDS + r", this summary " + SECONDS, stderr)
    if not m:
        return None
    g = m.groups()
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
    s = lambda k: float(g[k]) * scale[g[k + 1]]
    return {"total": s(0), "last_readings": s(2), "analysis": s(4), "threads": int(g[6]), "text": s(7),
            "read_back": s(9), "write": s(11), "summary": s(13)}


def build_commit(build_dir):
    """A tools/device-build.sh build's commit (its COMMIT file), or "unknown"."""
    path = os.path.join(build_dir, "COMMIT")
    return open(path).read().strip() if os.path.exists(path) else "unknown"


def run_header(what, build_dir):
    """What a run's JSON opens with: what it measured, the command (its build folder left out), the
    date, the build's commit, and the GPU with its driver (also for tools/cupti_floor.py)."""
    return {"what": what,
            "command": " ".join(["tools/" + os.path.basename(sys.argv[0])] + sys.argv[2:]),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": build_commit(build_dir),
            "device": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                     capture_output=True, text=True).stdout.strip()}


def one(gmemprof, n, mode, tmp, variants=None, previous=None, layers=0):
    """mode: "unrecorded", "recorded", or a part of recording alone: "companion" (the Python
    companion without the recording library) or "library" (the library without the companion);
    or a variant's name (VARIANTS: name -> (one of those modes, extra environment)); or
    "previous": recorded by the PREVIOUS build's gmemprof."""
    extra = {}
    if mode == "previous":
        tag, mode, gmemprof = "previous", "recorded", previous
    elif variants and mode in variants:
        tag = mode
        mode, extra = variants[mode]
    else:
        tag = mode
    recorded = mode in ("recorded", "library")
    self_json = os.path.join(tmp, f"self-{n}-{tag}.json")
    report = os.path.join(tmp, f"record-{n}.json" if tag == "recorded" else f"record-{n}-{tag}.json")
    cmd = [sys.executable, PROGRAM, str(n), self_json] + (["--layers", str(layers)] if layers else [])
    env = dict(os.environ)
    env.update(extra)
    if recorded:
        cmd = [gmemprof, "record", "--out", report, "--"] + cmd
    if mode == "library":
        env["GMEM_RECORD_COMPANION"] = "0"
    if mode == "companion":
        companion = os.path.join(os.path.dirname(gmemprof), "..", "record", "companion")
        env["PYTHONPATH"] = companion + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    epochs = {}
    p, wall = run(cmd, env, epochs)
    if p.returncode != 0:
        return {"error": f"exit {p.returncode}: {p.stderr[-2000:]}"}
    doc = json.load(open(self_json))
    doc["process_s"] = wall
    # The companion's own clock where GMEM_RECORD_COMPANION_DEBUG=1 has it say it ("gmem companion:
    # said {...} in 24.3 ms"): its time in its wrappers, the words it said included.
    said = re.search(r"gmem companion: said .* in ([0-9.]+) ms", p.stderr)
    if said:
        doc["companion_ms"] = float(said.group(1))
    # Python's start, PyTorch's import and the process's end (a recording's report among them).
    doc["outside_warmup_s"] = wall - doc["warmup_s"]
    if "ended_epoch" in doc:  # where it lies: before the script's first line (the interpreter,
        # site packages, the companion), from there to the first capture (PyTorch's import,
        # CUDA's start, the weights), and after its last line (the process's end)
        doc["outside_launch_s"] = doc["started_epoch"] - epochs["spawned"]
        doc["outside_setup_s"] = doc["warmup_started_epoch"] - doc["started_epoch"]
        doc["outside_exit_s"] = epochs["exited"] - doc["ended_epoch"]
    if recorded:
        end = end_parts(p.stderr)
        if end:
            doc["end_s"] = end
        doc["report_bytes"] = os.path.getsize(report)
        # What the recording library says recording cost the program, by part (its own clock).
        recording = report_forms.load(report).get("recorded", {})
        doc["record_cost"] = {c["part"]: {"calls": c["calls"], "us": c["us"]} for c in recording.get("record_cost", [])}
        nodes = sorted(g.get("nodes", 0) for g in recording.get("graphs", []))
        doc["nodes_per_graph_median"] = nodes[len(nodes) // 2] if nodes else None
    if tag == "recorded":
        show, show_s = run([gmemprof, "show", report])
        doc["show_s"] = show_s
        doc["show_lines"] = show.stdout.count("\n")
        doc["show_exit"] = show.returncode
    return doc


# A run is on an undisturbed CPU when its slower probe (warmup.py's "cpu_probe_ms", before the
# first capture and after the replays) is within this factor of the fastest probe of the size's runs.
FAST_PROBE_FACTOR = 1.25


def probe_ms(run):
    """A run's slower CPU probe in milliseconds (None from a warmup.py that has none)."""
    probes = run.get("cpu_probe_ms")
    return max(probes) if probes else None


def compare(runs, key, modes):
    """One figure of a size's runs, recorded against unrecorded (None where either has none):
    - the medians and their ratio, and the fastest run's of each mode and theirs (on a shared
      host a run is only ever slowed by others, so the fastest of each mode is the least disturbed);
    - "pair_ratios": each pair's recorded / unrecorded (the two ran one after the other) and
      their median;
    - "fast": the same medians over the runs whose CPU probe says their CPU was undisturbed
      (FAST_PROBE_FACTOR), with how many runs of each mode that kept;
    and for each further mode (a variant, the previous build, a part alone) its median and ratios."""
    u = [r[key] for r in runs["unrecorded"] if key in r]
    r = [x[key] for x in runs["recorded"] if key in x]
    if not u or not r:
        return None
    out = {"unrecorded": statistics.median(u), "recorded": statistics.median(r),
           "ratio": statistics.median(r) / statistics.median(u),
           "unrecorded_min": min(u), "recorded_min": min(r), "ratio_of_minima": min(r) / min(u)}
    pairs = [b[key] / a[key] for a, b in zip(runs["unrecorded"], runs["recorded"]) if key in a and key in b and a[key] > 0]
    if pairs:
        out["pair_ratios"] = pairs
        out["pair_ratio_median"] = statistics.median(pairs)
    probes = [probe_ms(x) for m in modes for x in runs[m] if probe_ms(x) is not None]
    if probes:
        limit = min(probes) * FAST_PROBE_FACTOR
        kept = {m: [x[key] for x in runs[m] if key in x and probe_ms(x) is not None and probe_ms(x) <= limit]
                for m in modes}
        fast = {"probe_limit_ms": limit, "runs": {m: len(v) for m, v in kept.items()}}
        if kept["unrecorded"] and kept["recorded"]:
            fast.update({"unrecorded": statistics.median(kept["unrecorded"]),
                         "recorded": statistics.median(kept["recorded"]),
                         "ratio": statistics.median(kept["recorded"]) / statistics.median(kept["unrecorded"])})
        out["fast"] = fast
    for mode in modes[2:]:
        v = [x[key] for x in runs[mode] if key in x]
        if v:
            out[mode] = statistics.median(v)
            out[mode + "_ratio"] = statistics.median(v) / statistics.median(u)
            out[mode + "_ratio_of_minima"] = min(v) / min(u)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("out_json")
    ap.add_argument("--sizes", default="500,1000,2000")
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--keep")
    ap.add_argument("--layers", type=int, default=0,
                    help="each graph a decode step of L decoder layers (warmup.py --layers) instead of two matmuls")
    ap.add_argument("--settle", type=int, default=1,
                    help="unrecorded runs before each size's pairs, not counted: the first runs after a "
                         "pause were slower on H100 hosts (0.29 s against 0.10 to 0.16 s for 500 captures)")
    ap.add_argument("--parts", action="store_true",
                    help="also run the companion alone and the library alone (where recording's cost lies)")
    ap.add_argument("--previous", help="a previous build's folder: its recording, run beside this build's")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=MODE:VAR=VALUE,...: also run MODE (unrecorded, recorded, library or companion) "
                         "with that environment (an experiment: benchmarks' record_ablate or interpose_floor "
                         "shim through LD_PRELOAD, cupti_floor through CUDA_INJECTION64_PATH)")
    a = ap.parse_args()
    variants = {}
    for v in a.variant:
        name, _, rest = v.partition("=")
        mode, _, assignments = rest.partition(":")
        if not name or mode not in ("unrecorded", "recorded", "library", "companion"):
            sys.exit(f"record_scale: --variant '{v}' is not NAME=MODE:VAR=VALUE,... with MODE unrecorded, recorded, "
                     "library or companion")
        variants[name] = (mode, dict(x.split("=", 1) for x in assignments.split(",") if "=" in x))
    gmemprof = os.path.join(a.build_dir, "profiler", "gmemprof")
    tmp = tempfile.mkdtemp()
    sizes = [int(s) for s in a.sizes.split(",")]
    out = run_header("gmemprof record's cost on a serving warm-up at scale (tests/record/scale/warmup.py)",
                     a.build_dir)
    out["previous_commit"] = build_commit(a.previous) if a.previous else None
    out["layers"] = a.layers
    out["sizes"] = {}
    for n in sizes:
        modes = ["unrecorded", "recorded"] + (["companion", "library"] if a.parts else []) + (["previous"] if a.previous else []) + list(variants)
        runs = {m: [] for m in modes}
        settling = [one(gmemprof, n, "unrecorded", tmp, layers=a.layers) for _ in range(a.settle)]
        for k in range(a.pairs):
            for mode in modes if k % 2 == 0 else modes[::-1]:
                runs[mode].append(one(gmemprof, n, mode, tmp, variants,
                                      a.previous and os.path.join(a.previous, "profiler", "gmemprof"), a.layers))
        if a.keep and os.path.exists(os.path.join(tmp, f"record-{n}.json")):
            os.makedirs(a.keep, exist_ok=True)
            shutil.copy(os.path.join(tmp, f"record-{n}.json"), os.path.join(a.keep, f"record-scale-{n}.json"))
        summary = {"runs": runs, "settling_runs": settling}
        for key in ("capture_s", "capture_us_median", "capture_cpu_s", "capture_process_cpu_s", "replay_s", "warmup_s",
                    "process_s", "outside_warmup_s", "outside_launch_s", "outside_setup_s", "outside_exit_s"):
            compared = compare(runs, key, modes)
            if compared:
                summary[key] = compared
        # The time the hypervisor held the machine's CPUs while each run captured, run by run.
        summary["steal_ms"] = {m: [x.get("steal_ms") for x in runs[m]] for m in modes}
        # CPU contention of the program's main thread while it captured, by mode: the median time it
        # waited for a CPU, and how often the readings' helper was on its CPU.
        summary["main_thread"] = {}
        for mode in modes:
            m = [x["main_thread"] for x in runs[mode] if "main_thread" in x]
            if m:
                summary["main_thread"][mode] = {
                    "runqueue_wait_ms_median": statistics.median(x["runqueue_wait_ms"] for x in m),
                    "involuntary_switches_median": statistics.median(x["involuntary_switches"] for x in m),
                    "shared_cpu_samples": sum(x["shared_cpu_samples"] for x in m),
                    "samples": sum(x["samples"] for x in m)}
        for key in ("report_bytes", "show_s", "nodes_per_graph_median"):
            v = [r[key] for r in runs["recorded"] if key in r]
            if v:
                summary[key] = statistics.median(v)
        # The report at the program's exit, by part: the median over recorded runs (and the
        # previous build's, where it says it).
        for mode in ("recorded", "previous"):
            ends = [r["end_s"] for r in runs.get(mode, []) if "end_s" in r]
            if ends:
                summary.setdefault("end_s", {})[mode] = {k: statistics.median(e[k] for e in ends) for k in ends[0]}
        # Per graph captured, the median over recorded runs of each part's time (microseconds).
        costs = [r["record_cost"] for r in runs["recorded"] if "record_cost" in r]
        if costs:
            parts = sorted({p for c in costs for p in c})
            summary["record_cost_us_per_graph"] = {
                p: statistics.median(c.get(p, {"us": 0})["us"] / n for c in costs) for p in parts}
        out["sizes"][str(n)] = summary
        print(json.dumps({"graphs": n, **{k: v for k, v in summary.items() if k != "runs"}}), flush=True)
    with open(a.out_json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
