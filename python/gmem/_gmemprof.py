"""The gmemprof command installed with the package: `python -m gmem ARGS` and the `gmemprof`
script run it with ARGS in this process's place, so that its exit status (in `record`, the
recorded command's), its signals and its output are the command's own. Neither imports gmem's
extension module, so both work in a Python the wheel's gmem._core was not built for."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def executable():
    """gmemprof's path: the wheel's (gmem/prefix/bin, laid out as an install prefix, so that it
    finds its recording library and the Python companion as an installed gmemprof does), else a
    build folder's (gmem imported from BUILD/python); None when neither is there."""
    for path in (os.path.join(_HERE, "prefix", "bin", "gmemprof"),
                 os.path.join(_HERE, os.pardir, os.pardir, "profiler", "gmemprof")):
        if os.path.isfile(path):
            return os.path.normpath(path)
    return None


def main(args=None):
    """Runs gmemprof with `args` (default: this process's arguments) in this process's place;
    returns only when it cannot be run: 127 when it is missing, 126 when it does not start."""
    args = sys.argv[1:] if args is None else list(args)
    path = executable()
    if path is None:
        sys.stderr.write("gmem: this installation of gmem (%s) has no gmemprof: install gmem from a "
                         "checkout with `pip install --no-build-isolation .` (docs/python.md)\n" % _HERE)
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(path, [path] + args)
    except OSError as e:
        sys.stderr.write("gmem: cannot run %s: %s\n" % (path, e))
        return 126
