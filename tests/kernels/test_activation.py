"""ReLU-family kernels: properties and agreement with the scalar oracles."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pymli.arith import activation as A
from pymli.kernels import activation as K

from ..oracles import activation as C

dtypes = st.sampled_from([np.int8, np.int16])
kinds = st.sampled_from([A.RELU_NONE, A.RELU_GEN, A.RELU_1, A.RELU_6])


@st.composite
def int_arrays(draw, dtype=None, max_dims: int = 4):
    dt = np.dtype(draw(dtypes) if dtype is None else dtype)
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=max_dims, max_side=5))
    return draw(hnp.arrays(dt, shape))


@given(x=int_arrays(), kind=kinds, zero=st.integers(-128, 127), scale=st.integers(1, 32767),
       shift=st.integers(-5, 35))
def test_relu_monotone_and_bounded(x: np.ndarray, kind: int, zero: int, scale: int, shift: int) -> None:
    lo, hi = A.relu_limits(kind, x.dtype.itemsize * 8, zero, scale, shift)
    y = K.relu(x, kind, zero=zero, scale=scale, shift=shift)
    assert y.dtype == x.dtype and y.shape == x.shape
    flat = np.sort(x.reshape(-1))
    assert np.all(np.diff(K.relu(flat, kind, zero=zero, scale=scale, shift=shift).astype(np.int64)) >= 0)
    if lo <= hi:
        assert y.min() >= lo and y.max() <= hi
        # values already inside the bounds pass unchanged
        inside = (x >= lo) & (x <= hi)
        assert np.array_equal(y[inside], x[inside])
    assert np.array_equal(K.relu(y, kind, zero=zero, scale=scale, shift=shift), y)


@given(x=int_arrays())
def test_relu_gen_fx_is_max_zero(x: np.ndarray) -> None:
    assert np.array_equal(K.relu(x, A.RELU_GEN, shift=3), np.maximum(x, 0))
    assert np.array_equal(K.relu(x, A.RELU_NONE), x)


@given(x=int_arrays(), slope=st.integers(-128, 127), shift=st.integers(0, 20), normalise=st.booleans())
def test_leaky_fx_vectorised_equals_scalar(x: np.ndarray, slope: int, shift: int, normalise: bool) -> None:
    bits = x.dtype.itemsize * 8
    y = K.leaky_relu_fx(x, slope, shift, normalise=normalise)
    want = [C.leaky_fx(int(v), slope, shift, bits, normalise, True) for v in x.reshape(-1)]
    assert y.dtype == x.dtype and y.reshape(-1).tolist() == want
    # non-negative inputs pass unchanged
    assert np.array_equal(y[x >= 0], x[x >= 0])


@given(x=int_arrays(), data=st.data(), shift=st.integers(0, 20))
def test_prelu_fx_is_leaky_per_slice(x: np.ndarray, data, shift: int) -> None:
    axis = data.draw(st.integers(0, x.ndim - 1))
    lo, hi = (-128, 127) if x.dtype == np.int8 else (-32768, 32767)
    slopes = np.array(data.draw(st.lists(st.integers(lo, hi), min_size=x.shape[axis], max_size=x.shape[axis])))
    y = K.prelu_fx(x, slopes, shift, axis=axis)
    for i, s in enumerate(slopes.tolist()):
        sl = [slice(None)] * x.ndim
        sl[axis] = i
        assert np.array_equal(y[tuple(sl)], K.leaky_relu_fx(x[tuple(sl)], s, shift, normalise=False))


sa_q = st.tuples(st.integers(-128, 127), st.integers(1, 32767), st.integers(8, 28))


@given(x=int_arrays(np.int8), data=st.data(), in_q=sa_q, out_q=sa_q,
       sl_q=st.tuples(st.integers(-16384, 16383), st.integers(1, 32767), st.integers(8, 28)))
def test_prelu_sa8_vectorised_equals_scalar(x: np.ndarray, data, in_q, out_q, sl_q) -> None:
    axis = data.draw(st.integers(0, x.ndim - 1))
    slopes = data.draw(st.lists(st.integers(-128, 127), min_size=x.shape[axis], max_size=x.shape[axis]))
    q = dict(in_zp=in_q[0], in_scale=in_q[1], in_sfb=in_q[2], out_zp=out_q[0], out_scale=out_q[1],
             out_sfb=out_q[2], slope_zp=sl_q[0], slope_scale=sl_q[1], slope_sfb=sl_q[2])
    y = K.prelu_sa8(x, slopes, axis=axis, **q)
    idx = np.indices(x.shape)[axis]
    for v, i, got in zip(x.reshape(-1).tolist(), idx.reshape(-1).tolist(), y.reshape(-1).tolist()):
        ri, ra = C.sa8_params(in_q[1], in_q[2], out_q[1], out_q[2], out_q[0], slopes[i], *sl_q, True)
        assert got == C.leaky_sa8(v, in_q[0], ri, ra, True)
    # one slope everywhere: the same as the leaky ReLU
    same = K.prelu_sa8(x, [slopes[0]] * x.shape[axis], axis=axis, **q)
    assert np.array_equal(same, K.leaky_relu_sa8(x, slopes[0], **q))


@given(seed=st.integers(0, 2**32 - 1), in_q=sa_q, out_q=sa_q,
       sl_q=st.tuples(st.integers(-16384, 16383), st.integers(1, 32767), st.integers(8, 28)))
def test_tabulated_paths_equal_direct(seed: int, in_q, out_q, sl_q) -> None:
    """Large inputs go through a per-value table: same results as the element-wise arithmetic."""
    rng = np.random.default_rng(seed)
    x8 = rng.integers(-128, 128, (3, 40, 7)).astype(np.int8)
    slopes = rng.integers(-128, 128, 3)
    q = dict(in_zp=in_q[0], in_scale=in_q[1], in_sfb=in_q[2], out_zp=out_q[0], out_scale=out_q[1],
             out_sfb=out_q[2], slope_zp=sl_q[0], slope_scale=sl_q[1], slope_sfb=sl_q[2])
    ident = A.sa8_identity_params(in_q[1], in_q[2], out_q[1], out_q[2], out_q[0])
    alpha = A.sa8_alpha_params(slopes, sl_q[0], sl_q[1], sl_q[2], ident)
    shp = (3, 1, 1)
    direct = A.leaky_relu_sa8(x8, in_q[0], ident, A.SaRequant(alpha.scale.reshape(shp), alpha.shift.reshape(shp),
                                                              alpha.offset.reshape(shp)))
    assert np.array_equal(K.prelu_sa8(x8, slopes, axis=0, **q), direct)
    a0 = A.SaRequant(alpha.scale[0], alpha.shift[0], alpha.offset[0])
    assert np.array_equal(K.leaky_relu_sa8(x8, slopes[0], **q), A.leaky_relu_sa8(x8, in_q[0], ident, a0))
    x16 = rng.integers(-32768, 32768, (70000,)).astype(np.int16)
    s16 = int(rng.integers(-32768, 32768))
    s, sh = A.leaky_fx_slope(s16, 17, 16, True)
    assert np.array_equal(K.leaky_relu_fx(x16, s16, 17, normalise=True), A.leaky_relu_fx(x16, s, sh, 16))
    xs = rng.integers(-128, 128, (3, 200, 7)).astype(np.int8)
    sl7 = rng.integers(-128, 128, 7)
    want = A.leaky_relu_fx(xs, sl7.reshape(1, 1, 7), 9, 8)
    assert np.array_equal(K.prelu_fx(xs, sl7, 9, axis=2), want)
