#!/usr/bin/env bash
# The host suite under AddressSanitizer and UndefinedBehaviorSanitizer (-fno-sanitize-recover:
# any finding fails), built with clang, plus a short run of every fuzz target, and
# the ledger's tests under ThreadSanitizer (other threads' graphs read a graph's allocations
# through the registry while it records them), and the recording session's.
# tools/test.sh runs it after the main suite; CI runs that.
# Usage: tools/sanitize.sh [BUILD_DIR] [FUZZ_SECONDS]   (defaults: build-san, 60)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-san}
seconds=${2:-${GMEM_FUZZ_SECONDS:-60}}
for tool in clang++ python3; do
  command -v "$tool" >/dev/null || { echo "sanitize: $tool is missing (tools/setup.sh installs it)" >&2; exit 1; }
done
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_CXX_FLAGS="-O1 -g" -DGMEM_SANITIZE=ON -DGMEM_FUZZ=ON -DGMEM_FUZZ_SECONDS="$seconds" \
  -DGMEM_BUILD_BENCHMARKS=OFF -DGMEM_BUILD_PYTHON=OFF "${launcher[@]}" >/dev/null
targets=(gmem_alloc_tests gmem_model_tests gmem_report_tests gmem_profiler_tests gmem_record_tests gmem_app_tests gmemprof)
for f in report check bench skeleton recorded; do targets+=("gmem_fuzz_$f"); done
cmake --build "$build" --target "${targets[@]}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
# The host tests and the command-line checks; not the package test (a consumer would have to
# link the sanitizer runtimes too) nor the Chromium page test (the same gmemprof html runs in
# views.trace's build, and the page test in the main suite).
ctest --test-dir "$build" --output-on-failure -L host \
  -E '^(package\.|python\.|views\.html|model_scale)' || status=1
ctest --test-dir "$build" --output-on-failure -L fuzz -j "$(nproc)" || status=1
# Plain C++ (no CUDA): the ledger, its index and the registry, with the tests that use threads.
echo "sanitize: the ledger's tests under ThreadSanitizer" >&2
tsan="$build/gmem_ledger_tsan"
clang++ -std=c++17 -O1 -g -fsanitize=thread -Ialloc/include \
  tests/host/alloc/graph_ledger_test.cpp tests/host/alloc/address_index_test.cpp tests/host/alloc/free_paths_test.cpp \
  alloc/src/graph_ledger.cpp alloc/src/allocation_registry.cpp alloc/src/format.cpp \
  -lgtest -lgtest_main -pthread -o "$tsan" || status=1
TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1}" "$tsan" --gtest_brief=1 || status=1
# The recording session's handlers, called from several threads at once as CUPTI calls them,
# its exit path waiting on another thread's hold (record/session.cpp, with a fake driver), and the
# graphs analysed on several threads at exit (record/parallel_for.hpp).
echo "sanitize: the recording session's tests under ThreadSanitizer" >&2
tsan_record="$build/gmem_record_tsan"
profiler_core=$(sed -n '/^add_library(gmem_\(model\|profiler_core\|views\) STATIC/,/)/p' profiler/CMakeLists.txt |
  grep -oE '(model|report|views)/[a-z_]+\.cpp' | sed 's|^|profiler/|')
record_core=$(sed -n '/^add_library(gmem_record_core STATIC/,/)/p' record/CMakeLists.txt |
  grep -oE '[a-z_]+\.cpp' | sed 's|^|record/|')
# shellcheck disable=SC2086  # the lists are words
clang++ -std=c++17 -O1 -g -fsanitize=thread -I. -Iprofiler -Iprofiler/include -Iprofiler/model/include -Iprofiler/views/include -Itests/host -Itests/host/record \
  -DGMEM_SOURCE_DIR="\"$PWD\"" tests/host/record/record_session_test.cpp $profiler_core $record_core \
  -lgtest -lgtest_main -pthread -o "$tsan_record" || status=1
TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1}" "$tsan_record" --gtest_brief=1 \
  --gtest_filter='RecordSession.Threads*:RecordSession.Exit*:RecordSession.Completions*:RecordSession.TheReportIsTheSame*:RecordSession.SharedWork*' || status=1
# A report's text made and read in runs on several threads (profiler/report: the pieces of
# json_tree.cpp, the rows and fitted text of report_json.cpp, recording_json.cpp's runs).
echo "sanitize: reports written and read on threads under ThreadSanitizer" >&2
tsan_reports="$build/gmem_reports_tsan"
# shellcheck disable=SC2086  # the list is words
clang++ -std=c++17 -O1 -g -fsanitize=thread -I. -Iprofiler -Iprofiler/include -Iprofiler/model/include -Iprofiler/views/include -Itests/host -Itests/host/record \
  tests/host/report/json_tree_test.cpp tests/host/report/recording_forms_test.cpp $profiler_core \
  -lgtest -lgtest_main -pthread -o "$tsan_reports" || status=1
TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1}" "$tsan_reports" --gtest_brief=1 \
  --gtest_filter='JsonTree.*:RecordingForms.LongArrays*:RecordingForms.TheTextAndWhatIsReadBack*' || status=1
# The handoff of the recording library's readings to its helper thread (record/handoff.cpp).
echo "sanitize: the readings' handoff under ThreadSanitizer" >&2
tsan_handoff="$build/gmem_handoff_tsan"
clang++ -std=c++17 -O1 -g -fsanitize=thread -I. tests/host/record/handoff_test.cpp record/handoff.cpp \
  -lgtest -lgtest_main -pthread -o "$tsan_handoff" || status=1
TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1}" "$tsan_handoff" --gtest_brief=1 || status=1
exit "$status"
