"""pip install from a gmem checkout, without a GPU: the wheel (`pip wheel --no-build-isolation`)
installed into a fresh venv made with --system-site-packages, and used from outside the source
tree. It carries the module, gmemprof, the recording libraries and the companion; what its
binaries load is in it or a system library; `import gmem` works; `python -m gmem` and the
gmemprof script are gmemprof, exit status included; and the installed gmemprof finds its
recording library and the companion (with a stand-in libcuda that reports one device, the
recorded Python program runs with both).

ctest's python.wheel packages the test build's outputs (GMEM_PREBUILT_DIR) into a wheel built in
its own folder (GMEM_WHEEL_BUILD_DIR), and names the stand-in driver (GMEM_TEST_FAKE_CUDA);
run by hand without them, the wheel is built with CMake as `pip install` builds it."""

import os
import platform
import subprocess
import sys
import sysconfig
import zipfile

import pytest

pytestmark = pytest.mark.wheel

SOURCE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SYSTEM_LIBRARIES = ("linux-vdso.so", "ld-linux", "libc.so", "libm.so", "libdl.so", "librt.so",
                    "libpthread.so", "libstdc++.so", "libgcc_s.so", "libcuda.so.1")
PRELOAD_BUILT = platform.machine() in ("x86_64", "AMD64")


class Venv:
    def __init__(self, root, wheel):
        self.root, self.wheel = root, wheel
        self.python = os.path.join(root, "bin", "python")
        self.gmemprof = os.path.join(root, "bin", "gmemprof")
        self.package = subprocess.run([self.python, "-c", "import os, sysconfig; print(os.path.join("
                                       "sysconfig.get_paths()['purelib'], 'gmem'))"],
                                      capture_output=True, text=True, check=True).stdout.strip()
        self.cwd = os.path.dirname(root)  # outside the source tree

    def run(self, args, env=None, **kwargs):
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "GMEM_", "CUDA_"))}
        clean["GMEM_GRANULARITY_CACHE"] = "0"
        clean.update(env or {})
        return subprocess.run(args, capture_output=True, text=True, cwd=self.cwd, env=clean, timeout=120, **kwargs)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    work = tmp_path_factory.mktemp("wheel")
    wheels = work / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                            "--no-cache-dir", "-w", str(wheels), SOURCE], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    found = list(wheels.glob("gmem-*.whl"))
    assert len(found) == 1, found
    root = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(root)], check=True)
    installed = subprocess.run([str(root / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-index",
                                "--no-cache-dir", str(found[0])], capture_output=True, text=True)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return Venv(str(root), str(found[0]))


def test_wheel_carries_the_module_gmemprof_the_recording_libraries_and_the_companion(venv):
    with zipfile.ZipFile(venv.wheel) as z:
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
        entry_points = next(z.read(n).decode() for n in modes if n.endswith(".dist-info/entry_points.txt"))
    expected = ["gmem/__init__.py", "gmem/__main__.py", "gmem/_core" + sysconfig.get_config_var("EXT_SUFFIX"),
                "gmem/prefix/bin/gmemprof", "gmem/prefix/lib/libgmem_record.so",
                "gmem/prefix/share/gmem/companion/sitecustomize.py"]
    if PRELOAD_BUILT:
        expected.append("gmem/prefix/lib/libgmem_record_preload.so")
    assert [e for e in expected if e not in modes] == []
    assert modes["gmem/prefix/bin/gmemprof"] & 0o111, "gmemprof is not executable in the wheel"
    assert "gmemprof = gmem._gmemprof:main" in entry_points
    assert not [n for n in modes if n.startswith(("tests/", "python/", "wheel_build"))]


def test_installed_binaries_load_only_what_the_wheel_or_the_system_holds(venv):
    binaries = [os.path.join(venv.package, "prefix", "bin", "gmemprof")]
    for folder in (venv.package, os.path.join(venv.package, "prefix", "lib")):
        binaries += [os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".so")]
    assert len(binaries) == (4 if PRELOAD_BUILT else 3), binaries
    for binary in binaries:
        ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
        loaded = [line.split()[0] for line in ldd.splitlines() if line.split()]
        foreign = [n for n in loaded if not os.path.basename(n).startswith(SYSTEM_LIBRARIES)]
        assert foreign == [], "%s loads %s:\n%s" % (binary, foreign, ldd)
        missing = [line for line in ldd.splitlines() if "not found" in line and "libcuda.so.1" not in line]
        assert missing == [], ldd


