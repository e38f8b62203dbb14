"""The tabulated leaky ReLU / PReLU kernels: gathered tables, their cache, per-axis indexing.

Large inputs go through a table of every input code (cached per parameter set and platform);
each case is compared with the element-wise arithmetic of pymli.arith.activation applied
directly, after calls with neighbouring parameters have filled the cache.
"""

from __future__ import annotations

import numpy as np
import pytest

from pymli import EM, VPX, use_platform
from pymli.arith import activation as A
from pymli.kernels import activation as K

PLATFORMS = [VPX, EM]


def _direct_fx(x, slopes, shift, axis, normalise):  # type: ignore[no-untyped-def]
    bits = x.dtype.itemsize * 8
    slopes = np.asarray(slopes, np.int64).reshape(-1)
    if axis is None:
        s, sh = A.leaky_fx_slope(int(slopes[0]), shift, bits, normalise)
        return A.leaky_relu_fx(x, s, sh, bits).astype(x.dtype)
    return A.leaky_relu_fx(x, slopes.reshape(K.axis_shape(x.ndim, axis, slopes.size)), shift, bits).astype(x.dtype)


def _direct_sa8(x, slopes, axis, q):  # type: ignore[no-untyped-def]
    slopes = np.asarray(slopes, np.int64).reshape(-1)
    ident = A.sa8_identity_params(q["in_scale"], q["in_sfb"], q["out_scale"], q["out_sfb"], q["out_zp"])
    alpha = A.sa8_alpha_params(slopes if axis is not None else int(slopes[0]), q["slope_zp"], q["slope_scale"],
                               q["slope_sfb"], ident)
    if axis is not None:
        shp = K.axis_shape(x.ndim, axis, slopes.size)
        alpha = A.SaRequant(alpha.scale.reshape(shp), alpha.shift.reshape(shp), alpha.offset.reshape(shp))
    return A.leaky_relu_sa8(x, q["in_zp"], ident, alpha).astype(np.int8)


@pytest.mark.parametrize("platform", PLATFORMS, ids=["up", "conv"])
@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_fx_tables_follow_every_parameter(platform, dtype):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(dtype(0).itemsize)
    info = np.iinfo(dtype)
    # per-axis tables need more than n * 2**bits elements: n = 2 along axes 1 and 2
    x = rng.integers(info.min, info.max + 1, (140000 if dtype == np.int16 else 3000,)).astype(dtype)
    x = x.reshape(-1, 2, 2)
    base = (int(rng.integers(info.min, info.max + 1)), 9)
    variants = [base, (base[0] + 1, 9), (base[0], 10), (base[0], -3), (info.min, 40)]
    K._TABLES.clear()
    with use_platform(platform):
        for slope, shift in variants + variants:  # the second round hits the cache
            for normalise in (False, True):
                got = K.leaky_relu_fx(x, slope, shift, normalise=normalise)
                assert np.array_equal(got, _direct_fx(x, [slope], shift, None, normalise)), (slope, shift)
            slopes = rng.integers(info.min, info.max + 1, x.shape[0])
            for axis in (0, 1, 2):
                n = x.shape[axis]
                got = K.prelu_fx(x, slopes[:n], shift, axis=axis)
                assert np.array_equal(got, _direct_fx(x, slopes[:n], shift, axis, False))


@pytest.mark.parametrize("platform", PLATFORMS, ids=["up", "conv"])
def test_sa8_tables_follow_every_parameter(platform):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (6, 50, 7)).astype(np.int8)
    base = dict(in_zp=-7, in_scale=20000, in_sfb=20, out_zp=3, out_scale=23000, out_sfb=20, slope_zp=0,
                slope_scale=16384, slope_sfb=21)
    K._TABLES.clear()
    cases = [base] + [{**base, k: v + 1} for k, v in base.items()]
    with use_platform(platform):
        for q in cases + cases:
            for slope in (51, -20):
                got = K.leaky_relu_sa8(x, slope, **q)
                assert np.array_equal(got, _direct_sa8(x, [slope], None, q)), (q, slope)
            for axis in (0, 1, 2):
                slopes = (np.arange(x.shape[axis]) * 37 % 256 - 128) if q is base else rng.integers(-128, 128, 50)
                slopes = slopes[: x.shape[axis]]
                got = K.prelu_sa8(x, slopes, axis=axis, **q)
                assert np.array_equal(got, _direct_sa8(x, slopes, axis, q)), (q, axis)


def test_cache_distinguishes_platforms():  # type: ignore[no-untyped-def]
    x = np.arange(-32768, 32768, dtype=np.int16).repeat(2)
    K._TABLES.clear()
    outs = []
    for platform in (VPX, EM, VPX):
        with use_platform(platform):
            got = K.leaky_relu_fx(x, 3, 2, normalise=False)
            assert np.array_equal(got, _direct_fx(x, [3], 2, None, False))
            outs.append(got)
    assert not np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])
