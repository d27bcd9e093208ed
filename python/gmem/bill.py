"""What CUDA graphs cost a running process's device, by kind: the bill, in-process.

    import gmem
    with gmem.bill_meter(device=0) as meter:   # reads the device before the warm-up
        engine.capture_cuda_graphs()
    print(meter.bill)                           # and after: what the warm-up's graphs cost
    gmem.testing.assert_graph_bill_at_most(meter.bill, 2 << 30)

The meter reads, before and after the block, the device's graph memory counters (the memory-node
pool: cudaGraphMemAttr*, through the driver), PyTorch's own figure for each of its graph pools
(its memory snapshot's segments by `segment_pool_id`, when PyTorch is imported) and the device
memory in use (cuMemGetInfo). The bill is their changes: the memory-node pool (retained, high),
the framework's graph pools, and the process's change, whose rest is not graph memory.
The executable graphs' own state (the driver's memory for each instantiation, outside every
pool) cannot be told apart in-process after the fact: it is part of the rest here; `gmemprof
record` measures it around each instantiation. No GPU code of gmem's runs: the meter only reads.
"""

from . import _core
from ._readings import device_reading

__all__ = ["Bill", "bill_meter", "device_reading"]


def _size(b):
    return _core.size_text(int(b))


class Bill:
    """What the graphs made between two readings cost the device, by kind (bytes)."""

    def __init__(self, device, before, after):
        self.device = device
        nb, na = before["node_pool"], after["node_pool"]
        #: the memory-node pool: what the block added to what it retains, and its high watermark
        self.node_pool_retained_bytes = na["reserved_current"] - nb["reserved_current"]
        self.node_pool_high_bytes = na["reserved_high"]
        #: the framework's graph pools (PyTorch's own figures), their change, by pool id
        fb, fa = before["framework_pools"], after["framework_pools"]
        self.framework_pools = {k: fa.get(k, 0) - fb.get(k, 0) for k in sorted(set(fa) | set(fb))}
        self.framework_bytes = sum(self.framework_pools.values())
        #: the device memory the process uses: its change
        self.process_delta_bytes = after["used"] - before["used"]
        #: graph memory in all: the memory-node pool and the framework's graph pools
        self.graph_bytes = self.node_pool_retained_bytes + self.framework_bytes
        #: the rest: the program's other allocations, and the executable graphs' own state
        self.not_graph_bytes = self.process_delta_bytes - self.graph_bytes

    def lines(self):
        out = ["what CUDA graphs cost device %d:" % self.device]
        if self.node_pool_retained_bytes or self.node_pool_high_bytes:
            out.append("  graph memory-node pool   %s retained, %s at its high watermark"
                       % (_size(self.node_pool_retained_bytes), _size(self.node_pool_high_bytes)))
        if self.framework_pools:
            out.append("  framework graph pools    %s (PyTorch's figures: %s)"
                       % (_size(self.framework_bytes),
                          ", ".join("%s %s" % (k, _size(v)) for k, v in self.framework_pools.items())))
        out.append("  graph memory in all      %s" % _size(self.graph_bytes))
        out.append("  not graph memory         %s (other allocations, and the executable graphs' own state: "
                   "gmemprof record measures it)" % _size(self.not_graph_bytes))
        out.append("  the process's change     %s (cuMemGetInfo)" % _size(self.process_delta_bytes))
        return out

    def __str__(self):
        return "\n".join(self.lines())

    def __repr__(self):
        return "<gmem.Bill device %d: graph memory %s of %s>" % (self.device, _size(self.graph_bytes),
                                                                  _size(self.process_delta_bytes))


class bill_meter:
    """A context manager that reads the device before and after its block; `.bill` is the Bill."""

    def __init__(self, device=0):
        self.device = device
        self.before = None
        self.bill = None

    def __enter__(self):
        self.before = device_reading(self.device)
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.bill = Bill(self.device, self.before, device_reading(self.device))
        return False
