#!/usr/bin/env python3
"""The prediction of committed warm-up runs (tests/predict/compare_warmup.py's files: NAME-sample,
NAME-measured, one per rank, and NAME.json with the warm-up's style) made again with this gmemprof,
against the bills the runs measured, and linear extrapolation beside it: one table per run and rank,
and where the run measured each graph, how many graphs the prediction has to the byte.
Judged are the runs whose sample read the executable-graph state from copies at every size, and
those predicted from a recording (judge() says how). Exit 1 when a judged run is off.

Usage: predict_summary.py DIR... --gmemprof PATH"""
import argparse
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))
import gmem.predict  # noqa: E402


def committed_runs(root):
    """Each run under `root` (a folder of runs, or of such folders): a dict with its sample's path
    and name, where it came from (a sample, or a recording of the sampled captures), the sampled
    sizes, the measured bill, its style, and whether it is judged."""
    paths = sorted(glob.glob(os.path.join(root, "*-sample*.json")) + glob.glob(os.path.join(root, "*", "*-sample*.json")))
    out = []
    for path in paths:
        sample = json.load(open(path))
        full = json.load(open(path.replace("-sample", "-measured")))
        run_path = path.split("-sample")[0] + ".json"
        run = json.load(open(run_path)) if os.path.exists(run_path) else {}
        source = run.get("from", "sample")
        if source == "record":
            sampled = run["ranks"][0]["sampled_sizes"]
            judged = True
        else:
            sampled = [s["size"] for s in sample["sizes"]]
            judged = all(s.get("exec_state_bytes") is not None for s in sample["sizes"])
        out.append({"path": path, "name": os.path.basename(path).replace("-sample", "")[:-len(".json")],
                    "from": source, "sampled_sizes": sampled, "full": full,
                    "bill": gmem.predict.measured(full["before"], full["after"]),
                    "style": run.get("style", "vllm"), "allocator": full["allocator"], "judged": judged})
    return out


def predict_run(run, gmemprof=None):
    """The run's prediction made again: from its sample, or from its recording for the sizes its
    full warm-up captured, in their order."""
    if run["from"] == "record":
        return gmem.predict.predict(run["path"], sizes=run["full"]["sizes"], sampled_sizes=run["sampled_sizes"],
                                    gmemprof=gmemprof)
    return gmem.predict.predict(run["path"], gmemprof=gmemprof)


def judge(run, prediction):
    """The rows of gmem.predict.compare and whether the run is off: a kind off by more than 5%
    or 64 MiB, or the measured total outside the predicted total and its uncertainty. From a
    recording, which sees no allocator calls and nothing outside the pools but libraries'
    buffers, only the pools are judged."""
    rows = gmem.predict.compare(prediction, run["bill"])
    if run["from"] == "record":
        return rows, any(r["within"] is False for r in rows if r["kind"] in ("framework_pool", "node_pool"))
    total = prediction["total"]
    return rows, any(r["within"] is False for r in rows) or \
        abs(total["predicted_bytes"] - run["bill"]["total"]) > total["uncertainty_bytes"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--gmemprof", required=True)
    a = ap.parse_args()
    status = 0
    for run in [r for d in a.dirs for r in committed_runs(d)]:
        prediction = predict_run(run, a.gmemprof)
        rows, off = judge(run, prediction)
        total = prediction["total"]
        print("%s: %s-style, %s, %d sizes, %d graphs, sampled %s%s%s" % (
            run["name"], run["style"], run["allocator"], len(run["full"]["sizes"]), run["full"]["graphs"],
            run["sampled_sizes"], " from a recording (only the pools judged)" if run["from"] == "record" else "",
            "" if run["judged"] else " (not judged: its sample read no executable-graph state from copies)"))
        print(gmem.predict.table(rows))
        print("  total %.1f MiB +- %.1f MiB predicted, %.1f MiB measured" % (
            total["predicted_bytes"] / 2**20, total["uncertainty_bytes"] / 2**20, run["bill"]["total"] / 2**20))
        by_graph = gmem.predict.compare_graphs(prediction, run["full"].get("each_graph", []))
        for line in gmem.predict.graphs_text(by_graph) if by_graph else ():
            print("  " + line)
        if run["from"] == "sample":
            print("  allocator model on the sample: %s" % ("exact" if all(
                c["simulated_bytes"] == c["measured_bytes"] for c in prediction["model_checks"]) else "OFF"))
        for n in prediction["notes"]:
            print("  note:", n)
        if run["judged"] and off:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
