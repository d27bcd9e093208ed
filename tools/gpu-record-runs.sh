#!/usr/bin/env bash
# The GPU machine's runs for record mode at the scale engines run, over a tools/device-build.sh
# build (slimmed with tools/device-slim.sh), stage by stage; each stage writes into
# OUT_DIR/STAGE/ and its log, and after each stage the whole of OUT_DIR is packed into
# OUT_DIR.tar.gz (a run stopped at its time limit keeps the stages it finished).
#   tests     the GPU tests (no sanitizer: tools/gpu-suite.sh runs them under both)
#   corpus    tools/record_corpus.py over cuda-samples (SAMPLES, a folder of their binaries,
#             built elsewhere), the PyTorch and the C++ corpus programs
#   bill      tools/record_corpus.py --bill: the bill programs against the scripts' readings
#   pool      tests/record/run_pool.sh: serving warm-ups, threads, check of two recordings
#   scale     tools/record_scale.py: 500, 1000 and 2000 captures recorded and unrecorded (five
#             pairs in alternating order), and
#             `gmemprof show` and `html` of the recordings kept
#   rounds    16,000 rounds of two graphs made, launched, destroyed and a trim, recorded and not
#   bench     gmem_bench: profile_graph of 1000 allocations, the plan's price
#   async     PyTorch's cudaMallocAsync backend: the bill's process change against the program's;
#             and gmemprof's note where the library is copied without its Python companion
#   hooks     the corpus through CUPTI and through --hook interpose, and compare_hooks.py of the two
#   hooks-scale  500, 1000 and 2000 captures of the 9-node step and of a 4-layer step:
#             unrecorded, recorded (the default hook), and through CUPTI
#   goal      the goal at 500, 1000 and 2000 captures: the 9-node step and the one-decoder-layer
#             step, PAIRS (5) pairs each, with each run's CPU probe; tools/companion_ab.py, the
#             companion against PyTorch's own methods in one process; and tools/readings_floor.py,
#             one cuMemGetInfo (about 570 s at five pairs)
#   ranks     two torchrun ranks recorded in one command, twice: each rank's bill against its own
#             counters (tests/record/ranks/check_ranks.py), and check of the two recordings; then
#             once with PyTorch's native allocator, each rank's bill against its own snapshot
#   tp        two tensor-parallel ranks warming collectives up on a side stream, then capturing
#             four batch sizes into one shared pool (all-reduces and an all-gather in each graph),
#             native and cudaMallocAsync: each capture and each bill against the rank's own
#             readings (tests/record/ranks/check_tp.py)
#   engines   GPT-2 under torch.compile(mode="reduce-overhead") and a Hugging Face static-cache
#             generate(): each bill against the program's own readings (tests/record/engines)
#   jax       tests/record/engines/jax_command_buffers.py (XLA's command buffers: graphs without
#             memory nodes, updated in place) unrecorded and recorded: the recording against the
#             program's own graph memory counters after every step, and its counts of updates and
#             node parameter calls (tests/record/engines/check_jax.py)
#   updates   an executable graph updated in place (tests/record/update_client.cu) through the
#             runtime and through the driver API, unrecorded and recorded (the default hook, and
#             the runtime's through CUPTI): each recording against the client's own counters
#             after every update and first launch and its counts (tests/record/check_updates.py),
#             and `gmemprof show --all` saying the graph was updated
# Usage: [RESULTS=DIR] tools/gpu-record-runs.sh BUILD_DIR OUT_DIR SAMPLES STAGE...
# (RESULTS: a folder the packed results are copied into after each stage)
set -u
build=$(cd "$1" && pwd); out=$2; samples=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
export PATH="$PATH:/usr/local/cuda/bin" PYTHONUNBUFFERED=1
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt" 2>&1
cp "$build/COMMIT" "$out/commit.txt"
status=0
for stage in "$@"; do
  d="$out/$stage"; mkdir -p "$d"
  start=$(date +%s)
  case $stage in
    tests) "$build/tests/gmem_gpu_tests" --gtest_output="json:$d/tests.json" > "$d/log" 2>&1 ;;
    corpus) python3 "$here/record_corpus.py" --build "$build" --samples "$samples" --out "$d" > "$d/log" 2>&1 ;;
    bill) python3 "$here/record_corpus.py" --build "$build" --out "$d" --bill > "$d/log" 2>&1 ;;
    pool) bash "$here/../tests/record/run_pool.sh" "$build" "$d" > "$d/log" 2>&1 ;;
    scale)
      python3 "$here/record_scale.py" "$build" "$d/record-scale.json" --keep "$d" --pairs 5 > "$d/log" 2>&1
      for n in 500 1000 2000; do
        [ -f "$d/record-scale-$n.json" ] || continue
        /usr/bin/time -f "show $n: %e s, %M KB" "$build/profiler/gmemprof" show "$d/record-scale-$n.json" > "$d/show-$n.txt" 2>> "$d/log"
        /usr/bin/time -f "html $n: %e s, %M KB" "$build/profiler/gmemprof" html "$d/record-scale-$n.json" -o "$d/page-$n.html" 2>> "$d/log"
        ls -l "$d/page-$n.html" >> "$d/log"
        [ "$n" = 500 ] || rm -f "$d/record-scale-$n.json"   # large: kept out of the results
      done ;;
    rounds)
      for mode in unrecorded recorded; do
        cmd=("$build/tests/gmem_corpus_client" rounds "$d/self-$mode.json" 16000)
        [ $mode = recorded ] && cmd=("$build/profiler/gmemprof" record --out "$d/rounds.json" -- "${cmd[@]}")
        /usr/bin/time -f "$mode: %e s wall, %M KB" "${cmd[@]}" >> "$d/log" 2>&1
      done
      "$build/profiler/gmemprof" show "$d/rounds.json" > "$d/show.txt" 2>&1 ;;
    bench)
      "$build/benchmarks/gmem_bench" --benchmark_filter='profile_time/profile_graph/allocs:1000/independent' \
        --benchmark_out="$d/profile-time.json" --benchmark_out_format=json > "$d/log" 2>&1 &&
      "$build/benchmarks/gmem_bench" --benchmark_filter='advice/plan_price' --benchmark_repetitions=5 \
        --benchmark_out="$d/plan-price.json" --benchmark_out_format=json >> "$d/log" 2>&1 ;;
    async)  # the bill's process change for PyTorch's cudaMallocAsync backend against the program's
      "$build/profiler/gmemprof" record --out "$d/async.json" -- \
        python3 "$here/../tests/record/async_process_change.py" "$d/async-self.json" > "$d/log" 2>&1 &&
      PYTHONPATH="$here" python3 -c '
