"""Tables and fused forms the prepared TFLM path uses, against the element-by-element computation they
replace (seeded random data, extremes included)."""

from __future__ import annotations

import numpy as np
import pytest

from pymli.tflm import activations as A
from pymli.tflm import fixedpoint as fp
from pymli.tflm import quant_util as qu


def _softmax_direct(x: np.ndarray, m: int, ls: int, dmin: int, od: type) -> np.ndarray:
    """TFLM's int8 softmax element by element (no exponential table), bit lengths by Python ints."""
    xi = x.astype(np.int64)
    diff = xi - xi.max(-1, keepdims=True)
    ok = diff >= dmin
    e = fp.exp_on_negative_values(qu.multiply_by_quantized_multiplier_greater_than_one(diff, m, ls), 5)
    e12 = np.where(ok, fp.rescale(e, 0, 12), 0)
    s = qu.wrap(e12.sum(-1, keepdims=True), 32).astype(np.uint64) & np.uint64(0xFFFFFFFF)
    hr = 32 - np.vectorize(lambda v: int(v).bit_length(), otypes=[np.int64])(s)
    shifted = qu.wrap(((s.astype(np.int64) << hr) & 0xFFFFFFFF) - (1 << 31), 32)
    scale = fp.one_over_one_plus_x_for_x_in_0_1(shifted)
    un = qu.rounding_divide_by_pot(fp.mul(scale, e), 12 - hr + 31 - np.dtype(od).itemsize * 8)
    lo, hi = int(np.iinfo(od).min), int(np.iinfo(od).max)
    return np.where(ok, np.clip(un + lo, lo, hi), lo).astype(od)


@pytest.mark.parametrize("beta,scale", [(1.0, 0.1), (1.0, 0.003), (0.5, 1.7), (2.0, 0.05), (1.0, 1e-4), (1.0, 10.0)])
@pytest.mark.parametrize("od", [np.int8, np.int16])
def test_softmax_int8_table_equals_direct(beta: float, scale: float, od: type) -> None:
    m, ls, dmin = A.softmax_params(beta, scale)
    rng = np.random.default_rng(int(beta * 100 + scale * 1000))
    for shape in [(7, 33), (2, 3, 1000), (1,), (4, 1)]:
        x = rng.integers(-128, 128, shape).astype(np.int8)
        x.reshape(-1)[:1] = -128
        x.reshape(-1)[-1:] = 127
        got = A.softmax_int8(x, input_multiplier=m, input_left_shift=ls, diff_min=dmin, out_dtype=od)
        assert np.array_equal(got, _softmax_direct(x, m, ls, dmin, od)), shape


def test_reciprocal_in_python_ints_equals_arrays() -> None:
    """The per-row reciprocal in Python ints gives the array function's values (random int32 values,
    the whole range, the edges)."""
    rng = np.random.default_rng(77)
    a = np.concatenate([rng.integers(-(1 << 31), 1 << 31, 20000), rng.integers(0, 1 << 31, 20000),
                        [0, 1, -1, (1 << 31) - 1, -(1 << 31), (1 << 30), -(1 << 30), 1 << 29]]).astype(np.int64)
    want = fp.one_over_one_plus_x_for_x_in_0_1(a)
    got = np.array([fp.one_over_one_plus_x_for_x_in_0_1_int(int(v)) for v in a], np.int64)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("od", [np.int8, np.int16])
def test_softmax_int8_rows_and_widths(od: type) -> None:
    """Few rows (per-row reciprocal in Python ints) and many rows (arrays); rows of up to 256 values
    and wider ones (the per-row table of 256 outputs): every combination equals the direct form."""
    m, ls, dmin = A.softmax_params(1.0, 0.07)
    rng = np.random.default_rng(8)
    for shape in [(1, 10), (1, 256), (1, 257), (3, 1000), (40, 12), (40, 300), (2, 20, 300), (33, 5)]:
        x = rng.integers(-128, 128, shape).astype(np.int8)
        x.reshape(-1)[::7] = -128
        x.reshape(-1)[3::11] = 127
        got = A.softmax_int8(x, input_multiplier=m, input_left_shift=ls, diff_min=dmin, out_dtype=od)
        assert got.dtype == np.dtype(od) and got.shape == x.shape
        assert np.array_equal(got, _softmax_direct(x, m, ls, dmin, od)), shape
