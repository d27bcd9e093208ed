#!/usr/bin/env python3
"""Record mode on programs nobody here wrote, on the GPU machine: NVIDIA's
cuda-samples graph programs (built elsewhere: pass the folder of their binaries; nothing of
them is in this repository), PyTorch programs (tests/record/corpus/*.py), plain CUDA C++
programs (tests/record/corpus_client.cu), one linked to libcuda that calls the driver API
directly (tests/record/driver_client.cpp), and CuPy and JAX programs (tests/record/clients/, each
skipped where its framework is missing; with the PyTorch ones). Each program runs unrecorded and
under `gmemprof record` (through its default hook, or GMEM_RECORD_HOOK's); for each:
  - the exit status and stdout recorded equal the unrecorded ones (lines a program prints with
    timings are compared with their numbers masked);
  - the report reads back with `gmemprof show`, `check` (against itself), `html` and `trace`;
  - every figure its check compares (tests/record/corpus/checks_*.py) equals what the program
    read itself (its counters, PyTorch's snapshot, what a sample prints);
  - no launch is a remap_contention the pool model does not explain (the checks say where one
    is expected).
Writes OUT/corpus-summary.json (the device, the commit, every program's runs and checks) and
prints one line per program.

Usage: tools/record_corpus.py --build BUILD_DIR --samples SAMPLES_DIR --out OUT_DIR
                              [--only NAME ...] [--skip-torch]
       tools/record_corpus.py --build BUILD_DIR --out OUT_DIR --bill [--only NAME ...]
(--bill: only the bill programs, tests/record/bill/bill_*.py, checked by checks_bill.py; each
report and the program's own readings are copied to OUT as bill-NAME-GPU.json and
bill-NAME-GPU-self.json, GPU the device's short name (h100, h200); the summary is
OUT/bill-summary.json)
(BUILD_DIR: a tools/device-build.sh build: profiler/gmemprof, record/libgmem_record.so,
tests/gmem_corpus_client, tests/gmem_driver_client, COMMIT)"""
import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import report_forms  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "tests", "record", "corpus"))
import checks_clients  # noqa: E402
import checks_cpp  # noqa: E402
import checks_samples  # noqa: E402

try:
    import checks_torch  # noqa: E402
except ImportError:  # written separately; a corpus without it runs the rest
    checks_torch = None
sys.path.insert(0, os.path.join(HERE, "..", "tests", "record", "bill"))
try:
    import checks_bill  # noqa: E402
except ImportError:
    checks_bill = None


def programs(build, samples, torch_too, bill=False):
    """(name, kind, argv, options): kind picks the check module; argv's SELF_JSON is appended
    for kinds other than "sample". With bill, the bill programs only."""
    client = os.path.join(build, "tests", "gmem_corpus_client")
    corpus = os.path.join(HERE, "..", "tests", "record", "corpus")
    out = []
    if bill:
        folder = os.path.join(HERE, "..", "tests", "record", "bill")
        b = lambda name, script, *args: out.append((f"bill:{name}", "bill", [sys.executable, os.path.join(folder, script)] + list(args),
                                                     {"timeout": 300, "copy_as": name}))
        b("compile-reduce-overhead", "bill_compile.py", "--mode", "reduce-overhead")
        b("compile-cudagraphs", "bill_compile.py", "--mode", "cudagraphs")
        # No eager pass first: the warm-up makes cuBLAS's handle and workspace on its thread.
        b("compile-no-prepass", "bill_compile.py", "--mode", "reduce-overhead", "--no-prepass")
        b("graphed-callables", "bill_graphed_callables.py")
        b("piecewise", "bill_piecewise.py")
        return out
    s = lambda name, *args, **o: out.append((name, "sample", [os.path.join(samples, name.split(":")[0])] + list(args), o))
    # Its simultaneous-streams example reuses an earlier graph's memory when that graph's kernel
    # has finished: its figures vary unrecorded too (1 of 12 unrecorded runs on an H100,
    # 2026-11-25). Its FOOTPRINT lines are checked against the recording's timeline instead.
    s("graphMemoryFootprint", volatile="its simultaneous-streams footprint depends on which earlier kernels had finished")
    s("graphMemoryNodes")
    s("simpleCudaGraphs")
    s("jacobiCudaGraphs", volatile=True)
    s("jacobiCudaGraphs:captures", "-gpumethod=1", volatile=True)
    s("graphConditionalNodes")
    s("cudaGraphsPerfScaling", volatile=True)
    s("cudaGraphsPerfScaling:wide", "3", "10", "1", "4", "1", "8", "64", volatile=True)
    for mode in ["pdl", "events", "tight", "back-to-back", "identical", "segv-handled"]:
        out.append((f"cpp:{mode}", "cpp", [client, mode], {}))
    out.append(("cpp:sigterm-exit", "cpp", [client, "sigterm-exit"], {"repeat": 5, "timeout": 60}))
    out.append(("cpp:driver-linked", "cpp", [os.path.join(build, "tests", "gmem_driver_client"), "driver-linked"], {}))
    if torch_too:
        t = lambda name, script, *args: out.append((name, "torch", [sys.executable, os.path.join(corpus, script)] + list(args), {"timeout": 300}))
        t("torch:identical-async", "torch_identical.py", "--allocator", "async")
        t("torch:identical-native", "torch_identical.py", "--allocator", "native")
        t("torch:fork", "torch_fork.py")
        t("torch:captures-shared", "torch_native_captures.py", "--pool", "shared")
        t("torch:captures-per-graph", "torch_native_captures.py", "--pool", "per-graph")
        t("torch:captures-expandable", "torch_native_captures.py", "--pool", "shared", "--expandable")
        t("torch:captures-keep-graph", "torch_native_captures.py", "--pool", "shared", "--keep-graph")
        t("torch:loop-tight", "torch_loop.py", "--mode", "tight")
        t("torch:loop-back-to-back", "torch_loop.py", "--mode", "back-to-back")
        t("torch:compile-cudagraphs", "torch_compile.py", "--mode", "cudagraphs")
        t("torch:compile-reduce-overhead", "torch_compile.py", "--mode", "reduce-overhead")
        # Other frameworks where the GPU machine has them (each says SKIP without its framework).
        clients = os.path.join(HERE, "..", "tests", "record", "clients")
        for name, script in (("cupy:graph", "cupy_graph.py"), ("jax:jit", "jax_jit.py")):
            out.append((name, "client", [sys.executable, os.path.join(clients, script)], {"timeout": 300}))
    return out


