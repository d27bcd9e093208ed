#!/usr/bin/env python3
"""What CUPTI's callback dispatch alone costs a serving warm-up's captures: the step of
tests/record/scale/warmup.py (PyTorch, cudaMallocAsync backend, an MLP step, its output held),
captured and instantiated in blocks of GRAPHS graphs (batch GRAPHS down to 1), then replayed
once. Between blocks, in one process, benchmarks/cupti_floor.cpp switches a CUPTI subscription:

  off              no subscriber (the first blocks run before CUPTI was ever attached)
  subscribed       a subscriber with no callback enabled
  routes           the recording library's driver callbacks (gmem_record_route_ids), empty
  routes+readings  the same, with the two cuMemGetInfo readings around each instantiation
  every call       every driver API call's callback, empty (how many calls a capture makes)

Modes take turns in a shuffled order, BLOCKS times, so that a slow spell of a shared host falls
on every mode alike. Per mode: the median over blocks of the capture time per graph (begin, the
captured step, end with its instantiation), the replay per graph, the difference from `off`,
and the callbacks per graph by driver call. Writes one JSON with the device, driver and commit.

Before the modes, a phase of blocks before CUPTI was ever attached and one after a subscription
was made and ended; --control runs the same two phases in a process that never attaches CUPTI,
so that what attaching leaves behind is told apart from the process's own drift. With
CUDA_INJECTION64_PATH naming libgmem_cupti_floor.so, CUPTI is attached at cuInit, as when recording
(GMEM_FLOOR_INIT=one or every: with one driver callback, or every one, enabled from the start).

Usage: cupti_floor.py BUILD_DIR OUT_JSON [--blocks 40] [--graphs 50] [--seed 1] [--control]"""
import argparse
import ctypes
import json
import os
import random
import statistics
import sys
import time

from record_scale import run_header

MODES = ["off", "subscribed", "routes", "routes+readings", "every call"]


def load(build_dir):
    record = ctypes.CDLL(os.path.join(build_dir, "record", "libgmem_record.so"))
    n = record.gmem_record_route_ids(None, 0)
    ids = (ctypes.c_uint * n)()
    record.gmem_record_route_ids(ids, n)
    floor = ctypes.CDLL(os.path.join(build_dir, "benchmarks", "libgmem_cupti_floor.so"))
    floor.floor_calls.restype = ctypes.c_ulonglong
    floor.floor_name.restype = ctypes.c_char_p
    return floor, ids


def switch(floor, ids, mode):
    if mode == "off":
        floor.floor_stop()
        return
    routes = mode.startswith("routes")
    n = len(ids) if routes else -1 if mode == "every call" else 0
    r = floor.floor_start(ids if routes else None, n, 0, 1 if mode == "routes+readings" else 0)
    if r != 0:
        sys.exit(f"cupti_floor: CUPTI refused the subscription for mode '{mode}' (CUptiResult {r}); "
                 "is another profiler attached?")


def counts(floor):
    """Callbacks given since the last call, by driver call name (and reset)."""
    out = {}
    for i in range(floor.floor_driver_ids()):
        c = floor.floor_calls(i, 1)
        if c:
            out[floor.floor_name(i).decode() or str(i)] = c
    return out


