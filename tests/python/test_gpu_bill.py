"""gmem.bill_meter around a PyTorch warm-up on the GPU, native allocator (the capture grows a
private graph pool, no memory nodes): the bill's framework pools are the pool's growth in
PyTorch's own snapshot, the memory-node pool did not move, the process's change holds the graph
memory, and the pytest helper passes at the bill and fails below it."""

import os

os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)

import pytest  # noqa: E402

import gmem  # noqa: E402
import gmem.testing  # noqa: E402

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU visible to PyTorch", allow_module_level=True)

MiB = 1 << 20


def pool_bytes(pool):
    return sum(s["total_size"] for s in torch.cuda.memory._snapshot()["segments"]
               if tuple(s.get("segment_pool_id", (0, 0))) == tuple(pool))


def test_bill_meter_of_a_native_capture_is_the_pools_growth_in_pytorchs_snapshot():
    x = torch.ones(4 * MiB, device="cuda")  # 16 MiB of float32
    torch.cuda.synchronize()
    pool = torch.cuda.graph_pool_handle()
    with gmem.bill_meter(device=torch.cuda.current_device()) as meter:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool):
            out = ((x * 2) + 1) * 3
        g.replay()
        torch.cuda.synchronize()
    bill = meter.bill
    key = str(tuple(int(v) for v in pool))
    assert bill.framework_pools.get(key) == pool_bytes(pool), str(bill)
    assert bill.framework_bytes >= 16 * MiB, str(bill)
    assert bill.node_pool_retained_bytes == 0, str(bill)
    assert bill.process_delta_bytes >= bill.framework_bytes, str(bill)
    gmem.testing.assert_graph_bill_at_most(bill, bill.graph_bytes)
    with pytest.raises(AssertionError):
        gmem.testing.assert_graph_bill_at_most(bill, bill.graph_bytes - 1)
    del out
