"""The build step of `pip install` from a gmem checkout (setup.py). CMake builds gmemprof, the
recording libraries and the extension module for the Python that runs pip, and they are placed
in the package:

    gmem/_core<EXT_SUFFIX>                          the extension module
    gmem/prefix/bin/gmemprof                        laid out as `cmake --install` lays out a
    gmem/prefix/lib/libgmem_record.so               prefix, so that gmemprof finds its library
    gmem/prefix/lib/libgmem_record_preload.so       (../lib from its bin folder) and the library
    gmem/prefix/share/gmem/companion/sitecustomize.py   its companion (../share/gmem/companion)

The build is Release for sm_90 (never native: the build machine may have no GPU) with the CUDA
runtime linked statically, as tools/device-build.sh builds for the GPU machine: the binaries load
the driver and the C and C++ runtimes only, which is checked here before they are packaged.

Environment:
  GMEM_WHEEL_BUILD_DIR  the folder of the build's work (default: build-wheel in the checkout,
                        kept, so that installing again rebuilds only what changed): CMake's
                        build in PYTHON_TAG/ (one per Python), setuptools' in setuptools/
  GMEM_PREBUILT_DIR     an already built CMake folder of gmem (any build type, its extension
                        built for this Python) whose outputs are packaged as they are: nothing
                        is configured or built (the host test packages the test build this way)
  GMEM_WHEEL_ANY_PYTHON=1  tag the wheel py3-none-PLATFORM instead of this Python's tag, so that
                        it installs into any Python 3: the command line works there, and
                        gmem._core imports only into the Python it was built for
  CUDACXX               nvcc (default /usr/local/cuda/bin/nvcc, else nvcc on PATH)
  CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default: every core)
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Command
from setuptools.command.build_ext import build_ext as _build_ext
from setuptools.errors import SetupError

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ("gmemprof", "gmem_record", "gmem_record_preload", "gmem_python")
# What each target needs that a machine may lack, for the message when CMake did not make it.
TARGET_NEEDS = {
    "gmem_record": "CUDA's CUPTI headers (the CUDA Toolkit's extras/CUPTI)",
    "gmem_python": "Python's headers and pybind11 for " + sys.executable,
    "gmem_record_preload": "an x86-64 build machine (elsewhere gmemprof records with --hook cupti)",
}
OPTIONAL_TARGETS = {"gmem_record_preload"}
# What a packaged binary may load besides itself: the C and C++ runtimes, and the driver.
SYSTEM_LIBRARY = re.compile(r"^(linux-vdso\.so\.\d+|ld-linux[-\w.]*|lib(c|m|dl|rt|pthread|stdc\+\+|gcc_s)\.so[.\d]*"
                            r"|libcuda\.so\.1)$")


def project_version():
    """gmem's version, from project() in CMakeLists.txt."""
    text = open(os.path.join(SOURCE, "CMakeLists.txt"), encoding="utf-8").read()
    return re.search(r"project\(gmem VERSION ([\d.]+)", text).group(1)


def work_dir():
    return os.path.abspath(os.environ.get("GMEM_WHEEL_BUILD_DIR") or os.path.join(SOURCE, "build-wheel"))


def run(command, **kwargs):
    print("gmem wheel: " + " ".join(command), flush=True)
    return subprocess.run(command, **kwargs)


def nvcc():
    asked = os.environ.get("CUDACXX")
    if asked:
        return asked if os.access(asked, os.X_OK) else None
    default = "/usr/local/cuda/bin/nvcc"
    return default if os.access(default, os.X_OK) else shutil.which("nvcc")


def pybind11_cmake_dir():
    """pybind11's CMake folder: the importable package's, else Debian's pybind11-dev's."""
    try:
        import pybind11
        return pybind11.get_cmake_dir()
    except (ImportError, AttributeError):
        pass
    for d in ("/usr/lib/cmake/pybind11", "/usr/share/cmake/pybind11"):
        if os.path.exists(os.path.join(d, "pybind11Config.cmake")):
            return d
    return None


