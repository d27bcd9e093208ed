#!/usr/bin/env bash
# Builds the GPU suite here (no GPU needed) into a folder that travels to the GPU machine:
# Release, sm_90, the CUDA runtime linked statically. Writes BUILD_DIR/COMMIT.
# Usage: tools/device-build.sh [BUILD_DIR]   (default: build-gpu)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build-gpu}
# Configured as Release before setup.sh builds it, so that the tree is built once (setup.sh
# configures a missing build folder with the default type, and reconfiguring rebuilt it all).
if command -v cmake >/dev/null && command -v ninja >/dev/null; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_CUDA_COMPILER="${CUDACXX:-/usr/local/cuda/bin/nvcc}" >/dev/null
fi
tools/setup.sh "$build_dir"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build "$build_dir"
# An install of it, for the GPU machine's test of an installed gmemprof.
rm -rf "$build_dir/install-prefix"
cmake --install "$build_dir" --prefix "$build_dir/install-prefix" >/dev/null
rm -rf "$build_dir/install-prefix/include" "$build_dir/install-prefix"/lib*/*.a
commit=$(git rev-parse HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit-dirty"
echo "$commit" > "$build_dir/COMMIT"
# Everything the binaries load must exist on a bare GPU machine: only system libraries.
# Google Benchmark (a Debian shared library) travels in $build_dir/lib, found through RUNPATH.
for bin in "$build_dir/tests/gmem_gpu_tests" "$build_dir/profiler/gmemprof" "$build_dir/benchmarks/gmem_bench"; do
  if ldd "$bin" | grep -vE 'linux-vdso|ld-linux|lib(c|m|stdc\+\+|gcc_s|dl|rt|pthread)\.so' |
      grep '=>' | grep -vq "$(cd "$build_dir" && pwd)/"; then
    echo "device-build: $bin loads a library a bare GPU machine may lack:" >&2
    ldd "$bin" >&2
    exit 1
  fi
done
du -sh "$build_dir" | awk '{print "device-build: " $2 " is " $1 " (carry limit 64 MiB)"}'
echo "device-build: commit $commit"
