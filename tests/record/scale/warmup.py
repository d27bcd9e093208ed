"""A serving engine's warm-up at scale, timed by itself: PyTorch with its cudaMallocAsync backend
captures one graph per batch size (an MLP step, batch 1 to GRAPHS, the largest first as engines
do), each graph's output held by the script (so each pins a granule of the graph memory pool),
then replays every graph in three rounds and synchronizes. With --layers L, each graph is instead a
decode step of L decoder layers of a small Llama-shaped model with random weights (hidden 256, 4
heads, attention over a fixed 128-token context, a gated MLP of 688, RMS norms, residuals): 27
allocations a layer and as many kernels (331 nodes for 4 layers as an H100 recorded them), the
graphs of a model's forward pass that full-graph engines capture, where the default step is the
smallest graph a warm-up makes.

Usage: warmup.py GRAPHS SELF_JSON [--layers L]
SELF_JSON: {"graphs", "layers", "capture_s" (capturing and instantiating every graph), "replay_s" (the
three rounds and the synchronize), "warmup_s" (from the first capture to the end),
"final_reserved_high", "final_reserved_current", "gc_s" and "gc_collections" (Python's garbage
collections from the first capture to the end, by generation, and their time), "capture_parts_s"
(capture_begin, the captured step and capture_end, which instantiates, each summed over the
graphs), "capture_us_median" (the median of one graph's capture and instantiation: a burst of
the host's other work slows a few captures, not the median), "capture_cpu_s" and
"capture_process_cpu_s" (the CPU time of the captures: the main thread's, and the whole
process's), "steal_ms" (while they ran, the time the machine's CPUs had work but the host ran
something else instead, summed over the CPUs: /proc/stat's steal), "main_thread" (while the graphs were
captured: the time the main thread waited for a CPU it was ready to run on and its involuntary
switches, from /proc; and every 100th capture, whether the recording library's helper thread
"gmem-readings" was on the main thread's CPU: "shared_cpu_samples" of "samples"), "cpu_probe_ms" (a
fixed loop of pure Python timed just before the first capture and after the replays: how fast the
CPU the program ran on was then, which the recording does not touch; on the GPU machines it took
about 5 ms or about 10 ms as their hosts' other work came and went), and on the wall clock
(time.time()) "started_epoch" (the script's first line), "warmup_started_epoch" (the
first capture) and "ended_epoch" (its last line)}. stdout: one line."""
import json
import os
import sys
import time

STARTED_EPOCH = time.time()  # the script's first line, on the clock its launcher reads too
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import graphmem  # noqa: E402

graphs_n, self_json = int(sys.argv[1]), sys.argv[2]
layers_n = int(sys.argv[sys.argv.index("--layers") + 1]) if "--layers" in sys.argv else 0
torch.manual_seed(0)
w1 = torch.randn(256, 512, device="cuda") * 0.05
w2 = torch.randn(512, 64, device="cuda") * 0.05
HIDDEN, HEADS, CONTEXT, FFN = 256, 4, 128, 688


def weights(*shape):
    return torch.randn(*shape, device="cuda") * shape[0] ** -0.5


