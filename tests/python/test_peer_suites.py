"""Host tests of tools/peer_suites.py's reading of pytest's JUnit XML and its comparison of a
suite's outcomes unrecorded and recorded: every outcome pytest gives (passed, failed, error,
skipped, xfailed) read case by case, a case's teardown error kept over its pass, a difference
listed with both messages, a case failing both ways listed apart, a case missing on one side a
difference."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import peer_suites  # noqa: E402

pytestmark = pytest.mark.host

XML = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="2" tests="6">
<testcase classname="t.TestA" name="test_pass" time="0.1"/>
<testcase classname="t.TestA" name="test_fail" time="0.1"><failure message="AssertionError: 1 != 2">tb</failure></testcase>
<testcase classname="t.TestA" name="test_error" time="0.1"><error message="RuntimeError: boom">tb</error></testcase>
<testcase classname="t.TestA" name="test_skip" time="0"><skipped type="pytest.skip" message="needs two GPUs">why</skipped></testcase>
<testcase classname="t.TestA" name="test_xfail" time="0"><skipped type="pytest.xfail" message="known">why</skipped></testcase>
<testcase classname="t.TestA" name="test_teardown" time="0.1"/>
<testcase classname="t.TestA" name="test_teardown" time="0.1"><error message="teardown failed">tb</error></testcase>
</testsuite></testsuites>
"""


def test_junit_outcomes_case_by_case(tmp_path):
    p = tmp_path / "r.xml"
    p.write_text(XML)
    cases = peer_suites.junit_cases(str(p))
    assert {k.split("::")[1]: v[0] for k, v in cases.items()} == {
        "test_pass": "passed", "test_fail": "failed", "test_error": "error", "test_skip": "skipped",
        "test_xfail": "xfailed", "test_teardown": "error"}
    assert cases["t.TestA::test_fail"][1] == "AssertionError: 1 != 2"


def test_compare_lists_differences_and_failures_both_ways():
    plain = {"a": ("passed", ""), "b": ("failed", "api missing"), "c": ("passed", ""), "d": ("skipped", "x")}
    rec = {"a": ("passed", ""), "b": ("failed", "api missing"), "c": ("error", "invalid argument"), "e": ("passed", "")}
    entry = peer_suites.compare({"suite": "s"}, {"unrecorded": plain, "recorded": rec})
    assert entry["cases"] == 4
    assert entry["outcomes"] == {"unrecorded": {"failed": 1, "passed": 2, "skipped": 1},
                                 "recorded": {"error": 1, "failed": 1, "passed": 2}}
    assert [(d["case"], d["unrecorded"], d["recorded"]) for d in entry["differences"]] == [
        ("c", "passed", "error"), ("d", "skipped", "absent"), ("e", "absent", "passed")]
    assert entry["differences"][0]["recorded_message"] == "invalid argument"
    assert entry["failing_both_ways"] == [{"case": "b", "outcome": "failed", "message": "api missing"}]


def test_a_sample_passes_by_its_exit_status_and_names_its_words():
    assert peer_suites.sample_outcome(0, "Test passed\n") == ("passed", "exit 0, says ['Test passed']")
    assert peer_suites.sample_outcome(1, "FAILED\n")[0] == "failed"
