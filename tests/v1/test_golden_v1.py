"""Every MLI 1.x golden case (../shared/golden_v1, 5,760 calls of the 320 functions) replays bit-exact.

Whole buffers (outputs, in-place inputs, scratch) are compared with ``np.array_equal``, statuses of
the deliberately invalid calls of the checked variants, the struct fields the C kernels wrote, and
the data pointer of ``mli_hlp_point_to_subtensor``. A function without an implementation fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pymli.v1.replay import iter_cases, load_case, run_case

from ..conftest import shared_dir

_ROOT = shared_dir() / "golden_v1"
_CASES = iter_cases(_ROOT) if _ROOT.is_dir() else []


def _id(p: Path) -> str:
    return f"{p.parent.name}/{p.stem}"


@pytest.mark.skipif(not _CASES, reason="../shared/golden_v1 is absent (set PYMLI_SHARED)")
def test_case_count() -> None:
    assert len(_CASES) == 5760


@pytest.mark.parametrize("path", _CASES, ids=[_id(p) for p in _CASES])
def test_golden_v1(path: Path) -> None:
    meta, arrays = load_case(path)
    errs = run_case(meta, arrays)
    assert not errs, f"{meta['function']} ({meta['variant']}, {meta.get('note', '')}): " + "; ".join(errs)
