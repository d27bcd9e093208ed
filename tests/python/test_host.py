"""Host tests of the gmem Python module: report reading, the check, the pytest helpers and the
errors. No GPU needed (run by ctest as python.host)."""

import json
import math

import pytest

import gmem
import gmem.testing

pytestmark = pytest.mark.host

MiB = 1 << 20


ENVIRONMENT = {
    "device_name": "Test GPU", "device_index": 0, "compute_capability": "9.0",
    "total_memory_bytes": 80 << 30, "driver_version": 13000, "driver_release": "580.0",
    "runtime_version": 13000, "device_count": 1, "granularity_bytes": 32 * MiB,
    "granularity_method": "set by the test", "tool_version": "gmem test", "git_commit": "test",
    "command_line": "pytest", "date": "2026-01-01T00:00:00Z"}


def make_report_dict(reserved=64 * MiB, lower=32 * MiB, diagnostics=None, name="step"):
    """A valid version-1 report with one scenario whose numbers the tests choose."""
    a = dict(alloc_nodes=2, free_nodes=1, unfreed_allocations=1, requested_bytes=48 * MiB,
             distinct_addresses=2, va_reuse_ratio=1.0, lower_bound_bytes=lower,
             lower_bound_rounded_bytes=lower, used_high_bytes=reserved,
             reserved_high_bytes=reserved, physical_reuse_ratio=48 * MiB / reserved,
             bound_ratio=reserved / lower)
    if diagnostics is None:
        diagnostics = [{"code": "unfreed_allocation", "severity": "warning", "bytes": 16 * MiB,
                        "message": "allocation of 16 MiB is never freed in graph 'step': free "
                                   "it in the graph"}]
    s = {"name": name, "parameters": {}, "status": "ok", "status_message": "",
         "counters_after_phase": [{"phase": "footprint", "used_current": reserved,
                                   "used_high": reserved, "reserved_current": reserved,
                                   "reserved_high": reserved}],
         "launch_costs": [], "analysis": a, "diagnostics": diagnostics}
    return {"schema_version": 1, "environment": ENVIRONMENT, "scenarios": [s]}


def write(tmp_path, d, name="r.json"):
    p = tmp_path / name
    p.write_text(json.dumps(d))
    return p


def test_read_report_exposes_analysis_and_diagnostics(tmp_path):
    r = gmem.read_report(write(tmp_path, make_report_dict(reserved=96 * MiB, lower=32 * MiB)))
    assert r.version == 1
    assert len(r.scenarios) == 1
    assert r.result.name == "step" and r.name == "step" and r.status == "ok"
    assert r.analysis.reserved_high_bytes == 96 * MiB
    assert r.analysis.lower_bound_rounded_bytes == 32 * MiB
    assert math.isclose(r.analysis.bound_ratio, 3.0)
    assert [d.code for d in r.diagnostics] == ["unfreed_allocation"]
    assert r.diagnostics[0].bytes == 16 * MiB
    assert r.environment.device_name == "Test GPU"
    assert r.environment.granularity_bytes == 32 * MiB


def test_to_json_round_trips(tmp_path):
    r = gmem.read_report(write(tmp_path, make_report_dict(reserved=80 * MiB)))
    again = gmem.report_from_json(r.to_json(), "round trip")
    assert again.analysis.reserved_high_bytes == 80 * MiB
    assert json.loads(r.result.to_json())["scenarios"][0]["name"] == "step"
    out = tmp_path / "written.json"
    r.write(str(out))
    assert gmem.read_report(out).analysis.reserved_high_bytes == 80 * MiB


def test_read_report_errors_carry_kind_and_name_the_file(tmp_path):
    with pytest.raises(gmem.ReportError) as e:
        gmem.read_report(tmp_path / "absent.json")
    assert e.value.kind == "missing" and "absent.json" in str(e.value)
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(gmem.ReportError) as e:
        gmem.read_report(bad)
    assert e.value.kind == "not_json" and "bad.json" in str(e.value)
    d = make_report_dict()
    d["schema_version"] = 99
    with pytest.raises(gmem.ReportError) as e:
        gmem.read_report(write(tmp_path, d))
    assert e.value.kind == "wrong_schema_version"


