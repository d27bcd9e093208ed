#!/usr/bin/env bash
# The record-mode runs on the GPU machine: serving warm-ups (PyTorch, largest and smallest
# first; C++), four threads, each compared with what the program read itself
# (tests/record/check_pool.py); `gmemprof replay --set`; `gmemprof check` of two recordings of
# one program (must pass) and of one with an extra held output (must fail on it); `gmemprof check`
# of two recordings of a warm-up of 2000 graphs (must pass).
# Usage: tests/record/run_pool.sh BUILD_DIR OUT_DIR   (a tools/device-build.sh build)
set -u
build=$(cd "$1" && pwd); out=$2; here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
results=()
case_result() {  # name, ok (0/1), detail
  results+=("$(python3 -c 'import json,sys; print(json.dumps({"case": sys.argv[1], "ok": sys.argv[2] == "0", "detail": sys.argv[3]}))' "$1" "$2" "$3")")
  echo "== $1: $([ "$2" = 0 ] && echo PASS || echo FAIL) $3"
}
record() {  # report, command...
  local report=$1; shift
  "$build/profiler/gmemprof" record --out "$report" -- "$@" 2>&1 | tail -20
  return "${PIPESTATUS[0]}"
}
check_case() {  # name, self, report
  python3 "$here/check_pool.py" "$2" "$3" --json "$out/$1-check.json" > "$out/$1-check.log" 2>&1
  local rc=$?
  cat "$out/$1-check.log"
  case_result "$1" "$rc" "$(tail -1 "$out/$1-check.log")"
}

echo "=== PyTorch serving warm-up, largest first"
record "$out/serving-$gpu.json" python3 "$here/torch_serving.py" "$out/serving-$gpu-self.json"
check_case torch_largest "$out/serving-$gpu-self.json" "$out/serving-$gpu.json"
"$build/profiler/gmemprof" show "$out/serving-$gpu.json" > "$out/serving-show.txt" 2>&1; head -80 "$out/serving-show.txt"
echo "=== PyTorch serving warm-up, smallest first"
record "$out/serving-smallest-$gpu.json" python3 "$here/torch_serving.py" "$out/serving-smallest-$gpu-self.json" --order smallest
check_case torch_smallest "$out/serving-smallest-$gpu-self.json" "$out/serving-smallest-$gpu.json"
echo "=== PyTorch serving warm-up, largest first again: check against the first"
record "$out/serving-again-$gpu.json" python3 "$here/torch_serving.py" "$out/serving-again-self.json"
"$build/profiler/gmemprof" check "$out/serving-$gpu.json" "$out/serving-again-$gpu.json" > "$out/check-torch.txt" 2>&1
rc=$?; cat "$out/check-torch.txt"; case_result torch_check_two_recordings $([ $rc = 0 ] && echo 0 || echo 1) "exit $rc"

echo "=== replay --set of the PyTorch recording"
"$build/profiler/gmemprof" replay "$out/serving-$gpu.json" --set > "$out/replay-set.txt" 2>&1
rc=$?; cat "$out/replay-set.txt"
within=$(grep -c "within a granule" "$out/replay-set.txt")
case_result replay_set $([ $rc = 0 ] && [ "$within" = 1 ] && echo 0 || echo 1) "exit $rc, $(grep 'high watermark' "$out/replay-set.txt" | head -1)"

echo "=== C++ serving warm-up"
for order in largest smallest; do
  record "$out/cpp-serving-$order.json" "$build/tests/gmem_record_client" serving "$out/cpp-serving-$order-self.json" $order
  check_case "cpp_$order" "$out/cpp-serving-$order-self.json" "$out/cpp-serving-$order.json"
done
record "$out/cpp-serving-again.json" "$build/tests/gmem_record_client" serving "$out/cpp-serving-again-self.json" largest
"$build/profiler/gmemprof" check "$out/cpp-serving-largest.json" "$out/cpp-serving-again.json" > "$out/check-cpp.txt" 2>&1
rc=$?; cat "$out/check-cpp.txt"; case_result cpp_check_two_recordings $([ $rc = 0 ] && echo 0 || echo 1) "exit $rc"
record "$out/cpp-serving-extra.json" "$build/tests/gmem_record_client" serving "$out/cpp-serving-extra-self.json" largest extra
"$build/profiler/gmemprof" check "$out/cpp-serving-largest.json" "$out/cpp-serving-extra.json" > "$out/check-extra.txt" 2>&1
rc=$?; cat "$out/check-extra.txt"
flagged=$(grep -ciE "regression" "$out/check-extra.txt")
case_result cpp_check_extra_output_fails $([ $rc = 1 ] && echo 0 || echo 1) "exit $rc (want 1), $flagged line(s) naming regressions"

echo "=== C++ four threads"
for run in 1 2; do
  record "$out/cpp-threads-$run.json" "$build/tests/gmem_record_client" threads "$out/cpp-threads-$run-self.json"
  check_case "cpp_threads_$run" "$out/cpp-threads-$run-self.json" "$out/cpp-threads-$run.json"
done
"$build/profiler/gmemprof" check "$out/cpp-threads-1.json" "$out/cpp-threads-2.json" > "$out/check-threads.txt" 2>&1
rc=$?; cat "$out/check-threads.txt"; case_result threads_check_two_recordings $([ $rc = 0 ] && echo 0 || echo 1) "exit $rc"

echo "=== A warm-up of 2000 graphs of one site, recorded twice: the check must pass"
# Single calls move up to 19x between such runs on an H100: judged by site, not call by call.
for run in 1 2; do
  record "$out/warmup-2000-$run.json" python3 "$here/scale/warmup.py" 2000 "$out/warmup-2000-$run-self.json"
done
"$build/profiler/gmemprof" check "$out/warmup-2000-1.json" "$out/warmup-2000-2.json" > "$out/check-warmup-2000.txt" 2>&1
rc=$?; head -12 "$out/check-warmup-2000.txt"
case_result warmup_2000_check_two_recordings $([ $rc = 0 ] && echo 0 || echo 1) "exit $rc, $(sed -n 4p "$out/check-warmup-2000.txt")"

printf '%s\n' "${results[@]}" | python3 -c '
import json, sys
cases = [json.loads(l) for l in sys.stdin if l.strip()]
print(json.dumps({"cases": cases, "passed": sum(c["ok"] for c in cases), "failed": sum(not c["ok"] for c in cases)}, indent=1))' > "$out/pool-summary.json"
cat "$out/pool-summary.json"
