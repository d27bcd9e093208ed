"""The record companion (record/companion/sitecustomize.py) against a stand-in `torch` package
laid out as PyTorch 2.11's (torch._C's pool calls, torch.cuda.graphs.CUDAGraph,
make_graphed_callables, torch._inductor.cudagraph_trees.CUDAGraphNode, torch.cuda.nvtx.mark,
the memory snapshot): a program run with the companion first on PYTHONPATH tells the recording,
through NVTX marks or directly once CUDA loaded the library, each capture's pool, site and label, each warm-up into a pool, and PyTorch's
own figure for each pool at its end; PyTorch's results are unchanged; an environment's own
sitecustomize still runs; a program that never imports torch sees nothing. No GPU needed."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.host

HERE = os.path.dirname(os.path.abspath(__file__))
COMPANION = os.path.normpath(os.path.join(HERE, "..", "..", "record", "companion"))

FAKE_TORCH = {
    "torch/__init__.py": """
        from . import _C
        from . import cuda
        from . import nn
        __version__ = "fake"
    """,
    "torch/nn/__init__.py": """
        class Module:
            pass
    """,
    "torch/_C.py": """
        calls = []
        def _cuda_beginAllocateCurrentThreadToPool(device, pool): calls.append(("begin", device, pool))
        def _cuda_endAllocateToPool(device, pool): calls.append(("end", device, pool))
        def _cuda_releasePool(device, pool): calls.append(("release", device, pool))
    """,
    "torch/cuda/__init__.py": """
        from . import nvtx
        from . import memory
        from .graphs import CUDAGraph, graph, make_graphed_callables
        def current_device(): return 0
        def is_initialized(): return True
    """,
    "torch/cuda/nvtx.py": """
        marks = []
        def mark(msg): marks.append(msg)
    """,
    "torch/cuda/memory.py": """
        def get_allocator_backend(): return "native"
        def _snapshot():
            return {"segments": [
                {"segment_pool_id": (0, 0), "total_size": 1 << 20, "device": 0, "address": 0x7f0000000000},
                {"segment_pool_id": (0, 1), "total_size": 20 << 20, "device": 0, "address": 0x7f0001000000},
                {"segment_pool_id": (0, 1), "total_size": 2 << 20, "device": 0, "address": 0x7f0003000000},
                {"segment_pool_id": (0, 2), "total_size": 4 << 20, "device": 0, "address": 0x7f0004000000}]}
    """,
    "torch/cuda/graphs.py": """
        import itertools
        _ids = itertools.count(1)
        class CUDAGraph:
            def capture_begin(self, pool=None, capture_error_mode="global"):
                self._pool = tuple(pool) if pool is not None else (0, next(_ids))
                self._ended = False
                return "began"
            def capture_end(self): self._ended = True
            def pool(self):  # as PyTorch's: refused before the capture has ended
                if not getattr(self, "_ended", False):
                    raise RuntimeError("Called CUDAGraph::pool() without a preceding successful capture.")
                return self._pool
        class graph:
            def __init__(self, g, pool=None, stream=None, capture_error_mode="global"):
                self.g, self.pool = g, pool
            def __enter__(self): self.g.capture_begin(pool=self.pool)
            def __exit__(self, *exc): self.g.capture_end()
        _graphed = []  # PyTorch's graphed callables hold their graphs
        def make_graphed_callables(fn, sample_args):
            g = CUDAGraph()
            with graph(g):
                pass
            _graphed.append(g)
            return fn
    """,
    "torch/_inductor/__init__.py": "",
    "torch/_inductor/cudagraph_trees.py": """
        import torch
        class _id:
            def __init__(self, i): self.id = i
        class _wrapped:
            static_input_idxs = [0]
        class _tensor:
            def __init__(self, shape): self.shape = shape
        class CUDAGraphNode:
            def __init__(self):
                self.id = _id(3)
                self.wrapped_function = _wrapped()
                self.graph = torch.cuda.CUDAGraph()
            def _record(self, model, inputs):
                with torch.cuda.graph(self.graph, pool=(0, 7)):
                    pass
                return "recorded"
        def warm_up():
            torch._C._cuda_beginAllocateCurrentThreadToPool(0, (0, 7))
            torch._C._cuda_endAllocateToPool(0, (0, 7))
    """,
}

PROGRAM = """
import json, sys
import torch
import torch._inductor.cudagraph_trees as trees
g = torch.cuda.CUDAGraph()
def capture_here():
    with torch.cuda.graph(g, pool=(0, 1)):
        pass
