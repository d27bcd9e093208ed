#!/usr/bin/env python3
"""Test suites nobody here wrote, run unrecorded and under `gmemprof record`: every case's
outcome must be the same. A recording that changes what a program sees (a driver call's result,
a signal, its exit status) shows up here as a case that passes unrecorded and fails recorded.

Two steps, because the suites are others' code and never committed:

  assemble (on the build machine): gathers the suites into an ignored folder that travels to the
  GPU machine (git-ignored: .peer/), and writes its MANIFEST.json (where each came from):
    - PyTorch's CUDA graph tests (a file: test_cuda_graphs.py),
    - CuPy's CUDA graph tests (tests/cupy_tests/cuda_tests/test_graph.py of a CuPy git folder, at
      the tag of the version the GPU machine has),
    - cuda.core's graph tests (a folder of them: cuda_core/tests/graph with its helpers),
    - JAX's tests that run XLA's GPU command buffers (a folder of test files),
    - every cuda-samples program that makes a graph (built here with nvcc for sm_90, the CUDA
      runtime linked statically; a sample that needs libraries the GPU machine lacks is skipped
      with the reason).
  run (on the GPU machine): each suite unrecorded, then recorded (pytest's JUnit XML, a
  sample's exit status and its PASSED/FAILED words), and writes OUT/suites.json: the device, the
  driver, the build's commit, per suite its cases and outcomes unrecorded and recorded, and
  every difference with its message; a case that fails the same way unrecorded is listed as such.
  Exit 0 when no outcome differs.

Usage:
  tools/peer_suites.py assemble --out .peer [--torch-tests FILE] [--cupy GIT_DIR --cupy-ref TAG]
                                [--cuda-core DIR] [--jax-tests DIR] [--cuda-samples GIT_DIR]
  tools/peer_suites.py run --build BUILD_DIR --peer .peer --out OUT_DIR [--only SUITE ...]
                           [--hook HOOK] [--timeout S]
(BUILD_DIR: a tools/device-build.sh build; SUITE: torch-native, torch-async, cupy, cuda-core, jax,
samples)"""
import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_corpus  # noqa: E402  (its run and device)

# The cuda-samples programs that make CUDA graphs, by their folder under Samples/; each is built
# from its folder's .cu and .cpp files with the repository's Common/ headers. Extra link flags:
# the libraries a sample needs besides the CUDA runtime.
SAMPLES = {
    "graphMemoryNodes": ("3_CUDA_Features", []),
    "graphMemoryFootprint": ("3_CUDA_Features", []),
    "simpleCudaGraphs": ("3_CUDA_Features", []),
    "jacobiCudaGraphs": ("3_CUDA_Features", []),
    "graphConditionalNodes": ("3_CUDA_Features", []),
    "cudaGraphsPerfScaling": ("6_Performance", []),
    "conjugateGradientCudaGraphs": ("4_CUDA_Libraries", ["-lcublas", "-lcusparse"]),
}
# Arguments a sample runs with besides none (each a case of its own).
SAMPLE_RUNS = {
    "jacobiCudaGraphs": [[], ["-gpumethod=1"]],
    "cudaGraphsPerfScaling": [[], ["3", "10", "1", "4", "1", "8", "64"]],
}


def git_show(git_dir, ref, path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{ref}:{path}"], check=True,
                          capture_output=True).stdout


def git_commit(git_dir, ref):
    return subprocess.run(["git", "--git-dir", git_dir, "rev-parse", ref], check=True, capture_output=True,
                          text=True).stdout.strip()


def git_files(git_dir, ref, folder):
    out = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", ref, folder], check=True,
                         capture_output=True, text=True).stdout
    return [p for p in out.splitlines() if p]


def checkout(git_dir, ref, paths, work):
    """Writes each of PATHS at REF of GIT_DIR under WORK, at its own path."""
    for path in paths:
        target = os.path.join(work, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "wb").write(git_show(git_dir, ref, path))


def copy_suite(folder, to, source):
    """A folder of test files copied as it is to TO; its SOURCE file, where it has one, says where
    it came from (else SOURCE, the default, is returned)."""
    if os.path.exists(to):
        shutil.rmtree(to)
    shutil.copytree(folder, to)
    named = os.path.join(folder, "SOURCE")
    return open(named).read().strip() if os.path.exists(named) else source