def test_check_passes_when_equal_and_flags_growth(tmp_path):
    base = write(tmp_path, make_report_dict(reserved=64 * MiB), "base.json")
    same = gmem.check(base, base)
    assert not same.regressed() and same.exit_code() == 0
    grown = gmem.read_report(write(tmp_path, make_report_dict(reserved=80 * MiB), "cur.json"))
    c = gmem.check(str(base), grown)
    assert c.regressed() and c.exit_code() == 1
    row = [x for x in c.rows if x.metric == "reserved_high_bytes"][0]
    assert row.verdict == "regression"
    assert row.baseline == 64 * MiB and row.current == 80 * MiB
    assert math.isclose(row.change, 0.25)
    assert "reserved_high_bytes" in str(c)
    # A wider memory tolerance lets the same growth pass.
    loose = gmem.check(base, grown, {"memory": 0.3, "reuse": 0.3})
    assert [x.verdict for x in loose.rows if x.metric == "reserved_high_bytes"] == ["pass"]


def test_check_bad_tolerance_is_a_value_error(tmp_path):
    base = write(tmp_path, make_report_dict())
    with pytest.raises(ValueError, match="nonsense"):
        gmem.check(base, base, {"nonsense": 0.1})


def test_assert_reserved_at_most(tmp_path):
    r = gmem.read_report(write(tmp_path, make_report_dict(reserved=64 * MiB)))
    gmem.testing.assert_reserved_at_most(r, 64 * MiB)
    with pytest.raises(AssertionError) as e:
        gmem.testing.assert_reserved_at_most(r, 64 * MiB - 1)
    msg = str(e.value)
    assert "reserved graph memory 64.0 MiB (67108864 B), more than the 64.0 MiB (67108863 B) allowed" in msg, msg
    assert "unfreed_allocation" in msg and "never freed" in msg  # the diagnostics travel


def test_assert_within_bound(tmp_path):
    r = gmem.read_report(write(tmp_path, make_report_dict(reserved=96 * MiB, lower=32 * MiB)))
    gmem.testing.assert_within_bound(r, 3.0)
    with pytest.raises(AssertionError) as e:
        gmem.testing.assert_within_bound(r.result, 2.9)
    assert "3.000x" in str(e.value) and "unfreed_allocation" in str(e.value)


def test_helpers_refuse_an_unmeasured_result(tmp_path):
    d = make_report_dict()
    d["scenarios"][0]["status"] = "skipped"
    d["scenarios"][0]["status_message"] = "no GPU"
    r = gmem.read_report(write(tmp_path, d))
    with pytest.raises(AssertionError, match="not measured.*no GPU"):
        gmem.testing.assert_reserved_at_most(r, 1 << 40)
    with pytest.raises(gmem.UsageError):
        gmem.testing.assert_within_bound("not a report", 1.0)


def test_graph_handle_conversions():
    class TorchLike:
        def raw_cuda_graph(self):
            return 0x1234

    class CupyLike:
        graph = 0x5678

    assert gmem.graph_handle(0xABC) == 0xABC
    assert gmem.graph_handle(TorchLike()) == 0x1234
    assert gmem.graph_handle(CupyLike()) == 0x5678
    with pytest.raises(gmem.UsageError, match="cannot find a cudaGraph_t in an object of type str"):
        gmem.graph_handle("graph")


def test_null_handle_is_a_usage_error_with_the_cpp_message():
    with pytest.raises(gmem.UsageError) as e:
        gmem.profile_graph(0, "g")
    assert str(e.value).startswith("profiling graph 'g': the graph handle is 0 (null)")
    assert isinstance(e.value, ValueError)


def test_unknown_phase_is_a_usage_error_naming_the_valid_ones():
    with pytest.raises(gmem.UsageError) as e:
        gmem.profile_graph(0x1000, "g", phases=["warp_speed"])
    assert "warp_speed" in str(e.value)
    assert all(p in str(e.value) for p in gmem.phases())


def test_cuda_error_carries_code_without_a_gpu():
    if gmem.device_count() > 0:
        pytest.skip("a GPU is present; this test checks the error a GPU-less machine gets")
    with pytest.raises((gmem.CudaError, gmem.UnsupportedError)) as e:
        gmem.profile_graph(0x1000, "g")
    if isinstance(e.value, gmem.CudaError):
        assert e.value.code != 0 and e.value.name.startswith("cuda")
        assert e.value.name in str(e.value)