capture_here()
assert torch.cuda.make_graphed_callables(len, ()) is len
trees.warm_up()
assert trees.CUDAGraphNode()._record(None, [None, trees._tensor((8, 64))]) == "recorded"
last = torch.cuda.CUDAGraph(); assert last.capture_begin() == "began"; last.capture_end()
import atexit
atexit.register(lambda: json.dump({"marks": torch.cuda.nvtx.marks, "calls": [list(map(str, c)) for c in torch._C.calls]},
                                  open(sys.argv[1], "w")))
"""


def write_tree(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(textwrap.dedent(text))


def run(tmp_path, program, extra_path=(), **fake_overrides):
    fake = tmp_path / "fake"
    write_tree(str(fake), dict(FAKE_TORCH, **fake_overrides))
    script = tmp_path / "program.py"
    script.write_text(program)
    out = tmp_path / "out.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([COMPANION, str(fake), *extra_path])
    p = subprocess.run([sys.executable, str(script), str(out)], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(out.read_text()) if out.exists() else None


def marks(doc):
    out = []
    for m in doc["marks"]:
        verb, _, body = m[len("gmem:"):].partition(" ")
        out.append((verb, json.loads(body)))
    return out


def test_captures_warmups_and_the_end_are_told_and_pytorch_is_unchanged(tmp_path):
    doc = run(tmp_path, PROGRAM)
    said = marks(doc)
    captures = [b for v, b in said if v == "capture"]
    # The device is left to the library (-1): it reads the capturing thread's own, with no torch
    # call in the program's capture.
    assert captures[0] == {"pool": "(0, 1)", "device": -1, "site": "program.py:7 in capture_here", "label": "",
                           "previous_pool": ""}
    assert captures[1]["label"] == "make_graphed_callables"
    assert captures[2]["pool"] == "(0, 7)"
    # A tree node's label: the sizes a user knows; the framework's own words only after the
    # separator (what `gmemprof show --all` prints).
    assert captures[2]["label"] == "batch 8, sequence 64\x1fcudagraph tree node 3 [[8, 64]]"
    assert captures[3]["label"] == "" and captures[3]["site"] == "program.py:13 in <module>"
    assert ("warmup-begin", {"pool": "(0, 7)", "device": 0}) in said
    assert ("warmup-end", {}) in said
    # Each capture is told about before it begins, and after PyTorch's capture_end its pool with
    # PyTorch's figure for it then and its segments' addresses (the stand-in's snapshot).
    after = [b for v, b in said if v == "captured"]
    assert [b["pool"] for b in after] == ["(0, 1)", "(0, 1)", "(0, 7)", "(0, 2)"]
    assert after[0] == {"pool": "(0, 1)", "device": 0, "bytes": 22 << 20,
                        "segments": [0x7f0001000000, 0x7f0003000000]}
    assert after[3]["bytes"] == 4 << 20 and after[3]["segments"] == [0x7f0004000000]
    assert after[2] == {"pool": "(0, 7)", "device": 0, "bytes": 0, "segments": []}
    assert [v for v, _ in said].index("captured") == [v for v, _ in said].index("capture") + 1
    # Told so, no capture word names the pool of the capture before it.
    assert [b["previous_pool"] for b in captures] == ["", "", "", ""]
    # PyTorch's own functions still ran, with their arguments.
    assert doc["calls"] == [["begin", "0", "(0, 7)"], ["end", "0", "(0, 7)"]]


# A stand-in nvtx that writes every mark to MARKS_OUT once the end is said: the companion's end
# mark comes at exit, after the program's own handlers.
MARKS_AT_END = """
    import json, os
    marks = []
    def mark(msg):
        marks.append(msg)
        if msg.startswith("gmem:end"):
            json.dump(marks, open(os.environ["MARKS_OUT"], "w"))
