"""Strategies and checks shared by the kernel tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from pymli.arith.lut import create_lut
from pymli.arith.pool import requant_params
from pymli.checks import entry
from pymli.config import Platform, use_platform
from pymli.kernels import _jit
from pymli.kernels import convolution as KC
from pymli.kernels import diverse as KD
from pymli.kernels import transform as KT


@st.composite
def pool_case(draw, batch: bool = False, max_channels: int = 4):
    """A pooling case: ``(bits, shape, geometry, arithmetic)``.

    ``shape`` is (H, W, C), or (N, H, W, C) with ``batch``; ``geometry`` holds ``kernel``, ``stride``,
    ``pad`` (top, left) and ``out_hw`` (which may be empty: callers skip those); ``arithmetic`` the
    average pooling's ``base_shift`` and, for some 8-bit cases, sa8 ``requant`` parameters.
    """
    bits = draw(st.sampled_from([8, 16]))
    n = (draw(st.integers(1, 3)),) if batch else ()
    h, w, c = draw(st.integers(1, 9)), draw(st.integers(1, 9)), draw(st.integers(1, max_channels))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    pt, pl = draw(st.integers(0, kh - 1)), draw(st.integers(0, kw - 1))
    pb, pr = draw(st.integers(0, kh - 1)), draw(st.integers(0, kw - 1))
    oh, ow = (h + pt + pb - kh) // sh + 1, (w + pl + pr - kw) // sw + 1
    rq = None
    if bits == 8 and draw(st.booleans()):
        rq = requant_params(draw(st.integers(1, 32767)), draw(st.integers(0, 24)), draw(st.integers(-128, 127)),
                            draw(st.integers(1, 32767)), draw(st.integers(0, 24)), draw(st.integers(-128, 127)))
    geo = dict(kernel=(kh, kw), stride=(sh, sw), pad=(pt, pl), out_hw=(oh, ow))
    return bits, n + (h, w, c), geo, dict(base_shift=draw(st.integers(-4, 8)), requant=rq)


def assert_l2_normalize_matches_reference(x: np.ndarray, bits: int, axis: int, zp: int, platform: Platform) -> None:
    """``kernels.transform.l2_normalize`` of ``x`` along ``axis`` (clipped to its rank) equals the
    plain reference under ``platform``, whole buffer."""
    axis = min(axis, x.ndim - 1)
    lut = create_lut("l2_normalize")
    kw = dict(bits=8, out_shift=7, in_zp=zp) if bits == 8 else dict(bits=16, out_shift=15)
    with use_platform(platform):
        got = KT.l2_normalize(x, lut, axis=axis, **kw)
        want = KT.l2_normalize_reference(x, lut, axis=axis, **kw)
    assert np.array_equal(got, want)


def assert_argmax_matches_heap_replay(x: np.ndarray, axis: int, k: int, stride_map: tuple[int, int] | None) -> None:
    """``kernels.diverse.argmax`` of ``x`` (``axis`` clipped to its rank, ``k`` to the slice size) equals
    the C heap replay; with ``stride_map = (m, a)`` both read ``x`` as if its element strides were
    ``s * m + a`` (offsets only: the values are ``x``'s)."""
    axis = min(axis, x.ndim - 1)
    n = x.size if axis < 0 else x.size // x.shape[axis]
    k = min(k, n)
    strides = None
    if stride_map is not None:
        strides = [int(s) * stride_map[0] + stride_map[1] for s in np.asarray(x.strides) // x.itemsize]
    assert np.array_equal(KD.argmax(x, axis, k, strides), KD.argmax_reference(x, axis, k, strides))


def assert_repeated_calls_follow_rewrites(fn: Callable[..., Any], x: Any, w: Any, b: Any, cfg: Any, out: Any,
                                          fresh_out: Callable[[], Any], platforms: Iterable[Platform]) -> None:
    """Eight calls ``fn(x, w, b, cfg, out)`` per platform, the weights, bias and input rewritten in place
    between some of them (same structs, other values): each output equals a call without the memo into
    ``fresh_out()``."""
    def want() -> np.ndarray:
        ref = fresh_out()
        was = entry.memo_enabled(False)
        try:
            fn(x, w, b, cfg, ref)
        finally:
            entry.memo_enabled(was)
        return ref.data.copy()

    for plat in platforms:
        with use_platform(plat):
            for step in range(8):
                if step in (3, 5):  # rewrite a buffer in place: the same structs, other values
                    t = (w, b)[step == 5]
                    t.data[:] = np.roll(t.data, 1)
                if step == 6:
                    x.data[:] = x.data[::-1].copy()
                fn(x, w, b, cfg, out)
                assert np.array_equal(out.data, want()), (plat.name, step)


def numpy_path(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """``fn(*args, **kw)`` with the optional JIT switched off (the pure-NumPy kernels)."""
    prev = _jit.set_enabled(False)
    try:
        return fn(*args, **kw)
    finally:
        _jit.set_enabled(prev)


class TakenCounter:
    """Counts the calls of ``module.name`` that returned a result (did not hand back with None)."""

    def __init__(self, monkeypatch: Any, module: Any, name: str) -> None:
        self.taken = 0
        real = getattr(module, name)

        def counted(*a: Any, **k: Any) -> Any:
            r = real(*a, **k)
            self.taken += r is not None
            return r

        monkeypatch.setattr(module, name, counted)


def fx_quant(rng: np.random.Generator, kind: str) -> tuple:
    """Random MLI_FX convolution parameters for ``kind`` ``"fx16"`` (int16 weights, 40-bit accumulator)
    or ``"fx16_fx8_fx8"`` (int8 weights, 32-bit), outputs spread over the range: (pymli ``FxQuant``,
    the oracle's dict, dtypes of x / w / bias)."""
    wbits = 16 if kind == "fx16" else 8
    in_frac = int(rng.integers(8, 16))
    w_frac = int(rng.integers(wbits // 2, wbits))
    b_frac = int(rng.integers(0, in_frac + w_frac + 1))
    lo_e = 12 if kind == "fx16" else 5
    out_frac = max(0, in_frac + w_frac - int(rng.integers(lo_e, lo_e + 9)))
    acc_bits = 40 if kind == "fx16" else 32
    p = {"kind": "fx", "in_frac": in_frac, "w_frac": w_frac, "b_frac": b_frac, "out_frac": out_frac,
         "acc_bits": acc_bits, "out_bits": 16}
    wt = np.int16 if kind == "fx16" else np.int8
    return KC.FxQuant(in_frac, w_frac, b_frac, out_frac, acc_bits, 16), p, (np.int16, wt, wt)


def pointwise_sa8_case(rng: np.random.Generator, seed: int, min_hw: int = 1) -> tuple:
    """A random sa8 1x1 convolution: (h, w, cin, quant, weights (1, 1, cin, cout), bias, bounds);
    per-axis weights for odd seeds, a ReLU lower bound for seeds divisible by 3."""
    cin, cout = int(rng.integers(1, 140)), int(rng.integers(1, 140))
    h, wd = int(rng.integers(min_hw, 30)), int(rng.integers(min_hw, 30))
    nw = cout if seed % 2 else 1
    q = KC.Sa8Quant(int(rng.integers(-128, 128)), int(rng.integers(1, 32768)), 20, 0, rng.integers(1, 32768, nw),
                    20 + rng.integers(0, 3, nw), int(rng.integers(-128, 128)), int(rng.integers(1, 32768)), 18)
    w = rng.integers(-128, 128, (1, 1, cin, cout)).astype(np.int8)
    b = rng.integers(-(1 << 16), 1 << 16, cout).astype(np.int32)
    bounds = (-128, 127) if seed % 3 else (int(q.out_zp), 127)
    return h, wd, cin, q, w, b, bounds


def assert_pointwise_equals_conv(prepare: Callable, x: np.ndarray, w: np.ndarray, b: np.ndarray, q: Any,
                                 bounds: tuple[int, int], platforms: Iterable[Platform]) -> None:
    """``prepare(w, b, q, bounds, np.int8)`` (a prepared pointwise layer) on the batch ``x`` equals
    :func:`pymli.kernels.convolution.conv2d_hwcn` per image on every platform."""
    h, wd = x.shape[1:3]
    for plat in platforms:
        with use_platform(plat):
            pw = prepare(w, b, q, bounds, np.int8)
            assert pw is not None
            got = pw(x)
            for i in range(x.shape[0]):
                want = KC.conv2d_hwcn(x[i], w, b, q, stride=(1, 1), pad=(0, 0), out_hw=(h, wd), bounds=bounds)
                assert np.array_equal(got[i], want.astype(np.int8)), (plat, i)


def conv_geometry(rng: np.random.Generator, top: int = 14) -> tuple:
    """A random 2-D convolution geometry: kernel 1-5, strides and dilations 1-3, paddings up to beyond
    the kernel, an input of at least one window below ``top`` pixels a side: (kh, kw, stride, dilation,
    pad (top, left), pad (bottom, right), h, w, ho, wo)."""
    kh, kw = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    s = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    d = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    ekh, ekw = (kh - 1) * d[0] + 1, (kw - 1) * d[1] + 1
    pad = (int(rng.integers(0, ekh + 2)), int(rng.integers(0, ekw + 2)))  # also beyond the kernel
    pad_b = (int(rng.integers(0, ekh)), int(rng.integers(0, ekw)))
    h = int(rng.integers(max(1, ekh - pad[0] - pad_b[0]), max(top, ekh - pad[0] - pad_b[0] + 1)))
    w = int(rng.integers(max(1, ekw - pad[1] - pad_b[1]), max(top, ekw - pad[1] - pad_b[1] + 1)))
    ho = KC.out_size(h, kh, s[0], pad[0], pad_b[0], d[0])
    wo = KC.out_size(w, kw, s[1], pad[1], pad_b[1], d[1])
    return kh, kw, s, d, pad, pad_b, h, w, ho, wo
