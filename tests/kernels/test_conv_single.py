"""The one-shape forms of small layers (a model step's path) against the plain kernels: a prepared conv2d's
:meth:`pymli.kernels.conv_prepared.PreparedConv.single` (tiny layers: the fused layer; others: the one-group
:class:`~pymli.kernels.conv_prepared.PreparedGroupConv`'s compiled integer product) against
:func:`pymli.kernels.convolution.conv2d_hwcn`, and a depthwise layer with a channel multiplier
(:meth:`PreparedGroupConv.single`: the channels repeated, then the compiled depthwise loop nest) against
:func:`pymli.kernels.convolution.group_conv2d_hwcn`. Seeded random layers: 1 to 3 input channels among
others, strides, dilations, paddings, sa8 (per tensor / per axis) and fx16 / fx8, extreme values, (H, W, C)
and (N, H, W, C) inputs, every platform, the JIT on and off. Whole outputs compared with ``np.array_equal``.
"""

from __future__ import annotations

import numpy as np
import pytest

from pymli import Platform, RoundMode, use_platform
from pymli.config import PRESETS
from pymli.kernels import _jit
from pymli.kernels import conv_prepared as CP
from pymli.kernels import convolution as K
from pymli.kernels.conv_prepared import prepare_conv, prepare_group_conv

from .test_conv_prepared import _geometry
from .test_fc_paths import _layer, _ordinary

PLATFORMS = [*PRESETS.values(), Platform(RoundMode.CONVERGENT, True, False, "em-full-accu")]
KINDS = ["sa8", "sa8_axis", "fx16", "fx8"]


@pytest.fixture(params=[True, False], ids=["jit", "nojit"])
def jit(request: pytest.FixtureRequest):
    was = _jit.set_enabled(request.param)
    yield request.param
    _jit.set_enabled(was)


def _values(rng: np.random.Generator, shape: tuple[int, ...], xt: type, extreme: bool) -> np.ndarray:
    info = np.iinfo(xt)
    if extreme:
        return rng.choice(np.array([info.min, info.max, 0]), size=shape).astype(xt)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(xt)


def _conv_case(seed: int, kind: str):
    """A random conv2d: (w, bias, q, bounds, geometry, x, out dtype); every other seed 1 to 3 input channels,
    sizes from tiny (the fused layer) to a few thousand multiply-adds per output row."""
    rng = np.random.default_rng(seed)
    extreme = seed % 7 == 3
    kh, kw = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    c = int(rng.integers(1, 4)) if seed % 2 else int(rng.integers(4, 20))
    n = int(rng.choice([1, 3, 4, 8, 16, 17, 32]))
    w, b, q, bounds, xt = _layer(rng, kind, kh * kw * c, n, extreme)
    if seed % 5 != 4:
        q = _ordinary(q, np.iinfo(w.dtype).bits)
    w = w.reshape(kh, kw, c, n)
    h, wd = int(rng.integers(1, 20)), int(rng.integers(1, 20))
    geo = _geometry(rng, h, wd, kh, kw)
    lead = [(), (1,), (int(rng.integers(2, 4)),)][seed % 3]
    x = _values(rng, (*lead, h, wd, c), xt, extreme)
    dtype = np.int16 if isinstance(q, K.FxQuant) and q.out_bits > 8 else np.int8
    return w, b, q, bounds, geo, x, dtype


def _check(single, prep, x: np.ndarray, want_of, what) -> None:
    """``single`` (twice: the kept buffers) and the prepared layer against the plain kernel on every platform,
    also on a strided copy of the input and on an input of another shape (passed on to the layer)."""
    xs = np.repeat(x, 2, axis=-2)[..., ::2, :]
    other = x[..., :1, :, :] if x.shape[-3] > 1 else None
    for p in PLATFORMS:
        with use_platform(p):
            want = want_of(x)
            for _ in range(2):
                got = single(x)
                assert got.dtype == want.dtype and got.shape == want.shape, what
                assert np.array_equal(got, want), (what, p.name)
            assert np.array_equal(single(xs), want), (what, p.name)
            assert np.array_equal(prep(x), want), (what, p.name)
            if other is not None:
                try:
                    want_o = want_of(other)
                except Exception:  # noqa: BLE001 - a geometry the smaller input cannot take: nothing to compare
                    continue
                assert np.array_equal(single(other), want_o), (what, p.name, "other shape")


@pytest.mark.parametrize("kind", KINDS)
def test_conv_single_matches_plain(kind: str, jit: bool) -> None:
    seen = 0
    for seed in range(24):
        w, b, q, bounds, geo, x, dtype = _conv_case(seed * 7907 + len(kind), kind)
        prep = prepare_conv(w, b, q, **geo, bounds=bounds, out_dtype=dtype)
        single = prep.single(x.shape, x.dtype)
        if single is None:
            continue
        seen += 1

        def want_of(v: np.ndarray) -> np.ndarray:
            return K.conv2d_hwcn(v, w, b, q, **geo, bounds=bounds).astype(dtype)
        _check(single, prep, x, want_of, (seed, kind, geo, w.shape, x.shape))
    # sa8 has the one-shape form with the JIT (the int8 products; fx8 inputs too); without it, the tiny ones
    assert seen or (not jit and kind.startswith("fx")) or not _jit.available(), kind