def assemble(a):
    os.makedirs(a.out, exist_ok=True)
    manifest = {"assembled": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "suites": {}}
    if a.torch_tests:
        d = os.path.join(a.out, "torch")
        os.makedirs(d, exist_ok=True)
        shutil.copy(a.torch_tests, os.path.join(d, "test_cuda_graphs.py"))
        readme = os.path.join(os.path.dirname(a.torch_tests), "README.md")
        source = "PyTorch's test/test_cuda.py, its graph tests"
        if os.path.exists(readme):
            m = re.search(r"commit\s+([0-9a-f]{40})", open(readme).read())
            if m:
                source += f" at pytorch/pytorch {m.group(1)}"
        manifest["suites"]["torch"] = {"source": source, "files": ["torch/test_cuda_graphs.py"]}
    if a.cupy:
        d = os.path.join(a.out, "cupy")
        os.makedirs(d, exist_ok=True)
        ref = a.cupy_ref
        for path, to in (("tests/cupy_tests/cuda_tests/test_graph.py", "test_graph.py"),
                         ("tests/conftest.py", "conftest.py")):
            open(os.path.join(d, to), "wb").write(git_show(a.cupy, ref, path))
        manifest["suites"]["cupy"] = {"source": f"cupy/cupy {ref} ({git_commit(a.cupy, ref)}): "
                                                "tests/cupy_tests/cuda_tests/test_graph.py",
                                      "files": ["cupy/test_graph.py", "cupy/conftest.py"]}
    for suite, folder, source in (("cuda-core", a.cuda_core, "NVIDIA/cuda-python cuda_core/tests (graph tests and their helpers)"),
                                  ("jax", a.jax_tests, "jax-ml/jax tests of XLA's GPU command buffers")):
        if folder:
            manifest["suites"][suite] = {"source": copy_suite(folder, os.path.join(a.out, suite), source)}
    if a.cuda_samples:
        d = os.path.join(a.out, "samples")
        os.makedirs(d, exist_ok=True)
        commit = git_commit(a.cuda_samples, "HEAD")
        work = os.path.join(a.out, ".samples-src")
        shutil.rmtree(work, ignore_errors=True)
        built, skipped = [], {}
        checkout(a.cuda_samples, "HEAD", git_files(a.cuda_samples, "HEAD", "Common"), work)
        for name, (group, libs) in SAMPLES.items():
            files = git_files(a.cuda_samples, "HEAD", f"Samples/{group}/{name}")
            checkout(a.cuda_samples, "HEAD", files, work)
            sources = [os.path.join(work, p) for p in files if p.endswith((".cu", ".cpp"))]
            cmd = [a.nvcc, "-O2", "-std=c++17", "-arch=sm_90", "-cudart", "static", "-I", os.path.join(work, "Common"),
                   "-o", os.path.join(d, name)] + sources + libs
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                skipped[name] = "did not build here: " + r.stderr.strip()[-400:]
                continue
            built.append(name)
        shutil.rmtree(work, ignore_errors=True)
        manifest["suites"]["samples"] = {"source": f"NVIDIA/cuda-samples {commit}", "built": built,
                                         "skipped": skipped}
    json.dump(manifest, open(os.path.join(a.out, "MANIFEST.json"), "w"), indent=1)
    print(json.dumps(manifest, indent=1))
    return 0


# ---- running


def junit_cases(path):
    """{case id: (outcome, message)} from pytest's JUnit XML; outcome is passed, failed, error,
    skipped or xfailed."""
    cases = {}
    root = ET.parse(path).getroot()
    for tc in root.iter("testcase"):
        name = f"{tc.get('classname', '')}::{tc.get('name', '')}"
        outcome, message = "passed", ""
        for child in tc:
            tag = child.tag
            if tag in ("failure", "error"):
                outcome, message = ("failed" if tag == "failure" else "error"), child.get("message", "")
                break
            if tag == "skipped":
                xfail = child.get("type") == "pytest.xfail"
                outcome, message = ("xfailed" if xfail else "skipped"), child.get("message", "")
                break
        if name in cases:  # a case that fails in its teardown too: the worse outcome stands
            if cases[name][0] in ("failed", "error"):
                continue
        cases[name] = (outcome, message[:500])
    return cases


