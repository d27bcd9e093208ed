"""gmem's Python companion for `gmemprof record` (docs/record.md, "The bill").

`gmemprof record` puts this folder first on PYTHONPATH, so Python runs this file at start-up
(as `sitecustomize`), before the program. It imports nothing heavy and changes nothing the
program does: when, and only when, the program imports PyTorch, it wraps a few PyTorch calls to
tell the recording library what only PyTorch knows: directly (ctypes) once CUDA has loaded the
library, else through NVTX marks (torch.cuda.nvtx.mark, which the library's CUPTI subscription
receives):
  - which of its allocator's pools a capture takes memory into (where PyTorch made the pool, at
    the thread's next capture or the end), where in the program the capture was made (file:line
    and function) and what the framework calls it (a CUDA graph tree node of torch.compile,
    make_graphed_callables);
  - when a warm-up run of torch.compile's CUDA graph trees allocates into a graph pool;
  - at the program's end (Python's atexit, before the interpreter tears graphs and pools down),
    PyTorch's own figure for each graph pool (its memory snapshot);
  - in any Python program, where a KeyboardInterrupt was not caught: that the library writes its
    report now (Python then ends the process with SIGINT, and no C exit handler runs).
Every wrapper calls PyTorch's own function and swallows its own errors: the program sees
PyTorch as it is. A `sitecustomize` the environment already had is run after this one.
GMEM_RECORD_COMPANION=0 (read by `gmemprof record`) leaves this folder off the path;
GMEM_RECORD_COMPANION_DEBUG=1 prints, at exit, what it said, what that cost and what failed."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _run_the_next_sitecustomize():
    """The environment's own sitecustomize, which this file shadows."""
    try:
        import importlib.machinery
        import importlib.util
        path = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
    except Exception:
        pass