"""


def last_word(tmp_path, program, **fake_overrides):
    """Runs `program` with the companion over the stand-in torch (`fake_overrides`: its files
    replaced) and returns its last mark, the end, as (verb, body)."""
    fake = tmp_path / "fake"
    write_tree(str(fake), dict(FAKE_TORCH, **{"torch/cuda/nvtx.py": MARKS_AT_END}, **fake_overrides))
    script = tmp_path / "program.py"
    script.write_text(program)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([COMPANION, str(fake)]), MARKS_OUT=str(tmp_path / "m.json"))
    p = subprocess.run([sys.executable, str(script), str(tmp_path / "out.json")], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    last = json.loads((tmp_path / "m.json").read_text())[-1]
    verb, _, body = last[len("gmem:"):].partition(" ")
    return verb, json.loads(body)


def test_the_end_tells_pytorchs_figure_for_each_graph_pool(tmp_path):
    verb, end = last_word(tmp_path, PROGRAM.replace("import atexit\n", "import atexit, os\n"))
    assert verb == "end"
    assert sorted((x["pool"], x["bytes"]) for x in end["pools"]) == [("(0, 1)", 22 << 20), ("(0, 2)", 4 << 20)]
    # With its segments' addresses: what a capture took elsewhere is not the pool's.
    assert {x["pool"]: x["segments"] for x in end["pools"]} == {"(0, 1)": [0x7f0001000000, 0x7f0003000000],
                                                               "(0, 2)": [0x7f0004000000]}
    # The last capture's pool was told as its capture ended.
    assert "previous_pool" not in end


# PyTorch's cudaMallocAsync backend: its snapshot holds no segments, nothing is said after a
# capture, and the pool PyTorch made is told at the thread's next capture and at the end.
ASYNC_MEMORY = """
    def get_allocator_backend(): return "cudaMallocAsync"
    def _snapshot(): return {"segments": []}
