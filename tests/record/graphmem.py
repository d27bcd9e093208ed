"""What a process reads itself: the four graph memory counters of a device, through ctypes
(the driver's cuDeviceGetGraphMemAttribute, the call cudaDeviceGetGraphMemAttribute makes),
and trimming; and how fast its CPU runs a fixed loop. Used by the record-mode client scripts."""
import ctypes
import json
import time

_cuda = ctypes.CDLL("libcuda.so.1")
_ATTRS = [("used_current", 0), ("used_high", 1), ("reserved_current", 2), ("reserved_high", 3)]


def counters(device=0):
    dev = ctypes.c_int()
    assert _cuda.cuDeviceGet(ctypes.byref(dev), device) == 0
    out = {}
    for name, attr in _ATTRS:
        v = ctypes.c_uint64()
        r = _cuda.cuDeviceGetGraphMemAttribute(dev, attr, ctypes.byref(v))
        assert r == 0, f"cuDeviceGetGraphMemAttribute({name}) returned {r}"
        out[name] = v.value
    return out


def cpu_probe_ms():
    """A fixed loop of pure Python, in milliseconds: how fast the CPU ran it just now (a GPU
    machine's virtual CPUs run it in about 5 or about 10 ms as their hosts' other work comes and
    goes: reports/bench/vcpu-speed-h100.txt)."""
    start = time.perf_counter()
    total = 0
    for i in range(100000):
        total += i * i
    return (time.perf_counter() - start) * 1e3


def trim(device=0):
    dev = ctypes.c_int()
    assert _cuda.cuDeviceGet(ctypes.byref(dev), device) == 0
    assert _cuda.cuDeviceGraphMemTrim(dev) == 0


class points:
    """Self-read counters at named points, each paired with the recorded event it must match
    ("launch:first_launch", "instantiate", ... ; graph: index among recorded graphs)."""

    def __init__(self, client):
        self.client = client
        self.items = []

    def mark(self, label, event=None, graph=0, device=0):
        self.items.append({"label": label, "event": event, "graph": graph, "device": device,
                           "counters": counters(device)})

    def write(self, path, **extra):
        with open(path, "w") as f:
            json.dump({"client": self.client, "points": self.items, **extra}, f, indent=2)


def pool_bytes(pool_id):
    """Bytes of the segments PyTorch's memory snapshot lists for a private pool (its
    segment_pool_id): PyTorch's own figure for a CUDA graph pool."""
    import torch
    total = 0
    for seg in torch.cuda.memory._snapshot()["segments"]:
        if tuple(seg.get("segment_pool_id", (0, 0))) == tuple(pool_id):
            total += seg["total_size"]
    return total

