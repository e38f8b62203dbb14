"""pymli.kernels.transform: softmax / l2_normalize against the scalar oracle; 8-bit gather paths."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pymli.arith import lut as L
from pymli.config import EM, VPX, use_platform
from pymli.kernels import transform as K

from ..oracles import lut as O

MODES = {"up": VPX, "convergent": EM}


def _fields(kind: str):
    s = L.LUT_SPECS[kind]
    return [int(v) for v in L.lut_table(kind)], s.in_frac_bits, s.out_frac_bits, s.input_offset


def _slices(shape, axis):
    """Index tuples of every 1-D slice along ``axis`` (or the whole array for axis < 0)."""
    if axis < 0:
        return [(Ellipsis,)]
    return list(itertools.product(*[range(n) if i != axis else [slice(None)] for i, n in enumerate(shape)]))


def _shape_axis():
    return hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5).flatmap(
        lambda s: st.tuples(st.just(s), st.integers(-1, len(s) - 1)))


@given(_shape_axis(), st.data(), st.sampled_from([8, 16]), st.integers(-2, 16), st.sampled_from(list(MODES)))
def test_softmax_fx_vs_oracle(sa, data, bits, fb, mode) -> None:
    shape, axis = sa
    dt = np.int8 if bits == 8 else np.int16
    x = data.draw(hnp.arrays(dt, shape))
    table, lin, lout, off = _fields("softmax")
    with use_platform(MODES[mode]):
        got = K.softmax_fx(x, L.create_lut("softmax"), in_frac_bits=fb, bits=bits, axis=axis)
    for ix in _slices(shape, axis):
        xs = [int(v) for v in x[ix].reshape(-1)]
        want = O.softmax_fx_slice(xs, table, lin, lout, off, fb, bits, mode)
        assert got[ix].reshape(-1).tolist() == want


@given(_shape_axis(), st.data(), st.integers(1, 32767), st.integers(0, 30), st.sampled_from(list(MODES)))
def test_softmax_sa8_vs_oracle(sa, data, scale, shift, mode) -> None:
    shape, axis = sa
    x = data.draw(hnp.arrays(np.int8, shape))
    table, lin, lout, off = _fields("softmax")
    with use_platform(MODES[mode]):
        got = K.softmax_sa8(x, L.create_lut("softmax"), in_scale=scale, in_shift=shift, axis=axis)
    for ix in _slices(shape, axis):
        xs = [int(v) for v in x[ix].reshape(-1)]
        assert got[ix].reshape(-1).tolist() == O.softmax_sa8_slice(xs, table, lin, lout, off, scale, shift, mode)


@given(_shape_axis(), st.data(), st.booleans(), st.integers(-128, 127), st.sampled_from(list(MODES)))
def test_l2_normalize_vs_oracle(sa, data, is_sa8, zp, mode) -> None:
    shape, axis = sa
    x = data.draw(hnp.arrays(np.int8 if is_sa8 else np.int16, shape))
    table, lin, lout, off = _fields("l2_normalize")
    bits, out_shift, in_zp = (8, 7, zp) if is_sa8 else (16, 15, None)
    with use_platform(MODES[mode]):
        got = K.l2_normalize(x, L.create_lut("l2_normalize"), bits=bits, out_shift=out_shift, in_zp=in_zp,
                             axis=axis)
    for ix in _slices(shape, axis):
        xs = [int(v) for v in x[ix].reshape(-1)]
        assert got[ix].reshape(-1).tolist() == O.l2_slice(xs, table, lin, lout, off, bits, out_shift, in_zp, mode)


def test_norm_helpers() -> None:
    vals = [0, 1, -1, 2, 3, -2, -3, 2**30, 2**31 - 1, -2**31, 12345, -98765]
    assert K.norm32(np.array(vals)).tolist() == [O.norm(v, 32) for v in vals]
    big = vals + [2**40 + 7, -(2**62), 2**63 - 1, 2**53 + 1, 2**53 - 1]
    assert K.norm64(np.array(big, dtype=np.int64)).tolist() == [O.norm(v, 64) for v in big]


# ------------------------------------------------------------------ gather paths equal the direct ones
@pytest.mark.parametrize("kind", ("sigm", "tanh"))
def test_gather_sa8_equals_direct(kind: str) -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (20, 40)).astype(np.int8)[:, ::2]  # strided, > gather threshold
    lut = L.create_lut(kind)
    kw = dict(in_zp=-5, in_scale=23000, in_shift=21, out_zp=0, out_shift=7)
    got = K.lut_activation_sa8(x, lut, **kw)
    want = L.activation_sa8(x.astype(np.int64), lut, -5, 23000, 21, 0, 7)
    assert np.array_equal(got, want)
    got8 = K.lut_activation_fx(x, lut, in_frac_bits=5, out_bits=8)
    assert np.array_equal(got8, L.activation_fx(x.astype(np.int64), lut, 5, 8))


def test_gather_softmax_equals_small_path() -> None:
    rng = np.random.default_rng(2)
    x = rng.integers(-128, 128, (30, 40)).astype(np.int8)
    lut = L.create_lut("softmax")
    big = K.softmax_sa8(x, lut, in_scale=20000, in_shift=19, axis=1)
    rows = np.concatenate([K.softmax_sa8(x[i:i + 1], lut, in_scale=20000, in_shift=19, axis=1) for i in range(30)])
    assert np.array_equal(big, rows)
    big8 = K.softmax_fx(x, lut, in_frac_bits=4, bits=8, axis=0)
    cols = np.concatenate([K.softmax_fx(x[:, j:j + 1], lut, in_frac_bits=4, bits=8, axis=0) for j in range(40)], axis=1)
    assert np.array_equal(big8, cols)


def test_gather_fx16_equals_direct() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-32768, 32768, (300, 1000)).astype(np.int16)[:, ::2]  # 150000 elements, strided
    lut = L.create_lut("tanh")
    with use_platform(EM):
        got = K.lut_activation_fx(x, lut, in_frac_bits=9, out_bits=16)
        want = L.activation_fx(x.astype(np.int64), lut, 9, 16)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("mode", MODES)
def test_whole_tensor_softmax_sa8_histogram_path(mode: str) -> None:
    rng = np.random.default_rng(4)
    x = rng.integers(-128, 128, (20, 40)).astype(np.int8)
    table, lin, lout, off = _fields("softmax")
    with use_platform(MODES[mode]):
        got = K.softmax_sa8(x, L.create_lut("softmax"), in_scale=30000, in_shift=22, axis=-1)
    want = O.softmax_sa8_slice([int(v) for v in x.reshape(-1)], table, lin, lout, off, 30000, 22, mode)
    assert got.reshape(-1).tolist() == want
