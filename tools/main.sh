#!/usr/bin/env bash
# The main job: builds gmem (installing what is missing), then
#  - on a machine with a GPU: runs the scenario suite, writes a report (gmem-report.json, or
#    --out PATH) and shows it;
#  - without one: says so in one line and checks the committed report against the committed
#    baseline (both measured on an H100), as a user's CI would check a new report.
# Arguments go to `gmemprof run` (scenario names, --out PATH, --reps N, --list ...).
set -euo pipefail
here=$(pwd)
cd "$(dirname "$0")/.."
tools/setup.sh build
gmemprof=$PWD/build/profiler/gmemprof
if "$gmemprof" info | grep -q "no usable CUDA GPU"; then
  "$gmemprof" info
  echo "main: the committed baseline (measured on an H100):"
  python3 tools/baseline_table.py reports/baseline/h100.json
  echo
  echo "main: checking the committed report reports/latest/h100.json against reports/baseline/h100.json"
  exec "$gmemprof" check reports/baseline/h100.json reports/latest/h100.json
fi
cd "$here"  # relative paths in the arguments are the caller's
out=gmem-report.json
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --list | --help | -h) exec "$gmemprof" run "${args[@]}" ;;
    --out)
      if ((i + 1 >= ${#args[@]})); then
        echo "main: --out needs a path" >&2
        exit 2
      fi
      out=${args[$((i + 1))]}
      ;;
  esac
done
[[ " ${args[*]-} " == *" --out "* ]] || args+=(--out "$out")
rc=0
"$gmemprof" run "${args[@]}" || rc=$?
# 3 with a report: a scenario failed, the report was written; show it all the same.
if ((rc == 0)) || { ((rc == 3)) && [ -f "$out" ]; }; then "$gmemprof" show "$out"; fi
exit "$rc"
