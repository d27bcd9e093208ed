#!/usr/bin/env python3
"""gmem's own, measured: each program below is run unrecorded, then under `gmemprof record` with
each hook. The device memory the program reads itself must be the same recorded as unrecorded,
and the recorded bill's process change must equal the unrecorded program's own change (its
reading at the end less its reading when its context was made) by what the bill's "gmem's own"
states, within 2 MiB (the driver's pieces: CUPTI's own memory shares them). Programs: a PyTorch
graph (own_memory_torch.py), a driver-API program of graphs with and without memory nodes
(own_memory_driver.py, cuda.bindings), a torchrun rank with NCCL in a graph (own_memory_nccl.py).

Usage: check_own_memory.py GMEMPROF [--only torch|driver|nccl ...]; prints a line per run and
exits 1 when a check fails (GPU machine only)."""
import argparse, json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20
PROGRAMS = {
    "torch": [sys.executable, os.path.join(HERE, "own_memory_torch.py")],
    "driver": [sys.executable, os.path.join(HERE, "own_memory_driver.py")],
    "nccl": ["torchrun", "--nproc-per-node", "1", os.path.join(HERE, "own_memory_nccl.py")],
}


def readings(stdout):
    """{rank or 0: used_mib readings} from the program's MEM lines."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith("MEM "):
            m = json.loads(line[4:])
            out[m.get("rank", 0)] = m["used_mib"]
    return out


def bill_of(report, rank):
    """Device 0's bill of the process of RANK. A merged recording names each process by its rank
    where two or more had one, else p1, p2, ... in the order of its processes (torchrun and its
    one rank); a recording of one process names none."""
    rec = json.load(open(report))["recorded"]
    bills = [b for b in rec["bills"] if b["device"] == 0]
    names = {f"rank {rank}"} | {f"p{k + 1}" for k, p in enumerate(rec.get("processes", [])) if p.get("rank") == str(rank)}
    named = [b for b in bills if b.get("process") in names]
    if named:
        return named[0]
    unnamed = [b for b in bills if "process" not in b]
    return unnamed[0] if len(unnamed) == 1 else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("gmemprof")
    p.add_argument("--only", nargs="*")
    a = p.parse_args()
    failures = 0
    for name, argv in PROGRAMS.items():
        if a.only and name not in a.only:
            continue
        plain_run = subprocess.run(argv + [name + "-plain"], capture_output=True, text=True, timeout=300)
        plain = readings(plain_run.stdout)
        if not plain:
            print(f"{name}: the unrecorded program printed no readings (exit {plain_run.returncode}): "
                  f"{plain_run.stderr.strip()[-400:]}")
            failures += 1
            continue
        for hook in ("interpose", "cupti"):
            report = f"/tmp/own-{name}-{hook}.json"
            if os.path.exists(report):
                os.remove(report)
            r = subprocess.run([a.gmemprof, "record", "--hook", hook, "-o", report, "--"] + argv + [f"{name}-{hook}"],
                               capture_output=True, text=True, timeout=300)
            recorded = readings(r.stdout)
            for rank, own_readings in sorted(plain.items()):
                rec = recorded.get(rank)
                if rec is None or not os.path.exists(report):
                    print(f"{name} {hook} rank {rank}: FAIL: no readings or no report (exit {r.returncode}): "
                          f"{r.stderr.strip()[-400:]}")
                    failures += 1
                    continue
                apart = {k: round(rec[k] - v, 4) for k, v in own_readings.items() if k in rec and rec[k] != v}
                bill = bill_of(report, rank)
                own_change = (own_readings["end"] - own_readings["start"]) * MiB
                delta = bill["process_memory"]["delta_bytes"] if bill and "process_memory" in bill else None
                own = bill.get("own", {}) if bill else {}
                stated = own.get("bytes", 0)
                ok = delta is not None and abs(delta - own_change - stated) <= 2 * MiB and \
                    all(abs(d) <= 2 for d in apart.values())
                failures += not ok
                said = f"{stated / MiB:.2f} MiB" if "bytes" in own else ("not told apart" if own else "not said")
                print(f"{name} {hook} rank {rank}: {'ok' if ok else 'FAIL'}: the program's own change "
                      f"{own_change / MiB:+.2f} MiB unrecorded; the recorded bill's process change "
                      f"{'?' if delta is None else f'{delta / MiB:+.2f} MiB'}; gmem's own: {said}; "
                      f"readings recorded less unrecorded (MiB): {apart or 'none differ'}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