import json, sys, report_forms
s = json.load(open(sys.argv[1])); b = report_forms.load(sys.argv[2])["recorded"]["bills"][0]
got, want = b["process_memory"]["delta_bytes"], s["end"] - s["start"]
ok = abs(got - want) <= 2 << 20
print(("PASS" if ok else "FAIL") + f" the bill'"'"'s process change {got / 2**20:.1f} MiB = the program'"'"'s own {want / 2**20:.1f} MiB (within 2 MiB)")
sys.exit(0 if ok else 1)' "$d/async-self.json" "$d/async.json" >> "$d/log" 2>&1
      rc=$?
      # The library copied alone (no companion/ beside it): gmemprof says the companion is missing,
      # and records anyway; with it beside, it says nothing of the kind.
      alone=$(mktemp -d) && cp "$build/record/libgmem_record.so" "$alone/" &&
      GMEM_RECORD_LIBRARY="$alone/libgmem_record.so" "$build/profiler/gmemprof" record --out "$d/alone.json" -- \
        python3 "$here/../tests/record/async_process_change.py" "$d/alone-self.json" > "$d/alone.log" 2>&1 &&
      grep -q "the Python companion (companion/sitecustomize.py) is not beside" "$d/alone.log" &&
      ! grep -q "companion/sitecustomize.py) is not beside" "$d/log" && [ -s "$d/alone.json" ]
      ok=$?; echo "companion missing: $([ $ok = 0 ] && echo PASS || echo FAIL) (said so, recorded anyway)" >> "$d/log"
      [ $ok = 0 ] && (exit $rc) ;;
    ranks)  # two ranks of torchrun on one GPU (or two), recorded twice; checked and compared
      mkdir -p "$d/a" "$d/b"
      "$build/profiler/gmemprof" record --out "$d/ranks-a.json" -- \
        torchrun --nproc-per-node 2 "$here/../tests/record/ranks/rank_worker.py" "$d/a" > "$d/log" 2>&1 &&
      python3 "$here/../tests/record/ranks/check_ranks.py" "$build/profiler/gmemprof" "$d/ranks-a.json" "$d/a" >> "$d/log" 2>&1 &&
      "$build/profiler/gmemprof" record --out "$d/ranks-b.json" -- \
        torchrun --nproc-per-node 2 "$here/../tests/record/ranks/rank_worker.py" "$d/b" >> "$d/log" 2>&1 &&
      "$build/profiler/gmemprof" check "$d/ranks-a.json" "$d/ranks-b.json" > "$d/check.txt" 2>&1
      rc=$?; "$build/profiler/gmemprof" show "$d/ranks-a.json" > "$d/show.txt" 2>&1
      # The same ranks with PyTorch's native allocator (a private pool per graph): each rank's
      # framework pools against its own memory snapshot.
      mkdir -p "$d/n"
      GMEM_RANK_ALLOCATOR=native "$build/profiler/gmemprof" record --out "$d/ranks-native.json" -- \
        torchrun --nproc-per-node 2 "$here/../tests/record/ranks/rank_worker.py" "$d/n" >> "$d/log" 2>&1 &&
      python3 "$here/../tests/record/ranks/check_ranks.py" "$build/profiler/gmemprof" "$d/ranks-native.json" "$d/n" >> "$d/log" 2>&1
      [ $? = 0 ] && (exit $rc) ;;
    engines)  # real engines' bills against their own readings
      rc=0
      for program in gpt2_compile hf_generate; do
        "$build/profiler/gmemprof" record --out "$d/$program.json" -- \
          python3 "$here/../tests/record/engines/$program.py" "$d/$program-self.json" >> "$d/log" 2>&1 &&
          python3 "$here/../tests/record/engines/check_engines.py" "$d/$program.json" "$d/$program-self.json" \
            > "$d/check-$program.txt" 2>&1 || rc=1
        "$build/profiler/gmemprof" show "$d/$program.json" > "$d/show-$program.txt" 2>&1
        "$build/profiler/gmemprof" show --all "$d/$program.json" > "$d/show-all-$program.txt" 2>&1
      done
      (exit $rc) ;;
    jax)  # XLA's command buffers: the recording against the program's own readings
      python3 "$here/../tests/record/engines/jax_command_buffers.py" "$d/self-unrecorded.json" > "$d/log" 2>&1 &&
        "$build/profiler/gmemprof" record --out "$d/jax.json" -- \
          python3 "$here/../tests/record/engines/jax_command_buffers.py" "$d/self-recorded.json" >> "$d/log" 2>&1 &&
        python3 "$here/../tests/record/engines/check_jax.py" "$d/jax.json" "$d/self-recorded.json" \
          --unrecorded "$d/self-unrecorded.json" > "$d/check.txt" 2>&1
      rc=$?
      "$build/profiler/gmemprof" show "$d/jax.json" > "$d/show.txt" 2>&1
      "$build/profiler/gmemprof" show --all "$d/jax.json" > "$d/show-all.txt" 2>&1
      [ -f "$d/check.txt" ] && cat "$d/check.txt" >> "$d/log"
      (exit $rc) ;;
    updates)  # updates in place: each recording against the client's readings and counts
      rc=0
      for mode in runtime driver; do
        "$build/tests/gmem_update_client" $mode "$d/self-$mode-unrecorded.json" >> "$d/log" 2>&1 || rc=1
      done
      for run in runtime:interpose driver:interpose runtime:cupti; do
        mode=${run%%:*}; hook=${run##*:}; name=$mode-$hook
        "$build/profiler/gmemprof" record --hook "$hook" --out "$d/$name.json" -- \
          "$build/tests/gmem_update_client" "$mode" "$d/self-$name.json" >> "$d/log" 2>&1 &&
          python3 "$here/../tests/record/check_updates.py" "$d/self-$name.json" "$d/$name.json" \
            --unrecorded "$d/self-$mode-unrecorded.json" > "$d/check-$name.txt" 2>&1 || rc=1
        "$build/profiler/gmemprof" show "$d/$name.json" > "$d/show-$name.txt" 2>&1
        "$build/profiler/gmemprof" show --all "$d/$name.json" > "$d/show-all-$name.txt" 2>&1
        tr -s ' \n' ' ' < "$d/show-all-$name.txt" |
          grep -q "in place (cuGraphExecUpdate): its figures are its last graph's" ||
          { echo "FAIL show --all of $name does not say the graph was updated" >> "$d/log"; rc=1; }
      done
      grep -h "^FAIL" "$d"/check-*.txt >> "$d/log"
      (exit $rc) ;;
    tp)  # tensor-parallel ranks as engines capture, both allocators
      rc=0
      for allocator in native async; do
        mkdir -p "$d/$allocator"
        GMEM_RANK_ALLOCATOR=$allocator "$build/profiler/gmemprof" record --out "$d/tp-$allocator.json" -- \
          torchrun --nproc-per-node 2 "$here/../tests/record/ranks/tp_worker.py" "$d/$allocator" >> "$d/log" 2>&1 &&
          python3 "$here/../tests/record/ranks/check_tp.py" "$d/tp-$allocator.json" "$d/$allocator" > "$d/check-$allocator.txt" 2>&1 || rc=1
        "$build/profiler/gmemprof" show "$d/tp-$allocator.json" > "$d/show-$allocator.txt" 2>&1
      done
      (exit $rc) ;;
    hooks)  # the corpus through CUPTI and through --hook interpose: each hook's checks, and the
      # same graphs either way (tests/record/compare_hooks.py); ONLY="NAME ..." runs those alone
      for hook in cupti interpose; do
        GMEM_RECORD_HOOK=$hook python3 "$here/record_corpus.py" --build "$build" --samples "$samples" --out "$d/$hook" \
          ${ONLY:+--only $ONLY} > "$d/log-$hook" 2>&1 || echo "corpus through $hook failed" >> "$d/log"
      done
      python3 "$here/../tests/record/compare_hooks.py" "$d/cupti" "$d/interpose" "$d/compare-hooks.json" >> "$d/log" 2>&1 &&
        ! grep -q "failed" "$d/log" ;;
    hooks-scale)  # 500, 1000 and 2000 captures of the 9-node step and of a 4-layer step: unrecorded,
      # recorded (the default hook) and through CUPTI; PAIRS (2) pairs
      python3 "$here/record_scale.py" "$build" "$d/record-scale-hooks.json" --pairs "${PAIRS:-2}" \
        --variant cupti=recorded:GMEM_RECORD_HOOK=cupti > "$d/log" 2>&1 &&
      python3 "$here/record_scale.py" "$build" "$d/record-scale-layers4-hooks.json" --layers 4 --pairs "${PAIRS:-2}" \
        --variant cupti=recorded:GMEM_RECORD_HOOK=cupti >> "$d/log" 2>&1 ;;
    goal)  # the 9-node and the 1-layer warm-ups, PAIRS (5) pairs; the companion in one process;
      # one reading's cost
      python3 "$here/readings_floor.py" "$d/readings-floor.json" --build "$build" > "$d/log" 2>&1 &&
      python3 "$here/companion_ab.py" "$build" "$d/companion-ab.json" >> "$d/log" 2>&1 &&
      python3 "$here/record_scale.py" "$build" "$d/record-scale-9node.json" --pairs "${PAIRS:-5}" >> "$d/log" 2>&1 &&
      python3 "$here/record_scale.py" "$build" "$d/record-scale-layers1.json" --layers 1 --pairs "${PAIRS:-5}" \
        >> "$d/log" 2>&1 ;;
    *) echo "unknown stage $stage" > "$d/log"; false ;;
  esac
  rc=$?
  [ $rc = 0 ] || status=1
  echo "$stage: exit $rc, $(( $(date +%s) - start )) s" | tee -a "$out/stages.txt"
  tar -czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
  [ -z "${RESULTS:-}" ] || cp "$out.tar.gz" "$RESULTS/"   # e.g. the device's $OUT
done
exit $status