def sample_outcome(exit_code, stdout):
    words = set(re.findall(r"\b(PASSED|FAILED|Test passed|Test failed)\b", stdout))
    return "passed" if exit_code == 0 else "failed", f"exit {exit_code}" + (f", says {sorted(words)}" if words else "")




def python_suites(peer):
    """(suite, folder, pytest target, environment) for each Python suite assembled."""
    out = []
    if os.path.exists(os.path.join(peer, "torch", "test_cuda_graphs.py")):
        out.append(("torch-native", "torch", "test_cuda_graphs.py", {}))
        # Under the cudaMallocAsync backend some of PyTorch's cases abort the process, recorded or
        # not: a pytest-xdist worker carries on after each (a crashed case is a failure). One
        # worker, so that the cases run in one order each time: with two, which worker ran which
        # case varied, and so did the cases that fail after a crash left CUDA's state behind.
        out.append(("torch-async", "torch", "test_cuda_graphs.py -p xdist -n 1 --max-worker-restart 50",
                    {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}))
    if os.path.exists(os.path.join(peer, "cupy", "test_graph.py")):
        out.append(("cupy", "cupy", "test_graph.py", {}))
    if os.path.isdir(os.path.join(peer, "cuda-core")):
        # Its PDL test compiles a kernel with NVRTC, finding the headers through CUDA_PATH.
        out.append(("cuda-core", "cuda-core", "graph", {"CUDA_PATH": "/usr/local/cuda"}))
    if os.path.isdir(os.path.join(peer, "jax")):
        out.append(("jax", "jax", ".", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}))
    return out


def run_suite(name, folder, target, extra_env, a, gmemprof, out):
    entry = {"suite": name, "runs": {}}
    results = {}
    for mode in ("unrecorded", "recorded"):
        xml = os.path.join(out, f"{name}-{mode}.xml")
        report = os.path.join(out, f"{name}.json")
        env = dict(os.environ, **extra_env, PYTHONDONTWRITEBYTECODE="1")
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *target.split(),
                f"--junitxml={xml}"]
        if mode == "recorded":
            if a.hook:
                env["GMEM_RECORD_HOOK"] = a.hook
            argv = [gmemprof, "record", "--out", report, "--"] + argv
        r = record_corpus.run(argv, a.timeout, env=env, cwd=os.path.join(os.path.abspath(a.peer), folder))
        tail = (r["stdout"].strip().splitlines() or [""])[-1]
        entry["runs"][mode] = {"exit": r["exit"], "seconds": r["seconds"], "timed_out": r["timed_out"], "summary": tail}
        if mode == "recorded":
            entry["runs"][mode]["gmemprof_lines"] = [l for l in r["stderr"].splitlines() if l.startswith("gmemprof")][:6]
            entry["runs"][mode]["report_written"] = os.path.exists(report)
        open(os.path.join(out, f"{name}-{mode}.log"), "w").write(r["stdout"] + "\n--- stderr ---\n" + r["stderr"])
        results[mode] = junit_cases(xml) if os.path.exists(xml) else {}
        print(f"{name} {mode}: exit {r['exit']}, {r['seconds']} s: {tail}", flush=True)
    return compare(entry, results)


def run_samples(a, gmemprof, out):
    entry = {"suite": "samples", "runs": {}}
    manifest = json.load(open(os.path.join(a.peer, "MANIFEST.json")))["suites"].get("samples", {})
    results = {"unrecorded": {}, "recorded": {}}
    for name in manifest.get("built", []):
        for args in SAMPLE_RUNS.get(name, [[]]):
            case = name + (" " + " ".join(args) if args else "")
            binary = os.path.join(os.path.abspath(a.peer), "samples", name)
            for mode in ("unrecorded", "recorded"):
                argv = [binary] + args
                # A sample that links the CUDA libraries finds them in the toolkit's folder.
                env = dict(os.environ, LD_LIBRARY_PATH=":".join(
                    p for p in ("/usr/local/cuda/lib64", os.environ.get("LD_LIBRARY_PATH", "")) if p))
                if mode == "recorded":
                    if a.hook:
                        env["GMEM_RECORD_HOOK"] = a.hook
                    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", case)
                    argv = [gmemprof, "record", "--out", os.path.join(out, f"sample-{safe}.json"), "--"] + argv
                r = record_corpus.run(argv, a.timeout, env=env, cwd=os.path.join(os.path.abspath(a.peer), "samples"))
                results[mode][case] = ("timed out", "") if r["timed_out"] else sample_outcome(r["exit"], r["stdout"])
            print(f"samples {case}: {results['unrecorded'][case][0]} / {results['recorded'][case][0]}", flush=True)
    for name, why in manifest.get("skipped", {}).items():
        entry.setdefault("not_run", {})[name] = why
    return compare(entry, results)


