"""Host tests of tools/record_scale.py's comparison of a size's runs (compare): the medians and
the fastest runs' ratios, each pair's ratio, and the medians over the runs whose CPU probe says
their CPU ran at its fast speed; a failed run counts in none of them."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import record_scale  # noqa: E402

pytestmark = pytest.mark.host


def run(seconds, probes):
    return {"capture_s": seconds, "cpu_probe_ms": probes}


def test_pairs_fast_runs_and_a_failed_run():
    runs = {"unrecorded": [run(1.0, [5.0, 5.2]), run(2.0, [10.0, 5.0]), run(1.2, [5.5, 5.4])],
            "recorded": [run(1.5, [5.1, 5.0]), run(2.1, [9.0, 9.5]), {"error": "exit 1"}],
            "cupti": [run(3.0, [5.0, 6.0]), run(2.4, [5.0, 5.0]), run(2.6, [12.0, 5.0])]}
    c = record_scale.compare(runs, "capture_s", ["unrecorded", "recorded", "cupti"])
    assert c["unrecorded"] == 1.2 and c["recorded"] == 1.8
    assert c["ratio"] == pytest.approx(1.5)
    assert c["ratio_of_minima"] == pytest.approx(1.5)
    # Pairs are the runs of one index; the third pair's recorded run failed.
    assert c["pair_ratios"] == pytest.approx([1.5, 1.05])
    assert c["pair_ratio_median"] == pytest.approx(1.275)
    # Fast: a run's slower probe within 1.25x of the fastest probe (5.0): at most 6.25 ms.
    fast = c["fast"]
    assert fast["probe_limit_ms"] == pytest.approx(6.25)
    assert fast["runs"] == {"unrecorded": 2, "recorded": 1, "cupti": 2}
    assert fast["unrecorded"] == pytest.approx(1.1) and fast["recorded"] == 1.5
    assert fast["ratio"] == pytest.approx(1.5 / 1.1)
    assert c["cupti"] == 2.6 and c["cupti_ratio"] == pytest.approx(2.6 / 1.2)
    assert c["cupti_ratio_of_minima"] == pytest.approx(2.4)


def test_no_fast_run_of_a_mode_leaves_the_fast_ratio_out_and_old_runs_have_no_probe():
    runs = {"unrecorded": [run(1.0, [5.0, 5.0])], "recorded": [run(1.3, [9.0, 9.0])]}
    c = record_scale.compare(runs, "capture_s", ["unrecorded", "recorded"])
    assert c["fast"]["runs"] == {"unrecorded": 1, "recorded": 0} and "ratio" not in c["fast"]
    old = {"unrecorded": [{"capture_s": 1.0}], "recorded": [{"capture_s": 1.1}]}
    c = record_scale.compare(old, "capture_s", ["unrecorded", "recorded"])
    assert "fast" not in c and c["ratio"] == pytest.approx(1.1)
    assert record_scale.compare({"unrecorded": [], "recorded": [{"capture_s": 1.0}]}, "capture_s",
                                ["unrecorded", "recorded"]) is None
