"""The fused tiny path (:class:`pymli.kernels.conv_prepared.FusedLayer`) against the plain kernels:
seeded random small sa8 conv2d layers (paddings, strides, dilations, per-axis weights scales, fused ReLU
bounds, extreme values and biases), fully connected layers (sa8 and MLI_FX) and MLI_FX conv2d, under every platform, written into
outputs of every form (new array, (Ho, Wo, N), flat, strided); the capi functions that use it, with
buffers rewritten between repeated calls and calls from a second thread. Whole outputs are compared
with ``np.array_equal``."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from pymli import ElType, Platform, RoundMode, Tensor, capi, use_platform
from pymli.capi.types import Conv2dCfg, FullyConnectedCfg, ReluCfg, ReluType
from pymli.checks import entry
from pymli.config import PRESETS
from pymli.kernels import convolution as K
from pymli.kernels.conv_prepared import FusedLayer, prepare_conv
from pymli.kernels.fully_connected import fully_connected

from ._shared import assert_repeated_calls_follow_rewrites

PLATFORMS = [*PRESETS.values(), Platform(RoundMode.CONVERGENT, True, False, "em-full-accu")]


def _quant(rng: np.random.Generator, n: int, extreme: bool) -> K.Sa8Quant:
    per_axis = bool(rng.integers(2))
    ws = rng.integers(1, 1 << 15, n if per_axis else 1)
    wf = rng.integers(0, 24, n if per_axis else 1)
    zp_in = int(rng.choice([-128, 127])) if extreme else int(rng.integers(-128, 128))
    return K.Sa8Quant(zp_in, int(rng.integers(1, 1 << 15)), int(rng.integers(0, 20)), 0, ws, wf,
                      int(rng.integers(-128, 128)), int(rng.integers(1, 1 << 15)), int(rng.integers(0, 20)))


def _values(rng: np.random.Generator, shape: tuple[int, ...], extreme: bool) -> np.ndarray:
    if extreme:
        return rng.choice(np.array([-128, 127], np.int8), shape)
    return rng.integers(-128, 128, shape).astype(np.int8)


def _conv_case(seed: int):
    rng = np.random.default_rng(seed)
    extreme = seed % 4 == 0
    h, w, c, n = (int(v) for v in rng.integers(1, 7, 4))
    kh, kw = (int(v) for v in rng.integers(1, 4, 2))
    stride, dil = tuple(int(v) for v in rng.integers(1, 3, 2)), tuple(int(v) for v in rng.integers(1, 3, 2))
    pad = (int(rng.integers(0, kh)), int(rng.integers(0, kw)))
    out_hw = tuple(max(1, (size + 2 * p - ((k - 1) * d + 1)) // s + 1)
                   for size, k, s, d, p in zip((h, w), (kh, kw), stride, dil, pad))
    x = _values(rng, (h, w, c), extreme)
    wt = _values(rng, (kh, kw, c, n), extreme)
    big = 1 << int(rng.integers(1, 32))
    bias = rng.integers(-big, big, n).clip(-(1 << 31), (1 << 31) - 1).astype(np.int32)
    lo, hi = sorted(int(v) for v in rng.integers(-128, 128, 2)) if rng.integers(2) else (-128, 127)
    geo = {"stride": stride, "dilation": dil, "pad": pad, "out_hw": out_hw, "bounds": (lo, hi)}
    return x, wt, bias, _quant(rng, n, extreme), geo


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_conv_tiny_matches_plain(platform: Platform) -> None:
    """Small sa8 conv2d through the prepared layer (its fused path where it applies) equals the plain
    kernel, into every output form; the fused path is taken for most cases."""
    fused_runs = 0
    for seed in range(120):
        x, wt, bias, q, geo = _conv_case(seed)
        with use_platform(platform):
            want = K.conv2d_hwcn(x, wt, bias, q, **geo).astype(np.int8)
            layer = prepare_conv(wt, bias, q, **geo, out_dtype=np.int8)
            fused = layer.fused(x.shape)
            if fused is not None:
                probe = np.zeros(want.size, np.int8)
                fused_runs += fused(x, probe)
            got = layer(x)
            out3 = np.full(want.shape, 99, np.int8)
            layer(x, out3)
            flat = np.full(want.size, 99, np.int8)
            layer(x, flat)
            strided = np.full(want.shape[:2] + (2 * want.shape[2],), 99, np.int8)[:, :, ::2]
            layer(x, strided)
            again = layer(x)  # the kept buffer and constants, a second time
        for arr in (got, out3, strided, again):
            assert np.array_equal(arr, want), seed
        assert np.array_equal(flat, want.reshape(-1)), seed
    assert fused_runs >= 60  # the test exercises the fused path, not only the fallback


def test_conv_tiny_strided_input_and_other_thread() -> None:
    """A strided input view and a call from a thread that does not own the kept buffer."""
    for seed in range(20):
        x, wt, bias, q, geo = _conv_case(100 + seed)
        want = K.conv2d_hwcn(x, wt, bias, q, **geo).astype(np.int8)
        layer = prepare_conv(wt, bias, q, **geo, out_dtype=np.int8)
        wide = np.zeros(x.shape[:2] + (2 * x.shape[2],), np.int8)
        wide[:, :, ::2] = x
        assert np.array_equal(layer(wide[:, :, ::2]), want), seed
        res = []
        t = threading.Thread(target=lambda: res.append(layer(x)))
        t.start()
        t.join()
        assert np.array_equal(res[0], want), seed
        assert np.array_equal(layer(x), want), seed


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_fc_fused_matches_plain(platform: Platform) -> None:
    """FusedLayer as a fully connected layer equals :func:`fully_connected` (or says it does not apply)."""
    applied = 0
    for seed in range(150):
        rng = np.random.default_rng(1000 + seed)
        extreme = seed % 4 == 0
        k, m = int(rng.integers(1, 40)), int(rng.integers(1, 20))
        x, w = _values(rng, (k,), extreme), _values(rng, (k, m), extreme)
        big = 1 << int(rng.integers(1, 32))
        bias = rng.integers(-big, big, m).clip(-(1 << 31), (1 << 31) - 1).astype(np.int32)
        q = _quant(rng, m, extreme)
        bounds = (-128, 127) if seed % 3 else (0, 100)
        with use_platform(platform):
            want = fully_connected(x, w, bias, q, bounds).astype(np.int8)
            out = np.full(m, 99, np.int8)
            if FusedLayer(w, bias, q, bounds)(x, out):
                applied += 1
                assert np.array_equal(out, want), seed
    assert applied >= 75


_FX = {"fx16": (np.int16, np.int16, 40, 16), "fx16_fx8_fx8": (np.int16, np.int8, 32, 16),
       "fx8": (np.int8, np.int8, 32, 8)}


@pytest.mark.parametrize("kind", list(_FX))
@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_fx_fused_matches_plain(platform: Platform, kind: str) -> None:
    """MLI_FX fully connected and conv2d layers through FusedLayer equal the plain kernels (or it says
    it does not apply: 32-bit accumulators that could wrap or saturate, shifts outside the exact range)."""
    xdt, wdt, acc, out_bits = _FX[kind]
    odt = np.int16 if out_bits == 16 else np.int8
    ix, iw = np.iinfo(xdt), np.iinfo(wdt)
    applied = 0
    for seed in range(100):
        rng = np.random.default_rng(2000 + seed)
        extreme = seed % 4 == 0

        def draw(info: np.iinfo, shape: tuple[int, ...], dt: type) -> np.ndarray:
            vals = rng.choice([info.min, info.max], shape) if extreme else rng.integers(info.min, info.max + 1, shape)
            return vals.astype(dt)

        q = K.FxQuant(*(int(v) for v in rng.integers(0, 16, 4)), acc, out_bits)
        bounds = (int(np.iinfo(odt).min), int(np.iinfo(odt).max)) if seed % 3 else (0, 50)
        k, m = int(rng.integers(1, 30)), int(rng.integers(1, 12))
        x, w, b = draw(ix, (k,), xdt), draw(iw, (k, m), wdt), draw(iw, (m,), wdt)
        h, wi, c, n = (int(v) for v in rng.integers(1, 5, 4))
        kh, kw = (int(v) for v in rng.integers(1, 4, 2))
        xc, wc, bc = draw(ix, (h, wi, c), xdt), draw(iw, (kh, kw, c, n), wdt), draw(iw, (n,), wdt)
        geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (kh // 2, kw // 2), "out_hw": (h, wi), "bounds": bounds}
        with use_platform(platform):
            out = np.full(m, 99, odt)
            if FusedLayer(w, b, q, bounds)(x, out):
                applied += 1
                assert np.array_equal(out, fully_connected(x, w, b, q, bounds).astype(odt)), seed
            layer = prepare_conv(wc, bc, q, **geo, out_dtype=odt)
            assert np.array_equal(layer(xc), K.conv2d_hwcn(xc, wc, bc, q, **geo).astype(odt)), seed
    assert applied >= 50


def _conv_capi_case(rng: np.random.Generator, relu: ReluType, pad: int):
    x = Tensor.from_numpy(rng.integers(-128, 128, (5, 4, 3)), ElType.SA_8, zero_point=-3, scale=3, scale_frac_bits=7)
    w = Tensor.from_numpy(rng.integers(-128, 128, (3, 3, 3, 2)), ElType.SA_8, zero_point=[0, 0], scale=[5, 7],
                          scale_frac_bits=[9, 10], dim=3)
    b = Tensor.from_numpy(rng.integers(-5000, 5000, 2), ElType.SA_32, zero_point=[0, 0], scale=[15, 21],
                          scale_frac_bits=[16, 17], dim=0)
    ho, wo = 5 + 2 * pad - 2, 4 + 2 * pad - 2
    cfg = Conv2dCfg(relu=ReluCfg(relu), padding_top=pad, padding_bottom=pad, padding_left=pad, padding_right=pad)
    out = Tensor.zeros((ho, wo, 2), ElType.SA_8, zero_point=4, scale=9, scale_frac_bits=6)
    return x, w, b, cfg, out


@pytest.mark.parametrize("pad", [0, 1])
@pytest.mark.parametrize("relu", [ReluType.NONE, ReluType.RELU_6])
def test_capi_conv_tiny_follows_rewrites(relu: ReluType, pad: int) -> None:
    """capi conv2d sa8 (the fused path from the second call) equals the unplanned call on every platform,
    also after weights / bias / input are rewritten in place between calls."""
    x, w, b, cfg, out = _conv_capi_case(np.random.default_rng(7), relu, pad)
    fn = capi.FUNCTIONS["mli_krn_conv2d_hwcn_sa8_sa8_sa32"]
    assert_repeated_calls_follow_rewrites(
        fn, x, w, b, cfg, out,
        lambda: Tensor.zeros(tuple(out.shape[:3]), ElType.SA_8, zero_point=4, scale=9, scale_frac_bits=6), PLATFORMS)


def test_capi_fc_tiny_follows_rewrites() -> None:
    """capi fully connected sa8 16 -> 16 (the fused path) after rewrites, every platform."""
    rng = np.random.default_rng(9)
    x = Tensor.from_numpy(rng.integers(-128, 128, 16), ElType.SA_8, zero_point=5, scale=3, scale_frac_bits=7)
    w = Tensor.from_numpy(rng.integers(-128, 128, (16, 16)), ElType.SA_8, zero_point=[0] * 16,
                          scale=[5] * 16, scale_frac_bits=[9] * 16, dim=1)
    b = Tensor.from_numpy(rng.integers(-1000, 1000, 16), ElType.SA_32, zero_point=[0] * 16, scale=[15] * 16,
                          scale_frac_bits=[16] * 16, dim=0)
    out = Tensor.zeros((16,), ElType.SA_8, zero_point=-2, scale=9, scale_frac_bits=6)
    fn = capi.FUNCTIONS["mli_krn_fully_connected_sa8_sa8_sa32"]
    assert_repeated_calls_follow_rewrites(
        fn, x, w, b, FullyConnectedCfg(), out,
        lambda: Tensor.zeros((16,), ElType.SA_8, zero_point=-2, scale=9, scale_frac_bits=6), PLATFORMS)


@pytest.mark.parametrize("el", [ElType.SA_8, ElType.FX_16])
@pytest.mark.parametrize("size", [8, 4000])
def test_capi_relu_flat_path_copies_parameters(el: ElType, size: int) -> None:
    """capi ReLU on whole contiguous arrays (the flat path, small and large): values as the unplanned call,
    the output takes the input's parameters on the first call and keeps them, in-place calls too."""
    rng = np.random.default_rng(size)
    kw_in = {"zero_point": 3, "scale": 5, "scale_frac_bits": 4} if el.is_sa else {"frac_bits": 9}
    kw_out = {"zero_point": 0, "scale": 1, "scale_frac_bits": 0} if el.is_sa else {"frac_bits": 2}
    hi = 1 << (el.bits - 1)
    x = Tensor.from_numpy(rng.integers(-hi, hi, (size // 4, 4)), el, **kw_in)
    fn = capi.FUNCTIONS[f"mli_krn_relu_{'sa8' if el.is_sa else 'fx16'}"]
    for kind in (ReluType.GEN, ReluType.RELU_1):
        out = Tensor.zeros((size // 4, 4), el, **kw_out)
        ref = Tensor.zeros((size // 4, 4), el, **kw_out)
        was = entry.memo_enabled(False)
        try:
            fn(x, ReluCfg(kind), ref)
        finally:
            entry.memo_enabled(was)
        for _ in range(3):
            out.data[:] = 77
            fn(x, ReluCfg(kind), out)
            assert np.array_equal(out.data, ref.data)
            names = ("zero_point", "scale", "scale_frac_bits", "dim") if el.is_sa else ("frac_bits",)
            assert all(getattr(out, n) == getattr(ref, n) for n in names)
        y = Tensor.from_numpy(x.data.reshape(size // 4, 4).copy(), el, **kw_in)
        for _ in range(2):
            fn(y, ReluCfg(kind), y)  # in place: the second call clamps the clamped values (a no-op)
        assert np.array_equal(y.data, ref.data)
