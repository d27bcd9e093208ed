#!/usr/bin/env bash
# The tests: builds gmem (installing what is missing) and runs every test with ctest.
# Without a GPU the gpu-labelled tests are reported as skipped, with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh build
exec ctest --test-dir build --output-on-failure "$@"