def compare(entry, results):
    plain, rec = results.get("unrecorded", {}), results.get("recorded", {})
    counts = lambda cases: {o: sum(1 for v in cases.values() if v[0] == o) for o in sorted({v[0] for v in cases.values()})}
    entry["cases"] = len(plain)
    entry["outcomes"] = {"unrecorded": counts(plain), "recorded": counts(rec)}
    entry["differences"] = []
    entry["failing_both_ways"] = []
    for case in sorted(set(plain) | set(rec)):
        p, r = plain.get(case, ("absent", "")), rec.get(case, ("absent", ""))
        if p[0] != r[0]:
            entry["differences"].append({"case": case, "unrecorded": p[0], "recorded": r[0],
                                         "recorded_message": r[1], "unrecorded_message": p[1]})
        elif p[0] in ("failed", "error"):
            entry["failing_both_ways"].append({"case": case, "outcome": p[0], "message": p[1]})
    return entry


def versions():
    out = {}
    for module in ("torch", "cupy", "cuda.core", "jax"):
        r = subprocess.run([sys.executable, "-c", f"import {module} as m; print(getattr(m, '__version__', '?'))"],
                           capture_output=True, text=True)
        out[module] = r.stdout.strip() if r.returncode == 0 else "not importable"
    return out


def run(a):
    os.makedirs(a.out, exist_ok=True)
    gmemprof = os.path.join(os.path.abspath(a.build), "profiler", "gmemprof")
    commit_file = os.path.join(a.build, "COMMIT")
    smi = record_corpus.device()
    name, driver = smi["name"], smi["driver"]
    manifest = json.load(open(os.path.join(a.peer, "MANIFEST.json")))
    summary = {"device": name, "driver": driver,
               "commit": open(commit_file).read().strip() if os.path.exists(commit_file) else "?",
               "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "hook": a.hook or "default", "versions": versions(),
               "sources": {k: v.get("source", "") for k, v in manifest["suites"].items()}, "suites": []}
    wanted = lambda s: not a.only or s in a.only
    for suite, folder, target, env in python_suites(a.peer):
        if wanted(suite):
            summary["suites"].append(run_suite(suite, folder, target, env, a, gmemprof, a.out))
            json.dump(summary, open(os.path.join(a.out, "suites.json"), "w"), indent=1)
    if wanted("samples") and "samples" in manifest["suites"]:
        summary["suites"].append(run_samples(a, gmemprof, a.out))
    differences = sum(len(s["differences"]) for s in summary["suites"])
    summary["differences"] = differences
    json.dump(summary, open(os.path.join(a.out, "suites.json"), "w"), indent=1)
    for s in summary["suites"]:
        print(f"{s['suite']}: {s['cases']} cases; unrecorded {s['outcomes']['unrecorded']}; "
              f"recorded {s['outcomes']['recorded']}; {len(s['differences'])} differences")
        for d in s["differences"][:10]:
            print(f"  {d['case']}: {d['unrecorded']} -> {d['recorded']}: {d['recorded_message'][:200]}")
    return 0 if differences == 0 else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    s = sub.add_parser("assemble")
    s.add_argument("--out", required=True)
    s.add_argument("--torch-tests")
    s.add_argument("--cupy")
    s.add_argument("--cupy-ref", default="v14.2.0")
    s.add_argument("--cuda-core")
    s.add_argument("--jax-tests")
    s.add_argument("--cuda-samples")
    s.add_argument("--nvcc", default=os.environ.get("CUDACXX", "/usr/local/cuda/bin/nvcc"))
    r = sub.add_parser("run")
    r.add_argument("--build", required=True)
    r.add_argument("--peer", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--only", nargs="*")
    r.add_argument("--hook", default="")
    r.add_argument("--timeout", type=int, default=900)
    a = p.parse_args()
    return assemble(a) if a.step == "assemble" else run(a)


if __name__ == "__main__":
    sys.exit(main())
