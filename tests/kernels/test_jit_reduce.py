"""The optional numba JIT of argmax's heaps and of l2_normalize (pymli/kernels/_jit_reduce.py) against
the NumPy path and the element-by-element oracles: whole outputs compared bit for bit, on seeded
random shapes, axes, strides, heavy ties, every ``k``, extreme values, zero points and all platforms.

Skipped with a reason when numba is not installed (the pure-NumPy path is then the only one, and the
other kernel tests cover it); the switch test at the end runs either way.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from pymli import EM, VPX, VPX_FULL_ACCU, Platform, RoundMode, use_platform
from pymli.arith.lut import create_lut
from pymli.kernels import _jit
from pymli.kernels import diverse as D
from pymli.kernels import transform as T

from ._shared import numpy_path

needs_numba = pytest.mark.skipif(not _jit.available(),
                                 reason="numba is not installed: the optional JIT (pip install '.[jit]') is not tested")

PLATFORMS = [VPX, VPX_FULL_ACCU, EM, Platform(RoundMode.CONVERGENT, True)]
L2_LUT = create_lut("l2_normalize")


@pytest.fixture
def jit_on() -> Iterator[None]:
    prev = _jit.set_enabled(True)
    yield
    _jit.set_enabled(prev)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the calls of every compiled function of :mod:`pymli.kernels._jit_reduce`."""
    mod = _jit.compiled("_jit_reduce")
    assert mod is not None
    seen = {name: 0 for name in mod.__all__}

    def counting(name: str):  # type: ignore[no-untyped-def]
        real = getattr(mod, name)

        def f(*a):  # type: ignore[no-untyped-def]
            seen[name] += 1
            return real(*a)
        return f

    for name in mod.__all__:
        monkeypatch.setattr(mod, name, counting(name))
    return seen




