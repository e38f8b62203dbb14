"""Test-suite settings: hypothesis profiles, the shared recordings, a golden-case count in the summary."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import settings

from pymli.testing.paths import shared_dir

settings.register_profile("ci", max_examples=60, deadline=None)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile("long", max_examples=1000, deadline=None)  # tests/fuzz/README.md
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_GOLDEN_TEST = "tests/golden/test_golden.py::test_golden"
_golden: Counter[str] = Counter()


@pytest.fixture(scope="session")
def shared() -> Path:
    d = shared_dir()
    if not d.is_dir():
        pytest.skip(f"{d} is absent: the shared MLI recordings are needed (set PYMLI_SHARED)")
    return d


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count golden cases by outcome (on the controller too when run with xdist)."""
    if _GOLDEN_TEST not in report.nodeid:
        return
    if report.failed:
        _golden["failed"] += 1
    elif report.skipped:
        _golden["skipped"] += 1
    elif report.when == "call":
        _golden["passed"] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how many golden C-library cases ran, and where from; or why none did."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    ran = _golden["passed"] + _golden["failed"]
    if not sum(_golden.values()):
        return  # the golden tests were not selected
    where = shared_dir()
    if ran == 0:
        terminalreporter.write_line(f"golden cases: none ran ({where} has no golden recordings; set PYMLI_SHARED "
                                    "to the shared folder)", yellow=True)
        return
    bad = bool(_golden["failed"])
    terminalreporter.write_line(f"golden cases from {where}: {_golden['passed']} passed, {_golden['failed']} failed, "
                                f"{_golden['skipped']} skipped", green=not bad, red=bad)
