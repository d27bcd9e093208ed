#!/usr/bin/env bash
# Completions and orderings a program makes without a device synchronize: does the
# driver let a launch in another stream share the granules of a launch the program waited for
# through an event, a query, a stream wait or a synchronous copy, or one that finished unseen?
# And does a launch that waits for room in the launch queue map anything? Runs `pool_probe`
# (tools/pool_probe.cu); tests/host/model/pool_model_test.cpp checks the pool model against the
# committed output, step by step, as for tools/pool_cases.sh.
# Usage: tools/completion_cases.sh PATH/TO/pool_probe [--device N]
set -euo pipefail
probe=${1:?usage: tools/completion_cases.sh PATH/TO/pool_probe [--device N]}
shift
two='g0:t30=w256 g1:t30=w256'
"$probe" "$@" \
 "C1 event synchronize: $two | L0@0 R@0 E0 L1@1 S L0@0 R@0 E0 L1@1 S" \
 "C2 event query polled until done: $two | L0@0 R@0 Q0 L1@1 S" \
 "C3 stream query polled until idle: $two | L0@0 Y0 L1@1 S" \
 "C4 stream wait on an event, no host wait: $two | L0@0 R@0 W0@1 L1@1 S L0@0 R@0 W0@1 L1@1 S" \
 "C5 an event recorded before the launch: $two | R@0 L0@0 E0 L1@1 S" \
 'C6 completed unseen (host sleep, no CUDA call): g0:t5=w256 g1:t5=w256 | L0@0 Z60 L1@1 S' \
 "C7 synchronous copy after a blocking stream's launch: $two | L0@4 C L1@1 S" \
 "C8 synchronous copy after a non-blocking stream's launch: $two | L0@0 C L1@1 S" \
 'C9 one graph back to back, no kernel: g0=w64 | L0 S L0*20000 S' \
 'C10 one graph back to back, 50 us kernel: g0:t0.05=w64 | L0 S L0*4000 S' \
 'C11 two graphs back to back in one stream: g0:t0.05=w64 g1:t0.05=w128 | L0 L1 S L0*2000 L1*2000 S'
