"""The one-shape form of small fully connected layers (``PreparedFc.single`` below ``_INT_MIN_MACS``
multiply-adds, where ``_small_pays``: product and output stage in one compiled call,
:mod:`pymli.kernels._jit_fc`) against the plain kernel: seeded random int8 x int8 layers (sa8 per tensor /
per axis / ext_bias, fx8) of 1 to 300 inputs and 1 to 40 outputs, one to a few rows, leading axes, strided
and reversed inputs, extreme values, every platform; calls under another platform, with the JIT off, on
another shape or dtype go to the layer itself."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from pymli import use_platform
from pymli.kernels import _jit
from pymli.kernels import fully_connected as F
from pymli.kernels.fully_connected import fully_connected, prepare_fc

from .test_fc_paths import PLATFORMS, _layer, _ordinary

pytestmark = pytest.mark.skipif(not _jit.available(), reason="numba (the jit extra) is not installed")

KINDS = ["sa8", "sa8_axis", "sa8_ext", "fx8"]


@pytest.fixture(autouse=True)
def _jit_on() -> Iterator[None]:
    prev = _jit.set_enabled(True)
    yield
    _jit.set_enabled(prev)


def _x(rng: np.random.Generator, shape: tuple[int, ...], extreme: bool) -> np.ndarray:
    if extreme:
        return rng.choice(np.array([-128, 127, 0, -128, 127], np.int8), size=shape)
    return rng.integers(-128, 128, size=shape).astype(np.int8)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(6))
def test_small_single_equals_plain(kind: str, seed: int) -> None:
    rng = np.random.default_rng((KINDS.index(kind), seed, 14))
    n, m = int(rng.integers(1, 300)), int(rng.integers(1, 41))
    extreme = seed % 3 == 2
    w, b, q, bounds, _ = _layer(rng, kind, n, m, extreme)
    if seed % 2:
        q = _ordinary(q)
    odt = np.int8
    made = 0
    for plat in PLATFORMS:
        with use_platform(plat):
            prep = prepare_fc(w, b, q, bounds, odt)
            for shape in ((1, n), (1, 1, n), (3, n), (2, 1, n)):
                f = prep.single(shape, np.int8)
                if f is None:
                    continue
                rows = int(np.prod(shape[:-1]))
                made += int(rows * n * m < F._INT_MIN_MACS and F._small_pays(rows, n, m))
                for x in (_x(rng, shape, extreme), _x(rng, shape, not extreme)):
                    want = fully_connected(x, w, b, q, bounds).astype(odt)
                    got = f(x)
                    assert got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want), shape
                    wide = np.zeros(shape[:-1] + (2 * n,), np.int8)
                    wide[..., ::2] = x
                    assert np.array_equal(f(wide[..., ::2]), want)  # strided
                    rev = x[..., ::-1].copy()[..., ::-1]  # reversed: negative strides
                    rev.flags.writeable = False
                    assert np.array_equal(f(rev), want)
                    for p2 in PLATFORMS:  # another platform: the layer itself
                        with use_platform(p2):
                            assert np.array_equal(f(x), fully_connected(x, w, b, q, bounds).astype(odt)), p2
                    other = _x(rng, (5, n), extreme)  # another shape
                    assert np.array_equal(f(other), fully_connected(other, w, b, q, bounds).astype(odt))
                    _jit.set_enabled(False)
                    try:
                        assert np.array_equal(f(x), want)
                    finally:
                        _jit.set_enabled(True)
    assert made, "no small one-shape layer was made"


def test_small_single_is_one_compiled_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small layer's one-shape form calls the compiled small kernel (not the integer product and stage),
    and a layer from ``_INT_MIN_MACS`` multiply-adds on does not."""
    mod = _jit.compiled("_jit_fc")
    assert mod is not None
    real = mod._module.small_entry
    calls = []

    def entry(sa8: bool, odt: np.dtype) -> object:
        ep = real(sa8, odt)

        def spy(*args: object) -> object:
            calls.append(1)
            return ep(*args)  # type: ignore[operator]
        return spy
    monkeypatch.setattr(mod._module, "small_entry", entry)
    rng = np.random.default_rng(5)
    w, b, q, bounds, _ = _layer(rng, "sa8", 64, 16)
    q = _ordinary(q)
    f = prepare_fc(w, b, q, bounds, np.int8).single((1, 64), np.int8)
    assert f is not None
    x = _x(rng, (1, 64), False)
    assert np.array_equal(f(x), fully_connected(x, w, b, q, bounds).astype(np.int8))
    assert len(calls) == 1
    w, b, q, bounds, _ = _layer(rng, "sa8", 256, 64)
    big = prepare_fc(w, b, _ordinary(q), bounds, np.int8).single((1, 256), np.int8)
    if big is not None:
        big(_x(rng, (1, 256), False))
    assert len(calls) == 1
    # below _INT_MIN_MACS, but many inputs and few outputs: the integer product (_small_pays)
    w, b, q, bounds, _ = _layer(rng, "sa8", 1152, 10)
    q = _ordinary(q)
    assert 1152 * 10 < F._INT_MIN_MACS and not F._small_pays(1, 1152, 10)
    long_ = prepare_fc(w, b, q, bounds, np.int8).single((1, 1152), np.int8)
    assert long_ is not None
    x = _x(rng, (1, 1152), False)
    assert np.array_equal(long_(x), fully_connected(x, w, b, q, bounds).astype(np.int8))
    assert len(calls) == 1
