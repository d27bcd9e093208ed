#!/usr/bin/env bash
# Record is invisible, on the GPU machine: others' test suites unrecorded and recorded
# (tools/peer_suites.py over a .peer folder assembled here), the device memory a program reads
# itself unrecorded and recorded and the recorded bill against the program's own change (both hooks;
# PyTorch, a driver-API program, a torchrun rank with NCCL: tests/record/check_own_memory.py), and how
# signals end recorded programs (handled, unhandled, SIGTERM sent to gmemprof record by timeout).
# Writes into OUT_DIR: device.txt (device, driver, commit), suites.json and suites.txt,
# suite-logs.tgz, memory.txt, signals.txt (reports/record/invisible-*).
# Usage: [PARTS="suites memory signals"] tools/gpu-invisible-runs.sh BUILD_DIR PEER_DIR OUT_DIR
# (BUILD_DIR: tools/device-build.sh and tools/device-slim.sh; PEER_DIR: tools/peer_suites.py
# assemble; PARTS: those to run, all by default)
set -u
B=$(cd "$1" && pwd); P=$2; O=$3; G=$B/profiler/gmemprof; export PYTHONUNBUFFERED=1
mkdir -p "$O"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat $B/COMMIT; } > "$O"/device.txt
PARTS=${PARTS:-suites memory signals}
part() { [[ " $PARTS " == *" $1 "* ]]; }
if part suites; then
timeout 420 python3 tools/peer_suites.py run --build $B --peer "$P" --out /tmp/suites --timeout 150 > "$O"/suites.txt 2>&1
cp /tmp/suites/suites.json "$O"/ 2>/dev/null
rm -f /tmp/suites/*.json.*.json; tar czf "$O"/suite-logs.tgz -C /tmp suites
fi
part memory && {
python3 tests/record/check_own_memory.py $G; echo "check_own_memory: exit $?"
} > "$O"/memory.txt 2>&1
L=tests/record/launchers.py
part signals && {
for spec in "sigint interpose" "sigint_handled interpose" "sigint_handled cupti" "sigterm_handled interpose"; do
  set -- $spec
  timeout 60 python3 $L $1 > /dev/null 2>&1; plain=$?
  timeout 60 $G record --hook $2 -o /tmp/s.json -- python3 $L $1 > /tmp/s.log 2>&1; rc=$?
  echo "== $1 ($2): exit $rc recorded, $plain unrecorded"; grep -E "gmemprof record: (wrote|PARTIAL|note: written|the report could)" /tmp/s.log
done
for launcher in python torchrun; do
  cmd=(python3 $L until_signalled); [ $launcher = torchrun ] && cmd=(torchrun --nproc-per-node 2 $L until_signalled)
  timeout -s TERM 20 $G record -o /tmp/term-$launcher.json -- "${cmd[@]}" > /tmp/t.log 2>&1; rc=$?
  echo "== timeout -s TERM 20 gmemprof record -- $launcher: exit $rc"; grep -E "gmemprof record: (passing|wrote|[0-9]+ processes)" /tmp/t.log
  $G show /tmp/term-$launcher.json > /dev/null 2>&1 && echo "gmemprof show reads it" || echo "gmemprof show FAILS"
done
} > "$O"/signals.txt 2>&1
tail -8 "$O"/suites.txt 2>/dev/null; cat "$O"/memory.txt "$O"/signals.txt 2>/dev/null
