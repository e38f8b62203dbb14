"""The prepared fully connected layer's JIT output stage (``PreparedFc._jit_stage``: an exact float product,
then the compiled stage of :func:`pymli.kernels._jit.finish`) against the plain kernel and against the
prepared layer's NumPy stages: seeded random layers of every weights type, every platform, input
shapes (one row, rows, a leading batch, empty), extreme values, the JIT switched off and on between
calls of one prepared layer. Whole outputs are compared with ``np.array_equal``."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import use_platform
from pymli.kernels import _jit
from pymli.kernels.fully_connected import fully_connected, prepare_fc, prepare_pointwise

from ._shared import assert_pointwise_equals_conv, pointwise_sa8_case
from .test_fc_paths import KINDS, PLATFORMS, _layer, _ordinary

pytestmark = pytest.mark.skipif(not _jit.available(), reason="numba (the jit extra) is not installed")


@pytest.fixture(autouse=True)
def _jit_on():
    prev = _jit.set_enabled(True)
    yield
    _jit.set_enabled(prev)


def _inputs(rng: np.random.Generator, shape: tuple[int, ...], dtype: type, extreme: bool) -> np.ndarray:
    info = np.iinfo(dtype)
    if extreme:
        return rng.choice(np.array([info.min, info.max, 0, -1, 1]), size=shape).astype(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


def _stage_name(prep) -> str:  # noqa: ANN001
    return prep._last[2].__qualname__


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(10))
def test_jit_stage_matches_plain(kind: str, seed: int) -> None:
    rng = np.random.default_rng(hash(("jit", kind, seed)) & 0xFFFFFFFF)
    n, m = int(rng.integers(1, 300)), int(rng.integers(1, 200))
    extreme = seed % 3 == 0
    w, b, q, bounds, xt = _layer(rng, kind, n, m, extreme)
    if seed % 2:
        q = _ordinary(q, np.iinfo(w.dtype).bits)  # results spread over the output range
    for plat in PLATFORMS:
        with use_platform(plat):
            for out_dtype in (np.int64, np.int8 if kind.startswith("sa8") or kind == "fx8" else np.int16):
                prep = prepare_fc(w, b, q, bounds, out_dtype)
                for shape in ((n,), (int(rng.integers(1, 70)), n), (2, 3, n), (0, n)):
                    x = _inputs(rng, shape, xt, extreme)
                    want = fully_connected(x, w, b, q, bounds).astype(out_dtype)
                    got = prep(x)
                    assert got.dtype == np.dtype(out_dtype) and got.shape == want.shape
                    assert np.array_equal(got, want), (kind, plat, shape, _stage_name(prep))


def test_jit_stage_taken_and_switchable() -> None:
    """Ordinary sa8 / fx16 layers take the JIT stage; switching the JIT off makes the same prepared layer
    take its NumPy stage (same values), and on again the JIT stage."""
    rng = np.random.default_rng(7)
    for kind in ("sa8", "sa8_axis", "fx16", "fx8"):
        w, b, q, bounds, xt = _layer(rng, kind, 64, 32)
        q = _ordinary(q, np.iinfo(w.dtype).bits)
        prep = prepare_fc(w, b, q, bounds, np.int64)
        x = _inputs(rng, (5, 64), xt, False)
        want = fully_connected(x, w, b, q, bounds)
        assert np.array_equal(prep(x), want)
        assert "_jit_stage" in _stage_name(prep), kind
        _jit.set_enabled(False)
        assert np.array_equal(prep(x), want)
        _jit.set_enabled(True)
        assert np.array_equal(prep(x), want)


@pytest.mark.parametrize("seed", range(6))
def test_jit_pointwise_equals_the_convolution_kernel(seed: int) -> None:
    rng = np.random.default_rng(seed + 100)
    h, wd, cin, q, w, b, bounds = pointwise_sa8_case(rng, seed, min_hw=1)
    x = _inputs(rng, (2, h, wd, cin), np.int8, seed == 0)
    assert_pointwise_equals_conv(prepare_pointwise, x, w, b, q, bounds, PLATFORMS)


@pytest.mark.parametrize("kind", ["sa8", "sa8_axis", "fx16"])
def test_jit_row_blocks_on_the_pool(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Products of >= PARALLEL_WORK multiply-adds in row blocks on the pool (forced: ADAPT off, two
    threads) and on one thread equal the plain kernel, for row counts that do not split evenly."""
    from pymli.kernels import _parallel

    monkeypatch.setattr(_parallel, "ADAPT", False)
    rng = np.random.default_rng(21)
    w, b, q, bounds, xt = _layer(rng, kind, 128, 64)
    q = _ordinary(q, np.iinfo(w.dtype).bits)
    prep = prepare_fc(w, b, q, bounds, np.int64)
    for rows in (_parallel.PARALLEL_WORK // (128 * 64) + 1, 513):
        x = _inputs(rng, (rows, 128), xt, False)
        want = fully_connected(x, w, b, q, bounds)
        assert np.unique(want).size > 8  # outputs spread: a misplaced block shows
        with _parallel.threads_limit(2):
            assert np.array_equal(prep(x), want), rows
            assert "_jit_stage" in _stage_name(prep)
        with _parallel.threads_limit(1):
            assert np.array_equal(prep(x), want), rows
