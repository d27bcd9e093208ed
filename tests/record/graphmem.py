"""What a process reads itself: the four graph memory counters of a device, through ctypes
(the driver's cuDeviceGetGraphMemAttribute, the call cudaDeviceGetGraphMemAttribute makes),
and trimming. Used by the record-mode client scripts."""
import ctypes
import json

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

