"""gmem.Bill and gmem.testing.assert_graph_bill_at_most without a GPU: the bill of two readings
of a device, by kind (the memory-node pool's change and its high, PyTorch's graph pools, the
process's change, the rest not graph memory), and the pytest helper's message."""

import pytest

import gmem
import gmem.testing

pytestmark = pytest.mark.host

MiB = 1 << 20


def reading(reserved, high, pools, used):
    return {"node_pool": {"used_current": reserved, "used_high": high, "reserved_current": reserved, "reserved_high": high},
            "framework_pools": pools, "used": used}


def test_a_bill_is_the_change_by_kind_and_the_rest_is_not_graph_memory():
    before = reading(0, 0, {"(0, 1)": 20 * MiB}, 900 * MiB)
    after = reading(64 * MiB, 96 * MiB, {"(0, 1)": 820 * MiB, "(0, 2)": 4 * MiB}, 1800 * MiB)
    b = gmem.Bill(0, before, after)
    assert b.node_pool_retained_bytes == 64 * MiB
    assert b.node_pool_high_bytes == 96 * MiB
    assert b.framework_pools == {"(0, 1)": 800 * MiB, "(0, 2)": 4 * MiB}
    assert b.framework_bytes == 804 * MiB
    assert b.graph_bytes == 868 * MiB
    assert b.process_delta_bytes == 900 * MiB
    assert b.not_graph_bytes == 32 * MiB
    text = str(b)
    assert "framework graph pools    804 MiB" in text
    assert "graph memory in all      868 MiB" in text


def test_the_helper_fails_with_the_whole_bill_and_passes_within_the_limits():
    b = gmem.Bill(0, reading(0, 0, {}, 0), reading(32 * MiB, 32 * MiB, {"(0, 1)": 64 * MiB}, 100 * MiB))
    gmem.testing.assert_graph_bill_at_most(b, 96 * MiB, node_pool=32 * MiB, framework_pools=64 * MiB)
    with pytest.raises(AssertionError) as e:
        gmem.testing.assert_graph_bill_at_most(b, 95 * MiB)
    assert "graph memory 96.0 MiB, more than the 95.0 MiB allowed" in str(e.value)
    assert "the process's change" in str(e.value)
    with pytest.raises(AssertionError) as e:
        gmem.testing.assert_graph_bill_at_most(b, 1 << 30, framework_pools=63 * MiB)
    assert "the framework's graph pools 64.0 MiB" in str(e.value)
    with pytest.raises(gmem.UsageError):
        gmem.testing.assert_graph_bill_at_most({"not": "a bill"}, 1)
