#!/usr/bin/env bash
# Installs what gmem needs to build (Debian packages), then configures and builds it.
# Safe to run again: it installs only what is missing and rebuilds only what changed.
# Usage: tools/setup.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}

packages=(cmake ninja-build g++ git libgtest-dev libbenchmark-dev nlohmann-json3-dev python3
          python3-jsonschema chromium python3-dev pybind11-dev python3-pytest
          python3-pip python3-venv python3-setuptools python3-wheel  # pip install of a checkout
          clang libclang-rt-dev)  # clang and its runtimes: the sanitized build and the fuzzers
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing missing Debian packages: ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  else
    echo "setup: missing Debian packages: ${missing[*]}" >&2
    echo "setup: install them with: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
if [ ! -x "$nvcc" ]; then
  echo "setup: no CUDA compiler at $nvcc; install the CUDA Toolkit under /usr/local/cuda" >&2
  echo "setup: (or point CUDACXX at nvcc)" >&2
  exit 1
fi

if [ -f "$build_dir/CMakeCache.txt" ] && [ ! -f "$build_dir/build.ninja" ]; then
  echo "setup: $build_dir was configured with another generator; remove it or pass another folder" >&2
  exit 1
fi
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_CUDA_COMPILER="$nvcc" >&2
fi
cmake --build "$build_dir" >&2
