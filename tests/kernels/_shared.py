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
