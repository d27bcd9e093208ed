#!/usr/bin/env python3
"""What one reading of the device's memory in use costs the thread that takes it: the floor under
a recorded instantiation, which `gmemprof record` brackets with two such readings (cuMemGetInfo)
that must both be answered before the program goes on (docs/benchmarks.md, "The host's speed,
the floor under a recorded capture, and warm-ups of 500 to 2000 captures").

In a process with PyTorch's CUDA context (as tests/record/scale/warmup.py has it), through ctypes
on the driver: ROUNDS rounds, each timing CALLS calls of cuMemGetInfo_v2 one by one and as many of
cuCtxGetDevice (a driver call answered in the process, no trip to the kernel: what the timing and
ctypes add), with a fixed loop of pure Python before each round (the CPU's speed then, as
warmup.py's "cpu_probe_ms"). Writes one JSON: the device and driver, the commit of BUILD_DIR (a
tools/device-build.sh build carried with it), per round the probe and each call's median, 10th and
90th percentile in microseconds, and over all rounds the medians and the reading's median less the
cheap call's.

Usage: readings_floor.py OUT_JSON [--build BUILD_DIR] [--rounds 8] [--calls 500]"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

import record_scale

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "record"))
import graphmem  # noqa: E402  (its CPU probe)


def quantiles_us(samples_ns):
    s = sorted(samples_ns)
    return {name: s[min(len(s) - 1, int(q * len(s)))] / 1e3 for name, q in (("median", 0.5), ("p10", 0.1), ("p90", 0.9))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_json")
    ap.add_argument("--build", help="the build carried with it, whose COMMIT names the commit")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--calls", type=int, default=500)
    a = ap.parse_args()
    import torch
    torch.zeros(1, device="cuda")  # PyTorch's context, current on this thread
    cuda = ctypes.CDLL("libcuda.so.1")
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    device = ctypes.c_int()
    clock = time.perf_counter_ns
    calls = {"cuMemGetInfo_v2": lambda: cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)),
             "cuCtxGetDevice": lambda: cuda.cuCtxGetDevice(ctypes.byref(device))}
    for call in calls.values():
        if call() != 0:
            raise SystemExit("readings_floor: a driver call failed in PyTorch's context")
    rounds = []
    for _ in range(a.rounds):
        one = {"cpu_probe_ms": graphmem.cpu_probe_ms()}
        for name, call in calls.items():
            samples = []
            for _ in range(a.calls):
                t = clock()
                call()
                samples.append(clock() - t)
            one[name] = quantiles_us(samples)
        rounds.append(one)
    medians = {name: statistics.median(r[name]["median"] for r in rounds) for name in calls}
    out = record_scale.run_header("one cuMemGetInfo on the calling thread, against a driver call answered in the "
                                  "process", a.build or "")
    out.update({"torch": torch.__version__, "rounds": rounds, "medians_us": medians,
                "reading_less_cheap_call_us": medians["cuMemGetInfo_v2"] - medians["cuCtxGetDevice"]})
    with open(a.out_json, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps({"medians_us": medians, "reading_less_cheap_call_us": out["reading_less_cheap_call_us"]}))


if __name__ == "__main__":
    main()
