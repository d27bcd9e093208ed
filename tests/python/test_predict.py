"""gmem.predict without a GPU: which sizes a sample takes, the allocator's trace reduced to the
graph pools' calls, the measured bill by the prediction's kinds, the pytest helper, and
`gmemprof predict` run from Python on a sample whose answer is worked out by hand."""

import pytest

import gmem.predict as gp

pytestmark = pytest.mark.host

MiB = 1 << 20


def test_pick_sizes_keeps_the_ends_and_spreads_the_rest_on_a_log_scale():
    vllm = sorted([1, 2, 4] + list(range(8, 513, 8)), reverse=True)
    assert gp.pick_sizes(vllm, 4) == [512, 64, 8, 1]
    assert gp.pick_sizes(vllm, 2) == [512, 1]
    assert gp.pick_sizes([4, 2, 1], 8) == [4, 2, 1]


def test_pool_events_follow_segments_through_time():
    # A segment of the default pool at 0x8000 holds an eager run's blocks, is released (as
    # torch.cuda.graph empties the cache before a capture), and its address is reused by a graph
    # pool's segment: only the calls made while the graph pool's segment held the address count.
    start = {0x1000: (0x1000, True), 0x8000: (0x2000, False)}
    end = {0x1000: (0x1000, True), 0x8000: (0x2000, True)}
    traces = [
        {"action": "alloc", "addr": 0x8000, "size": 512},            # the eager run's
        {"action": "free_completed", "addr": 0x8000, "size": 512},
        {"action": "segment_free", "addr": 0x8000, "size": 0x2000},
        {"action": "alloc", "addr": 0x1200, "size": 100},             # a graph pool's from the start
        {"action": "segment_alloc", "addr": 0x8000, "size": 0x2000},
        {"action": "alloc", "addr": 0x8000, "size": 512, "stream": 77},  # a side stream's
        {"action": "free_requested", "addr": 0x8000, "size": 512},
        {"action": "free_completed", "addr": 0x8000, "size": 512},
        {"action": "alloc", "addr": 0x4000, "size": 512},             # in no segment known
        {"action": "segment_alloc", "addr": 0x20000, "size": 0x2000},  # released later: not a graph pool's
        {"action": "alloc", "addr": 0x20000, "size": 512},
        {"action": "segment_free", "addr": 0x20000, "size": 0x2000},
    ]
    assert gp._pool_events(traces, start, end) == [
        (3, ["alloc", 0x1200, 100]), (4, ["segment", 0x8000, 0x2000]), (5, ["alloc", 0x8000, 512, 77]),
        (7, ["free", 0x8000])]


def reading(pools, reserved, used):
    return {"framework_pools": pools, "node_pool": {"reserved_current": reserved}, "used": used}


def test_measured_splits_the_change_by_kind():
    bill = gp.measured(reading({"0,1": 4 * MiB}, 0, 1000 * MiB), reading({"0,1": 104 * MiB}, 32 * MiB, 1200 * MiB))
    assert bill == {"framework_pool": 100 * MiB, "node_pool": 32 * MiB, "rest": 68 * MiB, "total": 200 * MiB}


def prediction(pool, exec_state, outside, linear):
    total = pool + exec_state + outside
    return {"kinds": {"framework_pool": {"predicted_bytes": pool}, "exec_state": {"predicted_bytes": exec_state},
                      "outside": {"predicted_bytes": outside}},
            "total": {"predicted_bytes": total}, "linear": {"predicted_bytes": linear}}


def test_memory_left_takes_the_prediction_and_its_uncertainty_from_what_is_free():
    p = {"total": {"predicted_bytes": 600 * MiB, "uncertainty_bytes": 30 * MiB}}
    assert gp.memory_left(p, free_bytes=10240 * MiB) == {"free_bytes": 10240 * MiB, "graphs_bytes": 630 * MiB,
                                                        "left_bytes": 9610 * MiB}
    assert gp.memory_left(p, free_bytes=500 * MiB)["left_bytes"] == -130 * MiB  # it will not fit


