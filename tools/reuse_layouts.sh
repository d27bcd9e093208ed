#!/usr/bin/env bash
# The layout cases of the driver's reuse rule (README, "The driver's reuse rule"): runs
# `reuse_probe --layout` on every case; tests/host/report/reuse_model_test.cpp holds the model's answers.
# Usage: tools/reuse_layouts.sh PATH/TO/reuse_probe [--device N]
# (build the probe: nvcc -std=c++17 -O2 -arch=sm_90 -cudart static tools/reuse_probe.cu -o reuse_probe)
set -euo pipefail
probe=${1:?usage: tools/reuse_layouts.sh PATH/TO/reuse_probe [--device N]}
shift
"$probe" --layout "$@" \
 'H 1,2,3,4 chain: a0=1 f0<a0 a1=2<f0 f1<a1 a2=3<f1 f2<a2 a3=4<f2 f3<a3' \
 'H3 1,2,3 chain: a0=1 f0<a0 a1=2<f0 f1<a1 a2=3<f1 f2<a2' \
 'H2b 1,2 then 2: a0=1 f0<a0 a1=2<f0 f1<a1 a2=2<f1 f2<a2' \
 'H2c 1,2 then 1,1: a0=1 f0<a0 a1=2<f0 f1<a1 a2=1<f1 a3=1<f1 f2<a2 f3<a3' \
 'J 1,4 chain: a0=1 f0<a0 a1=4<f0 f1<a1' \
 'J2 2,4 chain: a0=2 f0<a0 a1=4<f0 f1<a1' \
 'J3 1,3 chain: a0=1 f0<a0 a1=3<f0 f1<a1' \
 'J4 1,1.5 chain: a0=1 f0<a0 a1=1.5<f0 f1<a1' \
 'Q two live S, 2S after: a0=1 a1=1 f0<a0 f1<a1 a2=2<f0,f1 f2<a2' \
 'Q2 two live S (a1 after a0), 2S after: a0=1 a1=1<a0 f0<a1 f1<a1 a2=2<f0,f1 f2<a2' \
 'Q3 S and 2S live, 3S after: a0=1 a1=2 f0<a0 f1<a1 a2=3<f0,f1 f2<a2' \
 'Q4 three live S, 3S after: a0=1 a1=1 a2=1 f0<a0 f1<a1 f2<a2 a3=3<f0,f1,f2 f3<a3' \
 'Q5 two live S, S and S after: a0=1 a1=1 f0<a0 f1<a1 a2=1<f0,f1 a3=1<f0,f1 f2<a2 f3<a3' \
 'Q6 S freed, 2S live-new after f0, then 3S after both: a0=1 f0<a0 a1=2 f1<a1 a2=3<f0,f1 f2<a2' \
 'Q7 a1 2S after f0 but a0 freed later in chain: a0=1 f0<a0 a1=2<f0 f1<a1 a2=3<f1,f0 f2<a2' \
 'Q8 1 then 2 after f0 then 3 after f0 only: a0=1 f0<a0 a1=2<f0 a2=3<f0 f1<a1 f2<a2' \
 'Q9 1,2 chain with 2 live during 3: a0=1 f0<a0 a1=2<f0 a2=3<a1 f1<a2 f2<a2' \
 'U1 unit 32m 1,2,3,4: a0=32m f0<a0 a1=64m<f0 f1<a1 a2=96m<f1 f2<a2 a3=128m<f2 f3<a3' \
 'U2 unit 2m 1,2,3,4: a0=2m f0<a0 a1=4m<f0 f1<a1 a2=6m<f1 f2<a2 a3=8m<f2 f3<a3' \
 'U3 unit 128m 1,2,3,4: a0=2 f0<a0 a1=4<f0 f1<a1 a2=6<f1 f2<a2 a3=8<f2 f3<a3' \
 'G1 1,2 chain then 3 via empty: a0=1 f0<a0 a1=2<f0 f1<a1 e0<f1 a2=3<e0 f2<a2' \
 'G2 4,1,4: a0=4 f0<a0 a1=1<f0 f1<a1 a2=4<f1 f2<a2' \
 'G3 1,2,4 chain (4 > merged 3): a0=1 f0<a0 a1=2<f0 f1<a1 a2=4<f1 f2<a2' \
 'G4 2,1,3 chain: a0=2 f0<a0 a1=1<f0 f1<a1 a2=3<f1 f2<a2' \
 'G5 1 live, 1 chain: a0=1 a1=1 f1<a1 a2=2<f1 f2<a2 f0<a0' \
 'G6 2 live, chain 1,2: a0=2 a1=1 f1<a1 a2=2<f1 f2<a2 a3=3<f2 f3<a3 f0<a0' \
 'BF1 2S and S live, S after both: a0=2 a1=1 f0<a0 f1<a1 a2=1<f0,f1 f2<a2' \
 'BF2 S and 2S live, S after both: a0=1 a1=2 f0<a0 f1<a1 a2=1<f0,f1 f2<a2' \
 'BF3 3S,1S,2S live, 2S after all: a0=3 a1=1 a2=2 f0<a0 f1<a1 f2<a2 a3=2<f0,f1,f2 f3<a3' \
 'BF4 2S,S live, 1.5S after both: a0=2 a1=1 f0<a0 f1<a1 a2=1.5<f0,f1 f2<a2' \
 'SP1 2 then 1 then 2: a0=2 f0<a0 a1=1<f0 f1<a1 a2=2<f1 f2<a2' \
 'SP2 2 then 1,1 live: a0=2 f0<a0 a1=1<f0 a2=1<f0 f1<a1 f2<a2' \
 'SP3 2 then 1, then 1 after f0 only while a1 live: a0=2 f0<a0 a1=1<f0 a2=1<f0 f2<a2 f1<a1,f2' \
 'SP4 3 then 1 then 2 after f1 (remainder freed by f0): a0=3 f0<a0 a1=1<f0 f1<a1 a2=2<f1 f2<a2' \
 'M1 merge other direction: a0=1 a1=1 f1<a1 f0<a0,f1 a2=2<f0 f2<a2' \
 'M2 merge via empty ordering: a0=1 a1=1 f0<a0 e0<f0 f1<a1,e0 a2=2<f1 f2<a2' \
 'M4 ordered frees, a2 after the earlier only: a0=1 a1=1 f0<a0 f1<a1,f0 a2=2<f0 f2<a2' \
 'M5 three blocks chained: a0=1 f0<a0 a1=1 f1<a1,f0 a2=1 f2<a2,f1 a3=3<f2 f3<a3' \
 'M6 unordered frees then a third free orders both: a0=1 a1=1 f0<a0 f1<a1 e0<f0,f1 a2=2<e0 f2<a2' \
 'S1 small: a0=1m a1=1m a2=3m a3=1m f0<a0 f1<a1 f2<a2 f3<a3' \
 'S2 small chain: a0=1m f0<a0 a1=3m<f0 f1<a1 a2=4m<f1 f2<a2' \
 'S3 small 2m: a0=2m a1=2m a2=30m a3=2m f0<a0 f1<a1 f2<a2 f3<a3' \
 'S4 odd: a0=33m a1=33m f0<a0 f1<a1' \
 'BF1r 2S,S; S after both, deps reversed: a0=2 a1=1 f0<a0 f1<a1 a2=1<f1,f0 f2<a2' \
 'BF1f 2S,S; S after both, frees created reversed: a0=2 a1=1 f1<a1 f0<a0 a2=1<f0,f1 f2<a2' \
 'BF8 3S,2S; 2S after both: a0=3 a1=2 f0<a0 f1<a1 a2=2<f0,f1 f2<a2' \
 'BF10 3S,S,2S; S after all: a0=3 a1=1 a2=2 f0<a0 f1<a1 f2<a2 a3=1<f0,f1,f2 f3<a3' \
 'BF12 2S,2S,S; S after all: a0=2 a1=2 a2=1 f0<a0 f1<a1 f2<a2 a3=1<f0,f1,f2 f3<a3' \
 'BF13 S,3S,2S; 2S after all: a0=1 a1=3 a2=2 f0<a0 f1<a1 f2<a2 a3=2<f0,f1,f2 f3<a3' \
 'BF14 2S,S,3S; S after all: a0=2 a1=1 a2=3 f0<a0 f1<a1 f2<a2 a3=1<f0,f1,f2 f3<a3' \
 'BF15 S,2S,S; S after all: a0=1 a1=2 a2=1 f0<a0 f1<a1 f2<a2 a3=1<f0,f1,f2 f3<a3' \
 'BF16 2S,S; 2S and S after both: a0=2 a1=1 f0<a0 f1<a1 a2=1<f0,f1 a3=2<f0,f1 f2<a2 f3<a3' \
 'M4s ordered frees, S after the earlier only: a0=1 a1=1 f0<a0 f1<a1,f0 a2=1<f0 f2<a2' \
 'M4t ordered frees, 2S after the later: a0=1 a1=1 f0<a0 f1<a1,f0 a2=2<f1 f2<a2' \
 'S5 odd then small: a0=33m a1=33m a2=20m f0<a0 f1<a1 f2<a2' \
 'S6 odd chain: a0=33m f0<a0 a1=40m<f0 f1<a1' \
 'S7 30m,30m,30m: a0=30m a1=30m a2=30m f0<a0 f1<a1 f2<a2' \
 'S8 40m,10m: a0=40m a1=10m f0<a0 f1<a1' \
 'S9 10m,40m: a0=10m a1=40m f0<a0 f1<a1'