layers = [{"qkv": weights(HIDDEN, 3 * HIDDEN), "o": weights(HIDDEN, HIDDEN), "gate_up": weights(HIDDEN, 2 * FFN),
           "down": weights(FFN, HIDDEN), "n1": torch.ones(HIDDEN, device="cuda"),
           "n2": torch.ones(HIDDEN, device="cuda"),
           "k": torch.randn(HEADS, CONTEXT, HIDDEN // HEADS, device="cuda"),
           "v": torch.randn(HEADS, CONTEXT, HIDDEN // HEADS, device="cuda")} for _ in range(layers_n)]


def rms(x, weight):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight


def decoder_layer(x, w):            # x: (batch, HIDDEN), one token per sequence
    batch, head = x.shape[0], HIDDEN // HEADS
    q, k, v = (rms(x, w["n1"]) @ w["qkv"]).split(HIDDEN, dim=-1)
    q = (q + k + v).view(batch, HEADS, head).transpose(0, 1)            # (HEADS, batch, head)
    scores = torch.softmax(q @ w["k"].transpose(1, 2) * head ** -0.5, dim=-1)
    x = x + (scores @ w["v"]).transpose(0, 1).reshape(batch, HIDDEN) @ w["o"]
    gate, up = (rms(x, w["n2"]) @ w["gate_up"]).chunk(2, dim=-1)
    return x + (torch.nn.functional.silu(gate) * up) @ w["down"]


def step(x):                        # x: (batch, 256)
    if layers:
        for w in layers:
            x = decoder_layer(x, w)
        return x                    # the output, batch x 256 floats, held by the script
    h = torch.relu(x @ w1)          # working memory: batch x 512 floats
    return h @ w2                   # the output, batch x 64 floats, held by the script


inputs = {bs: torch.randn(bs, 256, device="cuda") for bs in range(1, graphs_n + 1)}
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):          # eager warm-up: cuBLAS handles and kernels loaded
    for bs in (1, graphs_n):
        step(inputs[bs])
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()

# Python's garbage collections while the graphs are captured and replayed, and their time: a
# recording's Python companion allocates in each capture, which can bring full collections of
# the program's heap sooner.
import gc  # noqa: E402
collections = [0, 0, 0]
gc_s = [0.0]
gc_start = [0.0]


def on_gc(phase, info):
    if phase == "start":
        gc_start[0] = time.perf_counter()
    else:
        collections[info["generation"]] += 1
        gc_s[0] += time.perf_counter() - gc_start[0]


gc.callbacks.append(on_gc)


def main_thread_waits():
    """The main thread's time waiting for a CPU (ns, /proc schedstat) and involuntary switches."""
    try:
        wait_ns = int(open("/proc/thread-self/schedstat").read().split()[1])
        switches = 0
        for line in open("/proc/thread-self/status"):
            if line.startswith("nonvoluntary_ctxt_switches"):
                switches = int(line.split()[1])
        return wait_ns, switches
    except (OSError, ValueError, IndexError):
        return 0, 0


def steal_ms():
    """The time this machine's CPUs had work but the host ran something else instead, summed over
    the CPUs (/proc/stat's steal, in clock ticks), in ms; None where the kernel does not say."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) * 1000.0 / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def cpus():
    """The CPU the main thread and the helper thread "gmem-readings" last ran on (None: none)."""
    main = helper = None
    try:
        for tid in os.listdir("/proc/self/task"):
            stat = open(f"/proc/self/task/{tid}/stat").read()
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            cpu = int(stat[stat.rindex(")") + 2:].split()[36])  # field 39, "processor"
            if int(tid) == os.getpid():
                main = cpu
            elif comm == "gmem-readings":
                helper = cpu
    except (OSError, ValueError, IndexError):
        pass
    return main, helper


graphs, outputs = [], []
probe_before = graphmem.cpu_probe_ms()
samples, shared, sampling_s = 0, 0, 0.0  # the samples' own time is left out of capture_s
parts_s = [0.0, 0.0, 0.0]  # capture_begin, the captured step, capture_end (which instantiates)
each_s = []  # each graph's capture_begin to capture_end's return
waits0 = main_thread_waits()
steal0 = steal_ms()
cpu0, process_cpu0 = time.thread_time(), time.process_time()
t0 = time.perf_counter()
t0_epoch = time.time()
for bs in range(graphs_n, 0, -1):   # largest first
    g = torch.cuda.CUDAGraph()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        a = time.perf_counter()
        g.capture_begin()
        b = time.perf_counter()
        out = step(inputs[bs])
        c = time.perf_counter()
        g.capture_end()             # instantiates (PyTorch instantiates at capture_end)
        d = time.perf_counter()
    parts_s[0] += b - a
    parts_s[1] += c - b
    parts_s[2] += d - c
    each_s.append(d - a)
    if bs % 100 == 0:
        e = time.perf_counter()
        main, helper = cpus()
        if helper is not None:
            samples += 1
            shared += main == helper
        sampling_s += time.perf_counter() - e
    torch.cuda.current_stream().wait_stream(s)
    graphs.append(g)
    outputs.append(out)
torch.cuda.synchronize()
t1 = time.perf_counter()
cpu1, process_cpu1 = time.thread_time(), time.process_time()
steal1 = steal_ms()
waits1 = main_thread_waits()
for _ in range(3):
    for g in graphs:
        g.replay()
torch.cuda.synchronize()
t2 = time.perf_counter()
probe_after = graphmem.cpu_probe_ms()
c = graphmem.counters(0)
doc = {"graphs": graphs_n, "layers": layers_n, "capture_s": t1 - t0 - sampling_s, "replay_s": t2 - t1, "warmup_s": t2 - t0 - sampling_s,
       "final_reserved_high": c["reserved_high"], "final_reserved_current": c["reserved_current"],
       "gc_s": gc_s[0], "gc_collections": collections,
       "capture_parts_s": {"capture_begin": parts_s[0], "step": parts_s[1], "capture_end": parts_s[2]},
       "capture_us_median": sorted(each_s)[len(each_s) // 2] * 1e6,
       # The CPU time the captures took: the main thread's, and the process's (the recording's
       # helper threads too); the samples' own time is in both. And the CPUs' steal while they
       # ran (None where the kernel does not say).
       "capture_cpu_s": cpu1 - cpu0, "capture_process_cpu_s": process_cpu1 - process_cpu0,
       "steal_ms": None if steal0 is None or steal1 is None else steal1 - steal0,
       "main_thread": {"runqueue_wait_ms": (waits1[0] - waits0[0]) / 1e6,
                       "involuntary_switches": waits1[1] - waits0[1],
                       "shared_cpu_samples": shared, "samples": samples},
       "cpu_probe_ms": [probe_before, probe_after]}
# Where the process's time outside the warm-up lies, on the wall clock its launcher reads:
# the script's start (Python, PyTorch's import, CUDA's start, the weights) and its end.
doc.update({"started_epoch": STARTED_EPOCH, "warmup_started_epoch": t0_epoch, "ended_epoch": time.time()})
with open(self_json, "w") as f:
    json.dump(doc, f)
print(f"warm-up of {graphs_n} graphs done")