def cmake_version(cmake):
    out = subprocess.run([cmake, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version (\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def missing_tools():
    """What this machine lacks to build gmem, one line each (empty when nothing is missing)."""
    missing = []
    cmake = shutil.which("cmake")
    if not cmake:
        missing.append("cmake 3.24 or newer (Debian: apt-get install cmake; or pip install cmake)")
    elif cmake_version(cmake) < (3, 24):
        missing.append("cmake 3.24 or newer (%s is %d.%d)" % ((cmake,) + cmake_version(cmake)))
    if not shutil.which("ninja") and not shutil.which("make"):
        missing.append("ninja or make (Debian: apt-get install ninja-build)")
    if not any(shutil.which(c) for c in (os.environ.get("CXX") or "c++", "g++", "clang++")):
        missing.append("a C++17 compiler (Debian: apt-get install g++)")
    if not nvcc():
        missing.append("nvcc, the CUDA Toolkit's compiler (under /usr/local/cuda, or CUDACXX=/path/to/nvcc)")
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        missing.append("Python's headers for %s (Python.h; Debian: apt-get install python3-dev)" % sys.executable)
    if not pybind11_cmake_dir():
        missing.append("pybind11 for %s (pip install pybind11, or Debian: apt-get install pybind11-dev)"
                       % sys.executable)
    return missing


def configured_targets(build_dir):
    """The targets CMake generated, from its file API's code model (queried before configuring)."""
    reply = os.path.join(build_dir, ".cmake", "api", "v1", "reply")
    index = sorted(glob.glob(os.path.join(reply, "index-*.json")))
    if not index:
        return set()
    with open(index[-1], encoding="utf-8") as f:
        responses = json.load(f)["reply"]
    model = responses.get("codemodel-v2", {}).get("jsonFile")
    if not model:
        return set()
    with open(os.path.join(reply, model), encoding="utf-8") as f:
        configurations = json.load(f)["configurations"]
    return {t["name"] for c in configurations for t in c["targets"]}


def cmake_build(build_dir):
    """Configures (the first time) and builds the targets the package holds, in `build_dir`."""
    missing = missing_tools()
    if missing:
        raise SetupError("gmem cannot be built here; this machine lacks:\n  - " + "\n  - ".join(missing) +
                         "\nInstall them, or install a wheel of gmem built elsewhere for this Python "
                         "(docs/python.md, \"Installing with pip\")")
    query = os.path.join(build_dir, ".cmake", "api", "v1", "query", "codemodel-v2")
    os.makedirs(os.path.dirname(query), exist_ok=True)
    open(query, "a").close()
    configure = ["cmake", "-S", SOURCE, "-B", build_dir]
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        configure += ["-G", "Ninja" if shutil.which("ninja") else "Unix Makefiles"]
    configure += ["-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CUDA_ARCHITECTURES=90",
                  "-DCMAKE_CUDA_COMPILER=" + nvcc(), "-DGMEM_BUILD_TESTS=OFF", "-DGMEM_BUILD_BENCHMARKS=OFF",
                  "-DGMEM_BUILD_PYTHON=ON", "-DGMEM_SANITIZE=OFF", "-DGMEM_FUZZ=OFF",
                  "-DPython_EXECUTABLE=" + sys.executable, "-Dpybind11_DIR=" + pybind11_cmake_dir()]
    if run(configure).returncode != 0:
        raise SetupError("CMake could not configure gmem (its message is above: a package it names as not "
                         "found is what to install; nlohmann_json is Debian's nlohmann-json3-dev, or a prefix "
                         "made by tools/python-gpu.sh --deps PREFIX given as CMAKE_PREFIX_PATH=PREFIX)")
    made = configured_targets(build_dir)
    absent = [t for t in TARGETS if made and t not in made]
    for t in absent:
        print("gmem wheel: CMake made no target %s: it needs %s" % (t, TARGET_NEEDS.get(t, "see above")), flush=True)
    needed = [t for t in absent if t not in OPTIONAL_TARGETS]
    if needed:
        raise SetupError("CMake configured gmem without " + ", ".join(needed) + ": " +
                         "; ".join("%s needs %s" % (t, TARGET_NEEDS[t]) for t in needed))
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    build = ["cmake", "--build", build_dir, "--parallel", jobs, "--target"] + [t for t in TARGETS if t not in absent]
    if run(build).returncode != 0:
        raise SetupError("the build of gmem failed (the compiler's message is above)")


def foreign_libraries(path):
    """The libraries `path` loads that are neither in the wheel nor system libraries."""
    if not shutil.which("ldd"):
        return []
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    foreign = []
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ""
        if name and not SYSTEM_LIBRARY.match(os.path.basename(name)) and "libgmem_record" not in name:
            foreign.append(line.strip())
    return foreign


def place(source, destination):
    """Copies a built file into the package, without debug sections (a RelWithDebInfo build's
    gmemprof is 80 MB with them), executable."""
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    if not shutil.which("strip") or run(["strip", "--strip-debug", "-o", destination, source]).returncode != 0:
        shutil.copyfile(source, destination)
    os.chmod(destination, 0o755)


def package_outputs(build_dir, core_destination):
    """Places build_dir's outputs into the package beside core_destination (gmem/_core...)."""
    package = os.path.dirname(core_destination)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    core = os.path.join(build_dir, "python", "gmem", "_core" + suffix)
    if not os.path.exists(core):
        others = [os.path.basename(p) for p in glob.glob(os.path.join(build_dir, "python", "gmem", "_core*.so"))]
        raise SetupError("%s holds no gmem/_core%s for %s%s; build it there with -DPython_EXECUTABLE=%s, or "
                         "unset GMEM_PREBUILT_DIR" % (build_dir, suffix, sys.executable,
                                                     " (it holds %s, for another Python)" % ", ".join(others)
                                                     if others else "", sys.executable))
    prefix = os.path.join(package, "prefix")
    shutil.rmtree(prefix, ignore_errors=True)
    files = [(core, core_destination),
             (os.path.join(build_dir, "profiler", "gmemprof"), os.path.join(prefix, "bin", "gmemprof")),
             (os.path.join(build_dir, "record", "libgmem_record.so"), os.path.join(prefix, "lib", "libgmem_record.so"))]
    preload = os.path.join(build_dir, "record", "libgmem_record_preload.so")
    if os.path.exists(preload):
        files.append((preload, os.path.join(prefix, "lib", "libgmem_record_preload.so")))
    for source, destination in files:
        if not os.path.exists(source):
            raise SetupError("%s was not built in %s" % (os.path.basename(source), build_dir))
        place(source, destination)
        foreign = foreign_libraries(destination)
        if foreign:
            raise SetupError("%s loads libraries that are neither in the wheel nor system libraries:\n  %s"
                             % (os.path.basename(source), "\n  ".join(foreign)))
    companion = os.path.join(prefix, "share", "gmem", "companion")
    os.makedirs(companion)
    shutil.copyfile(os.path.join(SOURCE, "record", "companion", "sitecustomize.py"),
                    os.path.join(companion, "sitecustomize.py"))


class build_ext(_build_ext):
    """Builds gmem._core, and what the package carries with it, with CMake."""

    def build_extension(self, ext):
        prebuilt = os.environ.get("GMEM_PREBUILT_DIR")
        if prebuilt:
            build_dir = os.path.abspath(prebuilt)
            if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
                raise SetupError("GMEM_PREBUILT_DIR=%s is not a CMake build folder of gmem" % prebuilt)
        else:
            build_dir = os.path.join(work_dir(), sys.implementation.cache_tag or "python")
            cmake_build(build_dir)
        package_outputs(build_dir, self.get_ext_fullpath(ext.name))


class no_bdist_wheel(Command):
    """Where setuptools has no bdist_wheel of its own and the wheel package is missing: says so."""
    user_options = [("dist-dir=", "d", "where the wheel would go")]

    def initialize_options(self):
        self.dist_dir = None

    def finalize_options(self):
        pass

    def run(self):
        raise SetupError("building a wheel needs the wheel package for %s (Debian: apt-get install "
                         "python3-wheel; or pip install wheel)" % sys.executable)


def commands():
    """setup()'s cmdclass: the CMake build, and the wheel tag GMEM_WHEEL_ANY_PYTHON asks for."""
    try:
        from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
    except ImportError:
        try:
            from wheel.bdist_wheel import bdist_wheel as _bdist_wheel
        except ImportError:
            return {"build_ext": build_ext, "bdist_wheel": no_bdist_wheel}

    class bdist_wheel(_bdist_wheel):
        def get_tag(self):
            tag = super().get_tag()
            return ("py3", "none", tag[2]) if os.environ.get("GMEM_WHEEL_ANY_PYTHON") == "1" else tag

    return {"build_ext": build_ext, "bdist_wheel": bdist_wheel}