def shown_path(arg):
    """An argument as a report shows it: a path of this checkout relative to its root (a report
    names no folder of the machine it ran on)."""
    root = os.path.normpath(os.path.join(HERE, ".."))
    full = os.path.normpath(arg) if os.path.isabs(arg) else None
    return os.path.relpath(full, root) if full and full.startswith(root + os.sep) else arg


def run(argv, timeout, env=None, cwd=None):
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout, env=env, cwd=cwd)
        return {"exit": p.returncode, "stdout": p.stdout, "stderr": p.stderr,
                "seconds": round(time.monotonic() - t0, 3), "timed_out": False}
    except subprocess.TimeoutExpired as e:
        return {"exit": None, "stdout": (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""),
                "stderr": "", "seconds": round(time.monotonic() - t0, 3), "timed_out": True}


def masked(text):
    """Numbers out: lines with timings compare by their words."""
    return re.sub(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?", "#", text)


def remaps(report):
    rec = report.get("recorded") or {}
    n = sum(1 for g in rec.get("graphs", []) for e in g.get("events", []) if e.get("class") == "remap_contention")
    d = sum(1 for p in rec.get("pools", []) for x in p.get("diagnostics", []) if x.get("code") == "remap_contention")
    return n, d


def one(name, kind, argv, options, gmemprof, out):
    timeout = options.get("timeout", 120)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    self_plain = os.path.join(out, f"{safe}.self-unrecorded.json")
    self_rec = os.path.join(out, f"{safe}.self.json")
    report_path = os.path.join(out, f"{safe}.json")
    extra = lambda path: [] if kind == "sample" else [path]
    entry = {"name": name, "command": " ".join(os.path.basename(a) if i == 0 else shown_path(a) for i, a in enumerate(argv)),
             "runs": [], "checks": []}
    checks = entry["checks"]

    def check(ok, detail):
        checks.append({"ok": bool(ok), "detail": detail})

    for k in range(options.get("repeat", 1)):
        plain = run(argv + extra(self_plain), timeout)
        if os.path.exists(report_path):
            os.remove(report_path)
        recorded = run([gmemprof, "record", "--out", report_path, "--"] + argv + extra(self_rec), timeout)
        entry["runs"].append({"unrecorded": {x: plain[x] for x in ("exit", "seconds", "timed_out")},
                              "recorded": {x: recorded[x] for x in ("exit", "seconds", "timed_out")}})
        tag = f" (run {k + 1})" if options.get("repeat", 1) > 1 else ""
        if "SKIP" in plain["stdout"]:
            entry["skipped"] = plain["stdout"].strip().splitlines()[-1]
            return entry
        check(not recorded["timed_out"], f"recorded run ended within {timeout} s{tag}")
        check(recorded["exit"] == plain["exit"], f"exit status {recorded['exit']} recorded, {plain['exit']} unrecorded{tag}")
        volatile = options.get("volatile", False)
        same = (masked(recorded["stdout"]) == masked(plain["stdout"])) if volatile else recorded["stdout"] == plain["stdout"]
        note = f" (numbers masked: {volatile if isinstance(volatile, str) else 'it prints timings'})" if volatile else ""
        if not same and not volatile:
            # A program whose stdout varies from run to run unrecorded too (a sample that prints
            # what the driver did with work that may or may not have finished) is compared with
            # its numbers masked; the unrecorded runs that differ are the evidence.
            again = [run(argv + extra(self_plain), timeout)["stdout"] for _ in range(3)]
            if recorded["stdout"] in again:
                same, note = True, " (as one of 3 more unrecorded runs)"
            elif any(a != plain["stdout"] for a in again):
                same = masked(recorded["stdout"]) == masked(plain["stdout"])
                note = (f" (numbers masked: {sum(a != plain['stdout'] for a in again)} of 3 more unrecorded runs "
                        "printed other numbers than the first)")
        check(same, f"stdout recorded equals unrecorded{note}{tag}"
              + ("" if same else f": {len(recorded['stdout'])} against {len(plain['stdout'])} bytes"))
        entry["stderr_tail"] = recorded["stderr"][-2000:]
    report = None
    if os.path.exists(report_path):
        for cmd in (["show", report_path], ["check", report_path, report_path],
                    ["html", report_path, "-o", report_path + ".html"], ["trace", report_path, "-o", report_path + ".trace.json"]):
            r = run([gmemprof] + cmd, 120)
            check(r["exit"] == 0, f"gmemprof {cmd[0]} reads the report (exit {r['exit']})"
                  + ("" if r["exit"] == 0 else ": " + r["stderr"].strip()[-300:]))
        report = report_forms.load(report_path)
        n, d = remaps(report)
        entry["remap_contention_events"], entry["remap_contention_diagnostics"] = n, d
        entry["report_bytes"] = os.path.getsize(report_path)
    elif not options.get("report_optional"):
        check(kind == "cpp" and name == "cpp:sigterm-exit", "a report was written")
    self_doc = json.load(open(self_rec)) if os.path.exists(self_rec) else {}
    module = {"sample": checks_samples, "cpp": checks_cpp, "torch": checks_torch, "bill": checks_bill,
              "client": checks_clients}[kind]
    if module is None:
        check(False, f"no checks for this kind ({'tests/record/bill/checks_bill.py' if kind == 'bill' else 'tests/record/corpus/checks_torch.py'} missing)")
    elif report is not None or name == "cpp:sigterm-exit":
        try:
            if kind in ("torch", "bill", "client"):
                results = module.check(os.path.basename(argv[1]), argv[2:], self_doc, report or {})
            elif kind == "sample":
                results = module.check(name, argv[1:], plain["stdout"], recorded["stdout"], report or {})
            else:
                results = module.check(argv[1], self_doc, report, entry)
            for ok, detail in results:
                check(ok, detail)
        except Exception as e:  # a check that breaks is a failed check, with its reason
            check(False, f"the check raised {type(e).__name__}: {e}")
    if options.get("copy_as"):  # the bill's reports, with the program's own readings beside them
        for src, suffix in ((report_path, ""), (self_rec, "-self")):
            if os.path.exists(src):
                dst = os.path.join(out, f"bill-{options['copy_as']}-{options['gpu']}{suffix}.json")
                shutil.copyfile(src, dst)
                entry.setdefault("copies", []).append(os.path.basename(dst))
    entry["passed"] = all(c["ok"] for c in checks)
    return entry


def short_name(device_name):
    """The GPU's model as reports name it: "NVIDIA H200" -> "h200", "NVIDIA H100 80GB HBM3" -> "h100"."""
    m = re.search(r"\b([A-Z]+[0-9]+)\b", device_name)
    return m.group(1).lower() if m else "gpu"


def device():
    r = run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], 30)
    parts = [x.strip() for x in r["stdout"].strip().splitlines()[0].split(",")] if r["stdout"].strip() else ["unknown", "unknown"]
    return {"name": parts[0], "driver": parts[1] if len(parts) > 1 else "unknown"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--samples", help="required unless --bill")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--bill", action="store_true", help="run only the bill programs (tests/record/bill)")
    a = ap.parse_args()
    if not a.bill and not a.samples:
        ap.error("the following arguments are required: --samples")
    os.makedirs(a.out, exist_ok=True)
    gmemprof = os.path.join(a.build, "profiler", "gmemprof")
    commit_file = os.path.join(a.build, "COMMIT")
    summary = {"tool": "tools/record_corpus.py", "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "commit": open(commit_file).read().strip() if os.path.exists(commit_file) else "unknown",
               "device": device(), "programs": []}
    gpu = short_name(summary["device"]["name"])
    for name, kind, argv, options in programs(a.build, a.samples, not a.skip_torch, a.bill):
        if a.only and not any(name.startswith(o) for o in a.only):
            continue
        e = one(name, kind, argv, dict(options, gpu=gpu), gmemprof, a.out)
        summary["programs"].append(e)
        status = "SKIP " + e["skipped"] if "skipped" in e else ("PASS" if e["passed"] else "FAIL")
        print(f"{status:5} {name}: " + "; ".join(c["detail"] for c in e["checks"] if not c["ok"]), flush=True)
    ran = [p for p in summary["programs"] if "skipped" not in p]
    summary["totals"] = {"programs": len(summary["programs"]), "ran": len(ran),
                         "passed": sum(p["passed"] for p in ran),
                         "checks": sum(len(p["checks"]) for p in ran),
                         "checks_failed": sum(not c["ok"] for p in ran for c in p["checks"]),
                         "remap_contention_events": sum(p.get("remap_contention_events", 0) for p in ran)}
    with open(os.path.join(a.out, "bill-summary.json" if a.bill else "corpus-summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary["totals"]))
    return 0 if summary["totals"]["passed"] == len(ran) else 1


if __name__ == "__main__":
    sys.exit(main())