"""


def test_without_segments_a_pool_pytorch_made_is_told_at_the_next_capture_and_the_end(tmp_path):
    doc = run(tmp_path, PROGRAM, **{"torch/cuda/memory.py": ASYNC_MEMORY})
    said = marks(doc)
    assert "captured" not in [v for v, _ in said]
    assert [b["previous_pool"] for v, b in said if v == "capture"] == ["", "", "(0, 1)", ""]


def test_the_last_captures_pool_is_named_after_the_program_let_its_graph_go(tmp_path):
    # The program's only graph deleted before the end: the name PyTorch gave its pool was kept
    # when its capture ended.
    program = PROGRAM.replace("last.capture_end()\n", "last.capture_end(); del last\n")
    assert "del last" in program
    verb, end = last_word(tmp_path, program, **{"torch/cuda/memory.py": ASYNC_MEMORY})
    assert verb == "end"
    assert end["previous_pool"] == "(0, 2)"


def test_the_end_is_told_where_pytorch_has_no_snapshot(tmp_path):
    # PyTorch's cudaMallocAsync backend refuses the snapshot: the end is still said (the bill
    # ends there, before the interpreter's teardown frees memory), with no pools.
    no_snapshot = """
        def _snapshot():
            raise RuntimeError("cudaMallocAsync does not yet support _snapshot")
    """
    verb, end = last_word(tmp_path, PROGRAM, **{"torch/cuda/memory.py": no_snapshot})
    assert verb == "end"
    assert end == {"why": "the program's end (Python's atexit, before the interpreter's teardown)",
                   "previous_pool": "(0, 2)"}


def test_an_environments_own_sitecustomize_still_runs(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import os\nos.environ['OWN_SITECUSTOMIZE'] = 'ran'\n")
    doc = run(tmp_path, PROGRAM.replace('"calls":', '"own": __import__("os").environ.get("OWN_SITECUSTOMIZE"), "calls":'),
              extra_path=[str(own)])
    assert doc["own"] == "ran"


def test_a_program_without_torch_sees_nothing(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text("import sys, json\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('torch'))))\n")
    env = dict(os.environ, PYTHONPATH=COMPANION)
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == []


SAY_LIBRARY = r"""
#include <stdio.h>
#include <stdlib.h>
void gmem_record_say(const char* message) {
  FILE* f = fopen(getenv("SAID_OUT"), "a");
  if (f) { fprintf(f, "%s\n", message); fclose(f); }
}
void gmem_record_next_capture(const char* previous, const char* pool, int device, const char* site, const char* label) {
  FILE* f = fopen(getenv("SAID_OUT"), "a");
  if (f) {
    fprintf(f, "gmem:capture previous=%s|pool=%s|device=%d|site=%s|label=%s\n", previous, pool, device, site, label);
    fclose(f);
  }
}
"""


@pytest.mark.parametrize("loaded,variable", [(True, "CUDA_INJECTION64_PATH"), (False, "CUDA_INJECTION64_PATH"),
                                              (True, "GMEM_RECORD_LIBRARY_LOADED")])
def test_the_companion_says_its_word_directly_once_cuda_loaded_the_library(tmp_path, loaded, variable):
    """Once CUDA has loaded the recording library (CUDA_INJECTION64_PATH), the companion calls its
    gmem_record_say: no NVTX mark is made. Where the library is not loaded, the marks say it all.
    With --hook interpose, gmemprof record names the library in GMEM_RECORD_LIBRARY_LOADED alone.
    At the end it says what it cost: its calls and microseconds."""
    import shutil
    compiler = shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        pytest.skip("no C compiler to build the stand-in recording library")
    library = tmp_path / "libsay.so"
    source = tmp_path / "say.c"
    source.write_text(SAY_LIBRARY)
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    said = tmp_path / "said.txt"
    # The driver loads the injection library at its first call: the program loads it here.
    program = ("import ctypes, os\n" + (f"ctypes.CDLL({str(library)!r}, mode=os.RTLD_GLOBAL)\n" if loaded else "")
               + PROGRAM)
    # PyTorch's cudaMallocAsync backend: every word is said before a capture or at the end.
    fake = tmp_path / "fake"
    write_tree(str(fake), dict(FAKE_TORCH, **{"torch/cuda/memory.py": ASYNC_MEMORY}))
    script = tmp_path / "program.py"
    script.write_text(program)
    out = tmp_path / "out.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([COMPANION, str(fake)]), SAID_OUT=str(said))
    env.pop("CUDA_INJECTION64_PATH", None)
    env.pop("GMEM_RECORD_LIBRARY_LOADED", None)
    env[variable] = str(library)
    p = subprocess.run([sys.executable, str(script), str(out)], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    direct = said.read_text().splitlines() if said.exists() else []
    if loaded:
        assert doc["marks"] == []
        verbs = [m[len("gmem:"):].partition(" ")[0] for m in direct]
        assert "captured" not in verbs
        # The capture word comes with its fields (gmem_record_next_capture).
        lines = program.splitlines()
        line_of = {k: 1 + next(i for i, t in enumerate(lines) if k in t) for k in ("pool=(0, 1)", "._record(")}
        assert direct[0] == f"gmem:capture previous=|pool=(0, 1)|device=-1|site=program.py:{line_of['pool=(0, 1)']} in capture_here|label="
        assert (f"gmem:capture previous=(0, 1)|pool=(0, 7)|device=-1|site=program.py:{line_of['._record(']} in <module>"
                "|label=batch 8, sequence 64\x1fcudagraph tree node 3 [[8, 64]]") in direct
        # make_graphed_callables names no pool: the stand-in makes (0, 1), told at the next capture.
        named_none = next(i for i, m in enumerate(direct) if m.endswith("|label=make_graphed_callables"))
        assert direct[named_none].startswith("gmem:capture previous=|pool=|device=-1|")
        after = next(m for m in direct[named_none + 1:] if m.startswith("gmem:capture "))
        assert after.startswith("gmem:capture previous=(0, 1)|pool=(0, 7)|")
        assert json.loads(direct[-1].partition(" ")[2])["previous_pool"] == "(0, 2)"
        assert "warmup-begin" in verbs and verbs[-2:] == ["cost", "end"]
        cost = json.loads(direct[-2].partition(" ")[2])
        assert cost["calls"] == len(direct) - 2 and cost["us"] > 0
    else:
        assert direct == []
        assert [v for v, _ in marks(doc)][:2] == ["capture", "capture"]


# A model in an installed package, compiled: inductor's generated code (in its cache folder)
# captures from inside the package's forward, which the program called.
LIBRARY_MODEL = """
import torch
class Net(torch.nn.Module):
    def forward(self, call):
        return call(self.capture)
    def capture(self):
        with torch.cuda.graph(torch.cuda.CUDAGraph(), pool=(0, 1)):
            pass

def _capture():
    with torch.cuda.graph(torch.cuda.CUDAGraph(), pool=(0, 1)):
        pass

def compiled(forward):
    # As transformers decorates a forward and torch.compile then runs the decorator's frame: the
    # frame on the stack is the wrapper's, with the module as self.
    def wrapper(self, call):
        return call(_capture)
    return wrapper

class Wrapped(torch.nn.Module):
    @compiled
    def forward(self, call):
        pass