def test_assert_close_fails_on_a_kind_off_by_more_than_five_percent_or_64_mib():
    bill = {"framework_pool": 1000 * MiB, "node_pool": 0, "rest": 300 * MiB, "total": 1300 * MiB}
    rows = gp.assert_close(prediction(1040 * MiB, 290 * MiB, 0, 5000 * MiB), bill)
    assert [r["within"] for r in rows] == [True, True, True, True, None]
    with pytest.raises(AssertionError, match=r"framework_pool"):
        gp.assert_close(prediction(1060 * MiB, 300 * MiB, 0, 0), bill)       # 6% off
    big = {"framework_pool": 4000 * MiB, "node_pool": 0, "rest": 0, "total": 4000 * MiB}
    with pytest.raises(AssertionError, match=r"64\.0 MiB"):
        gp.assert_close(prediction(4100 * MiB, 0, 0, 0), big)                # 2.5%, but 100 MiB


def test_predict_runs_gmemprof_on_a_sample():
    # Sizes 8 and 2: a temporary of 4b MiB, an output of 2b MiB kept. In the order 8, 4, 2 the
    # caching allocator makes segments of 32 and 16 MiB and takes sizes 4 and 2 from them.
    sizes = []
    for k, b in enumerate((8, 2)):
        base = 0x100000 * (k + 1)
        sizes.append({"size": b, "graphs": 1, "used_change": 0, "exec_state_bytes": 1024.0,
                      "calls": [["alloc", base, 4 * MiB * b], ["alloc", base + 512, 2 * MiB * b], ["free", base]],
                      "pools_after": {"0,1": 48 * MiB}})
    sample = {"format": gp.SAMPLE_FORMAT, "version": gp.SAMPLE_VERSION, "allocator": "native", "copies": 64,
              "before": {"framework_pools": {}}, "sizes": sizes, "capture_order": [8, 4, 2]}
    p = gp.predict(sample)
    assert p["order"] == [8, 4, 2]
    assert p["kinds"]["framework_pool"]["predicted_bytes"] == 48 * MiB
    assert p["kinds"]["exec_state"]["predicted_bytes"] == 3 * 1024
    assert [s["pool_bytes_after"] for s in p["sizes"]] == [48 * MiB] * 3
    p = gp.predict(sample, sizes=[8, 7, 6, 5, 4, 3, 2, 1])
    assert [s["pool_bytes_after"] // MiB for s in p["sizes"]] == [48, 62, 74, 74, 94, 94, 94, 94]
    assert gp.predict(sample, sizes=[2, 4, 8])["order"] == [2, 4, 8]     # the engine's order, as given
    with pytest.raises(RuntimeError, match="not a gmem.predict sample"):
        gp.predict({"format": "something else"})


def test_committed_warmups_are_predicted_within_five_percent_and_64_mib():
    """Each committed warm-up (vLLM-style piecewise graphs and SGLang-style whole graphs, both
    allocators): this gmemprof's prediction, kind by kind, within 5% and 64 MiB of what the run
    measured, the measured total within the predicted total's uncertainty, and the caching
    allocator's model exact on each sample's own calls; where a run measured each graph, every
    graph's share of PyTorch's graph pool predicted to the byte, and the graphs' memory-node pool.
    A run predicted from a recording of the
    sampled captures: its pools within 5% and 64 MiB (predict_summary.judge)."""
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, os.pardir, os.pardir, "tools"))
    import predict_summary
    runs = [r for r in predict_summary.committed_runs(os.path.join(here, os.pardir, os.pardir, "reports", "predict"))
            if r["judged"]]
    assert {(r["style"], r["allocator"]) for r in runs} >= {("vllm", "native"), ("vllm", "cudaMallocAsync"),
                                                          ("sglang", "native"), ("sglang", "cudaMallocAsync")}
    graphs_measured = 0
    for r in runs:
        p = predict_summary.predict_run(r)
        rows, off = predict_summary.judge(r, p)
        assert not off, (r["path"], gp.table(rows))
        assert all(c["simulated_bytes"] == c["measured_bytes"] for c in p["model_checks"]), r["path"]
        if "each_graph" in r["full"]:  # runs that measured each graph
            by_graph = gp.compare_graphs(p, r["full"]["each_graph"])
            assert by_graph["framework_pool"]["exact"] == len(p["graphs"]), r["path"]
            # The memory-node pool's granules, over all graphs, to the byte (which graph takes a
            # granule can differ from where the sample saw one: docs/predict.md).
            assert sum(g["node_pool_bytes"] for g in p["graphs"]) == by_graph["node_pool"]["measured"], r["path"]
            graphs_measured += 1
    assert graphs_measured >= 4