def write(doc, path):
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("out_json")
    ap.add_argument("--blocks", type=int, default=40)
    ap.add_argument("--graphs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--control", action="store_true",
                    help="never attach CUPTI: the two phases alone, to tell CUPTI's attachment from time")
    a = ap.parse_args()
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    import torch

    torch.manual_seed(0)
    w1 = torch.randn(256, 512, device="cuda") * 0.05
    w2 = torch.randn(512, 64, device="cuda") * 0.05

    def step(x):
        return torch.relu(x @ w1) @ w2

    inputs = {bs: torch.randn(bs, 256, device="cuda") for bs in range(1, a.graphs + 1)}
    s = torch.cuda.Stream()
    cur = torch.cuda.current_stream()
    s.wait_stream(cur)
    with torch.cuda.stream(s):  # eager warm-up: cuBLAS handles and kernels loaded before capturing
        for bs in (1, a.graphs):
            step(inputs[bs])
    cur.wait_stream(s)
    torch.cuda.synchronize()

    def block():
        """Captures GRAPHS graphs and replays each once: per graph, (begin, step, end, replay) s."""
        graphs, outputs = [], []
        parts = [0.0, 0.0, 0.0, 0.0]
        for bs in range(a.graphs, 0, -1):
            g = torch.cuda.CUDAGraph()
            s.wait_stream(cur)
            with torch.cuda.stream(s):
                t0 = time.perf_counter()
                g.capture_begin()
                t1 = time.perf_counter()
                out = step(inputs[bs])
                t2 = time.perf_counter()
                g.capture_end()
                t3 = time.perf_counter()
            parts[0] += t1 - t0
            parts[1] += t2 - t1
            parts[2] += t3 - t2
            cur.wait_stream(s)
            graphs.append(g)
            outputs.append(out)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for g in graphs:
            g.replay()
        torch.cuda.synchronize()
        parts[3] = time.perf_counter() - t0
        del graphs, outputs
        torch.cuda.synchronize()
        return [p / a.graphs for p in parts]

    for _ in range(3):  # cuBLAS, kernels and the graph pool warmed, not counted
        block()
    # Blocks before CUPTI was ever attached, then as many after one subscription made and ended
    # (with --control, after none: the same two phases of a process that never attaches CUPTI).
    k = max(3, a.blocks // 4)
    before = [block() for _ in range(k)]
    if not a.control:
        floor, ids = load(a.build_dir)
        switch(floor, ids, "subscribed")
        floor.floor_stop()
    after = [block() for _ in range(k)]
    samples = {m: [] for m in MODES}
    calls = {m: {} for m in MODES}
    rng = random.Random(a.seed)
    for _ in range(0 if a.control else a.blocks):
        order = MODES[:]
        rng.shuffle(order)
        for mode in order:
            switch(floor, ids, mode)
            counts(floor)
            samples[mode].append(block())
            for name, c in counts(floor).items():
                calls[mode][name] = calls[mode].get(name, 0) + c
            floor.floor_stop()

    def summary(blocks):
        us = lambda k: statistics.median(b[k] for b in blocks) * 1e6
        total = [sum(b[:3]) * 1e6 for b in blocks]
        q = statistics.quantiles(total, n=4) if len(total) > 1 else [total[0]] * 3
        return {"capture_us_per_graph": statistics.median(total), "capture_us_q1": q[0], "capture_us_q3": q[2],
                "capture_us_min": min(total), "begin_us": us(0), "step_us": us(1), "end_us": us(2),
                "replay_us_per_graph": us(3), "blocks": len(blocks)}

    phases = {"cupti_attached_between": not a.control, "before": summary(before), "after": summary(after)}
    phases["after_over_before"] = phases["after"]["capture_us_per_graph"] / phases["before"]["capture_us_per_graph"]
    out = run_header("CUPTI's callback dispatch alone on a serving warm-up's captures (tools/cupti_floor.py)",
                     a.build_dir)
    out.update({"torch": torch.__version__, "injected": os.path.basename(os.environ.get("CUDA_INJECTION64_PATH", "")),
                "floor_init": os.environ.get("GMEM_FLOOR_INIT", ""), "graphs_per_block": a.graphs,
                "phases": phases, "modes": {}})
    print(f"{'attached' if not a.control else 'control'}: before {phases['before']['capture_us_per_graph']:.1f} us/graph, "
          f"after {phases['after']['capture_us_per_graph']:.1f} us/graph ({phases['after_over_before']:.3f}x)")
    if a.control:
        write(out, a.out_json)
        return
    out["route_ids"] = len(ids)
    off = summary(samples["off"])["capture_us_per_graph"]
    graphs = a.graphs * a.blocks
    for mode in MODES:
        m = summary(samples[mode])
        m["over_off_us_per_graph"] = m["capture_us_per_graph"] - off
        m["capture_ratio"] = m["capture_us_per_graph"] / off
        per_graph = {k: v / graphs for k, v in sorted(calls[mode].items(), key=lambda kv: -kv[1])}
        m["callbacks_per_graph"] = sum(per_graph.values())
        m["callbacks_per_graph_by_call"] = per_graph
        out["modes"][mode] = m
    every = out["modes"]["every call"]
    if every["callbacks_per_graph"]:
        # What one callback costs: every call's excess over a bare subscription, per callback.
        every["us_per_callback"] = (every["capture_us_per_graph"] - out["modes"]["subscribed"]["capture_us_per_graph"]) / every["callbacks_per_graph"]
    write(out, a.out_json)
    for mode in MODES:
        m = out["modes"][mode]
        print(f"{mode:16s} capture {m['capture_us_per_graph']:7.1f} us/graph (q1 {m['capture_us_q1']:.1f}, "
              f"q3 {m['capture_us_q3']:.1f}), over off {m['over_off_us_per_graph']:+6.1f} us, "
              f"callbacks {m['callbacks_per_graph']:.1f}/graph, replay {m['replay_us_per_graph']:.1f} us")


if __name__ == "__main__":
    main()
