"""`pymli verify` replays MLI 1.x recordings (golden_v1 cases and models_v1 packs) beside 2.0 ones."""

from __future__ import annotations

import io

import pytest

from pymli.testing.golden import is_v1_dir, run_dirs
from pymli.testing.paths import shared_dir

SHARED = shared_dir()
GOLDEN_V1 = SHARED / "golden_v1"
PACK = SHARED / "models_v1" / "cifar10" / "fx8"

needs = pytest.mark.skipif(not GOLDEN_V1.is_dir() or not PACK.is_dir(),
                           reason="../shared/golden_v1 and models_v1 not found (set PYMLI_SHARED)")


@needs
def test_v1_folders_are_recognised() -> None:
    assert is_v1_dir(GOLDEN_V1) and is_v1_dir(PACK) and is_v1_dir(SHARED / "models_v1")
    assert not is_v1_dir(SHARED / "golden")


@needs
def test_v1_cases_replay_with_only() -> None:
    out = io.StringIO()
    assert run_dirs([str(GOLDEN_V1)], only="^mli_krn_relu_fx8$", out=out) == 0
    text = out.getvalue()
    assert "v1/mli_krn_relu_fx8: 18 passed, 0 failed" in text
    assert text.rstrip().endswith("\n18 passed, 0 failed")


@needs
def test_v1_pack_and_v2_cases_together() -> None:
    out = io.StringIO()
    assert run_dirs([str(PACK), str(SHARED / "golden")], only="relu_sa8|fx8", out=out) == 0
    text = out.getvalue()
    assert "v1 pack cifar10/fx8: 180 passed, 0 failed" in text
    assert "mli_krn_relu_sa8" in text


@needs
def test_v1_only_matching_nothing_fails() -> None:
    assert run_dirs([str(GOLDEN_V1)], only="no_such_function", out=io.StringIO()) == 1
