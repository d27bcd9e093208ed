#!/usr/bin/env python3
"""What the Python companion (record/companion) costs a PyTorch capture, in one process: blocks of
captures of tests/record/scale/warmup.py's step (PyTorch's cudaMallocAsync backend), made through
the companion's wrappers and through PyTorch's own methods in alternating blocks, so that the
host's speed, which changes from one process to the next on the GPU machines, is the same for
both. The recording library is a stand-in whose exports do nothing
(benchmarks/companion_words_noop.cpp): what is timed is the companion's own work, its calls into
the library included.

Writes one JSON: the device and driver, the commit, and the median over blocks of capture_begin,
the captured step and capture_end (which instantiates), per capture in microseconds, through the
companion and through PyTorch's own methods, and their difference.

Usage: companion_ab.py BUILD_DIR OUT_JSON [--blocks 8] [--captures 60]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def child(out_path, blocks, captures):
    """In the process with the companion and the stand-in library: the alternating blocks."""
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    import torch
    graph_class = torch.cuda.graphs.CUDAGraph
    w1 = torch.randn(256, 512, device="cuda") * 0.05
    w2 = torch.randn(512, 64, device="cuda") * 0.05
    x = torch.randn(8, 256, device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):  # eager once: cuBLAS's handle and the kernels loaded
        torch.relu(x @ w1) @ w2
    torch.cuda.synchronize()
    kept = []

    def capture():
        g = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream):
            a = time.perf_counter()
            g.capture_begin()
            b = time.perf_counter()
            out = torch.relu(x @ w1) @ w2
            c = time.perf_counter()
            g.capture_end()
            d = time.perf_counter()
        kept.append((g, out))  # held, as a serving warm-up holds its graphs and outputs
        return b - a, c - b, d - c

    capture()  # the companion's first capture: it finds the library, and says its words to it from then on
    begin, end = graph_class.capture_begin, graph_class.capture_end
    ways = {"companion": (begin, end),
            "pytorch": (getattr(begin, "__wrapped__", begin), getattr(end, "__wrapped__", end))}
    per_block = {way: [] for way in ways}
    for k in range(2 * blocks):
        way = ("companion", "pytorch")[k % 2]
        graph_class.capture_begin, graph_class.capture_end = ways[way]
        sums = [0.0, 0.0, 0.0]
        for _ in range(captures):
            for i, t in enumerate(capture()):
                sums[i] += t
        per_block[way].append([s / captures * 1e6 for s in sums])
    graph_class.capture_begin, graph_class.capture_end = ways["companion"]
    result = {"capture_end_wrapped": hasattr(end, "__wrapped__"), "blocks": per_block}
    for way, rows in per_block.items():
        result[way] = {part: statistics.median(r[i] for r in rows)
                       for i, part in enumerate(("capture_begin", "step", "capture_end"))}
        result[way]["total"] = statistics.median(sum(r) for r in rows)
    result["companion_less_pytorch"] = {p: result["companion"][p] - result["pytorch"][p] for p in result["pytorch"]}
    with open(out_path, "w") as f:
        json.dump(result, f)
    sys.stdout.flush()
    os._exit(0)  # the graphs and their outputs are left to the process's end, unfreed


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("out_json")
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--captures", type=int, default=60)
    a = ap.parse_args()
    import record_scale
    out = record_scale.run_header("the Python companion's cost per capture, against PyTorch's own methods in one "
                                  "process (tools/companion_ab.py)", a.build_dir)
    library = os.path.abspath(os.path.join(a.build_dir, "benchmarks", "libgmem_companion_words_noop.so"))
    env = dict(os.environ, LD_PRELOAD=library, GMEM_RECORD_LIBRARY_LOADED=library,
               PYTHONPATH=os.path.abspath(os.path.join(a.build_dir, "record", "companion")))
    env.pop("CUDA_INJECTION64_PATH", None)
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", f.name, str(a.blocks),
                            str(a.captures)], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"companion_ab: the run failed (exit {p.returncode}): {p.stderr[-2000:]}")
        out.update(json.load(open(f.name)))
    with open(a.out_json, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps({"companion_less_pytorch_us": out["companion_less_pytorch"]}))


if __name__ == "__main__":
    main()
