"""The prepared convolution (:func:`pymli.kernels.conv_prepared.prepare_conv`) against the plain
kernels: seeded random conv2d / depthwise layers of every weights type (sa8 per tensor / per axis,
with weights zero points, fx16, fx16 x fx8), strides, dilations, paddings, batches, extreme values
and wrapping accumulators, under every platform (FULL_ACCU included). Whole outputs are compared
with ``np.array_equal``."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import ElType, Platform, RoundMode, Tensor, capi, use_platform
from pymli.capi.types import Conv2dCfg, ReluCfg, ReluType
from pymli.config import PRESETS
from pymli.kernels import conv_prepared
from pymli.kernels import convolution as K
from pymli.kernels.conv_prepared import prepare_conv
from ._shared import assert_repeated_calls_follow_rewrites

from .test_fc_paths import _layer, _ordinary

PLATFORMS = [*PRESETS.values(), Platform(RoundMode.CONVERGENT, True, False, "em-full-accu")]
KINDS = ["sa8", "sa8_axis", "sa8_wzp", "fx16", "fx16_fx8_fx8"]


def _geometry(rng: np.random.Generator, h: int, w: int, kh: int, kw: int):
    stride = tuple(int(v) for v in rng.integers(1, 4, 2))
    dil = tuple(int(v) for v in rng.integers(1, 3, 2))
    pad = tuple(int(v) for v in rng.integers(0, 3, 2))
    out = []
    for size, k, s, d, p in zip((h, w), (kh, kw), stride, dil, pad):
        ext = (k - 1) * d + 1
        out.append(max(1, (size + 2 * p - ext) // s + 1))
    return {"stride": stride, "dilation": dil, "pad": pad, "out_hw": tuple(out)}


def _input(rng: np.random.Generator, h: int, wd: int, c: int, xt: type, extreme: bool) -> np.ndarray:
    """An (h, wd, c) input, or a batch of 1-3 of them, of ``xt`` values (only the type's limits and 0
    when ``extreme``)."""
    batch = int(rng.integers(0, 4))
    shape = (h, wd, c) if batch == 0 else (batch, h, wd, c)
    info = np.iinfo(xt)
    if extreme:
        return rng.choice(np.array([info.min, info.max, 0]), size=shape).astype(xt)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(xt)


def _case(seed: int, kind: str, depthwise: bool, extreme: bool, ordinary: bool):
    rng = np.random.default_rng(seed)
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    c = int(rng.integers(1, 9))
    n = c if depthwise else int(rng.integers(1, 9))
    w, b, q, bounds, xt = _layer(rng, kind, kh * kw * (1 if depthwise else c), n, extreme)
    if ordinary:
        q = _ordinary(q, np.iinfo(w.dtype).bits)
    w = w.reshape(kh, kw, 1 if depthwise else c, n)
    h, wd = int(rng.integers(1, 8)), int(rng.integers(1, 8))
    geo = _geometry(rng, h, wd, kh, kw)
    x = _input(rng, h, wd, c, xt, extreme)
    return w, b, q, bounds, geo, x, xt


def _plain(x, w, b, q, bounds, geo, depthwise, dtype):
    f = K.depthwise_conv2d_hwcn if depthwise else K.conv2d_hwcn
    return f(x, w, b, q, **geo, bounds=bounds).astype(dtype)


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "dw"])
def test_prepared_matches_plain(platform: Platform, kind: str, depthwise: bool) -> None:
    for seed in range(12):
        extreme, ordinary = seed % 3 == 1, seed % 3 == 2
        w, b, q, bounds, geo, x, xt = _case(seed * 7919 + len(kind), kind, depthwise, extreme, ordinary)
        dtype = np.int16 if isinstance(q, K.FxQuant) else np.int8
        prep = prepare_conv(w, b, q, **geo, bounds=bounds, depthwise=depthwise, out_dtype=dtype)
        with use_platform(platform):
            want = _plain(x, w, b, q, bounds, geo, depthwise, dtype)
            for _ in range(2):  # the second call reuses the kept padded buffer
                got = prep(x)
                assert got.dtype == np.dtype(dtype) and got.shape == want.shape, (seed, got.shape, want.shape)
                assert np.array_equal(got, want), (seed, kind, geo)


def test_platform_read_at_call_time() -> None:
    """One prepared layer under alternating platforms: each call takes the platform in force."""
    w, b, q, bounds, geo, x, xt = _case(5, "sa8_axis", False, False, True)
    prep = prepare_conv(w, b, q, **geo, bounds=bounds, out_dtype=np.int8)
    for p in PLATFORMS * 2:
        with use_platform(p):
            assert np.array_equal(prep(x), _plain(x, w, b, q, bounds, geo, False, np.int8))


def test_weights_copied_and_strided_input() -> None:
    """Rewriting the caller's weights after preparing does not reach the layer; a non-contiguous
    input gives the plain kernel's values."""
    w, b, q, bounds, geo, x, xt = _case(11, "sa8", False, False, True)
    want_w, want_b = w.copy(), b.copy()
    prep = prepare_conv(w, b, q, **geo, bounds=bounds, out_dtype=np.int8)
    w[...] = 1
    b[...] = 0
    xs = np.repeat(x, 2, axis=-2)[..., ::2, :]
    assert not xs.flags.c_contiguous
    with use_platform(PRESETS["vpx"]):
        assert np.array_equal(prep(xs), _plain(x, want_w, want_b, q, bounds, geo, False, np.int8))