def test_graph_copy_orders_nodes_after_their_dependencies_and_keeps_edges_with_data_for_last():
    from gmem import _graph_copy
    plain, ported = bytes(8), bytes([0, 1, 0, 0, 0, 0, 0, 0])  # a programmatic port: data
    # 4 -> 3 -> 1, 4 -> 2, 2 -> 1 with data: 1 comes after 2 and 3, but depends at creation on 3 only.
    order = _graph_copy._topological([1, 2, 3, 4], [(4, 3, plain), (3, 1, plain), (4, 2, plain), (2, 1, ported)])
    nodes = [n for n, _ in order]
    assert nodes.index(4) < nodes.index(3) < nodes.index(1)
    assert nodes.index(2) < nodes.index(1)
    assert dict(order) == {4: [], 3: [4], 2: [4], 1: [3]}
    with pytest.raises(_graph_copy.CopyError, match="cycle"):
        _graph_copy._topological([1, 2], [(1, 2, plain), (2, 1, plain)])


def test_graph_copy_points_memcpy_and_memset_nodes_into_the_copys_own_allocations():
    from gmem import _graph_copy as gc
    spans = [(0x1000, 0x100, 0x9000), (0x2000, 0x40, 0xA000)]
    assert gc._moved(spans, 0x10FF) == 0x90FF
    assert gc._moved(spans, 0x1100) == 0x1100  # past the allocation: not the copy's
    copy = bytearray(gc._PARAMS_BYTES)
    copy[32:36] = (2).to_bytes(4, "little")        # device source in the first allocation
    copy[48:56] = (0x1010).to_bytes(8, "little")
    copy[120:124] = (1).to_bytes(4, "little")      # host destination: left alone
    copy[136:144] = (0x2000).to_bytes(8, "little")
    out = gc._retarget(gc._MEMCPY, bytes(copy), spans)
    assert int.from_bytes(out[48:56], "little") == 0x9010
    assert int.from_bytes(out[136:144], "little") == 0x2000
    assert out[:48] == bytes(copy[:48]) and len(out) == len(copy)
    memset = bytearray(gc._PARAMS_BYTES)
    memset[0:8] = (0x2020).to_bytes(8, "little")
    assert int.from_bytes(gc._retarget(gc._MEMSET, bytes(memset), spans)[0:8], "little") == 0xA020


def test_graph_copy_refuses_an_unknown_way_to_copy_memory_nodes():
    from gmem import _graph_copy
    with pytest.raises(ValueError, match="'copy' or 'empty'"):
        _graph_copy.copy_graph(0, memory_nodes="skip")


class _FakeTorch:
    """Just enough of PyTorch for gmem.predict.sample: a caching allocator's memory history that
    the test's captures append to, and torch.cuda.CUDAGraph's capture_begin and capture_end."""

    def __init__(self):
        import types
        self.traces, self.segments = [], []
        fake = self
        self.__version__ = "fake"

        class CUDAGraph:
            def __init__(self, keep_graph=False):
                pass

            def capture_begin(self, *a, **kw):
                pass

            def capture_end(self):
                pass

        memory = types.SimpleNamespace(
            _snapshot=lambda: {"segments": [dict(s) for s in fake.segments], "device_traces": [list(fake.traces)]},
            _record_memory_history=lambda **kw: None, get_allocator_backend=lambda: "native")
        self.cuda = types.SimpleNamespace(CUDAGraph=CUDAGraph, memory=memory, synchronize=lambda *a: None,
                                          get_device_name=lambda d=0: "fake GPU")

    def segment(self, addr, size):
        self.traces.append({"action": "segment_alloc", "addr": addr, "size": size})
        self.segments.append({"address": addr, "total_size": size, "segment_pool_id": (0, 1), "device": 0})

    def call(self, action, addr, size=0):
        self.traces.append({"action": action, "addr": addr, "size": size})


