#!/usr/bin/env python3
"""Ranks recorded in one command (`gmemprof record -- torchrun --nproc-per-node N
rank_worker.py OUT_DIR`) against what each rank read itself: one bill per rank, named by its
rank and for the rank's device; each rank's memory-node pool retained and high equal its own
counters (reserved_current, reserved_high); with PyTorch's native allocator, each rank's
framework pools retained equal the graph pools of the rank's own memory snapshot; each rank's
graph count; where ranks have GPUs of their own, the bill's process change equals the rank's own
cudaMemGetInfo change, the all-reduce captured in a graph sums right under record and each rank's
graphs are on its device; `gmemprof show` opens with the ranks side by side and names the rank
whose graphs cost more.

Usage: check_ranks.py GMEMPROF REPORT OUT_DIR    exit 0 when all hold, 1 otherwise."""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
import report_forms  # noqa: E402

gmemprof, report_path, out_dir = sys.argv[1:4]
rep = report_forms.load(report_path)
rec = rep["recorded"]
results = []


def check(ok, what):
    results.append((bool(ok), what))


MIB = 1 << 20


def mib(n):
    return "?" if n is None else f"{n / MIB:.1f} MiB"


selves = {str(d["rank"]): d for d in (json.load(open(p)) for p in glob.glob(os.path.join(out_dir, "rank-*.json")))}
bills = {b.get("process", ""): b for b in rec.get("bills", [])}
check(len(selves) >= 2, f"{len(selves)} ranks wrote their readings")
for r, self_doc in sorted(selves.items()):
    label = f"rank {r}"
    b = bills.get(label)
    check(b is not None, f"{label}: a bill named by its rank (bills: {sorted(bills)})")
    if not b:
        continue
    # A rank whose graphs have no memory nodes (the native allocator) has no memory-node pool:
    # zero, as its counters say.
    node = b.get("memory_node_pool", {"retained_bytes": 0, "high_bytes": 0})
    check(node.get("retained_bytes") == self_doc["reserved_current"],
          f"{label}: memory-node pool retained {node.get('retained_bytes')} = the rank's reserved_current {self_doc['reserved_current']}")
    check(node.get("high_bytes") == self_doc["reserved_high"],
          f"{label}: memory-node pool high {node.get('high_bytes')} = the rank's reserved_high {self_doc['reserved_high']}")
    if "snapshot_pool_bytes" in self_doc:
        fw = b.get("framework_pools", {})
        check(fw.get("retained_bytes") == self_doc["snapshot_pool_bytes"],
              f"{label}: framework pools retained {mib(fw.get('retained_bytes'))} = the graph pools of the "
              f"rank's own PyTorch snapshot {mib(self_doc['snapshot_pool_bytes'])}")
    graphs = [g for g in rec["graphs"] if g["name"].startswith(f"[{label} pid ")]
    check(len(graphs) == self_doc["graphs"], f"{label}: {len(graphs)} recorded graphs = {self_doc['graphs']} captured")
    check(b.get("device") == self_doc["device"], f"{label}: its bill is for device {b.get('device')}, the rank's {self_doc['device']}")
    if self_doc.get("own_gpu") and "used_start" in self_doc:
        # cudaMemGetInfo is the device's: a rank's own reading is its alone only on a GPU of its
        # own. The bill starts when the context is made and ends at the program's end.
        pm = b.get("process_memory", {})
        want = self_doc["used_end"] - self_doc["used_start"]
        got = pm.get("delta_bytes")
        check(got is not None and abs(got - want) <= 2 * MIB,
              f"{label}: the bill's process change {mib(got)} = the rank's own cudaMemGetInfo change {mib(want)} "
              "(within 2 MiB)")
        # What the rank's captures took beyond their pool's mapping (graph memory nodes map at
        # launch) is the bill's executable-graph state, framework capture memory and libraries at
        # capture: NCCL's share of a collective graph there, shown as such where it is not zero.
        took = sum(self_doc["capture_growth"])
        state = (b.get("exec_state", {}).get("bytes", 0) + b.get("framework_pools", {}).get("capture_bytes", 0) +
                 b.get("libraries_at_capture", {}).get("bytes", 0))
        check(state == took, f"{label}: its captures took {mib(took)} by its own readings; the bill's state, "
              f"capture memory and libraries at capture {mib(state)}")
    if self_doc.get("collective"):
        check(self_doc["all_reduce"] == self_doc["all_reduce_expected"],
              f"{label}: the all-reduce captured in a graph gave {self_doc['all_reduce']} under record, "
              f"{self_doc['all_reduce_expected']} expected")
        check(all(g["devices"] == [self_doc["device"]] for g in graphs),
              f"{label}: every graph of the rank allocates on its device {self_doc['device']} alone")
show = subprocess.run([gmemprof, "show", report_path], capture_output=True, text=True)
check(show.returncode == 0, f"gmemprof show exits {show.returncode}")
check("what CUDA graphs cost each process's device" in show.stdout, "show puts the ranks side by side")
check("rank 0's graphs cost" in show.stdout, "show names rank 0 (the sampler's) as the costlier")
for ok, what in results:
    print(("PASS " if ok else "FAIL ") + what)
sys.exit(0 if all(ok for ok, _ in results) else 1)
