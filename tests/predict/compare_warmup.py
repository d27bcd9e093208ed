"""The prediction, linear extrapolation and the measured bill of one warm-up, side by side: the
sample and the full warm-up each in a fresh process (decoder_warmup.py), then `gmemprof predict`
on the sample for the full warm-up's sizes. Writes DIR/NAME-{sample,measured,prediction}.json and
DIR/NAME.json (the comparison, with the device, the commit and the command); prints the table and
exits 1 when a kind is off by more than 5% or 64 MiB.

Usage: compare_warmup.py --sizes vllm|all|LIST --sample N --gmemprof PATH --out DIR [--name NAME]
       [--commit TEXT] [--env K=V]..."""
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
ap.add_argument("--gmemprof", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--name")
ap.add_argument("--commit", default="")
ap.add_argument("--env", action="append", default=[])
a = ap.parse_args()
name = a.name or "warmup-%s-sample%d" % (a.sizes, a.sample)
os.makedirs(a.out, exist_ok=True)
env = dict(os.environ)
for kv in a.env:
    k, _, v = kv.partition("=")
    env[k] = v
paths = {k: os.path.join(a.out, "%s-%s.json" % (name, k)) for k in ("sample", "measured", "prediction")}
warmup = os.path.join(here, "decoder_warmup.py")
seconds = {}
for mode in ("sample", "full"):
    t = time.time()
    cmd = [sys.executable, warmup, mode, "--sizes", a.sizes, "--out", paths["sample" if mode == "sample" else "measured"]]
    if mode == "sample":
        cmd += ["--sample", str(a.sample)]
    subprocess.run(cmd, check=True, env=env)
    seconds[mode] = round(time.time() - t, 1)
t = time.time()
subprocess.run([a.gmemprof, "predict", paths["sample"], "--json", paths["prediction"]], check=True)
seconds["predict"] = round(time.time() - t, 2)
sample = json.load(open(paths["sample"]))
full = json.load(open(paths["measured"]))
prediction = json.load(open(paths["prediction"]))
bill = gmem.predict.measured(full["before"], full["after"])
rows = gmem.predict.compare(prediction, bill)
import torch  # noqa: E402
result = {
    "name": name, "device": torch.cuda.get_device_name(0), "driver": torch.cuda.driver_version()
    if hasattr(torch.cuda, "driver_version") else None, "torch": torch.__version__, "commit": a.commit,
    "command": " ".join(sys.argv), "env": a.env, "allocator": full["allocator"], "sizes": len(full["sizes"]),
    "graphs": full["graphs"], "sampled_sizes": [s["size"] for s in sample["sizes"]], "seconds": seconds,
    "measured": bill, "prediction_total": prediction["total"], "kinds": prediction["kinds"],
    "linear": prediction["linear"], "model_checks": prediction["model_checks"], "rows": rows,
}
with open(os.path.join(a.out, name + ".json") + ".tmp", "w") as f:
    json.dump(result, f, indent=1)
os.replace(os.path.join(a.out, name + ".json") + ".tmp", os.path.join(a.out, name + ".json"))
print("%s: %d sizes, %d graphs, sampled %s on %s" % (name, result["sizes"], result["graphs"],
                                                     result["sampled_sizes"], result["device"]))
print(gmem.predict.table(rows))
print("model checks:", [(c["size"], c["simulated_bytes"] - c["measured_bytes"]) for c in prediction["model_checks"]])
sys.exit(0 if all(r["within"] is not False for r in rows) else 1)
