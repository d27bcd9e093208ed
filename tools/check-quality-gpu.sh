#!/usr/bin/env bash
# The measurement behind reports/check-quality/, on the GPU machine: RUNS back-to-back
# `gmemprof run --trials K` of one binary, then RUNS runs of each injected regression
# (GMEM_SUITE_INJECT, a test-only switch of the suite) over the scenarios it touches. Check them
# with tools/check_quality.py GMEMPROF OUT_DIR (here or there).
# Usage: tools/check-quality-gpu.sh GMEMPROF OUT_DIR [RUNS] [TRIALS]   (defaults 10, 5)
set -euo pipefail
gmemprof=$1; out=$2; runs=${3:-10}; trials=${4:-5}
mkdir -p "$out"
for i in $(seq 1 "$runs"); do
  "$gmemprof" run --trials "$trials" --out "$out/clean$i.json" > /dev/null
done
declare -A scenarios=(
  [extra_granule]="single_alloc"
  [free_removed]="address_reuse_chain"
  [remap]="sequential_graphs_one_stream graphs_in_separate_streams outside_free_graph"
  [slow_launch]="sequential_graphs_one_stream graphs_in_separate_streams outside_free_graph"
  [slow_steady]="single_alloc --set bytes=2MiB")
for name in extra_granule free_removed remap slow_launch slow_steady; do
  for i in $(seq 1 "$runs"); do
    # shellcheck disable=SC2086
    GMEM_SUITE_INJECT=$name "$gmemprof" run ${scenarios[$name]} --trials "$trials" \
      --out "$out/inj-$name-$i.json" > /dev/null
  done
done
echo "check-quality-gpu: $runs clean runs and $runs of each injection in $out"
