"""The prediction, linear extrapolation and the measured bill of one warm-up, side by side: the
sample and the full warm-up each in a fresh process (decoder_warmup.py), then `gmemprof predict`
on the sample for the full warm-up's sizes. Writes DIR/NAME-{sample,measured,prediction}.json and
DIR/NAME.json (the comparison, with the device, the commit and the command); prints the table,
and each graph's prediction against what it measured (not judged), and exits 1 when a kind is off
by more than 5% or 64 MiB.

Usage: compare_warmup.py --sizes vllm|sglang|all|LIST [--style vllm|sglang|vllm-aux] --sample N --gmemprof PATH --out DIR [--name NAME]
       [--commit TEXT] [--env K=V]... [--ranks N] [--from sample|record]
(--ranks N: N torchrun ranks, one device each, each rank's prediction against its own bill;
--from record: the sampled sizes captured plainly under `gmemprof record`, and the prediction
made from the recording: graphs with memory nodes only, so cudaMallocAsync; it sees no
allocator calls and nothing outside the pools but libraries' buffers, so only the pools are
judged)"""
import argparse
import json
import os
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, os.pardir, os.pardir, "python"))
import gmem.predict  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--sizes", default="vllm")
ap.add_argument("--sample", type=int, default=4)
ap.add_argument("--style", choices=["vllm", "sglang", "vllm-aux"], default="vllm")
ap.add_argument("--gmemprof", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--name")
ap.add_argument("--commit", default="")
ap.add_argument("--env", action="append", default=[])
ap.add_argument("--ranks", type=int, default=1)
ap.add_argument("--from", dest="source", choices=["sample", "record"], default="sample")
a = ap.parse_args()
if a.source == "record" and a.ranks != 1:
    ap.error("--from record predicts one process's recording: --ranks 1")
name = a.name or "warmup-%s-sample%d" % (a.sizes, a.sample)
os.makedirs(a.out, exist_ok=True)
env = dict(os.environ)
for kv in a.env:
    k, _, v = kv.partition("=")
    env[k] = v
paths = {k: os.path.join(a.out, "%s-%s.json" % (name, k)) for k in ("sample", "measured", "prediction")}
warmup = os.path.join(here, "decoder_warmup.py")
launch = [sys.executable] if a.ranks == 1 else ["torchrun", "--nproc-per-node", str(a.ranks)]
seconds = {}
sys.path.insert(0, here)
from decoder_warmup import capture_sizes  # noqa: E402

order = sorted(capture_sizes(a.sizes), reverse=True)  # the warm-up's: largest first
picked = gmem.predict.pick_sizes(order, a.sample)
for mode in ("sample", "full"):
    t = time.time()
    cmd = launch + [warmup, mode, "--sizes", a.sizes, "--style", a.style, "--out", paths["sample" if mode == "sample" else "measured"]]
    if mode == "sample" and a.source == "record":
        cmd = [a.gmemprof, "record", "--out", paths["sample"], "--"] + launch + [
            warmup, "full", "--sizes", ",".join(str(s) for s in picked), "--style", a.style,
            "--out", os.path.join(a.out, name + "-recorded-run.json")]
    elif mode == "sample":
        cmd += ["--sample", str(a.sample)]
    subprocess.run(cmd, check=True, env=env)
    seconds[mode] = round(time.time() - t, 1)
import torch  # noqa: E402


def ranked(path, r):
    root, ext = os.path.splitext(path)
    return path if a.ranks == 1 else "%s.rank%d%s" % (root, r, ext)


per_rank = []
ok = True
for r in range(a.ranks):
    t = time.time()
    cmd = [a.gmemprof, "predict", ranked(paths["sample"], r), "--json", ranked(paths["prediction"], r)]
    if a.source == "record":
        cmd += ["--sampled-sizes", ",".join(str(s) for s in picked), "--sizes", ",".join(str(s) for s in order)]
    subprocess.run(cmd, check=True)
    seconds["predict"] = round(time.time() - t, 2)
    full = json.load(open(ranked(paths["measured"], r)))
    prediction = json.load(open(ranked(paths["prediction"], r)))
    bill = gmem.predict.measured(full["before"], full["after"])
    rows = gmem.predict.compare(prediction, bill)
    by_graph = gmem.predict.compare_graphs(prediction, full.get("each_graph", []))
    judged = rows if a.source == "sample" else [x for x in rows if x["kind"] in ("framework_pool", "node_pool")]
    ok = ok and all(x["within"] is not False for x in judged)
    per_rank.append({"rank": r, "device": torch.cuda.get_device_name(r), "allocator": full["allocator"],
                     "sizes": len(full["sizes"]), "graphs": full["graphs"],
                     "sampled_sizes": prediction["sample"]["sizes"], "measured": bill,
                     "prediction_total": prediction["total"], "kinds": prediction["kinds"],
                     "linear": prediction["linear"], "model_checks": prediction["model_checks"],
                     "notes": prediction["notes"], "rows": rows, "graphs_compared": by_graph})
    print("%s rank %d: %d sizes, %d graphs, sampled %s on %s, %s" % (
        name, r, len(full["sizes"]), full["graphs"], per_rank[-1]["sampled_sizes"], per_rank[-1]["device"],
        full["allocator"]))
    print(gmem.predict.table(rows))
    if a.source == "record":
        print("from a recording: only the pools are judged (rest: the executable-graph state, read once a graph, "
              "and libraries' buffers; no eager cache or workspace outside the pools)")
    print("model checks:", [(c["size"], c["simulated_bytes"] - c["measured_bytes"]) for c in prediction["model_checks"]])
    for line in gmem.predict.graphs_text(by_graph) if by_graph else ():
        print(line)
result = {"name": name, "style": a.style, "from": a.source, "torch": torch.__version__, "commit": a.commit, "command": " ".join(sys.argv),
          "env": a.env, "ranks": per_rank, "seconds": seconds}
out = os.path.join(a.out, name + ".json")
with open(out + ".tmp", "w") as f:
    json.dump(result, f, indent=1)
os.replace(out + ".tmp", out)
sys.exit(0 if ok else 1)
