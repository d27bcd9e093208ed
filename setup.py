"""pip install from a gmem checkout: `pip install --no-build-isolation .` builds gmemprof, the
recording libraries and the Python module with CMake and installs them as one package
(python/wheel_build.py; docs/python.md, "Installing with pip")."""

import os
import sys

from setuptools import Extension, setup

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
import wheel_build  # noqa: E402  (python/wheel_build.py)

os.makedirs(wheel_build.work_dir(), exist_ok=True)

setup(
    name="gmem",
    version=wheel_build.project_version(),
    description="What CUDA graphs cost in GPU memory, and why: gmemprof record and the gmem Python module",
    packages=["gmem"],
    package_dir={"": "python"},
    ext_modules=[Extension("gmem._core", sources=[])],  # built by CMake (wheel_build.build_ext)
    cmdclass=wheel_build.commands(),
    entry_points={"console_scripts": ["gmemprof = gmem._gmemprof:main"]},
    python_requires=">=3.8",
    zip_safe=False,
    options={"build": {"build_base": os.path.join(wheel_build.work_dir(), "setuptools")},
             "egg_info": {"egg_base": wheel_build.work_dir()}},
)
