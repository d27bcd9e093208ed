#!/usr/bin/env bash
# The tests: builds gmem (installing what is missing) and runs every test with ctest.
# Without a GPU the gpu-labelled tests are reported as skipped, with the reason.
# Arguments go to the first ctest (the main build), e.g. -L host or -R Report.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh build
status=0
ctest --test-dir build --output-on-failure "$@" || status=1
# Then the host suite again under ASan and UBSan (clang), and 60 s of each fuzz target
# (GMEM_FUZZ_SECONDS to change it; GMEM_SKIP_SANITIZE=1 to leave this part out locally).
if [ "${GMEM_SKIP_SANITIZE:-0}" != 1 ]; then
  tools/sanitize.sh build-san || status=1
fi
exit "$status"
