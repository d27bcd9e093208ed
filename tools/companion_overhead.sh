#!/usr/bin/env bash
# What the record companion costs (docs/record.md, "The bill"): tests/record/bill/
# companion_overhead.py's capture loop, timed by the script itself, unrecorded, recorded without
# the companion (GMEM_RECORD_COMPANION=0) and recorded with it, RUNS times each, interleaved.
# Prints one JSON line per run and the medians.
# Usage: tools/companion_overhead.sh BUILD_DIR OUT_DIR [RUNS] [CAPTURES]
set -u
build=$1; out=$2; runs=${3:-5}; captures=${4:-400}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
script="$here/tests/record/bill/companion_overhead.py"
for i in $(seq 1 "$runs"); do
  python3 "$script" --captures "$captures" "$out/plain-$i.json" > /dev/null
  GMEM_RECORD_COMPANION=0 "$build/profiler/gmemprof" record --out "$out/nocomp-$i.report.json" -- \
    python3 "$script" --captures "$captures" "$out/nocomp-$i.json" > /dev/null 2>&1
  "$build/profiler/gmemprof" record --out "$out/comp-$i.report.json" -- \
    python3 "$script" --captures "$captures" "$out/comp-$i.json" > /dev/null 2>&1
done
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
res = {}
for mode in ("plain", "nocomp", "comp"):
    res[mode] = [json.load(open(f"{out}/{mode}-{i}.json"))["per_capture_us"] for i in range(1, runs + 1)]
    print(json.dumps({"mode": mode, "per_capture_us": [round(x, 1) for x in res[mode]]}))
med = {m: statistics.median(v) for m, v in res.items()}
print(json.dumps({"median_per_capture_us": {m: round(v, 1) for m, v in med.items()},
                  "companion_us_per_capture": round(med["comp"] - med["nocomp"], 1),
                  "recording_us_per_capture": round(med["nocomp"] - med["plain"], 1)}))
PY
