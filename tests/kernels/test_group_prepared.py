"""The prepared group convolution (:func:`pymli.kernels.conv_prepared.prepare_group_conv`) against the plain
kernel :func:`pymli.kernels.convolution.group_conv2d_hwcn`: seeded random layers of every weights type
(sa8 per tensor / per axis, with weights zero points, fx16, fx16 x fx8), groups of one channel (a channel
multiplier) and of several, strides, dilations, paddings, batches, extreme values, every platform, the JIT
on and off, and the single-shape form. Whole outputs are compared with ``np.array_equal``."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import Platform, RoundMode, use_platform
from pymli.config import PRESETS
from pymli.kernels import _jit
from pymli.kernels import convolution as K
from pymli.kernels.conv_prepared import prepare_group_conv

from .test_conv_prepared import _geometry, _input
from .test_fc_paths import _layer, _ordinary

PLATFORMS = [*PRESETS.values(), Platform(RoundMode.CONVERGENT, True, False, "em-full-accu")]
KINDS = ["sa8", "sa8_axis", "sa8_wzp", "fx16", "fx16_fx8_fx8"]


def _case(seed: int, kind: str, extreme: bool, ordinary: bool):
    """A random group layer: (w, bias, q, bounds, geometry, x); every third seed has groups of several channels."""
    rng = np.random.default_rng(seed)
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    groups = int(rng.integers(1, 6))
    cg = 1 if seed % 3 else int(rng.integers(2, 4))
    mult = int(rng.integers(1, 4))
    c, n = groups * cg, groups * mult
    w, b, q, bounds, xt = _layer(rng, kind, kh * kw * cg, n, extreme)
    if ordinary:
        q = _ordinary(q, np.iinfo(w.dtype).bits)
    w = w.reshape(kh, kw, cg, n)
    h, wd = int(rng.integers(1, 8)), int(rng.integers(1, 8))
    geo = _geometry(rng, h, wd, kh, kw)
    x = _input(rng, h, wd, c, xt, extreme)
    return w, b, q, bounds, geo, x


@pytest.fixture(params=[True, False], ids=["jit", "nojit"])
def jit(request: pytest.FixtureRequest):
    was = _jit.set_enabled(request.param)
    yield request.param
    _jit.set_enabled(was)


@pytest.mark.parametrize("kind", KINDS)
def test_prepared_group_matches_plain(kind: str, jit: bool) -> None:
    for seed in range(15):
        extreme, ordinary = seed % 5 == 1, seed % 5 in (2, 3)
        w, b, q, bounds, geo, x = _case(seed * 7919 + len(kind), kind, extreme, ordinary)
        dtype = np.int16 if isinstance(q, K.FxQuant) else np.int8
        prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=dtype)
        single = prep.single(x.shape, x.dtype)
        for p in PLATFORMS:
            with use_platform(p):
                want = K.group_conv2d_hwcn(x, w, b, q, **geo, bounds=bounds).astype(dtype)
                for _ in range(2):  # the second call reuses the kept buffers / plans
                    got = prep(x)
                    assert got.dtype == np.dtype(dtype) and got.shape == want.shape, (seed, got.shape, want.shape)
                    assert np.array_equal(got, want), (seed, kind, geo, p.name)
                if single is not None:
                    assert np.array_equal(single(x), want), (seed, kind, geo, p.name)


def test_single_form_exists_for_channel_multiplier() -> None:
    """A depthwise layer with a channel multiplier has the single-shape form with the JIT on (the model step's path),
    none with groups of several channels."""
    if not _jit.enabled():
        pytest.skip("numba is not installed: no compiled single-shape form")
    w, b, q, bounds, geo, x = _case(1, "sa8_axis", False, True)
    assert w.shape[2] == 1
    assert prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=np.int8).single(x.shape, x.dtype) is not None
    w, b, q, bounds, geo, x = _case(3, "sa8_axis", False, True)
    assert w.shape[2] > 1
    assert prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=np.int8).single(x.shape, x.dtype) is None


def test_weights_copied_and_strided_input() -> None:
    """Rewriting the caller's weights after preparing does not reach the layer; a non-contiguous input gives the
    plain kernel's values."""
    w, b, q, bounds, geo, x = _case(4, "sa8", False, True)
    want_w, want_b = w.copy(), b.copy()
    prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=np.int8)
    w[...] = 1
    b[...] = 0
    xs = np.repeat(x, 2, axis=-2)[..., ::2, :]
    assert not xs.flags.c_contiguous
    with use_platform(PRESETS["vpx"]):
        want = K.group_conv2d_hwcn(x, want_w, want_b, q, **geo, bounds=bounds).astype(np.int8)
        assert np.array_equal(prep(xs), want)
