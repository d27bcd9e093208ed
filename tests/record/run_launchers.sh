#!/usr/bin/env bash
# Record mode under launchers on the GPU machine: installed, under a shell wrapper, a Python
# parent with spawned CUDA children, a child that execs, a CUDA parent that forks helpers, Ctrl-C
# of a Python program (uncaught, and caught by the program), a SIGTERM handler of its own,
# SIGTERM sent to gmemprof record (one process, torchrun), a crash handled by the program, a
# launch the driver refuses, a soak.
# Writes OUT_DIR/launchers.json: {"device", "driver", "commit", "cases": {name: {ok, detail}}}.
# Usage: tests/record/run_launchers.sh BUILD_DIR OUT_DIR   (BUILD_DIR: a tools/device-build.sh
# build: profiler/gmemprof, record/libgmem_record.so, tests/gmem_record_client)
set -u
build=$(cd "$1" && pwd); out=$2; here=$(cd "$(dirname "$0")" && pwd)
# Reports are read through tools/report_forms.py, which expands the compact forms they are written in.
export PYTHONPATH="$here/../../tools${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$out"
gmemprof=$build/profiler/gmemprof
client=$build/tests/gmem_record_client
cases="$out/cases.jsonl"; : > "$cases"
result() {  # name ok(0/1) detail
  python3 -c 'import json,sys; print(json.dumps({"name": sys.argv[1], "ok": sys.argv[2] == "0", "detail": sys.argv[3]}))' "$1" "$2" "$3" >> "$cases"
  echo "== $1: $([ "$2" = 0 ] && echo PASS || echo FAIL): $3"
}
graphs_in() { python3 -c 'import report_forms,sys; r=report_forms.load(sys.argv[1]); print(" ".join(repr(g["name"]) for g in r["recorded"]["graphs"]))' "$1" 2>/dev/null; }

echo "=== installed: PREFIX/bin/gmemprof record, PREFIX made by cmake --install on the build machine"
# (tools/device-build.sh installs into BUILD_DIR/install-prefix: the install rules run where the
# tree was configured; what they install is relocatable)
prefix=$build/install-prefix
"$prefix/bin/gmemprof" info > "$out/installed-info.txt" 2>&1
"$prefix/bin/gmemprof" record --out "$out/installed.json" -- python3 "$here/launchers.py" cuda installed > "$out/installed.log" 2>&1
rc=$?
names=$(graphs_in "$out/installed.json")
ok=1; [ $rc = 0 ] && grep -q "(loads)" "$out/installed-info.txt" && [ -n "$names" ] && ok=0
result installed $ok "exit $rc; $(grep 'recording library' "$out/installed-info.txt"); graphs: $names"

echo "=== sh -c wrapper"
"$gmemprof" record --out "$out/wrapper.json" -- sh -c "python3 $here/launchers.py cuda wrapped; echo done" > "$out/wrapper.log" 2>&1
rc=$?; cat "$out/wrapper.log"
names=$(graphs_in "$out/wrapper.json")
ok=1; [ $rc = 0 ] && [ -n "$names" ] && ! grep -q "no report was written" "$out/wrapper.log" && ok=0
result wrapper_sh $ok "exit $rc; graphs: $names"

echo "=== multiprocessing spawn: two CUDA children"
"$gmemprof" record --out "$out/spawn.json" -- python3 "$here/launchers.py" spawn > "$out/spawn.log" 2>&1
rc=$?; cat "$out/spawn.log"
names=$(graphs_in "$out/spawn.json")
n=$(python3 -c 'import report_forms,sys; r=report_forms.load(sys.argv[1]); print(len(r["recorded"].get("processes", [])), len(r["recorded"]["graphs"]))' "$out/spawn.json" 2>/dev/null)
ok=1; [ $rc = 0 ] && [ "$n" = "2 2" ] && grep -q "processes wrote reports" "$out/spawn.log" && ok=0
result multiprocessing_spawn $ok "exit $rc; processes and graphs: $n; graphs: $names"

