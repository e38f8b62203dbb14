"""Every recorded C-library call of ../shared/golden and ../shared/golden_mli_tests, replayed.

A case fails on any difference in status, return value, output buffers (whole, gaps included),
rewritten struct fields or LUTs. Functions that pymli does not implement yet are skipped with that
reason; the completeness test in test_capi_registry.py keeps the list honest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pymli import capi
from pymli.testing.golden import iter_cases, load_case, run_case
from pymli.testing.paths import golden_dirs, shared_dir

_FILES = iter_cases(golden_dirs())


def _id(p: Path) -> str:
    return f"{p.parent.parent.name}/{p.parent.name}/{p.stem}"


@pytest.mark.skipif(not _FILES, reason=f"no golden recordings under {shared_dir()} (set PYMLI_SHARED)")
@pytest.mark.parametrize("path", _FILES, ids=[_id(p) for p in _FILES])
def test_golden(path: Path) -> None:
    case = load_case(path)
    if case.function not in capi.FUNCTIONS:
        pytest.skip(f"{case.function} not implemented yet")
    errs = run_case(case)
    assert not errs, f"{_id(path)} [{case.meta['variant']}] {case.meta.get('note', '')}: " + "; ".join(errs)
