#!/usr/bin/env bash
# Runs one libFuzzer target of a GMEM_FUZZ build for SECONDS, from a seed corpus made of the
# committed reports (tools/fuzz_seeds.py), and fails on any crash, hang (a run over 10 s),
# leak or out-of-memory (2 GiB). What it finds goes to BUILD/fuzz/NAME/ (crash-*, timeout-*).
# Usage: tools/fuzz.sh BUILD_DIR NAME [SECONDS] [EXTRA libFuzzer FLAGS...]
#   NAME: report check bench skeleton recorded
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: tools/fuzz.sh BUILD_DIR NAME [SECONDS]}
name=${2:?usage: tools/fuzz.sh BUILD_DIR NAME [SECONDS]}
seconds=${3:-60}
shift $(( $# < 3 ? $# : 3 ))
binary="$build/tests/fuzz/gmem_fuzz_$name"
[ -x "$binary" ] || { echo "fuzz: $binary is not built (configure with -DGMEM_FUZZ=ON, tools/sanitize.sh)" >&2; exit 2; }
work="$build/fuzz/$name"
mkdir -p "$work/corpus" "$work/seeds" "$work/tmp"
python3 tools/fuzz_seeds.py "$name" "$work/seeds"
export TMPDIR="$work/tmp"
# Leaks are checked (detect_leaks); the CUDA runtime is never started by the readers.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
start=$(date +%s)
set +e
"$binary" "$work/corpus" "$work/seeds" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=262144 -artifact_prefix="$work/" -print_final_stats=1 "$@" > "$work/log.txt" 2>&1
rc=$?
set -e
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log.txt" | grep -o '[0-9]*$' || echo "?")
cov=$(grep -o 'cov: [0-9]*' "$work/log.txt" | tail -1 | grep -o '[0-9]*' || echo "?")
echo "fuzz.$name: exit $rc after $(( $(date +%s) - start )) s, $runs inputs, coverage $cov edges, corpus $(ls "$work/corpus" | wc -l) files"
if [ "$rc" != 0 ]; then
  tail -60 "$work/log.txt" >&2
  ls "$work"/crash-* "$work"/timeout-* "$work"/oom-* "$work"/leak-* 2>/dev/null >&2 || true
fi
exit "$rc"