def test_sample_reads_each_graph_apart_its_calls_until_the_next_graph_begins(monkeypatch):
    import sys
    torch = _FakeTorch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    node = {"reserved": 0}
    monkeypatch.setattr(gp, "device_reading", lambda device=0, snapshot=None: {
        "framework_pools": {"(0, 1)": sum(s["total_size"] for s in torch.segments)},
        "node_pool": {"reserved_current": node["reserved"]}, "used": 0})

    def capture(size):
        base = 0x1000000 * size
        g0, g1 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        g0.capture_begin()
        torch.segment(base, 20 * MiB)
        torch.call("alloc", base, size * MiB)             # graph 0's temporary
        torch.call("alloc", base + size * MiB, 512)
        g0.capture_end()
        node["reserved"] += 2 * MiB                       # graph 0's replay
        torch.call("free_completed", base + size * MiB)   # released before graph 1 begins: graph 0's
        g1.capture_begin()
        torch.call("alloc", base + 2 * size * MiB, 1024)
        torch.call("free_completed", base)
        g1.capture_end()
        node["reserved"] += 6 * MiB
        torch.call("free_completed", base + 2 * size * MiB)  # after the size's last capture: graph 1's

    s = gp.sample(capture, [4, 2])
    assert [z["graphs"] for z in s["sizes"]] == [2, 2]
    for z in s["sizes"]:
        assert [c[0] for c in z["calls"]] == ["segment", "alloc", "alloc", "free", "alloc", "free", "free"]
        assert [g["calls"] for g in z["each_graph"]] == [4, 7]
        assert [g["node_pool_change"] for g in z["each_graph"]] == [2 * MiB, 6 * MiB]
        assert z["node_pool_change"] == 8 * MiB
    assert torch.cuda.CUDAGraph.capture_begin.__name__ == "capture_begin"  # the class as it was
    assert "capture_begin" in torch.cuda.CUDAGraph.__dict__


def test_graph_meter_reads_as_each_capture_begins_and_compare_graphs_matches_them_in_order(monkeypatch):
    import sys
    torch = _FakeTorch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    pools = {"v": 0}
    monkeypatch.setattr(gp, "device_reading", lambda device=0, snapshot=None: reading({"0,1": pools["v"]}, 0, pools["v"]))
    with gp.graph_meter() as meter:
        for grows in (32 * MiB, 0, 20 * MiB):
            g = torch.cuda.CUDAGraph()
            g.capture_begin()
            pools["v"] += grows
            g.capture_end()
    measured = gp.measured_graphs(meter.readings)
    assert [m["framework_pool"] for m in measured] == [32 * MiB, 0, 20 * MiB]
    predicted = {"graphs": [{"size": 8, "index": 0, "pool_growth_bytes": 32 * MiB, "node_pool_bytes": 0},
                            {"size": 8, "index": 1, "pool_growth_bytes": 2 * MiB, "node_pool_bytes": 0},
                            {"size": 4, "index": 0, "pool_growth_bytes": 20 * MiB, "node_pool_bytes": 0}]}
    c = gp.compare_graphs(predicted, measured)
    assert c["framework_pool"]["exact"] == 2
    assert c["framework_pool"]["max_error"] == 2 * MiB
    assert c["framework_pool"]["worst"] == {"size": 8, "index": 1, "predicted": 2 * MiB, "measured": 0}
    assert c["node_pool"]["exact"] == 3
    assert gp.graphs_text(c)[0] == ("each graph, framework_pool: 2 of 3 to the byte, largest error 2.00 MiB (size 8 "
                                    "graph 1), errors' sizes sum to 2.00 MiB of 52.00 MiB measured")
    assert gp.compare_graphs(predicted, measured[:2]) is None
