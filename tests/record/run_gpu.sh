#!/usr/bin/env bash
# Runs record mode's GPU checks on the GPU machine: the four clients under `gmemprof record`,
# each compared with what it read itself, `gmemprof show` and `gmemprof check` on each report,
# a partial report (SIGTERM), then the overhead benchmark.
# Usage: tests/record/run_gpu.sh BIN_DIR OUT_DIR [multi]  (multi: two GPUs, the clients then
# the multi-GPU attribution only)   (BIN_DIR: gmemprof, libgmem_record.so,
# gmem_record_client, COMMIT)
set -u
bin=$(cd "$1" && pwd); out=$2; here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv | tee "$out/device.txt"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
echo "gpu tag: $gpu"
ldd "$bin/libgmem_record.so" | grep -E "cupti|cuda|not found"
fails=0
run_client() {  # name, extra check flag, command...
  local name=$1 flag=$2; shift 2
  echo "=== $name"
  "$bin/gmemprof" record --out "$out/$name-$gpu.json" -- "$@" "$out/self-$name.json" 2>&1 |
    tee "$out/$name.log"
  echo "exit ${PIPESTATUS[0]}"
  if grep -q SKIP "$out/$name.log" 2>/dev/null; then return; fi
  python3 "$here/check_record.py" "$out/self-$name.json" "$out/$name-$gpu.json" $flag || fails=$((fails+1))
  "$bin/gmemprof" show "$out/$name-$gpu.json" | head -60
  "$bin/gmemprof" check "$out/$name-$gpu.json" "$out/$name-$gpu.json" >/dev/null; echo "check against itself: exit $?"
}
if [ "${3:-}" != "multi" ]; then
  run_client torch_async "" python3 "$here/torch_async.py"
  run_client cupy_async "" python3 "$here/cupy_async.py"
  run_client torch_native --no-memory-nodes python3 "$here/torch_native.py"
fi
run_client cpp_gmem "" "$bin/gmem_record_client" points
if [ "${2:-}" != "" ] && [ "${3:-}" = "multi" ]; then
  run_client multi_gpu "" "$bin/gmem_record_client" multi
  echo "client failures: $fails"; exit 0
fi
echo "=== exit status pass-through and a partial report"
"$bin/gmemprof" record --out "$out/partial.json" -- python3 -c "
import os, signal, torch
torch.zeros(1, device='cuda'); os.kill(os.getpid(), signal.SIGTERM)"
echo "exit $? (want 143)"
PYTHONPATH="$(dirname "$0")/../../tools" python3 -c "import report_forms; r=report_forms.load('$out/partial.json')['recorded']; print('partial:', r['partial'], r.get('partial_reason'))"
"$bin/gmemprof" record -- sh -c 'exit 3'; echo "exit $? (want 3)"
echo "=== overhead"
python3 "$here/overhead.py" "$bin" "$out/record-overhead-$gpu.json" 21 5
echo "client failures: $fails"
