#!/usr/bin/env bash
# pip install of gmem checked end to end on the GPU machine: a fresh venv made with
# --system-site-packages (so that the machine's PyTorch is visible), gmem installed into it from
# this checkout (built there: cmake, nvcc, a C++ compiler, pybind11 and nlohmann_json needed; the
# build names what is missing) or from a wheel built elsewhere, then, from outside the checkout,
# gmemprof's version through the console script, whether the Python API imports, the exit status
# passed through `python -m gmem record`, and a small PyTorch program recorded with
# `python -m gmem record`, printing the first screen of its answer.
#
# A wheel's Python tag must match the venv's Python: a cp311 wheel installs into Python 3.11
# only. One built with GMEM_WHEEL_ANY_PYTHON=1 (tagged py3-none) installs into any Python 3:
# `python -m gmem record` and the gmemprof script work there, and the Python API (gmem._core)
# imports only into the Python the wheel was built for; this script says which it found.
#
# Usage: tools/pip-venv-check.sh [WHEEL] [OUT_DIR]
#   WHEEL    a gmem-*.whl (default: install this checkout with pip install --no-build-isolation)
#   OUT_DIR  logs and the recording (default: $OUT, else build-wheel/pip-check)
#   PYTHON   the Python the venv is made from (default: python3)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
wheel=${1:-}
out=${2:-${OUT:-build-wheel/pip-check}}
python=${PYTHON:-python3}
mkdir -p "$out" && out=$(cd "$out" && pwd)
[ -z "$wheel" ] || wheel=$(realpath "$wheel")
fail() { echo "pip-venv-check: $*" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
venv=$tmp/venv
"$python" -m venv --system-site-packages "$venv" > "$out/venv.log" 2>&1 ||
  fail "$python -m venv failed ($out/venv.log; Debian: apt-get install python3-venv)"
py=$venv/bin/python
# --system-site-packages sees the base interpreter's packages only: where `python3` is itself a
# virtual environment's (the GPU machine's PyTorch lives in one), its packages are added by a
# .pth file, so that the fresh venv holds gmem alone and imports that environment's PyTorch.
parent=$("$python" -c 'import sys, site; print("\n".join(site.getsitepackages()) if sys.prefix != sys.base_prefix else "")')
if [ -n "$parent" ]; then
  echo "$parent" > "$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/parent-environment.pth"
  echo "parent environment's packages: $(echo $parent)"
fi
version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
echo "python: $py ($version, from $(command -v "$python"))"

if [ -n "$wheel" ]; then
  # gmem-VERSION-PYTHONTAG-ABITAG-PLATFORM.whl
  tag=$(basename "$wheel" .whl | cut -d- -f3)
  want=cp${version/./}
  if [ "$tag" != py3 ] && [ "$tag" != "$want" ]; then
    fail "$(basename "$wheel") is for $tag, this Python is $version ($want): build the wheel for Python $version," \
         "or with GMEM_WHEEL_ANY_PYTHON=1 (the command line works in any Python 3, the Python API only in the one it was built for)"
  fi
  "$py" -m pip install --no-deps --no-index "$wheel" > "$out/pip-install.log" 2>&1 ||
    { tail -20 "$out/pip-install.log" >&2; fail "pip could not install $wheel ($out/pip-install.log)"; }
else
  "$py" -m pip install -v --no-deps --no-build-isolation "$root" > "$out/pip-install.log" 2>&1 ||
    { grep -E '^ *error:|^ *- ' "$out/pip-install.log" | tail -20 >&2
      fail "pip could not build this checkout ($out/pip-install.log): build the wheel elsewhere and pass it"; }
fi
echo "installed: $(grep -E '^Successfully installed' "$out/pip-install.log")"

cd "$tmp"  # outside the checkout: gmem comes from the venv
"$venv/bin/gmemprof" --version || fail "the gmemprof script did not run"
"$venv/bin/gmemprof" info > "$out/info.log" 2>&1
grep -E '^recording library' "$out/info.log"
grep -qE '^recording library .*/gmem/prefix/lib/libgmem_record\.so \(loads\)' "$out/info.log" ||
  fail "the installed gmemprof's recording library is not the wheel's, or does not load ($out/info.log)"
"$py" - <<'EOF'
import gmem
print("gmem from", gmem.__file__)
try:
    print("Python API: gmem._core imports; device_count() =", gmem.device_count())
except ImportError as e:
    print("Python API: not in this Python:", e)
EOF

"$py" -m gmem record -o "$out/exit.json" -- "$py" -c 'import sys; sys.exit(3)' > "$out/exit.log" 2>&1
status=$?
[ "$status" = 3 ] || fail "python -m gmem record passed exit status $status, not the command's 3 ($out/exit.log)"
echo "exit status passed through: 3"

if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  fail "torch with CUDA is not importable from the venv: nothing recorded"
fi
rm -f "$out/run.json"
"$py" -m gmem record -o "$out/run.json" -- "$py" "$root/tests/record/torch_serving.py" "$out/self.json" \
  --batches 64,16,4,1 --mixed 20 > "$out/record.log" 2>&1
status=$?
echo "=== python -m gmem record -- python tests/record/torch_serving.py (exit $status; $out/record.log)"
head -n 40 "$out/record.log"
[ "$status" = 0 ] || fail "the recorded program exited $status"
[ -s "$out/run.json" ] || fail "no recording was written ($out/run.json)"
if grep -qE 'nothing recorded|companion .* is not beside' "$out/record.log"; then
  fail "the installed gmemprof did not find its recording library or companion ($out/record.log)"
fi
echo "pip-venv-check: ok ($out/run.json)"
