#!/usr/bin/env bash
# Runs gmem's Python tests on a machine with a GPU, PyTorch and CuPy (the GPU machine's image).
# The extension module must match that machine's python3, so it is built there: CMake, nvcc and
# pybind11 (pip's) are in the image; nlohmann_json (header-only, no pip package) is not, so pass a
# prefix holding include/nlohmann and share/cmake/nlohmann_json (tools/python-gpu.sh --deps PREFIX
# makes one here from Debian's package).
# Usage: tools/python-gpu.sh --deps PREFIX      (here: copy nlohmann_json into PREFIX)
#        tools/python-gpu.sh [PREFIX] [OUT_DIR] (there: build, run pytest, write OUT_DIR/junit*.xml)
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --deps ]; then
  prefix=${2:?usage: tools/python-gpu.sh --deps PREFIX}
  mkdir -p "$prefix/include" "$prefix/share/cmake"
  cp -r /usr/include/nlohmann "$prefix/include/"
  cp -r /usr/share/cmake/nlohmann_json "$prefix/share/cmake/"
  exit 0
fi
prefix=${1:-.dev/deps}
out_dir=${2:-${OUT:-gpu-out}}
mkdir -p "$out_dir"
build_dir=build-python
python=$(command -v python3)
echo "python: $($python -c 'import sys; print(sys.version.split()[0])')" > "$out_dir/python-env.txt"
$python - >> "$out_dir/python-env.txt" 2>&1 <<'EOF'
for name in ("torch", "cupy", "cuda.bindings"):
    try:
        m = __import__(name, fromlist=["_"])
        print(name, getattr(m, "__version__", "?"))
    except Exception as e:  # reported, not fatal: the tests skip with the reason
        print(name, "not importable:", e)
EOF
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$out_dir/python-env.txt" 2>&1
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DGMEM_BUILD_TESTS=OFF -DGMEM_BUILD_BENCHMARKS=OFF -DCMAKE_PREFIX_PATH="$(realpath "$prefix")" \
  -DPython_EXECUTABLE="$python" -Dpybind11_DIR="$($python -m pybind11 --cmakedir)" \
  > "$out_dir/python-build.log" 2>&1 &&
  cmake --build "$build_dir" --target gmem_python >> "$out_dir/python-build.log" 2>&1 ||
  { echo "python-gpu: the module did not build (python-build.log)" >&2; tail -30 "$out_dir/python-build.log" >&2; exit 1; }
export PYTHONPATH="$PWD/$build_dir/python" PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
status=0
# One process per file: a test that crashed the interpreter would take the others with it.
for f in test_host test_bill test_companion test_gpu_torch test_gpu_bill test_gpu_cupy; do
  $python -m pytest -q -rs "tests/python/$f.py" --junitxml="$out_dir/junit-$f.xml" \
    > "$out_dir/pytest-$f.log" 2>&1
  rc=$?
  echo "$f: pytest exit $rc" >&2
  tail -15 "$out_dir/pytest-$f.log" >&2
  [ "$rc" = 0 ] || status=1
done
exit "$status"
