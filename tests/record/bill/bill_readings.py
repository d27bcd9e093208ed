"""What the bill programs (tests/record/bill/bill_*.py) read about themselves, with PyTorch's own
calls only: the device's used bytes (cudaMemGetInfo: total - free, the figure the recording's
bill reads) and PyTorch's memory snapshot per graph pool (segments whose segment_pool_id is not
(0, 0)), keyed as the companion names pools ("(0, 1)"). Nothing here captures a graph: the
companion names a capture after the innermost frame outside PyTorch, and that must stay the
program's own line."""
import json

MIB = 1 << 20


def pool_name(pool):
    """A pool id as the companion (record/companion/sitecustomize.py) and the report write it."""
    return str(tuple(int(x) for x in pool))


def used(torch):
    """The device's used bytes now: total - free, as cudaMemGetInfo reads them (device-wide)."""
    free, total = torch.cuda.mem_get_info()
    return int(total) - int(free)


def _segments(torch):
    device = torch.cuda.current_device()
    return [s for s in torch.cuda.memory._snapshot()["segments"] if int(s.get("device", 0)) == device]


def pools(torch):
    """{pool id: bytes} of every graph pool (segment_pool_id != (0, 0)) in PyTorch's snapshot."""
    out = {}
    for seg in _segments(torch):
        pid = tuple(int(x) for x in seg.get("segment_pool_id", (0, 0)))
        if pid == (0, 0):
            continue
        key = pool_name(pid)
        out[key] = out.get(key, 0) + int(seg["total_size"])
    return out


def pool_bytes(torch, pool):
    """Bytes of the segments PyTorch's snapshot lists for one pool (0 before it exists)."""
    want = tuple(int(x) for x in pool)
    return sum(int(s["total_size"]) for s in _segments(torch)
               if tuple(int(x) for x in s.get("segment_pool_id", (0, 0))) == want)


def default_pool(torch):
    """Bytes of the default pool's segments (segment_pool_id (0, 0)): memory that is not a graph
    pool's, which the program holds (the cache is emptied before each reading)."""
    return sum(int(s["total_size"]) for s in _segments(torch)
               if tuple(int(x) for x in s.get("segment_pool_id", (0, 0))) == (0, 0))


def settle(torch):
    """Synchronize and give the default pool's cached, unused segments back to the driver, so that
    a reading of used bytes holds no cache of eager runs (graph pools whose graphs are alive keep
    their segments)."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.synchronize()


def reading(torch):
    """used bytes and the default pool's bytes, after settle()."""
    settle(torch)
    return used(torch), default_pool(torch)


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def skip(path, reason):
    """Print SKIP and write {"skip": reason}; the caller exits 0."""
    try:
        write(path, {"skip": reason})
    except OSError:
        pass
    print(f"SKIP: {reason}")
