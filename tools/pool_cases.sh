#!/usr/bin/env bash
# The pool cases (docs/driver-facts.md, "Many graphs, one pool"): runs `pool_probe` on every case;
# tests/host/model/pool_model_test.cpp reads the committed output and checks the pool model against
# every step of every case.
# Usage: tools/pool_cases.sh PATH/TO/pool_probe [--device N]
# (build the probe: nvcc -std=c++17 -O2 -arch=sm_90 -cudart static tools/pool_probe.cu -o pool_probe)
set -euo pipefail
probe=${1:?usage: tools/pool_cases.sh PATH/TO/pool_probe [--device N]}
shift
six='g0!=w512,o1 g1!=w256,o2 g2!=w128,o3 g3!=w64,o4 g4!=w32,o5 g5!=w16,o6'
fwd='L0 L1 L2 L3 L4 L5'
rev='L5 L4 L3 L2 L1 L0'
"$probe" "$@" \
 "P1 largest first, outputs held, AutoFreeOnLaunch: $six | $fwd S $fwd S $fwd S T $fwd" \
 "P2 smallest first: $six | $rev S $rev S $fwd L3 L0 L5 L1 S T $rev" \
 "P3 40 MiB outputs, largest first: g0!=w512,o40 g1!=w256,o40 g2!=w128,o40 g3!=w64,o40 g4!=w32,o40 g5!=w16,o40 | $fwd S $fwd S T $fwd" \
 'P4 nothing held, one stream: g0=w256 g1=w128 g2=w64 g3=w32 | L3 L2 L1 L0 S L0 L1 L2 L3 S' \
 'P5 two streams, synchronized: g0=w256 g1=w256 | L0@0 S L1@1 S L0@0 S L1@1 S' \
 'P6 two streams, overlapping: g0:t30=w256 g1:t30=w256 | L0@0 L1@1 S L0@0 L1@1 S L1@0 L0@0 S' \
 'P7 stream switch: g0=w256 | L0@0 S L0@1 S L0@0 S L0@1 S' \
 'P8 destroyed, then another graph: g0=w256 g1=w128 g2=w384 | L0 S D0 L1 S L2 S T L1 S' \
 'P9 trims with held outputs: g0!=w256,o8 g1!=w128,o8 | L0 L1 S T L0 L1 S T L1 L0 S' \
 'P10 outputs freed outside: g0!=w512,o1 g1!=w256,o2 g2!=w128,o3 | L0 L1 L2 S F1 F2 S L0 S L1 L2 S' \
 'P11 which chunk an output takes: g0=w64 g1=w128 g2!=o32 | L1 L0 S L2 S L0 S L1 S L2 S L0 L1 S' \
 'P12 upload: g0=w256 g1=w256 | U0 S L0 S U1@1 S L1@1 S L1@0 S L0 S' \
 'P13 outputs freed outside, no AutoFreeOnLaunch: g0=w256,o8 g1=w128,o8 | L0 L1 S F0 F1 L0 L1 S F0 F1 L1 L0 S' \
 'P14 four streams with kernels, outputs held: g0!:t20=w256,o1 g1!:t20=w192,o1 g2!:t20=w128,o1 g3!:t20=w64,o1 | L0@0 L1@1 L2@2 L3@3 S L0@0 L1@1 L2@2 L3@3 S' \
 'P15 outputs packed in one granule: g0!=w64,o1,o1,o1 g1!=w64,o1 | L0 L1 S L0 L1 S' \
 'P16 an output across a granule boundary: g0!=w30,o4 g1!=w64 | L0 S L1 S L0 S L1 S' \
 'P17 an output at the start: g0!=o4,w60 g1!=w64 | L0 S L1 S L0 S' \
 'P18 same graphs, other order each round: g0!=w256,o8 g1!=w128,o16 g2!=w64,o40 | L0 L1 L2 S L2 L1 L0 S L1 L0 L2 S L0 L2 L1 S'