"""

GENERATED = """
def call(capture):
    return capture()
"""


# A decorator's wrapper names its module from its `self`, which Python 3.11 cannot read without
# filling the frame's locals dictionary (the companion does not: see the test below).
WRAPPER_LABEL = "Wrapped.forward" if sys.version_info >= (3, 12) else ""


@pytest.mark.parametrize("model,label", [("Net", "Net.capture"), ("Wrapped", WRAPPER_LABEL)])
def test_a_captures_site_is_the_programs_line_and_its_label_the_compiled_module_method(tmp_path, model, label):
    lib = tmp_path / "lib" / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "model.py").write_text(LIBRARY_MODEL)
    generated = tmp_path / "torchinductor_user" / "ab"
    generated.mkdir(parents=True)
    (generated / "cabcdef.py").write_text(GENERATED)
    program = ("import json, sys, importlib.util\n"
               "import torch\n"
               f"from fakelib.model import {model} as Net\n"
               f"spec = importlib.util.spec_from_file_location('cabcdef', {str(generated / 'cabcdef.py')!r})\n"
               "code = importlib.util.module_from_spec(spec); spec.loader.exec_module(code)\n"
               "def main():\n"
               "    Net().forward(code.call)\n"
               "main()\n"
               "import atexit\n"
               "atexit.register(lambda: json.dump({'marks': torch.cuda.nvtx.marks}, open(sys.argv[1], 'w')))\n")
    doc = run(tmp_path, program, extra_path=[str(tmp_path / "lib" / "site-packages")])
    captures = [b for v, b in marks(doc) if v == "capture"]
    assert len(captures) == 1
    # The program's own line, past the generated code and the package; the package's module
    # method that the generated code ran inside names what was compiled.
    assert captures[0]["site"] == "program.py:7 in main"
    assert captures[0]["label"] == label + "\x1ffrom cabcdef.py:3 in call"


def test_a_capture_made_through_gmems_own_wrappers_is_the_programs_line(tmp_path):
    # gmem.predict wraps torch.cuda.CUDAGraph.capture_begin to measure each graph: its frames
    # are gmem's, not the program's.
    package = tmp_path / "pkg" / "gmem"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "_readings.py").write_text("")
    (package / "predict.py").write_text("import torch\n"
                                         "def capture():\n"
                                         "    with torch.cuda.graph(torch.cuda.CUDAGraph(), pool=(0, 1)):\n"
                                         "        pass\n")
    program = ("import json, sys\n"
               "import torch\n"
               "import gmem.predict\n"
               "def main():\n"
               "    gmem.predict.capture()\n"
               "main()\n"
               "import atexit\n"
               "atexit.register(lambda: json.dump({'marks': torch.cuda.nvtx.marks}, open(sys.argv[1], 'w')))\n")
    doc = run(tmp_path, program, extra_path=[str(tmp_path / "pkg")])
    captures = [b for v, b in marks(doc) if v == "capture"]
    assert [c["site"] for c in captures] == ["program.py:5 in main"]


# Methods in an installed package, one a module's, capture and then let go of what their locals
# held: the companion's look at the stack for the compiled module's method must not keep those
# values alive (a frame's f_locals, before Python 3.13, holds them until the frame ends).
LETTING_GO = """
import gc, weakref
import torch
class Held:
    pass
def capture_and_let_go(self):
    held = Held()
    seen = weakref.ref(held)
    with torch.cuda.graph(torch.cuda.CUDAGraph(), pool=(0, 1)):
        pass
    held = None
    gc.collect()
    return seen() is None
class Worker:
    run = capture_and_let_go
class Net(torch.nn.Module):
    forward = capture_and_let_go
"""

LETS_GO = """
import json, sys
import torch
from fakelib.model import Worker, Net
freed = [Worker().run(), Net().forward()]
marks = [m for m in torch.cuda.nvtx.marks if m.startswith("gmem:capture ")]
json.dump({"freed": freed, "marks": marks}, open(sys.argv[1], "w"))
"""


def test_looking_for_the_compiled_method_keeps_no_local_of_the_programs_frames_alive(tmp_path):
    lib = tmp_path / "lib" / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "model.py").write_text(LETTING_GO)
    doc = run(tmp_path, LETS_GO, extra_path=[str(tmp_path / "lib" / "site-packages")])
    assert doc["freed"] == [True, True]
    assert len(doc["marks"]) == 2
