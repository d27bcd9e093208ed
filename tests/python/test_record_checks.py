"""The GPU runs' checkers of recorded engines and tensor-parallel ranks (tests/record/engines/
check_engines.py, tests/record/ranks/check_tp.py) on recordings made up here: a recording whose
figures equal the program's readings passes every check, and each way a recording can be wrong
(a pool over-counted after a capture, memory left to an unknown library, a capture whose
figures miss what it took, a graph named after inductor's file) fails the check that says so."""
import copy
import os
import sys

import pytest

pytestmark = pytest.mark.host

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "record", "engines"))
sys.path.insert(0, os.path.join(HERE, "..", "record", "ranks"))
import check_engines  # noqa: E402
import check_tp  # noqa: E402

MiB = 1 << 20


def failed(results):
    return [what for ok, what in results if not ok]


def engine():
    me = {"program": "gpt2_compile", "model": "GPT2LMHeadModel", "start": 500 * MiB,
          "sizes": [{"batch": 16}, {"batch": 1}],
          "end": {"used": 1600 * MiB, "segments": [{"size": 400 * MiB, "pool": "(0, 1)"},
                                                   {"size": 300 * MiB, "pool": "(0, 0)"}]}}
    rec = {"bills": [{"device": 0,
                      "framework_pools": {"retained_bytes": 400 * MiB},
                      "libraries_at_capture": {"bytes": 64 * MiB, "allocations": 2,
                                               "by_library": [{"library": "cuBLAS", "bytes": 64 * MiB, "allocations": 2}]},
                      "exec_state": {"bytes": 4 * MiB},
                      "process_memory": {"delta_bytes": 1100 * MiB, "not_graph_bytes": 632 * MiB}}],
           "framework_pools": [{"id": "(0, 1)", "after_captures": [
               {"graph": "a", "retained_bytes": 300 * MiB, "framework_bytes": 300 * MiB},
               {"graph": "b", "retained_bytes": 400 * MiB, "framework_bytes": 400 * MiB}]}],
           "graphs": [{"name": "[p1 pid 7] gpt2_compile.py:22 in <module> (GPT2LMHeadModel.forward)"},
                      {"name": "gpt2_compile.py:22 in <module> (GPT2LMHeadModel.forward, batch 16, sequence 256)"},
                      {"name": "gpt2_compile.py:22 in <module> (GPT2LMHeadModel.forward, batch 1, sequence 256)"}]}
    return rec, me


def test_an_engines_recording_equal_to_its_readings_passes():
    rec, me = engine()
    results = check_engines.checks(rec, me)
    assert len(results) >= 7 and failed(results) == []


def test_an_engines_over_counted_pool_unknown_memory_and_cache_file_name_each_fail():
    rec, me = engine()
    over = copy.deepcopy(rec)
    over["framework_pools"][0]["after_captures"][1]["retained_bytes"] = 464 * MiB
    assert any("after each of 2 captures" in w for w in failed(check_engines.checks(over, me)))
    unknown = copy.deepcopy(rec)
    unknown["bills"][0]["libraries_at_capture"]["by_library"][0]["library"] = "unknown"
    assert any("unknown library" in w for w in failed(check_engines.checks(unknown, me)))
    cached = copy.deepcopy(rec)
    cached["graphs"][1]["name"] = "c33kbm.py:2109 in call (cudagraph tree node 2)"
    bad = failed(check_engines.checks(cached, me))
    assert any("c33kbm" in w for w in bad) and any("[1] of [1, 16]" in w for w in bad)


def ranks(allocator="native"):
    selves, bills, graphs, pools = {}, [], [], []
    for r in (0, 1):
        captures = [{"batch": 64, "used_before": 1000 * MiB, "used_after": 1040 * MiB, "pool_bytes": 36 * MiB},
                    {"batch": 8, "used_before": 1040 * MiB, "used_after": 1040 * MiB, "pool_bytes": 36 * MiB}]
        selves[str(r)] = {"rank": r, "device": r, "allocator": allocator, "used_start": 500 * MiB, "used_end": 1100 * MiB,
                          "captures": captures, "pool_end_bytes": 36 * MiB, "replay_matches_eager": True}
        prefix = f"[rank {r} pid {100 + r}] "
        bills.append({"device": r, "process": f"rank {r}", "framework_pools": {"retained_bytes": 36 * MiB},
                      "libraries_at_capture": {"bytes": 4 * MiB, "allocations": 1, "streams": 1,
                                               "by_library": [{"library": "NCCL", "bytes": 4 * MiB, "allocations": 1, "streams": 1}]},
                      "exec_state": {"bytes": 0},
                      "process_memory": {"delta_bytes": 600 * MiB, "not_graph_bytes": 560 * MiB}})
        graphs += [{"name": prefix + "tp_worker.py:80 in <module>", "capture_pool_growth_bytes": 36 * MiB,
                    "libraries_at_capture_bytes": 4 * MiB},
                   {"name": prefix + "tp_worker.py:80 in <module> (2)", "capture_pool_growth_bytes": 0}]
        pools.append({"id": prefix + "(0, 1)", "after_captures": [
            {"graph": "a", "retained_bytes": 36 * MiB, "framework_bytes": 36 * MiB},
            {"graph": "b", "retained_bytes": 36 * MiB, "framework_bytes": 36 * MiB}]})
    return {"bills": bills, "graphs": graphs, "framework_pools": pools}, selves


def test_ranks_whose_recording_equals_their_readings_pass():
    rec, selves = ranks()
    results = check_tp.checks(rec, selves)
    assert len(results) >= 20 and failed(results) == []


def test_a_rank_whose_capture_took_memory_nobody_was_billed_for_fails():
    rec, selves = ranks()
    # The capture's stream memory unseen: 4 MiB of the capture on nobody's line.
    for g in rec["graphs"]:
        g.pop("libraries_at_capture_bytes", None)
    for b in rec["bills"]:
        b.pop("libraries_at_capture")
        b["process_memory"]["not_graph_bytes"] += 4 * MiB
    bad = failed(check_tp.checks(rec, selves))
    assert any("batch 64: the capture took 40.00 MiB" in w for w in bad)
    assert any("NCCL's" in w for w in bad)
