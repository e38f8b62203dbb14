"""The prepared int8 ADD / SUB (:func:`pymli.tflm.elementwise.prepare_add_sub`: the table of every pair's
result, gathered by NumPy or, with the JIT on and inputs that repeat along their leading axes only, by one
compiled call) against :func:`pymli.tflm.elementwise.add_sub`: seeded random parameters and shapes, equal
shapes, broadcasts of either input (leading, trailing, middle axes of 1), strided, empty and constant inputs,
extreme values, activation clamps, both rounding platforms, the JIT on and off. Whole outputs compared with
``np.array_equal``."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import use_platform
from pymli.config import PRESETS
from pymli.kernels import _jit
from pymli.tflm import elementwise

PLATFORMS = list(PRESETS.values())


def _ints(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    if rng.integers(0, 4) == 0:
        return rng.choice(np.array([-128, 127, 0, -1], np.int8), size=shape)
    return rng.integers(-128, 128, size=shape).astype(np.int8)


def _cases(rng: np.random.Generator):
    """(const1, const2, x1, x2) argument sets of random shapes."""
    shape = tuple(int(v) for v in rng.integers(1, 7, int(rng.integers(1, 5))))
    strided = _ints(rng, shape[:-1] + (2 * shape[-1],))[..., ::2]
    return [(None, None, _ints(rng, shape), _ints(rng, shape)),
            (None, None, _ints(rng, shape), _ints(rng, shape[-1:])),
            (None, None, _ints(rng, (1,) * len(shape[:-1]) + shape[-1:]), _ints(rng, shape)),
            (None, None, _ints(rng, (1,) + shape[1:]), _ints(rng, shape)),
            (None, None, _ints(rng, shape), _ints(rng, shape[:-1] + (1,))),
            (None, None, strided, _ints(rng, shape)),
            (None, None, _ints(rng, shape), strided),
            (_ints(rng, shape), None, None, _ints(rng, shape)),
            (None, _ints(rng, shape[-1:]), _ints(rng, shape), None),
            (None, None, np.zeros((0, 3), np.int8), np.zeros((0, 3), np.int8))]


@pytest.mark.parametrize("seed", range(12))
def test_prepared_add8_matches_add_sub(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sub = seed % 3 == 2
    sc = [float(10 ** rng.uniform(-3, 0)) for _ in range(3)]
    zps = [int(v) for v in rng.integers(-128, 128, 3)]
    p = elementwise.add_sub_params(sc[0], zps[0], sc[1], zps[1], sc[2], zps[2], int16=False, sub=sub)
    lo, hi = (zps[2], 127) if seed % 2 else (-128, 127)
    for c1, c2, x1, x2 in _cases(rng):
        a = c1 if c1 is not None else x1
        b = c2 if c2 is not None else x2
        want = elementwise.add_sub(a, b, p, act_min=lo, act_max=hi, sub=sub)
        for k, on in enumerate((True, False)):
            prev = _jit.set_enabled(on)
            try:
                with use_platform(PLATFORMS[(seed + k) % len(PLATFORMS)]):
                    f = elementwise.prepare_add_sub(p, np.int8, act_min=lo, act_max=hi, sub=sub, const1=c1,
                                                    const2=c2)
                    assert f is not None
                    for _ in range(2):  # the second call: the kept plan of these shapes
                        got = f(a, b)
                        assert got.dtype == want.dtype and got.shape == want.shape, (on, a.shape, b.shape)
                        assert np.array_equal(got, want), (on, a.shape, b.shape)
            finally:
                _jit.set_enabled(prev)


def test_prepared_add8_takes_the_compiled_gather(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two activation inputs of one shape, or one repeated along the leading axes: one compiled gather, no
    NumPy ``take``."""
    if not _jit.available():
        pytest.skip("numba is not installed: no compiled gather")
    rng = np.random.default_rng(3)
    p = elementwise.add_sub_params(0.05, 3, 0.02, -5, 0.04, 1, int16=False, sub=False)
    f = elementwise.prepare_add_sub(p, np.int8, act_min=-128, act_max=127)
    x1, x2 = _ints(rng, (1, 6, 6, 8)), _ints(rng, (1, 1, 1, 8))
    want = [elementwise.add_sub(x1, y, p, act_min=-128, act_max=127) for y in (x1[::-1], x2)]
    prev = _jit.set_enabled(True)
    try:
        monkeypatch.setattr(np, "take", lambda *a, **k: pytest.fail("NumPy gather"))
        assert np.array_equal(f(x1, x1[::-1]), want[0])
        assert np.array_equal(f(x1, x2), want[1])
    finally:
        _jit.set_enabled(prev)
