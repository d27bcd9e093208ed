"""Host tests of tools/report_forms.py, the expander scripts use to read a recording's compact
forms without gmemprof: folded repeats ([[values...], times]) in skeleton sizes and allocation
offsets expand to the plain lists gmemprof's reader gives (the C++ side is tested in
tests/host/report/number_runs_test.cpp and recording_forms_test.cpp)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import report_forms  # noqa: E402

pytestmark = pytest.mark.host


def test_folded_repeats_unfold_in_order_nested_ones_too():
    assert report_forms.number_runs([1, [[2, 3], 3], 4]) == [1, 2, 3, 2, 3, 2, 3, 4]
    assert report_forms.number_runs([[[7, [[8], 2]], 2]]) == [7, 8, 8, 7, 8, 8]
    assert report_forms.number_runs([]) == []


def test_a_shape_reference_and_offsets_expand_to_sizes_and_addresses():
    shape = {"nodes": [{"kind": "alloc", "device": 0, "node": "alloc"},
                       {"kind": "free", "frees": 0, "deps": [0], "node": "free"},
                       {"kind": "alloc", "device": 0, "deps": [1], "node": "alloc"},
                       {"kind": "alloc", "device": 0, "deps": [2], "node": "alloc"}],
             "late_edges": []}
    report = {"scenarios": [{"name": "g", "skeletons": [{"graph": "g", "shape": 0, "bytes": [[[512], 3]]}],
                             "allocation_base": 1 << 36, "allocation_offsets": [0, 0, 512]}],
              "recorded": {"graphs": [{"name": "g"}], "skeleton_shapes": [shape]}}
    s = report_forms.expand(report)["scenarios"][0]
    assert [n.get("bytes") for n in s["skeletons"][0]["nodes"]] == [512, None, 512, 512]
    assert "allocation_offsets" not in s and "allocation_base" not in s
    assert s["allocations"] == [
        {"address": 1 << 36, "bytes": 512, "alloc_step": 0, "free_step": 1},
        {"address": 1 << 36, "bytes": 512, "alloc_step": 2, "free_step": None},
        {"address": (1 << 36) + 512, "bytes": 512, "alloc_step": 3, "free_step": None}]


def test_a_graph_gets_its_sites_shared_values_and_keeps_its_own():
    report = {"scenarios": [],
              "recorded": {"site_fields": {"python:a.py:1": {"stream": "stream 2", "flags": ["upload"], "stack": 0}},
                           "stacks": [["f"]],
                           "graphs": [{"name": "g1", "site": "python:a.py:1", "events": []},
                                      {"name": "g2", "site": "python:a.py:1", "stream": "stream 3", "events": []},
                                      {"name": "g3", "site": "python:b.py:1", "stream": "stream 4", "events": []}]}}
    g1, g2, g3 = report_forms.expand(report)["recorded"]["graphs"]
    assert g1["stream"] == "stream 2" and g1["instantiate_stack"] == ["f"] and g1["flags"]["upload"]
    assert g2["stream"] == "stream 3"
    assert g3["stream"] == "stream 4" and "instantiate_stack" not in g3
    assert "site_fields" not in report["recorded"]


def test_offsets_in_a_unit_and_a_skeleton_without_its_graphs_name():
    shape = {"nodes": [{"kind": "alloc", "device": 0, "node": "alloc"},
                       {"kind": "alloc", "device": 0, "deps": [0], "node": "alloc"}],
             "late_edges": []}
    report = {"scenarios": [{"name": "step (7)", "skeletons": [{"shape": 0, "bytes": [1024, 2048]}],
                             "allocation_base": 1 << 36, "allocation_offset_unit": 512,
                             "allocation_offsets": [[[3], 2]]}],
              "recorded": {"graphs": [{"name": "step (7)"}], "skeleton_shapes": [shape]}}
    s = report_forms.expand(report)["scenarios"][0]
    assert s["skeletons"][0]["graph"] == "step (7)"
    assert s["skeletons"][0]["nodes"][0]["label"] == "alloc node #0 in graph 'step (7)'"
    assert [a["address"] for a in s["allocations"]] == [(1 << 36) + 1536] * 2
    assert "allocation_offset_unit" not in s


def test_scenarios_get_the_shared_values_and_messages_their_codes_ending():
    tail = ": it has no free node. Free it in the graph."
    report = {"scenarios": [{"name": "g1", "diagnostics": [
                                {"code": "unfreed_allocation", "severity": "info", "message_head": "g1's node #0",
                                 "bytes": 1},
                                {"code": "missed_reuse", "severity": "info", "message": "whole.", "bytes": 0}]},
                            {"name": "g2", "status": "error", "diagnostics": []}],
              "recorded": {"graphs": [], "scenario_fields": {"parameters": {"source": "recorded"}, "status": "ok"},
                           "message_tails": {"unfreed_allocation": tail}}}
    g1, g2 = report_forms.expand(report)["scenarios"]
    assert g1["parameters"] == {"source": "recorded"} and g1["status"] == "ok"
    assert g2["status"] == "error" and g2["parameters"] == {"source": "recorded"}
    assert g1["diagnostics"][0] == {"code": "unfreed_allocation", "severity": "info",
                                    "message": "g1's node #0" + tail, "bytes": 1}
    assert g1["diagnostics"][1]["message"] == "whole."
    assert "scenario_fields" not in report["recorded"] and "message_tails" not in report["recorded"]


def test_timeline_rows_become_points_and_merge_with_the_events_points():
    report = {"scenarios": [],
              "recorded": {"row_fields": {"timeline": ["t_us", "device", "event", "graph", "counters"],
                                          "events": ["t_us", "kind", "device", "host_us", "before", "after", "class?"]},
                           "timeline_from_events": True,
                           "graphs": [{"name": "g", "events": [[5.0, "launch", 0, 1.0, 0, [1, 2, 3, 4], "first_launch"]]}],
                           "timeline": [[2.0, 0, "trim", "", 7], [9.0, 0, "trim", "", [0, 0, 0, 0]]]}}
    timeline = report_forms.expand(report)["recorded"]["timeline"]
    assert [(p["t_us"], p["event"]) for p in timeline] == [(2.0, "trim"), (5.0, "launch:first_launch"), (9.0, "trim")]
    assert all(timeline[0][c] == 7 for c in report_forms.COUNTERS)  # the counters as the point's members
    assert timeline[1]["reserved_current"] == 3 and timeline[2]["used_high"] == 0
