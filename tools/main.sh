#!/usr/bin/env bash
# The main job: builds gmem (installing what is missing), then
#  - on a machine with a GPU: runs the scenario suite, writes a report (gmem-report.json, or
#    --out PATH) and shows it;
#  - without one: says so in one line and checks the committed report against the committed
#    baseline (both measured on an H100), as a user's CI would check a new report.
# Arguments go to `gmemprof run` (scenario names, --out PATH, --reps N, --list ...).
# GMEM_BUILD_DIR names the build folder (default: build).
set -euo pipefail
here=$(pwd)
cd "$(dirname "$0")/.."
build_dir=${GMEM_BUILD_DIR:-build}
tools/setup.sh "$build_dir"
gmemprof=$(cd "$build_dir" && pwd)/profiler/gmemprof
# `gmemprof info` exits 0 with a usable GPU and 3 without one, saying why on its first line.
gpu=0
info=$("$gmemprof" info 2>&1) || gpu=$?
if ((gpu == 3)); then
  printf '%s\n' "${info%%$'\n'*}"
  echo "main: the committed baseline (measured on an H100):"
  python3 tools/baseline_table.py reports/baseline/h100.json
  echo
  echo "main: checking the committed report reports/latest/h100.json against reports/baseline/h100.json"
  exec "$gmemprof" check reports/baseline/h100.json reports/latest/h100.json
elif ((gpu != 0)); then
  printf '%s\n' "$info" >&2
  echo "main: gmemprof info failed (exit $gpu); nothing was run" >&2
  exit "$gpu"
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