def test_accumulator_wrap() -> None:
    """fx16 x fx8 (32-bit accumulator) with extreme inputs and many taps: sums beyond 2**31 wrap as in C."""
    rng = np.random.default_rng(3)
    c, n = 64, 3
    w = np.full((3, 3, c, n), 127, np.int8)
    w[..., 1] = -128
    b = np.zeros(n, np.int8)
    q = K.FxQuant(0, 0, 0, 0, 32, 16)
    x = np.full((1, 5, 5, c), 32767, np.int16)
    x[0, 0, 0, 0] = rng.integers(-5, 5)
    geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (1, 1), "out_hw": (5, 5)}
    prep = prepare_conv(w, b, q, **geo, bounds=(-32768, 32767), out_dtype=np.int16)
    for p in PLATFORMS:
        with use_platform(p):
            want = _plain(x, w, b, q, (-32768, 32767), geo, False, np.int16)
            assert np.array_equal(prep(x), want)


def test_large_calls_take_the_plain_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond PREPARED_MAX_MACS a call goes through the plain kernel: the same values."""
    w, b, q, bounds, geo, x, xt = _case(2, "sa8_axis", False, False, True)
    prep = prepare_conv(w, b, q, **geo, bounds=bounds, out_dtype=np.int8)
    monkeypatch.setattr(conv_prepared, "PREPARED_MAX_MACS", 0)
    for p in PLATFORMS:
        with use_platform(p):
            assert np.array_equal(prep(x), _plain(x, w, b, q, bounds, geo, False, np.int8))


def _capi_case(rng: np.random.Generator, kind: str, op: str):
    """(function name, in, weights, bias, cfg, out) of a valid capi conv2d / depthwise call (3x3, padding 1,
    stride 1)."""
    h, c = 5, 3
    m, wc = (c, 1) if op == "depthwise_conv2d" else (4, c)
    cfg = Conv2dCfg(relu=ReluCfg(ReluType.NONE), stride_width=1, stride_height=1, padding_left=1, padding_right=1,
                    padding_top=1, padding_bottom=1)
    if kind == "sa8":
        ws = rng.integers(1, 300, m)
        x = Tensor.from_numpy(rng.integers(-128, 128, (h, h, c)), ElType.SA_8, zero_point=-3, scale=77,
                              scale_frac_bits=10)
        w = Tensor.from_numpy(rng.integers(-128, 128, (3, 3, wc, m)), ElType.SA_8, zero_point=[0] * m, scale=list(ws),
                              scale_frac_bits=[9] * m, dim=3)
        b = Tensor.from_numpy(rng.integers(-30000, 30000, m), ElType.SA_32, zero_point=[0] * m, scale=list(77 * ws),
                              scale_frac_bits=[19] * m, dim=0)
        out = Tensor.zeros((h, h, m), ElType.SA_8, zero_point=4, scale=2900, scale_frac_bits=8)
        return f"mli_krn_{op}_hwcn_sa8_sa8_sa32", x, w, b, cfg, out
    et_x, et_w = {"fx16": (ElType.FX_16, ElType.FX_16), "fx16_fx8_fx8": (ElType.FX_16, ElType.FX_8)}[kind]
    hx, hw = (1 << (et_x.bits - 1)), (1 << (et_w.bits - 1))
    x = Tensor.from_numpy(rng.integers(-hx, hx, (h, h, c)), et_x, frac_bits=et_x.bits - 4)
    w = Tensor.from_numpy(rng.integers(-hw, hw, (3, 3, wc, m)), et_w, frac_bits=et_w.bits - 2)
    b = Tensor.from_numpy(rng.integers(-hw, hw, m), et_w, frac_bits=et_w.bits - 3)
    out = Tensor.zeros((h, h, m), et_x, frac_bits=et_x.bits - 9)
    return f"mli_krn_{op}_hwcn_{kind}", x, w, b, cfg, out


def _qkw(t: Tensor) -> dict:
    if t.el_type.is_sa:
        return {"zero_point": int(t.zero_point), "scale": int(t.scale), "scale_frac_bits": int(t.scale_frac_bits)}
    return {"frac_bits": int(t.frac_bits)}


@pytest.mark.parametrize("op", ["conv2d", "depthwise_conv2d"])
@pytest.mark.parametrize("kind", ["sa8", "fx16", "fx16_fx8_fx8"])
def test_capi_repeated_calls_follow_rewritten_buffers(kind: str, op: str) -> None:
    """capi's planned conv2d / depthwise (memo on: the prepared layer from the second call) equals the unplanned
    call (memo off: plain kernel) on every platform, also after the weights / bias / input are
    rewritten in place between calls with unchanged structs."""
    rng = np.random.default_rng(23)
    name, x, w, b, cfg, out = _capi_case(rng, kind, op)
    fn = capi.FUNCTIONS[name]

    assert_repeated_calls_follow_rewrites(fn, x, w, b, cfg, out, lambda: Tensor.zeros(tuple(out.shape[:3]), out.el_type, **_qkw(out)),
                                          PLATFORMS)


@pytest.mark.parametrize("kind", KINDS)
def test_pointwise(kind: str) -> None:
    """1x1, stride 1, no padding (the input rows are the im2col matrix), with and without a batch."""
    rng = np.random.default_rng(31)
    for seed in range(6):
        c, n = int(rng.integers(1, 40)), int(rng.integers(1, 40))
        w, b, q, bounds, xt = _layer(rng, kind, c, n, seed % 3 == 1)
        if seed % 3 == 2:
            q = _ordinary(q, np.iinfo(w.dtype).bits)
        w = w.reshape(1, 1, c, n)
        geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (0, 0), "out_hw": (3, 5)}
        dtype = np.int16 if isinstance(q, K.FxQuant) else np.int8
        prep = prepare_conv(w, b, q, **geo, bounds=bounds, out_dtype=dtype)
        for shape in ((3, 5, c), (2, 3, 5, c)):
            x = rng.integers(np.iinfo(xt).min, np.iinfo(xt).max, size=shape, endpoint=True).astype(xt)
            for p in PLATFORMS:
                with use_platform(p):
                    assert np.array_equal(prep(x), _plain(x, w, b, q, bounds, geo, False, dtype)), (seed, p.name)
