"""The device's readings that the bill and the prediction take, in-process: the memory-node pool's
counters (cudaGraphMemAttr*, through the driver), PyTorch's own figure for each of its graph pools
and the device memory in use. Only reads; imports neither gmem's extension nor PyTorch."""

import ctypes

_ATTRS = (("used_current", 0), ("used_high", 1), ("reserved_current", 2), ("reserved_high", 3))


def _cuda():
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise RuntimeError("gmem needs the NVIDIA driver (libcuda.so.1): %s" % e) from None


def _node_pool(device):
    cuda = _cuda()
    dev = ctypes.c_int()
    if cuda.cuDeviceGet(ctypes.byref(dev), device) != 0:
        raise RuntimeError("gmem: device %d does not exist (cuDeviceGet failed)" % device)
    out = {}
    for name, attr in _ATTRS:
        v = ctypes.c_uint64()
        r = cuda.cuDeviceGetGraphMemAttribute(dev, attr, ctypes.byref(v))
        if r != 0:
            raise RuntimeError("gmem: cuDeviceGetGraphMemAttribute(%s) of device %d returned %d; "
                               "has the process used CUDA on it yet?" % (name, device, r))
        out[name] = v.value
    return out


def _used(device):
    """Device memory in use on `device` (total - free), through PyTorch when it is imported (it
    makes the device current), else through the driver on the current context."""
    import sys
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        free, total = torch.cuda.mem_get_info(device)
        return total - free
    cuda = _cuda()
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    if cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)) != 0:
        raise RuntimeError("gmem: cuMemGetInfo failed: no CUDA context is current on this thread")
    return total.value - free.value


def _framework_pools(device, snapshot=None):
    """PyTorch's own figure for each of its graph pools on `device` ({pool id: bytes}), from
    `snapshot` where given (torch.cuda.memory._snapshot()'s), else from a new one; empty without
    PyTorch."""
    import sys
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return {}
    if torch.cuda.memory.get_allocator_backend() != "native":
        return {}  # cudaMallocAsync: no graph pools of PyTorch's (captures use the memory-node pool)
    pools = {}
    for seg in (snapshot or torch.cuda.memory._snapshot())["segments"]:
        pool = tuple(seg.get("segment_pool_id", (0, 0)))
        if pool == (0, 0) or int(seg.get("device", 0)) != device:
            continue
        key = str(tuple(int(x) for x in pool))
        pools[key] = pools.get(key, 0) + int(seg["total_size"])
    return pools


def device_reading(device=0, snapshot=None):
    """The device now: {"node_pool": counters, "framework_pools": {id: bytes}, "used": bytes};
    PyTorch's pools from `snapshot` where the caller has just taken one."""
    return {"node_pool": _node_pool(device), "framework_pools": _framework_pools(device, snapshot),
            "used": _used(device)}
