"""Properties of the Pythonic LUT activations (pymli.ops): monotonicity, ranges, normalisation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pymli.errors import MliError, Status
from pymli.formats import ElType
from pymli.ops import l2_normalize, sigmoid, softmax, tanh
from pymli.ops.lut_activations import activation_lut
from pymli.tensor import Tensor

sa8_quant = st.tuples(st.integers(-128, 127), st.integers(1, 32767), st.integers(8, 28))


def _deq(t: Tensor) -> np.ndarray:
    v = t.numpy().astype(np.float64)
    if t.el_type.is_sa:
        return (v - t.zero_point) * t.scale / 2.0 ** t.scale_frac_bits
    return v / 2.0 ** t.frac_bits


def _in_table(op, real: np.ndarray) -> np.ndarray:
    """Inputs within the sampled range of the op's table.

    Beyond it, MLI clamps the table index but still interpolates with the input's low bits, so the
    output saw-tooths between the two end entries (1 LSB of Q15): monotone only inside the range.
    """
    lut = activation_lut("sigm" if op is sigmoid else "tanh")
    step = 2.0 ** -lut.in_frac_bits
    return (real >= -lut.input_offset * step) & (real < (lut.length - 1 - lut.input_offset) * step)


def _monotone_in_table(op, x: Tensor, y: Tensor) -> None:
    real = _deq(x)
    keep = _in_table(op, real)
    order = np.argsort(real[keep], kind="stable")
    assert np.all(np.diff(y.numpy()[keep][order].astype(int)) >= 0)


@pytest.mark.parametrize("op", (sigmoid, tanh))
@pytest.mark.parametrize("fb", (-3, 0, 4, 7, 11, 15, 19))
def test_fx16_monotone_over_all_codes(op, fb: int) -> None:
    x = Tensor.from_numpy(np.arange(-32768, 32768, dtype=np.int16), "FX_16", frac_bits=fb)
    y = op(x)
    _monotone_in_table(op, x, y)
    v = y.numpy().astype(int)
    table = activation_lut("sigm" if op is sigmoid else "tanh").data.astype(int)
    # Outside the table the output stays between the two end entries of its side.
    assert v.min() >= table[0] and v.max() <= table[-1]


def test_saw_tooth_beyond_table_is_reproduced() -> None:
    # A C-library property, kept on purpose: far below the table, sigmoid alternates 1, 2 (Q15).
    x = Tensor.from_numpy(np.arange(-32768, -32768 + 256, dtype=np.int16), "FX_16", frac_bits=7)
    assert set(sigmoid(x).numpy().tolist()) == {1, 2}


@given(st.sampled_from([sigmoid, tanh]), st.integers(-6, 14))
def test_fx8_monotone_over_all_codes(op, fb) -> None:
    x = Tensor.from_numpy(np.arange(-128, 128, dtype=np.int8), "FX_8", frac_bits=fb)
    y = op(x)
    assert y.frac_bits == 7
    _monotone_in_table(op, x, y)
    if op is sigmoid:
        assert y.numpy().min() >= 0


@given(st.sampled_from([sigmoid, tanh]), sa8_quant)
def test_sa8_monotone_over_all_codes(op, q) -> None:
    zp, scale, sfb = q
    x = Tensor.from_numpy(np.arange(-128, 128, dtype=np.int8), "SA_8", zero_point=zp, scale=scale,
                          scale_frac_bits=sfb)
    y = op(x)
    _monotone_in_table(op, x, y)
    real = _deq(y)
    with np.errstate(over="ignore"):
        ref = 1 / (1 + np.exp(-_deq(x))) if op is sigmoid else np.tanh(_deq(x))
    # 8-bit output: one LSB of 1/256 (sigmoid) or 1/128 (tanh), plus table error.
    assert np.max(np.abs(real - ref)) <= (1.5 / 256 if op is sigmoid else 1.5 / 128)


@given(hnp.arrays(np.int16, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6)), st.integers(6, 14))
def test_sigmoid_fx16_accuracy(vals, fb) -> None:
    x = Tensor.from_numpy(vals, "FX_16", frac_bits=fb)
    y = _deq(sigmoid(x))
    assert np.max(np.abs(y - 1 / (1 + np.exp(-_deq(x))))) < 3e-4


@given(hnp.arrays(np.int16, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6), elements=st.integers(-4000, 4000)),
       st.integers(6, 12), st.data())
def test_softmax_fx16_sums_to_one(vals, fb, data) -> None:
    x = Tensor.from_numpy(vals, "FX_16", frac_bits=fb)
    axis = data.draw(st.one_of(st.none(), st.integers(-vals.ndim, vals.ndim - 1)))
    y = softmax(x, axis)
    assert y.frac_bits == 15
    p = _deq(y)
    assert np.all(p >= 0)
    sums = p.sum() if axis is None else p.sum(axis=axis)
    n = vals.size if axis is None else vals.shape[axis]
    assert np.all(np.abs(sums - 1) <= 2e-3 + n * 2e-4)


@given(hnp.arrays(np.int8, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6)), sa8_quant, st.data())
def test_softmax_sa8_sums_to_one(vals, q, data) -> None:
    zp, scale, sfb = q
    x = Tensor.from_numpy(vals, "SA_8", zero_point=zp, scale=scale, scale_frac_bits=sfb)
    axis = data.draw(st.one_of(st.none(), st.integers(0, vals.ndim - 1)))
    p = _deq(softmax(x, axis))
    sums = p.sum() if axis is None else p.sum(axis=axis)
    n = vals.size if axis is None else vals.shape[axis]
    # Every output is within ~1 LSB (1/256) of the true probability.
    assert np.all(np.abs(sums - 1) <= 0.01 + n * 1.0 / 256)
    ref = np.exp(_deq(x) - _deq(x).max(axis=axis, keepdims=True))
    ref = ref / ref.sum(axis=axis, keepdims=True)
    assert np.max(np.abs(p - ref)) <= 1.5 / 256 + 2e-3


@given(hnp.arrays(np.int16, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                  elements=st.integers(-32768, 32767).filter(lambda v: abs(v) > 64)), st.data())
def test_l2_normalize_unit_norm(vals, data) -> None:
    x = Tensor.from_numpy(vals, "FX_16", frac_bits=10)
    axis = data.draw(st.one_of(st.none(), st.integers(0, vals.ndim - 1)))
    y = _deq(l2_normalize(x, axis))
    ss = (y * y).sum() if axis is None else (y * y).sum(axis=axis)
    assert np.all(np.abs(ss - 1) < 4e-3)


def test_lut_cache_shared() -> None:
    assert activation_lut("sigm") is activation_lut("sigm")
    assert activation_lut("sigm").length == 320


def test_ops_reject_unsupported() -> None:
    with pytest.raises(MliError) as e:
        l2_normalize(Tensor.from_numpy(np.zeros(3, np.int8), "FX_8"))
    assert e.value.status is Status.NOT_SUPPORTED
    with pytest.raises(MliError) as e:
        softmax(Tensor.from_numpy(np.zeros((2, 2), np.int16), "FX_16"), axis=2)
    assert e.value.status is Status.BAD_FUNC_CFG


def test_ops_return_new_dense_tensor() -> None:
    x = Tensor.from_numpy(np.array([[1, 2], [3, 4]], np.int8), ElType.SA_8, zero_point=0, scale=1, scale_frac_bits=2)
    before = x.numpy().copy()
    y = tanh(x)
    assert y is not x and y.shape == [2, 2] and y.el_type is ElType.SA_8
    assert np.array_equal(x.numpy(), before)
