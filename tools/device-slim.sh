#!/usr/bin/env bash
# The binaries of a tools/device-build.sh build, in the same layout, without the objects: what a
# GPU machine runs (the carry to it is limited to 64 MiB, and a full build folder is about that).
# Usage: tools/device-slim.sh [BUILD_DIR] [SLIM_DIR]   (defaults: build-gpu, build-dev)
set -euo pipefail
cd "$(dirname "$0")/.."
from=${1:-build-gpu}; to=${2:-build-dev}
rm -rf "$to"
mkdir -p "$to"/{profiler,record,tests,benchmarks}
cp "$from/profiler/gmemprof" "$to/profiler/"
cp "$from/record/libgmem_record.so" "$to/record/"
[ -f "$from/record/libgmem_record_preload.so" ] && cp "$from/record/libgmem_record_preload.so" "$to/record/"
cp -r "$from/record/companion" "$to/record/"
for t in gmem_gpu_tests gmem_record_client gmem_corpus_client gmem_driver_client gmem_update_client gmem_launch_soak gmem_free_soak; do cp "$from/tests/$t" "$to/tests/"; done
for b in gmem_bench gmem_model_scale_bench gmem_record_cost_bench libgmem_cupti_floor.so libgmem_record_ablate.so libgmem_interpose_floor.so \
    libgmem_companion_words_noop.so; do [ -f "$from/benchmarks/$b" ] && cp "$from/benchmarks/$b" "$to/benchmarks/"; done
cp -r "$from/lib" "$from/COMMIT" "$to/"
[ -d "$from/install-prefix" ] && cp -r "$from/install-prefix" "$to/"
du -sh "$to" | awk '{print "device-slim: " $2 " is " $1}'