echo "=== a child that execs"
"$gmemprof" record --out "$out/exec.json" -- python3 "$here/launchers.py" exec > "$out/exec.log" 2>&1
rc=$?; cat "$out/exec.log"
names=$(graphs_in "$out/exec.json")
ok=1; [ $rc = 0 ] && echo "$names" | grep -q "exec child" && ok=0
result exec_child $ok "exit $rc; graphs: $names"

echo "=== a CUDA parent forks helpers (multiprocessing fork), terminates them"
"$gmemprof" record --out "$out/fork.json" -- python3 "$here/launchers.py" fork_helper > "$out/fork.log" 2>&1
rc=$?; cat "$out/fork.log"
extra=$(ls "$out"/fork.json.*.json 2>/dev/null | wc -l)
names=$(graphs_in "$out/fork.json")
ok=1; [ $rc = 0 ] && [ "$extra" = 0 ] && echo "$names" | grep -q "fork parent again" && ok=0
result fork_helper $ok "exit $rc; the forked helpers wrote $extra report(s); the parent's graphs: $names"

recorded_as() {  # REPORT: "partial reason | graphs | notes" of a recording, or "none"
  python3 -c '
import report_forms, sys
r = report_forms.load(sys.argv[1])["recorded"]
print(r["partial"], r.get("partial_reason", ""), "|", len(r["graphs"]), "graphs |", " / ".join(r.get("notes", [])))' "$1" 2>/dev/null || echo none
}

echo "=== Ctrl-C (SIGINT) of a Python program that does not catch it: as without recording, the report written at Python's end"
python3 "$here/launchers.py" sigint > "$out/sigint-plain.log" 2>&1; plain=$?
"$gmemprof" record --out "$out/sigint.json" -- python3 "$here/launchers.py" sigint > "$out/sigint.log" 2>&1
rc=$?; tail -5 "$out/sigint.log"
got=$(recorded_as "$out/sigint.json")
ok=1; [ $rc = $plain ] && grep -q KeyboardInterrupt "$out/sigint.log" && [[ "$got" == False*"1 graphs"*"was not caught"* ]] && ok=0
result sigint_python $ok "exit $rc recorded, $plain without recording; KeyboardInterrupt: $(grep -c KeyboardInterrupt "$out/sigint.log"); report: $got"

for m in sigint_handled sigterm_handled; do
  echo "=== $m: the program's own handler; it goes on and exits with its own status, the report whole at exit"
  python3 "$here/launchers.py" $m > "$out/$m-plain.log" 2>&1; plain=$?
  for hook in interpose cupti; do
    "$gmemprof" record --hook $hook --out "$out/$m-$hook.json" -- python3 "$here/launchers.py" $m > "$out/$m-$hook.log" 2>&1
    rc=$?; tail -3 "$out/$m-$hook.log"
    got=$(recorded_as "$out/$m-$hook.json")
    ok=1; [ $rc = $plain ] && [[ "$got" == False*"1 graphs"* ]] && grep -q "^stopped by" "$out/$m-$hook.log" && ok=0
    result "${m}_$hook" $ok "exit $rc recorded, $plain without recording; report: $got"
  done
done

echo "=== SIGTERM to gmemprof record (timeout): passed to the command, whose partial report is collected"
for launcher in python torchrun; do
  cmd=(python3 "$here/launchers.py" until_signalled)
  [ $launcher = torchrun ] && cmd=(torchrun --nproc-per-node 2 "$here/launchers.py" until_signalled)
  timeout -s TERM 25 "$gmemprof" record --out "$out/term-$launcher.json" -- "${cmd[@]}" > "$out/term-$launcher.log" 2>&1
  rc=$?; tail -4 "$out/term-$launcher.log"
  got=$(recorded_as "$out/term-$launcher.json")
  shown=$("$gmemprof" show "$out/term-$launcher.json" > /dev/null 2>&1 && echo readable || echo unreadable)
  ok=1; [[ "$got" == True*"gmemprof record was sent SIGTERM (15)"* ]] && [ "$shown" = readable ] && ok=0
  result "sigterm_gmemprof_$launcher" $ok "exit $rc; report ($shown): $got"