class _companion:
    def __init__(self):
        import threading
        import time
        class thread_words(threading.local):
            # Class defaults: a thread's first look finds them without a missed attribute's
            # error path (about 0.9 us each on an H100 host, up to two a capture).
            label = None  # the label of the capture this thread is about to make
            detail = None  # and the framework's own words for it
            previous = None  # a weak reference to the thread's last capture, where PyTorch made its pool

        self.local = thread_words()
        self.torch = None
        self.mark = None
        self.torch_dir = None
        self.inductor_dir = None  # TORCHINDUCTOR_CACHE_DIR, where set (else its default's name is known)
        self.debug = os.environ.get("GMEM_RECORD_COMPANION_DEBUG") == "1"
        self.clock = time.perf_counter
        self.said, self.spent, self.errors = {}, 0.0, []
        self.said_directly = None  # the library's gmem_record_say: None until looked for
        self.capture_word = None  # its gmem_record_next_capture, where it has it
        self.native = None  # whether PyTorch's allocator is its native one (snapshots hold segments)
        self.frame_variable = None  # PyFrame_GetVar (Python 3.12 and later); False where none
        # id(a function's code) -> (the code, its file's name (None: PyTorch's or this file's),
        # its sites' texts by line)
        self.files = {}

    # ---- speaking to the recording library

    def direct(self):
        """The recording library's gmem_record_say, once CUDA has loaded the library (through
        CUDA_INJECTION64_PATH, at its first call; or preloaded): the companion's word without NVTX's and CUPTI's
        dispatch. None until then, and where it cannot be had (the NVTX mark says the same).
        With it, where the library exports it, gmem_record_next_capture: the word of every
        capture with its fields, no JSON made here or parsed there."""
        if self.said_directly is None and self.torch is not None and self.torch.cuda.is_initialized():
            self.said_directly = False
            try:
                import ctypes
                library = _recording_library()
                function = library.gmem_record_say
                function.argtypes, function.restype = [ctypes.c_char_p], None
                self.said_directly = function
                # No argtypes: the fields are bytes and ints already, which ctypes passes as
                # char* and int by default, without converting each through its argtypes.
                capture = library.gmem_record_next_capture
                capture.restype = None
                self.capture_word = capture
            except Exception:
                pass
        return self.said_directly or None

    def say(self, verb, body):
        start = self.clock()
        self.say_untimed(verb, body)
        self.spent += self.clock() - start

    def say_untimed(self, verb, body):
        try:
            import json
            message = "gmem:" + verb + " " + json.dumps(body, separators=(",", ":"))
            direct = self.direct()
            if direct is not None:
                direct(message.encode("utf-8", "replace"))
            else:
                if self.mark is None:
                    self.mark = self.torch.cuda.nvtx.mark
                self.mark(message)
        except Exception as e:
            self.errors.append(f"{verb}: {type(e).__name__}: {e}")
        self.said[verb] = self.said.get(verb, 0) + 1

    CAPTURE_FIELDS = ("previous_pool", "pool", "device", "site", "label")

    def tell_capture(self, *fields):
        """The capture word (the pool PyTorch made for this thread's capture before, pool, device,
        site, label; the texts as UTF-8 bytes), said with its fields where the library takes them
        so (no JSON made or parsed), else as any word. Untimed: the wrappers time the whole of
        their work."""
        if self.said_directly is None:
            self.direct()
        word = self.capture_word if self.said_directly else None
        try:
            if word is None:
                texts = [f.decode("utf-8", "replace") if type(f) is bytes else f for f in fields]
                self.say_untimed("capture", dict(zip(self.CAPTURE_FIELDS, texts)))
                return
            word(*fields)
            self.said["capture"] = self.said.get("capture", 0) + 1
        except Exception as e:
            self.errors.append(f"capture: {type(e).__name__}: {e}")

    def report(self):
        """GMEM_RECORD_COMPANION_DEBUG=1: what the companion said, what it cost, what failed."""
        sys.stderr.write(f"gmem companion: said {dict(sorted(self.said.items()))} in {self.spent * 1e3:.1f} ms"
                         + (f"; errors: {self.errors[:5]}" if self.errors else "") + "\n")

    # A frame's file, as site() sorts it (decided once per function's code).
    INSIDE, GENERATED, LIBRARY, PROGRAM = 0, 1, 2, 3

    def kind_of_file(self, name):
        """INSIDE: PyTorch's, this file's, "<...>" names, contextlib's and functools', gmem's own
        package's (its measuring wrappers of captures, gmem.predict's); GENERATED: code inductor
        wrote into its cache folder; LIBRARY: an installed package's (site-packages,
        dist-packages: transformers, vLLM); PROGRAM: the program's own."""
        if os.sep + "torchinductor_" in name or (self.inductor_dir and name.startswith(self.inductor_dir)):
            return self.GENERATED
        if name.startswith(self.torch_dir) or name == __file__ or name.startswith("<") or \
                os.sep + "contextlib.py" in name or os.sep + "functools.py" in name:
            return self.INSIDE
        folder = os.path.dirname(name)
        if os.path.basename(folder) == "gmem" and os.path.exists(os.path.join(folder, "_readings.py")):
            return self.INSIDE
        if os.sep + "site-packages" + os.sep in name or os.sep + "dist-packages" + os.sep in name:
            return self.LIBRARY
        return self.PROGRAM

    def site(self):
        """Where the capture comes from, as (site, function, generated), UTF-8 bytes (b"" where none):
        site, the program's innermost frame outside PyTorch, generated code and installed
        packages ("gen.py:42 in main"; an installed package's frame where the program has none);
        function, the innermost module method on the way there ("LlamaForCausalLM.forward", the
        model torch.compile compiled); generated, inductor's code that captured it. Each function's file is sorted once, and each site's text
        made once (a warm-up captures thousands of graphs from a few sites)."""
        function = generated = b""
        library = None
        try:
            f = sys._getframe(2)
            files = self.files
            module = self.torch.nn.Module
            while f is not None:
                # Keyed by the code's id, the code kept in the value so that the id stays its
                # own: a code object's hash is not cached (it hashes the function's constants).
                code = f.f_code
                known = files.get(id(code))
                if known is None:
                    name = code.co_filename
                    kind = self.kind_of_file(name)
                    method = code.co_argcount > 0 and code.co_varnames[0] == "self"
                    known = (code, kind, os.path.basename(name), {}, method)
                    if len(files) < 4096:
                        files[id(code)] = known
                kind = known[1]
                if kind == self.GENERATED and not generated:
                    generated = f"{known[2]}:{f.f_lineno} in {code.co_name}".encode("utf-8", "replace")
                if kind > self.GENERATED:
                    if not function and known[4]:
                        owner = self.owner_class(f)
                        if owner is not None and issubclass(owner, module):
                            # A decorator's wrapper around the module's forward (transformers wraps
                            # it so; torch.compile then compiles the wrapper's frame) is named for
                            # what the module was called for: a method the class does not have.
                            method = code.co_name if hasattr(owner, code.co_name) else "forward"
                            function = f"{owner.__name__}.{method}".encode("utf-8", "replace")
                    texts = known[3]  # line -> the site's text
                    text = texts.get(f.f_lineno)
                    if text is None:
                        text = f"{known[2]}:{f.f_lineno} in {code.co_name}".encode("utf-8", "replace")
                        if len(texts) < 256:
                            texts[f.f_lineno] = text
                    if kind == self.PROGRAM:
                        return text, function, generated
                    if library is None:
                        library = text
                f = f.f_back
        except Exception:
            pass
        return library or b"", function, generated

    def owner_class(self, f):
        """The class of a method frame's `self`, read without `f.f_locals`: before Python 3.13
        that fills the frame's own locals dictionary, which then holds every local's value of
        that moment until the frame ends or reads its locals again, so a test's or a warm-up
        loop's frame would keep tensors it has since let go (PyTorch's memory statistics, its
        pools' blocks and what the program frees would all change). Python 3.12 and later read
        the one variable (PyFrame_GetVar); Python 3.11 has the class the method is defined in,
        where the frame's module names it (the code's qualified name); None where neither can
        be had (a decorator's wrapper before 3.12, Python 3.10)."""
        getter = self.frame_variable
        if getter is None:
            getter = False
            if sys.version_info >= (3, 12):
                try:
                    import ctypes
                    getter = ctypes.pythonapi.PyFrame_GetVar
                    getter.argtypes, getter.restype = [ctypes.py_object, ctypes.py_object], ctypes.py_object
                except Exception:
                    getter = False
            self.frame_variable = getter
        try:
            if getter:
                return type(getter(f, "self"))
            owner = f.f_globals.get(f.f_code.co_qualname.split(".")[0])
            return owner if isinstance(owner, type) else None
        except Exception:
            return None

    def label(self, function, generated):
        """The capture's label: the compiled function and the sizes a user knows, for the graph's
        name ("LlamaForCausalLM.forward, batch 1, sequence 1"); then, after a unit separator
        (0x1f), what only `gmemprof show --all` prints: the framework's own words for the graph
        (its CUDA graph tree node, the inputs' shapes) and the generated code that captured it."""
        local = self.local
        words = local.label
        label = b", ".join(x for x in (function, words.encode("utf-8", "replace") if words else b"") if x)
        detail = local.detail
        detail = (detail.encode("utf-8", "replace") if detail else b"") + \
            ((b" from " if detail else b"from ") + generated if generated else b"")
        return label + b"\x1f" + detail if detail else label

    @staticmethod
    def shape_words(shapes):
        """A CUDA graph tree node's dynamic inputs' shapes as the sizes a user knows: the first
        input's first dimension the batch, its second the sequence ("batch 8, sequence 256")."""
        try:
            first = shapes[0]
            words = f"batch {first[0]}"
            if len(first) > 1:
                words += f", sequence {first[1]}"
            return words
        except Exception:
            return ""

    @staticmethod
    def pool_name(pool):
        """PyTorch's pool id, a pair of integers, as "(0, 1)"."""
        try:
            if type(pool) is tuple and len(pool) == 2:
                return "(%d, %d)" % pool
            return str(tuple(int(x) for x in pool))
        except Exception:
            return ""

    # ---- wrapping PyTorch, once it is imported

    def attach(self, graphs):
        """torch.cuda.graphs was just imported (while torch.cuda is still being imported)."""
        if self.torch is not None:
            return
        torch = sys.modules["torch"]
        self.torch = torch
        self.torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
        inductor = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        self.inductor_dir = os.path.abspath(inductor) + os.sep if inductor else None
        self.wrap_capture(torch, graphs)
        self.wrap_pool_calls(torch)
        self.wrap_graphed_callables(graphs)
        import atexit
        if self.debug:
            atexit.register(self.report)  # runs after at_end: atexit runs the last registered first
        atexit.register(self.at_end)

    def wrap_capture(self, torch, graphs):
        """A capture is told about before it begins: its site, label and pool where the program
        names one (no mark is made while a capture is active, which CUPTI does not pass on).
        After PyTorch's capture_end the capture's pool is said with PyTorch's own figure for it
        then (after_capture); where that cannot be read (PyTorch's cudaMallocAsync backend has
        no segments) the pool's name is kept and told at the thread's next capture, or the end."""
        graph_class = getattr(graphs, "CUDAGraph", None)
        begin = getattr(graph_class, "capture_begin", None)
        end = getattr(graph_class, "capture_end", None)
        if begin is None:
            return
        import weakref
        companion = self
        clock, local, ref = self.clock, self.local, weakref.ref

        def capture_begin(graph, *args, **kwargs):
            start = clock()
            pool = None
            try:
                pool = kwargs.get("pool", args[0] if args else None)
                # Device -1: the library reads the capturing thread's own (no torch call here).
                site, function, generated = companion.site()
                companion.tell_capture(companion.previous_pool(),
                                       companion.pool_name(pool).encode() if pool is not None else b"",
                                       -1, site, companion.label(function, generated))
            except Exception:
                pass
            companion.spent += clock() - start
            result = begin(graph, *args, **kwargs)
            if pool is None:  # PyTorch made its pool: told at this thread's next capture, or the end
                try:
                    local.previous = ref(graph)
                except Exception:
                    pass
            return result

        capture_begin.__wrapped__ = begin
        graph_class.capture_begin = capture_begin
        if end is None:
            return

        def capture_end(graph, *args, **kwargs):
            result = end(graph, *args, **kwargs)
            start = clock()
            try:
                if companion.after_capture(graph):
                    local.previous = None
                else:
                    pending = local.previous
                    if pending is not None and type(pending) is not bytes and pending() is graph:
                        local.previous = companion.pool_name(graph.pool()).encode()
            except Exception:
                pass
            companion.spent += clock() - start
            return result

        capture_end.__wrapped__ = end
        graph_class.capture_end = capture_end

    def after_capture(self, graph):
        """Says the pool the capture just ended took memory into, with PyTorch's own figure for
        it now and its segments' addresses (its snapshot: under a millisecond for a thousand
        blocks on an H200 host), so that the recording's figure for the pool after every capture
        is compared with PyTorch's. False where the snapshot has no segments to read (the
        cudaMallocAsync backend) or cannot be read."""
        torch = self.torch
        if self.native is None:
            try:
                self.native = torch.cuda.memory.get_allocator_backend() == "native"
            except Exception:
                self.native = False
        if not self.native:
            return False
        try:
            pool = tuple(graph.pool())
            device = torch.cuda.current_device()
            held, addresses = 0, []
            for seg in torch.cuda.memory._snapshot()["segments"]:
                if tuple(seg.get("segment_pool_id", (0, 0))) == pool and int(seg.get("device", 0)) == device:
                    held += int(seg["total_size"])
                    addresses.append(int(seg["address"]))
        except Exception:
            return False
        self.say_untimed("captured", {"pool": self.pool_name(pool), "device": device, "bytes": held,
                                      "segments": addresses})
        return True

    def previous_pool(self):
        """The pool PyTorch made for this thread's last capture (UTF-8 bytes; b"" where the
        program named it): its name as kept after capture_end, else (a capture_end that could not
        tell it) PyTorch's answer now, while the graph lives."""
        previous = self.local.previous
        if previous is None:
            return b""
        self.local.previous = None
        if type(previous) is bytes:
            return previous
        graph = previous()
        try:
            return self.pool_name(graph.pool()).encode() if graph is not None else b""
        except Exception:
            return b""

    def wrap_pool_calls(self, torch):
        """torch.compile's CUDA graph trees run each new shape once inside the graph pool before
        they capture it: begin/end of allocating the thread's (or stream's) memory to a pool."""
        companion = self
        C = torch._C
        for name in ("_cuda_beginAllocateCurrentThreadToPool", "_cuda_beginAllocateCurrentStreamToPool",
                     "_cuda_beginAllocateToPool"):
            original = getattr(C, name, None)
            if original is None:
                continue

            def begin(device, pool, *rest, _original=original):
                result = _original(device, pool, *rest)
                companion.say("warmup-begin", {"pool": companion.pool_name(pool), "device": int(device)})
                return result

            setattr(C, name, begin)
        for name in ("_cuda_endAllocateToPool", "_cuda_endAllocateCurrentStreamToPool"):
            original = getattr(C, name, None)
            if original is None:
                continue

            def end(*args, _original=original):
                result = _original(*args)
                companion.say("warmup-end", {})
                return result

            setattr(C, name, end)

    def wrap_graphed_callables(self, graphs):
        """torch.cuda.make_graphed_callables: bound by torch.cuda from this module right after it
        is imported, so the wrapper is what the program calls."""
        original = getattr(graphs, "make_graphed_callables", None)
        if original is None:
            return
        companion = self

        def make_graphed_callables(*args, **kwargs):
            companion.local.label = "make_graphed_callables"
            try:
                return original(*args, **kwargs)
            finally:
                companion.local.label = ""

        make_graphed_callables.__wrapped__ = original
        graphs.make_graphed_callables = make_graphed_callables

    def wrap_tree_nodes(self, trees):
        """A CUDA graph tree node's recording: its id and the shapes of its dynamic inputs."""
        node = getattr(trees, "CUDAGraphNode", None)
        record = getattr(node, "_record", None)
        if record is None:
            return
        companion = self

        def _record(self, model, inputs):
            label = detail = ""
            try:
                static = set(getattr(self.wrapped_function, "static_input_idxs", ()))
                shapes = [list(x.shape) for i, x in enumerate(inputs)
                          if i not in static and hasattr(x, "shape")][:4]
                node_id = getattr(getattr(self, "id", None), "id", getattr(self, "id", ""))
                label = companion.shape_words(shapes)
                detail = f"cudagraph tree node {node_id}" + (f" {shapes}" if shapes else "")
            except Exception:
                pass
            local = companion.local
            local.label, local.detail = label, detail
            try:
                return record(self, model, inputs)
            finally:
                local.label = local.detail = ""

        _record.__wrapped__ = record
        node._record = _record

    def at_end(self):
        """What the companion cost the program (its time in its wrappers, the marks it said
        included: the recording library times those itself), and PyTorch's own figure for each
        graph pool, at the program's end."""
        self.say("cost", {"calls": sum(self.said.values()), "us": self.spent * 1e6})
        try:
            if not self.torch.cuda.is_initialized():
                return
        except Exception:
            return
        # The end is said whether or not the snapshot can be read (PyTorch's cudaMallocAsync
        # backend has none): the bill ends here, before the interpreter's teardown frees what
        # the program held (NCCL's buffers among them), not at the library's exit.
        body = {"why": "the program's end (Python's atexit, before the interpreter's teardown)"}
        previous = self.previous_pool()  # the main thread's last capture's, where PyTorch made it
        if previous:
            body["previous_pool"] = previous.decode()
        try:
            pools = {}
            for seg in self.torch.cuda.memory._snapshot()["segments"]:
                pool = tuple(seg.get("segment_pool_id", (0, 0)))
                if pool == (0, 0):
                    continue
                key = (self.pool_name(pool), int(seg.get("device", 0)))
                held = pools.setdefault(key, [0, []])
                held[0] += int(seg["total_size"])
                held[1].append(int(seg["address"]))
            # The segments' addresses: what a capture or warm-up took elsewhere is not the pool's.
            body["pools"] = [{"pool": p, "device": d, "bytes": b, "segments": a} for (p, d), (b, a) in pools.items()]
        except Exception:
            pass
        self.say("end", body)