def _tied(rng: np.random.Generator, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Values of ``dtype`` over a narrow random range (heavy ties), sometimes at the type's ends."""
    info = np.iinfo(dtype)
    span = int(rng.choice([1, 2, 3, 7, 40, int(info.max) - int(info.min) + 1]))
    lo = int(rng.choice([info.min, info.max - span + 1, rng.integers(info.min, info.max - span + 2)]))
    return rng.integers(lo, lo + span, shape).astype(dtype)


# ------------------------------------------------------------------------------------------ argmax
@needs_numba
@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_argmax_jit_equals_numpy_and_oracle(jit_on: None, calls: dict[str, int], dtype: type) -> None:
    rng = np.random.default_rng(11 if dtype is np.int8 else 12)
    for _ in range(150):
        nd = int(rng.integers(1, 4))
        shape = tuple(int(v) for v in rng.integers(1, 24, nd))
        x = _tied(rng, shape, dtype)
        if rng.integers(3) == 0:  # a strided view and its memory strides
            base = _tied(rng, tuple(2 * d + 1 for d in shape), dtype)
            x = base[tuple(slice(1, None, 2) for _ in shape)]
            strides = [s // x.itemsize for s in x.strides]
        else:
            strides = None
        axis = int(rng.integers(-1, nd))
        n = x.size if axis < 0 else x.size // shape[axis]
        for k in sorted({min(n, 2), min(n, 3), n, 1, int(rng.integers(1, n + 1))}):
            got = D.argmax(x, axis, k, strides)
            assert np.array_equal(got, numpy_path(D.argmax, x, axis, k, strides)), (shape, axis, k)
            assert np.array_equal(got, D.argmax_reference(x, axis, k, strides)), (shape, axis, k)
    assert calls["argmax_heap1"] > 0 and calls["argmax_heaps"] > 0


@needs_numba
@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_argmax_jit_long_slices(jit_on: None, calls: dict[str, int], dtype: type) -> None:
    """Long slices: skipped blocks, a heap full of the maximum (the last occurrence wins), the
    maximum first / last / absent from the seeds, rows of many slices."""
    rng = np.random.default_rng(13)
    info = np.iinfo(dtype)
    for _ in range(12):
        n = int(rng.integers(300, 3000))
        v = _tied(rng, (n,), dtype)
        where = int(rng.integers(4))
        if where == 1:
            v[-1] = info.max
        elif where == 2:
            v[: int(rng.integers(1, 6))] = info.max
        elif where == 3:
            v[rng.integers(0, n, 9)] = info.max
        cols = int(rng.choice([1, 3, 32]))
        x = np.resize(v, (n // cols, cols)) if cols > 1 else v
        for axis in (-1, x.ndim - 1):
            m = x.size if axis < 0 else x.size // x.shape[axis]
            for k in (2, 3, 5, 8, min(m, 17)):
                if k > m:
                    continue
                got = D.argmax(x, axis, k)
                assert np.array_equal(got, numpy_path(D.argmax, x, axis, k)), (n, cols, axis, k)
                assert np.array_equal(got, D.argmax_reference(x, axis, k)), (n, cols, axis, k)
    assert calls["argmax_heap1"] > 0 and calls["argmax_heaps"] > 0


# ------------------------------------------------------------------------------------ l2_normalize
def _l2_case(rng: np.random.Generator, bits: int) -> tuple[np.ndarray, dict]:
    nd = int(rng.integers(1, 5))
    shape = tuple(int(v) for v in rng.integers(1, 12, nd))
    if bits == 8:
        x = _tied(rng, shape, np.int8)
        zp = int(rng.choice([0, -128, 127, int(rng.integers(-300, 300)), -32640, 32639]))
        return x, {"bits": 8, "out_shift": 7, "in_zp": zp}
    x = _tied(rng, shape, np.int16)
    if rng.integers(4) == 0:
        x[...] = 0
    return x, {"bits": 16, "out_shift": 15}


@needs_numba
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: f"{p.round_mode.name}-{p.full_accu}")
@pytest.mark.parametrize("bits", [8, 16])
def test_l2_normalize_jit_equals_numpy_and_oracle(jit_on: None, calls: dict[str, int], plat: Platform,
                                                  bits: int) -> None:
    rng = np.random.default_rng(bits * 7 + PLATFORMS.index(plat))
    with use_platform(plat):
        for _ in range(80):
            x, kw = _l2_case(rng, bits)
            if rng.integers(3) == 0:
                x = np.flip(x, axis=0)  # not contiguous
            axis = int(rng.integers(-1, x.ndim))
            got = T.l2_normalize(x, L2_LUT, axis=axis, **kw)
            assert np.array_equal(got, numpy_path(T.l2_normalize, x, L2_LUT, axis=axis, **kw)), (x.shape, axis, kw)
            assert np.array_equal(got, T.l2_normalize_reference(x, L2_LUT, axis=axis, **kw)), (x.shape, axis, kw)
    assert calls["l2_sums"] > 0 and calls["scale_slices"] > 0


@needs_numba
@pytest.mark.parametrize("bits", [8, 16])
def test_l2_normalize_jit_out(jit_on: None, bits: int) -> None:
    """``out`` equal to the input (in place), overlapping it otherwise, of another layout, or absent."""
    rng = np.random.default_rng(5 + bits)
    dt = np.int8 if bits == 8 else np.int16
    kw = {"bits": bits, "out_shift": 7, "in_zp": -3} if bits == 8 else {"bits": 16, "out_shift": 15}
    for axis in (-1, 0, 1):
        buf = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1, 2 * 6 * 5).astype(dt)
        x = buf[: 6 * 5].reshape(6, 5)
        want = T.l2_normalize_reference(x, L2_LUT, axis=axis, **kw)
        inplace = x.copy()
        got = T.l2_normalize(inplace, L2_LUT, axis=axis, out=inplace, **kw)
        assert got is inplace and np.array_equal(got, want)
        shifted = buf[1: 1 + 6 * 5].reshape(6, 5)  # overlaps x one element later
        got = T.l2_normalize(x, L2_LUT, axis=axis, out=shifted, **kw)
        assert np.array_equal(got, want)
        fortran = np.empty((6, 5), dtype=dt, order="F")
        got = T.l2_normalize(x.copy(), L2_LUT, axis=axis, out=fortran, **kw)
        assert np.array_equal(got, want)


@needs_numba
def test_l2_normalize_jit_large(jit_on: None, calls: dict[str, int]) -> None:
    """Slices of thousands of extreme values (large sums of squares and shifts), both dtypes."""
    rng = np.random.default_rng(21)
    for plat in PLATFORMS:
        with use_platform(plat):
            for dt, kw in ((np.int16, {"bits": 16, "out_shift": 15}), (np.int8, {"bits": 8, "out_shift": 7,
                                                                                 "in_zp": 127})):
                info = np.iinfo(dt)
                x = rng.choice(np.array([info.min, info.max, 0, 1, -1], dtype=dt), (40, 30, 20))
                for axis in (-1, 0, 1, 2):
                    got = T.l2_normalize(x, L2_LUT, axis=axis, **kw)
                    assert np.array_equal(got, T.l2_normalize_reference(x, L2_LUT, axis=axis, **kw))
    assert calls["scale_slices"] > 0


@needs_numba
@pytest.mark.parametrize("mode", [RoundMode.UP, RoundMode.CONVERGENT])
def test_l2_factors_jit_equals_numpy(jit_on: None, mode: RoundMode) -> None:
    """The compiled per-slice factors against ``_l2_factors`` on sums of every magnitude (0, ties of
    the rounding shift, beyond 2**53 where NumPy leaves float64)."""
    rng = np.random.default_rng(31)
    mod = _jit.compiled("_jit_reduce")
    bits = rng.integers(0, 62, 3000)
    total = (rng.integers(0, 1 << 62, 3000) >> (62 - bits)).astype(np.int64)
    ties = (rng.integers(1 << 14, 1 << 15, 500) * 2 + 1) << rng.integers(1, 40, 500)  # x.5 after the shift
    total = np.concatenate([total, ties, [0, 1, 2, 3, (1 << 15) - 1, 1 << 15, (1 << 53) + 1, (1 << 62) - 1]])
    for out_shift in (7, 15, 30):
        with use_platform(Platform(mode, False)):
            want_inv, want_shift = T._l2_factors(total, L2_LUT, out_shift)
            inv, shift = np.empty_like(total), np.empty_like(total)
            ok = mod.l2_factors(total, T._l2_inv_table(L2_LUT), mode is RoundMode.UP,
                                int(L2_LUT.out_frac_bits) - out_shift, inv, shift)
        assert np.array_equal(inv, want_inv) and np.array_equal(shift, want_shift)
        assert ok == bool(want_inv.min() >= -(1 << 15) and want_inv.max() < 1 << 15 and want_shift.min() >= 1)


# ----------------------------------------------------------------------------------------- softmax
@needs_numba
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: f"{p.round_mode.name}-{p.full_accu}")
@pytest.mark.parametrize("bits", [8, 16])
def test_softmax_fx_jit_equals_numpy(jit_on: None, calls: dict[str, int], plat: Platform, bits: int) -> None:
    """Inputs above the table threshold: random shapes and axes, heavy ties, an int32 sum that wraps
    (70000 equal values), not contiguous inputs."""
    rng = np.random.default_rng(41 + bits + 3 * PLATFORMS.index(plat))
    dt = np.int8 if bits == 8 else np.int16
    lut = create_lut("softmax")
    with use_platform(plat):
        cases = [np.full((70000,), int(rng.integers(-100, 100)), dtype=dt)]
        for _ in range(6):
            shape = tuple(int(v) for v in rng.integers(1, 40, int(rng.integers(2, 4))))
            while int(np.prod(shape)) <= (1 << 14):
                shape = shape + (int(rng.integers(2, 9)),)
            x = _tied(rng, shape, dt)
            cases.append(np.flip(x, axis=0) if rng.integers(2) else x)
        for x in cases:
            for axis in sorted({-1, int(rng.integers(0, x.ndim)), x.ndim - 1}):
                in_frac = int(rng.integers(0, bits))
                got = T.softmax_fx(x, lut, in_frac_bits=in_frac, bits=bits, axis=axis)
                want = numpy_path(T.softmax_fx, x, lut, in_frac_bits=in_frac, bits=bits, axis=axis)
                assert got.dtype == want.dtype and np.array_equal(got, want), (x.shape, axis, in_frac)
    assert calls["softmax_exp"] > 0 and calls["scale_slices"] > 0


def test_compiled_follows_the_switch() -> None:
    prev = _jit.set_enabled(False)
    try:
        assert _jit.compiled("_jit_reduce") is None
    finally:
        _jit.set_enabled(prev)
    if _jit.available() and prev:
        assert _jit.compiled("_jit_reduce") is not None
