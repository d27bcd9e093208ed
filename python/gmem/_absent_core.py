"""What gmem says when its extension module gmem._core does not import: a wheel built for
another Python version, or the source folder python/ imported without a build. The package
still imports, so that `python -m gmem` and the gmemprof script run; any other name of it
raises ImportError with the reason and what to do."""

import glob
import os
import sys
import sysconfig


def explanation(name, error):
    """Why gmem.`name` is not there, and how to get it."""
    here = os.path.dirname(os.path.abspath(__file__))
    built = sorted(os.path.basename(p) for p in glob.glob(os.path.join(here, "_core*.so")))
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    version = "%d.%d" % sys.version_info[:2]
    if built:
        found = "this installation holds %s, built for another Python" % ", ".join(built)
    else:
        found = "this installation holds no gmem/_core*.so (the source folder python/ is not a build)"
    return ("gmem.%s needs gmem's extension module gmem._core, which does not import in this Python "
            "(%s, %s, expects _core%s): %s; %s. `python -m gmem` and the gmemprof command work "
            "without it. For the Python API, build gmem for this Python: `%s -m pip install "
            "--no-build-isolation .` in a gmem checkout (docs/python.md)"
            % (name, version, sys.executable, suffix, error, found, os.path.basename(sys.executable)))


def module_getattr(error):
    """A module __getattr__ for gmem without its extension: ImportError, with the explanation,
    for a public name (and _core); AttributeError for other private names and dunders, which
    tools probe with getattr(module, name, default)."""
    def __getattr__(name):
        if name.startswith("_") and name != "_core":
            raise AttributeError("module 'gmem' has no attribute '%s'" % name)
        raise ImportError(explanation(name, error), name="gmem._core")
    return __getattr__