def test_conv_single_takes_the_compiled_product(monkeypatch: pytest.MonkeyPatch) -> None:
    """A conv2d of one input channel and many outputs (a model's first layer): the one-shape form makes no
    im2col copy and no call of the layer's general path."""
    if not _jit.available():
        pytest.skip("numba is not installed: no compiled one-shape form")
    was = _jit.set_enabled(True)
    try:
        rng = np.random.default_rng(5)
        w = rng.integers(-128, 128, (3, 3, 1, 16)).astype(np.int8)
        b = rng.integers(-5000, 5000, 16).astype(np.int32)
        q = K.Sa8Quant(-7, 20000, 20, 0, np.full(16, 20000), np.full(16, 20), 4, 23000, 16)
        geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (0, 0), "out_hw": (14, 14)}
        prep = prepare_conv(w, b, q, **geo, bounds=(-128, 127), out_dtype=np.int8)
        x = rng.integers(-128, 128, (1, 16, 16, 1)).astype(np.int8)
        single = prep.single(x.shape, x.dtype)
        assert single is not None
        calls = []
        monkeypatch.setattr(CP, "_im2col", lambda *a: calls.append("im2col"))
        monkeypatch.setattr(CP.PreparedConv, "_values", lambda self, v: calls.append("values"))
        for p in PLATFORMS[:2]:
            with use_platform(p):
                if p is not PLATFORMS[0]:
                    single = prep.single(x.shape, x.dtype)  # the form of the platform in force
                want = K.conv2d_hwcn(x, w, b, q, **geo, bounds=(-128, 127)).astype(np.int8)
                assert np.array_equal(single(x), want)
        assert not calls
    finally:
        _jit.set_enabled(was)


def _multiplier_case(seed: int, kind: str):
    """A random depthwise layer with a channel multiplier: (w, bias, q, bounds, geometry, x, out dtype)."""
    rng = np.random.default_rng(seed)
    extreme = seed % 7 == 3
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    c, mult = int(rng.integers(1, 5)), int(rng.integers(2, 9))
    n = c * mult
    w, b, q, bounds, xt = _layer(rng, kind, kh * kw, n, extreme)
    if seed % 5 != 4:
        q = _ordinary(q, np.iinfo(w.dtype).bits)
    w = w.reshape(kh, kw, 1, n)
    h, wd = int(rng.integers(1, 16)), int(rng.integers(1, 16))
    geo = _geometry(rng, h, wd, kh, kw)
    lead = [(), (1,), (2,)][seed % 3]
    x = _values(rng, (*lead, h, wd, c), xt, extreme)
    dtype = np.int16 if isinstance(q, K.FxQuant) and q.out_bits > 8 else np.int8
    return w, b, q, bounds, geo, x, dtype


@pytest.mark.parametrize("kind", KINDS)
def test_multiplier_single_matches_plain(kind: str, jit: bool) -> None:
    for seed in range(16):
        w, b, q, bounds, geo, x, dtype = _multiplier_case(seed * 613 + len(kind), kind)
        prep = prepare_group_conv(w, b, q, **geo, bounds=bounds, out_dtype=dtype)
        single = prep.single(x.shape, x.dtype)
        if single is None:
            continue

        def want_of(v: np.ndarray) -> np.ndarray:
            return K.group_conv2d_hwcn(v, w, b, q, **geo, bounds=bounds).astype(dtype)
        _check(single, prep, x, want_of, (seed, kind, geo, w.shape, x.shape))


def test_multiplier_single_takes_the_loop_nest(monkeypatch: pytest.MonkeyPatch) -> None:
    """A depthwise layer with a channel multiplier: the one-shape form calls the compiled loop nest on the
    repeated channels straight away (indexing gave a strided copy, which went the general way)."""
    if not _jit.available():
        pytest.skip("numba is not installed: no compiled one-shape form")
    was = _jit.set_enabled(True)
    try:
        rng = np.random.default_rng(11)
        for c, mult, shape in ((1, 8, (1, 8, 8, 1)), (3, 4, (1, 14, 14, 3)), (2, 3, (9, 7, 2))):
            n = c * mult
            w = rng.integers(-128, 128, (3, 3, 1, n)).astype(np.int8)
            b = rng.integers(-5000, 5000, n).astype(np.int32)
            q = K.Sa8Quant(3, 20000, 20, 0, np.full(n, 20000), np.full(n, 20), -2, 23000, 16)
            h, wd = shape[-3:-1]
            geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (1, 1), "out_hw": (h, wd)}
            prep = prepare_group_conv(w, b, q, **geo, bounds=(-128, 127), out_dtype=np.int8)
            x = rng.integers(-128, 128, shape).astype(np.int8)
            single = prep.single(x.shape, x.dtype)
            assert single is not None
            want = K.group_conv2d_hwcn(x, w, b, q, **geo, bounds=(-128, 127)).astype(np.int8)
            calls = []
            with monkeypatch.context() as mp:
                mp.setattr(CP.PreparedConv, "__call__", lambda self, *a: calls.append("general"))
                got = single(x)
            assert not calls, (c, mult)
            assert np.array_equal(got, want), (c, mult)
    finally:
        _jit.set_enabled(was)
