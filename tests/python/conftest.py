"""pytest setup for gmem's Python tests: markers, and an all-skipped run reported as exit 5.

ctest runs `pytest -m host`, `pytest -m gpu` and `pytest -m wheel` (tests/CMakeLists.txt); a run where every test
skipped (no GPU, no torch) exits 5, which ctest's SKIP_RETURN_CODE shows as skipped."""

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "host: runs without a GPU")
    config.addinivalue_line("markers", "gpu: needs a GPU (skips with the reason without one)")
    config.addinivalue_line("markers", "wheel: builds the wheel and installs it into a venv (ctest's python.wheel)")


def pytest_sessionfinish(session, exitstatus):
    if exitstatus != 0:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    stats = reporter.stats
    if stats.get("skipped") and not stats.get("passed") and not stats.get("failed"):
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
