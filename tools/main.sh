#!/usr/bin/env bash
# The main job: builds gmem (installing what is missing) and runs `gmemprof info`.
# Without a GPU, gmemprof says so in one line and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh build
exec build/profiler/gmemprof info "$@"