class _after_import:
    """Runs `then(module)` once a module is imported (a finder that wraps its loader)."""

    def __init__(self, names, then):
        self.names = names
        self.then = then

    def find_spec(self, name, path=None, target=None):
        if name not in self.names:
            return None
        import importlib.machinery
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                loader, then = spec.loader, self.then

                class _loader(importlib.abc.Loader):
                    def create_module(self, s):
                        return loader.create_module(s)

                    def exec_module(self, module):
                        loader.exec_module(module)
                        try:
                            then(module)
                        except Exception:
                            pass

                spec.loader = _loader()
                return spec
        return None


def _recording_library():
    """The recording library, where this process has loaded it (ctypes); raises where it has not.
    Its path is the one gmemprof record loads it from (CUDA_INJECTION64_PATH, or LD_PRELOAD with
    --hook interpose)."""
    import ctypes
    path = os.environ.get("GMEM_RECORD_LIBRARY_LOADED") or os.environ["CUDA_INJECTION64_PATH"]
    return ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)


def _at_python_end():
    """Python ends a program whose KeyboardInterrupt was not caught by raising SIGINT again after
    its teardown, where no C exit handler runs: the recording library (where the process loaded
    it) writes its report now. Registered first, so it runs after every other atexit function."""
    try:
        if not isinstance(getattr(sys, "last_value", None), KeyboardInterrupt):
            return
        _recording_library().gmem_record_write_now(b"written at Python's end: a KeyboardInterrupt (SIGINT) was not caught, "
                                      b"and the interpreter ends the process with SIGINT after its teardown")
    except Exception:
        pass


def _install():
    import atexit
    import importlib.abc  # noqa: F401  (used by _after_import's loader)
    atexit.register(_at_python_end)
    companion = _companion()

    def on_import(module):
        name = module.__name__
        if name == "torch.cuda.graphs":
            companion.attach(module)
        elif name == "torch._inductor.cudagraph_trees":
            companion.wrap_tree_nodes(module)

    sys.meta_path.insert(0, _after_import({"torch.cuda.graphs", "torch._inductor.cudagraph_trees"}, on_import))


try:
    _install()
except Exception:
    pass
_run_the_next_sitecustomize()
