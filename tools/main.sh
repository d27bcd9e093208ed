#!/usr/bin/env bash
# The main job: builds gmem (installing what is missing), then
#  - on a machine with a GPU: runs the scenario suite, writes gmem-report.json and shows it;
#  - without one: says so in one line and checks the committed report against the committed
#    baseline (both measured on an H100), as CI would check a new report.
# Arguments go to `gmemprof run` (e.g. scenario names, --out PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh build
gmemprof=build/profiler/gmemprof
if ! "$gmemprof" info >/dev/null 2>&1 || "$gmemprof" info | grep -q "no usable CUDA GPU"; then
  "$gmemprof" info
  echo "main: checking the committed report reports/latest/h100.json against reports/baseline/h100.json"
  exec "$gmemprof" check reports/baseline/h100.json reports/latest/h100.json
fi
out=gmem-report.json
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do [ "${args[$i]}" = --out ] && out=${args[$((i + 1))]}; done
[[ " ${args[*]-} " == *" --out "* ]] || args+=(--out "$out")
"$gmemprof" run "${args[@]}"
exec "$gmemprof" show "$out"