def test_gmem_imports_from_the_venv_outside_the_source_tree(venv):
    p = venv.run([venv.python, "-c", "import gmem, gmem.testing; print(gmem.__file__); print(gmem.Report.__name__)"])
    assert p.returncode == 0, p.stderr
    path, report = p.stdout.split()
    assert path == os.path.join(venv.package, "__init__.py")
    assert report == "Report"


def test_python_m_gmem_and_the_script_are_the_bundled_gmemprof(venv):
    version = venv.run([venv.python, "-m", "gmem", "--version"])
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("gmem "), version.stdout
    script = venv.run([venv.gmemprof, "--version"])
    assert (script.returncode, script.stdout) == (0, version.stdout)
    usage = venv.run([venv.python, "-m", "gmem", "--help"])
    assert usage.returncode == 0 and "record" in usage.stdout, usage.stdout + usage.stderr
    wrong = venv.run([venv.gmemprof, "no-such-command"])
    assert wrong.returncode == 2 and "not a gmemprof command" in wrong.stderr, wrong.stderr


def test_installed_gmemprof_info_names_the_wheels_recording_library(venv):
    p = venv.run([venv.gmemprof, "info"])  # exit 3 without a GPU
    said = [l for l in p.stdout.splitlines() if l.startswith("recording library (gmemprof record): ")]
    assert len(said) == 1, p.stdout + p.stderr
    library = os.path.join(os.path.realpath(venv.package), "prefix", "lib", "libgmem_record.so")
    assert said[0].split(": ", 1)[1].startswith(library + " ("), said[0]


@pytest.mark.parametrize("how", ["python -m gmem", "gmemprof script"])
def test_record_passes_the_commands_exit_status_through(venv, how):
    launcher = [venv.python, "-m", "gmem"] if how == "python -m gmem" else [venv.gmemprof]
    p = venv.run(launcher + ["record", "-o", os.path.join(venv.cwd, "run.json"), "--",
                             sys.executable, "-c", "import sys; print('ran'); sys.exit(3)"])
    assert p.returncode == 3, p.stderr
    assert p.stdout == "ran\n"
    assert "gmemprof record:" in p.stderr  # without a GPU: nothing recorded, and why


@pytest.mark.skipif(not os.environ.get("GMEM_TEST_FAKE_CUDA"),
                    reason="GMEM_TEST_FAKE_CUDA names no stand-in libcuda (ctest's python.wheel does)")
def test_installed_gmemprof_runs_the_command_with_its_library_and_the_companion(venv):
    fake = os.path.join(venv.cwd, "fake-driver")
    os.makedirs(fake, exist_ok=True)
    if not os.path.lexists(os.path.join(fake, "libcuda.so.1")):
        os.symlink(os.environ["GMEM_TEST_FAKE_CUDA"], os.path.join(fake, "libcuda.so.1"))
    program = ("import os, sitecustomize; print(sitecustomize.__file__); "
               "print(os.environ['GMEM_RECORD_LIBRARY_LOADED']); print(os.environ.get('LD_PRELOAD', ''))")
    p = venv.run([venv.gmemprof, "record", "-o", os.path.join(venv.cwd, "fake.json"), "--",
                  sys.executable, "-c", program], env={"LD_LIBRARY_PATH": fake})
    assert p.returncode == 0, p.stderr
    companion, library, preload = p.stdout.splitlines()
    prefix = os.path.realpath(os.path.join(venv.package, "prefix"))
    assert companion == os.path.join(prefix, "share", "gmem", "companion", "sitecustomize.py")
    assert library == os.path.join(prefix, "lib", "libgmem_record.so")
    if PRELOAD_BUILT:
        assert preload.split(":")[0] == os.path.join(prefix, "lib", "libgmem_record_preload.so")
    assert "nothing recorded" not in p.stderr and "companion" not in p.stderr, p.stderr
    assert "no report was written: no process of the command made a CUDA call" in p.stderr, p.stderr