done

echo "=== a crash the program handles itself (SIGSEGV, SA_SIGINFO)"
"$client" segv "$out/segv-self.json" > /dev/null 2>&1; plain=$?
"$gmemprof" record --out "$out/segv.json" -- "$client" segv "$out/segv-self.json" > "$out/segv.log" 2>&1
rc=$?; tail -3 "$out/segv.log"
ok=1; [ $rc = 42 ] && [ $plain = 42 ] && ok=0
result crash_handler $ok "exit $rc recorded, $plain without recording (42: the program's handler saw the fault address)"

echo "=== a launch the driver refuses"
"$gmemprof" record --out "$out/failed.json" -- "$client" failed "$out/failed-self.json" > "$out/failed.log" 2>&1
rc=$?; cat "$out/failed.log"
got=$(python3 -c '
import report_forms,sys
g=report_forms.load(sys.argv[1])["recorded"]["graphs"][0]
f=[e for e in g["events"] if e.get("result")]
print(g["launches"], g["failed_calls"], f[0]["result"] if f else "-")' "$out/failed.json" 2>/dev/null)
ok=1; [ $rc = 0 ] && [[ "$got" == "1 1 CUDA_ERROR_"* ]] && ok=0
result failed_launch $ok "exit $rc; launches, failed calls, result: $got"

echo "=== four threads (the pool splits their overlapping windows)"
"$gmemprof" record --out "$out/threads.json" -- "$client" threads "$out/threads-self.json" > "$out/threads.log" 2>&1
python3 "$here/check_pool.py" "$out/threads-self.json" "$out/threads.json" > "$out/threads-check.log" 2>&1
rc=$?; cat "$out/threads-check.log"
result threads_4 $rc "$(tail -1 "$out/threads-check.log")"

echo "=== soak: 10^6 launches, 10^4 graphs created and destroyed"
start=$(date +%s)
"$gmemprof" record --out "$out/soak.json" -- "$client" soak "$out/soak-self.json" 1000000 10000 > "$out/soak.log" 2>&1
rc=$?; cat "$out/soak.log" | tail -5
verdict=$(python3 -c '
import json,report_forms,sys
s=json.load(open(sys.argv[1])); r=report_forms.load(sys.argv[2])
rss=s["rss_kib"]; rec=r["recorded"]
growth=rss[-1]-rss[1]
print("ok" if growth < 0.05*rss[1] + 8192 else "grew", "rss KiB from the 2nd tenth to the end:", rss[1], "->", rss[-1], "; records:", len(rec["graphs"]), "; instances:", sum(g.get("instances",1) for g in rec["graphs"]))' "$out/soak-self.json" "$out/soak.json" 2>&1)
ok=1; [ $rc = 0 ] && [[ "$verdict" == ok* ]] && ok=0
result soak $ok "exit $rc, $(( $(date +%s) - start )) s; $verdict"

python3 - "$cases" "$out/launchers.json" "$build" <<'PY'
import json, subprocess, sys
cases = {}
for line in open(sys.argv[1]):
    c = json.loads(line)
    cases[c["name"]] = {"ok": c["ok"], "detail": c["detail"]}
smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip().splitlines()
commit = open(sys.argv[3] + "/COMMIT").read().strip()
device, driver = (smi[0].split(", ") + ["?"])[:2] if smi else ("?", "?")
json.dump({"device": device, "driver": driver, "commit": commit, "cases": cases}, open(sys.argv[2], "w"), indent=1)
print(json.dumps({k: v["ok"] for k, v in cases.items()}))
PY
