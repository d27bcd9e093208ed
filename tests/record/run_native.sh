#!/usr/bin/env bash
# The runs on the GPU machine: PyTorch's native allocator, a serving warm-up (batch sizes
# largest first) with one shared graph pool, one pool per graph, and expandable segments, each
# recorded and compared with PyTorch's own snapshot (tests/record/check_native.py).
# Usage: tests/record/run_native.sh BUILD_DIR OUT_DIR
set -u
build=$(cd "$1" && pwd); out=$2; here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
fails=0
for variant in shared per-graph expandable; do
  args=(--allocator native --mixed 20)
  case $variant in
    per-graph) args+=(--pool per-graph) ;;
    expandable) args+=(--expandable) ;;
  esac
  report="$out/native-$variant-$gpu.json"
  "$build/profiler/gmemprof" record --out "$report" -- python3 "$here/torch_serving.py" \
    "$out/native-$variant-$gpu-self.json" "${args[@]}" 2>&1 | tail -14
  echo "=== $variant"
  python3 "$here/check_native.py" "$out/native-$variant-$gpu-self.json" "$report" \
    --json "$out/native-$variant-check.json" || fails=$((fails + 1))
done
"$build/profiler/gmemprof" show "$out/native-shared-$gpu.json" | head -40
echo "native variants failing: $fails"
