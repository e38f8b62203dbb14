"""Prepared convolutions: :func:`prepare_conv` fixes one layer's weights, bias, parameters and
geometry once and returns a callable of the input (:class:`PreparedConv`): the fixed per-call
cost of small convolutions (padding, parameter derivation, output-stage plans) is paid once.
:class:`FusedLayer` is the path of tiny layers (conv2d here, fully connected in :mod:`pymli.capi`):
the im2col gather, the padding and the output stage's roundings folded into constant matrices.
:func:`prepare_group_conv` (:class:`PreparedGroupConv`: neighbouring groups merged into block-diagonal
weights for the compiled integer products) and :func:`prepare_transpose_conv`
(:class:`PreparedTransposeConv`: the zero-inserted input through a prepared convolution) do the same
for group and transpose convolutions.

A module of its own: it builds on :mod:`pymli.kernels.fully_connected`, which imports
:mod:`pymli.kernels.convolution` (in that module it would close an import cycle).
"""

from __future__ import annotations

import importlib
import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..arith.requant import _cast_plan, fx_bias, sa8_bias_bound, sa8_out_params
from ..arith.rounding import clip_ufunc as _clip
from ..arith.rounding import limits
from ..config import Platform, get_platform
from ..formats import RoundMode
from . import _jit
from .convolution import (
    _F32_EXACT,
    _F64_EXACT,
    FxQuant,
    Quant,
    _batch,
    _depthwise_dtype,
    _geometry,
    _int_applies,
    _int_geometry,
    _int_weights,
    _offsets,
    _OutputStage,
    _eff_offset,
    _split16,
    _windows,
    container_bound,
    conv2d_hwcn,
    depthwise_conv2d_hwcn,
    group_conv2d_hwcn,
    transpose_conv2d_hwcn,
)
from ._parallel import PARALLEL_WORK
from .fully_connected import prepare_fc

__all__ = ["FusedLayer", "PreparedConv", "PreparedGroupConv", "PreparedTransposeConv", "prepare_conv",
           "prepare_group_conv", "prepare_transpose_conv", "TINY_CONSTANTS", "TINY_MACS"]

I64 = np.int64
PREPARED_MAX_MACS = 1 << 21
"""Calls of more multiply-adds than this take the plain kernel (row blocks over the threads, no
whole-batch im2col copy): the fixed per-call cost the prepared path saves no longer matters there."""
TINY_MACS = 1 << 12
"""conv2d calls of at most this many multiply-adds (one image) take :class:`FusedLayer` (a few NumPy
calls in all) when its constant matrices have at most :data:`TINY_CONSTANTS` elements."""
TINY_CONSTANTS = 1 << 15
_I32_MAX = (1 << 31) - 1
_MAX_STAGES = 16
_floor, _rint, _add = np.floor, np.rint, np.add
_get_ident = threading.get_ident


_JIT_STATE = _jit._STATE  # read per call: the JIT switched off at run time (set_enabled) is seen at once


_Run = Callable[[np.ndarray, np.ndarray], None]


def _compiled(plain: _Run, name: str, xdt: np.dtype, xs: tuple[int], os: tuple[int], mats: tuple[np.ndarray, ...],
              consts: tuple[float, ...]) -> _Run:
    """A FusedLayer form ``plain(x, out)`` with its compiled twin (:mod:`pymli.kernels._jit_fused`) in front.

    Args:
        plain: the NumPy form; name: the compiled function; xdt: the input dtype; xs, os: the flat
            input and output shapes the compiled function takes; mats: the constant matrices; consts:
            the scalar parameters (passed as one float64 array: fewer arguments for numba to type).

    Returns:
        ``run(x, out)``: the compiled function (on ``x`` and ``out`` made flat: ``out`` must then be
        in C order), or ``plain`` when the JIT is switched off now (read on every call; numba is
        imported on the first call with it on, as :func:`pymli.kernels._jit.enabled` does), numba is
        missing, ``out`` is not in C order, or numba does not take the argument types (e.g. a
        byte-swapped output): in those two cases the compiled form is dropped for good. ``plain``
        itself for a byte-swapped input.
    """
    if not xdt.isnative:
        return plain
    k = np.array(consts, dtype=np.float64)
    w1, w2 = mats if len(mats) == 2 else (mats[0], None)
    fn: list[Any] = [None, None, False]  # the compiled function, what it raises for types it does not take, dropped

    def run(x: np.ndarray, out: np.ndarray) -> None:
        if fn[2] or not _JIT_STATE["on"]:
            plain(x, out)
            return
        if x.shape != xs or out.shape != os:
            # other shapes of the same sizes: flat (a view of out in C order, or the NumPy form)
            if x.size != xs[0] or out.size != os[0] or not out.flags.c_contiguous:
                plain(x, out)
                return
            x, out = x.reshape(-1), out.reshape(-1)
        f = fn[0]
        if f is None:
            if not _jit.enabled():  # numba missing
                fn[2] = True
                plain(x, out)
                return
            module = importlib.import_module("pymli.kernels._jit_fused")
            f = fn[0] = getattr(module, name)
            fn[1] = module.UNTYPED
        a = (x, w1, out, k) if w2 is None else (x, w1, w2, out, k)
        try:
            f(*a)
        except fn[1]:  # raised while typing the arguments: nothing written
            fn[2] = True
            plain(x, out)
        except RuntimeError:  # a first compile cut short (see pymli.kernels._jit.compiled): once more, or raise
            f(*a)
    return run


def _bound(v: float) -> np.ndarray:
    """``v`` as a read-only 0-d float64 array: a ufunc takes it without converting a Python scalar
    (about half the cost of ``clip`` / ``add`` on a tiny array)."""
    a = np.array(float(v))
    a.flags.writeable = False
    return a


def _ones_tail_loader(n: int, shape: tuple[int, ...]) -> Callable[[np.ndarray], np.ndarray]:
    """A function that copies an input of ``shape`` (``n`` values) into a float64 vector ending in 1.

    The vector is kept and reused by the thread that built it; other threads get a new one per call.
    """
    owner = _get_ident()
    buf = np.empty(n + 1)
    buf[n] = 1.0
    inner = buf[:n].reshape(shape)

    def load(x: np.ndarray) -> np.ndarray:
        if _get_ident() == owner:
            inner[...] = x
            return buf
        b = np.empty(n + 1)
        b[n] = 1.0
        b[:n].reshape(shape)[...] = x
        return b
    return load


class FusedLayer:
    """A small conv2d or fully connected layer (sa8 without a weights zero point, or MLI_FX) as one or two
    float64 matrix products over its flat input. sa8, per call: the input copied into a float64 buffer
    ending in a one, then ``dot``, a rounding (and the 16-bit saturation where it can matter), ``dot``, a
    clip, the last rounding and the store into the output container; MLI_FX: ``dot`` (bias and rounding
    half through the one, the output shift in the weights), clip, rounding, store (see
    :meth:`_build_fx`). For tiny arrays each NumPy call is most of the cost: with the JIT on (numba
    installed), an output in C order takes the same operations as one compiled call
    (:mod:`pymli.kernels._jit_fused`; the same exact sums, roundings and clamps).

    ``fused(x, out)`` reads the ``n_in`` input values ``x`` (container integers, any shape, C order)
    and writes the (P, N) results into ``out`` (an integer array of P*N elements, 1-D or (P, N) or
    (Ho, Wo, N) in C order); it returns False, writing nothing, when no exact fused form exists for
    the input dtype under the platform in force (the caller takes its general path). The values are
    :func:`pymli.kernels.fully_connected.fully_connected`'s on the im2col rows, bit for bit.

    The first matrix spreads the weights over the flat input (row ``i`` holds ``w[k, o] * 2**-pre``
    in column ``(p, o)`` where output position ``p`` reads input ``i`` as tap ``k``; padded taps have no
    row), its last row (times the one) adds ``c = bias - zp * colsum(w over p's valid taps)`` times
    ``2**-pre`` plus the rounding half, and one more column per position that is exactly 1. The sum of
    ``(x - zp) * w`` over the valid taps is C's (padding contributes nothing).

    Why exact: every term is an integer times ``2**-pre`` (other columns' zeros are exact), and every
    partial sum is bounded by ``(max|x| * sum|w| + |c| + 2**pre) * 2**-pre``, checked below 2**53 in
    those units: the sum is exact in any order, and so is its rounding (``floor`` of ``v + 1/2`` for
    ROUND_UP, ``rint`` for ROUND_CONVERGENT). The second matrix multiplies the rounded value ``r`` by
    the (block) diagonal ``mul * 2**-sh`` and adds, through the ones column, the second rounding half
    (with ROUND_UP also the output zero point): ``|r * mul|`` is below the checked bound, the terms are
    multiples of ``2**-sh`` and the sum stays below 2**53 in those units, so it is exact too. Clamps
    commute with ``floor`` / ``rint`` at integer bounds. Where a condition fails (an accumulator that
    may wrap, FULL_ACCU sums that may saturate, shifts or products outside the exact range) there is
    no fused form.
    """

    def __init__(self, w: np.ndarray, bias: np.ndarray, q: Quant, bounds: tuple[int, int],
                 taps: np.ndarray | None = None, n_in: int = 0) -> None:
        """Args:
            w: (K, N) integer weights; bias: (N,) integers (both copied into the constants).
            q: the layer's :class:`~pymli.kernels.convolution.Sa8Quant` or ``FxQuant``; bounds: the fused ReLU clamp.
            taps: (P, K) index of each output position's taps in the flat input (-1: a padded tap);
                None: a fully connected layer (P = 1, tap ``k`` reads input ``k``).
            n_in: number of input values (with ``taps``; else K).
        """
        self._w = np.array(w, dtype=I64)
        k = self._w.shape[0]
        self._taps = np.arange(k)[None, :] if taps is None else np.asarray(taps)
        self._n = k if taps is None else int(n_in)
        self._bias = np.array(bias)
        self._q, self._bounds = q, (int(bounds[0]), int(bounds[1]))
        self._stages: dict[tuple, tuple] = {}
        self._last: tuple = (None, None, None, None)  # (platform, dtype, shape, run) of the last call

    @staticmethod
    def size(p: int, n: int, n_in: int) -> int:
        """Elements of the larger constant matrix for P positions, N channels and ``n_in`` inputs."""
        return max((n_in + 1) * p * (n + 1), p * (n + 1) * p * n)

    def __call__(self, x: np.ndarray, out: np.ndarray) -> bool:
        """The layer on ``x`` into ``out`` (see the class docstring); False (nothing written) without a fused form."""
        p = get_platform()
        last = self._last
        if last[0] is p and last[1] is x.dtype and last[2] == x.shape:  # the common case: as the call before
            run = last[3]
        else:
            run = self.runner(x.dtype, x.shape)
            self._last = (p, x.dtype, x.shape, run)
        if run is None:
            return False
        run(x, out)
        return True

    def runner(self, xdt: np.dtype, shape: tuple[int, ...]) -> Callable[[np.ndarray, np.ndarray], None] | None:
        """The computation ``run(x, out)`` for inputs of dtype ``xdt`` and ``shape`` under the platform in
        force now (a caller that keeps it must check that the platform is still this one), or None.

        Args:
            xdt: the input container dtype; shape: the input's shape.

        Returns:
            ``run(x, out)`` (writes the layer on ``x`` into ``out``), or None: no exact fused form.
        """
        p = get_platform()
        key = (id(p), xdt.char, tuple(shape))
        st = self._stages.get(key)
        if st is None or st[0] is not p:  # the entry holds the platform: its id cannot be reused meanwhile
            if len(self._stages) >= _MAX_STAGES:
                self._stages.clear()
            st = self._stages[key] = (p, self._build(p, xdt, tuple(shape)))
        return st[1]

    def _spread(self, w: np.ndarray, c: np.ndarray, ones: bool) -> np.ndarray:
        """The first constant matrix: (n_in + 1, P * (N + ones)) float64, ``w[k, o]`` in row ``i`` and
        column ``(p, o)`` where position ``p`` reads input ``i`` as tap ``k``, ``c[p, o]`` in the last row
        and, with ``ones``, one more column per position holding 1 in the last row."""
        npos, (_, m) = self._taps.shape[0], self._w.shape
        m1 = m + ones
        w1 = np.zeros((self._n + 1, npos * m1))
        pi, ki = np.nonzero(self._taps >= 0)  # one row per (position, valid tap): distinct inputs within a position
        w1[self._taps[pi, ki][:, None], pi[:, None] * m1 + np.arange(m)] = w[ki]
        last = w1[self._n].reshape(npos, m1)
        last[:, :m] = c
        if ones:
            last[:, m] = 1.0  # the ones column, kept through the first rounding
        return w1

    def _build_fx(self, p: Platform, xdt: np.dtype, shape: tuple[int, ...]) -> Callable[[np.ndarray, np.ndarray], None] | None:
        """The MLI_FX form: one product ``(x @ w + bias) * 2**-shift`` (plus the rounding half), the
        rounding, the clamp. Exact under the conditions of the prepared fully connected layer's FX
        stage without its 32-bit saturations (an accumulator and biased sum that cannot reach them),
        with the bound doubled for an unshifted sum's half."""
        q, (lo, hi) = self._q, self._bounds
        m = self._w.shape[1]
        if not m:
            return None
        acc_b = container_bound(np.empty(0, xdt)) * np.abs(self._w).sum(axis=0)
        fb = fx_bias(self._bias, q.bias_shift, q.acc_bits)
        s = int(q.out_shift)
        tot_b = int((acc_b + np.abs(fb)).max())
        up = p.round_mode is RoundMode.UP
        if q.acc_bits <= 32:
            if int(acc_b.max()) >= 1 << 31 or not 0 <= s <= 31 or tot_b + (1 << s >> 1) > _I32_MAX:
                return None  # the 32-bit accumulator could wrap or saturate
        elif not 0 <= s <= 52:
            return None
        if 2 * (tot_b + (1 << s)) >= _F64_EXACT:
            return None
        out_lo, out_hi = limits(q.out_bits)
        lo_f, hi_f = float(min(max(out_lo, lo), hi)), float(min(max(out_hi, lo), hi))
        inv = np.ldexp(1.0, -s)
        w1 = self._spread(self._w * inv, np.broadcast_to(fb * inv + (0.5 if up else 0.0), (self._taps.shape[0], m)),
                          False)
        n = self._n
        load = _ones_tail_loader(n, shape)
        rnd = _floor if up else _rint
        lo_a, hi_a = _bound(lo_f), _bound(hi_f)

        def run(x: np.ndarray, out: np.ndarray) -> None:
            y = load(x).dot(w1)
            _clip(y, lo_a, hi_a, out=y)
            rnd(y, out=y)  # clip, then round: the bounds are integers
            out[...] = y.reshape(out.shape) if out.ndim != 1 else y
        return _compiled(run, "fused_fx", xdt, (n,), (w1.shape[1],), (w1,), (up, lo_f, hi_f))

    def _build(self, p: Platform, xdt: np.dtype, shape: tuple[int, ...]) -> Callable[[np.ndarray, np.ndarray], None] | None:
        q, (lo, hi) = self._q, self._bounds
        if xdt.kind not in "iu" or self._bias.dtype.kind not in "iu" or math.prod(shape) != self._n:
            return None
        if isinstance(q, FxQuant):
            return self._build_fx(p, xdt, shape)
        if _eff_offset(q.w_zp):
            return None
        a = _eff_offset(q.in_zp)
        k, m = self._w.shape
        npos = self._taps.shape[0]
        if not m:
            return None
        l1 = np.abs(self._w).sum(axis=0)
        acc_b = container_bound(np.empty(0, xdt), a) * l1  # per channel, on |sum((x - a) * w)|
        if int(acc_b.max()) >= 1 << 31:
            return None  # an accumulator that may wrap
        bias_r, _ = sa8_bias_bound(self._bias, p.full_accu)
        acc_b = acc_b + np.abs(bias_r)  # on |acc + bias|
        mul, shift = sa8_out_params(q.in_scale, q.in_frac, q.out_scale, q.out_frac, q.w_scales, q.w_fracs,
                                    p.full_accu)
        plan = _cast_plan(mul.tobytes(), shift.tobytes(), p.full_accu, p.round_mode)
        sh = np.broadcast_to(plan.sh["l"], (m,))
        mul = np.broadcast_to(plan.mul["l"], (m,))
        shmax = int(sh.max())
        clip16 = False
        if p.full_accu:
            pre = np.zeros(m, I64)
            if int(acc_b.max()) > _I32_MAX:  # acc + bias could saturate
                return None
            kb = int((acc_b * np.abs(mul)).max())  # on |acc * mul|
        else:
            pre = np.broadcast_to(plan.pre["l"], (m,))
            a16 = int(((acc_b >> pre) + 1).max())  # on the pre-shifted value
            # C saturates it to 16 bits (that also covers the saturations of acc + bias and of the
            # rounding add before the pre-shift: they only matter from |acc| >= 2**23, pre <= 8)
            clip16 = a16 > (1 << 15) - 1
            kb = min(a16, 1 << 15) * int(np.abs(mul).max())
        up = p.round_mode is RoundMode.UP
        zp = int(q.out_zp)
        valid = self._taps >= 0
        c = bias_r - a * (self._w[None] * valid[:, :, None]).sum(axis=1)  # (P, N)
        first = container_bound(np.empty(0, xdt)) * int(l1.max()) + int(np.abs(c).max()) + (1 << int(pre.max()))
        # both sums in units of 2**-pre / 2**-sh, and twice that: a channel without a shift still adds a half
        if (int(sh.min()) < 0 or shmax > 52 or 2 * first >= _F64_EXACT
                or 2 * (kb + ((abs(zp) + 1) << shmax)) >= _F64_EXACT):
            return None
        inv = np.ldexp(1.0, -pre)
        rnd1 = bool(pre.max() > 0)
        n, m1 = self._n, m + 1
        w1 = self._spread(self._w * inv, c * inv + (0.5 if up and rnd1 else 0.0), True)
        w2 = np.zeros((npos * m1, npos * m))
        blocks = w2.reshape(npos, m1, npos, m)
        pos = np.arange(npos)
        blocks[pos[:, None], np.arange(m), pos[:, None], np.arange(m)] = mul.astype(np.float64) * np.ldexp(1.0, -sh)
        blocks[pos, m, pos, :] = (0.5 + zp) if up else 0.0  # ROUND_UP: the zero point with the half
        olo, ohi = max(lo, -128), min(hi, 127)
        # output stage of C: sat16(r), + zp, sat8 / ReLU clamp: one clamp of r + zp (clamps compose)
        lo_f, hi_f = float(min(max(zp - (1 << 15), olo), ohi)), float(min(max(zp + (1 << 15) - 1, olo), ohi))
        load = _ones_tail_loader(n, shape)
        rnd = _floor if up else _rint
        zf, lz, hz = _bound(zp), _bound(lo_f - zp), _bound(hi_f - zp)
        lo_a, hi_a, lo16, hi16 = _bound(lo_f), _bound(hi_f), _bound(-32768), _bound(32767)

        def run(x: np.ndarray, out: np.ndarray) -> None:
            y = load(x).dot(w1)  # the method: less dispatch than np.dot
            if rnd1:
                rnd(y, out=y)
            if clip16:  # the ones columns stay 1
                _clip(y, lo16, hi16, out=y)
            z = y.dot(w2)
            if up:
                _clip(z, lo_a, hi_a, out=z)
                _floor(z, out=z)
            else:
                _rint(z, out=z)
                _clip(z, lz, hz, out=z)
                _add(z, zf, out=z)
            out[...] = z.reshape(out.shape) if out.ndim != 1 else z  # integral values in the container's range
        return _compiled(run, "fused_sa8", xdt, (n,), (w2.shape[1],), (w1, w2),
                         (rnd1, up, clip16, lo_f, hi_f, lo_f - zp, hi_f - zp, zp))


class PreparedConv:
    """A convolution of fixed weights, bias, parameters and geometry: ``prepared(x)`` returns the
    values of the plain kernel (:func:`conv2d_hwcn`, :func:`depthwise_conv2d_hwcn`) on ``x``, bit
    for bit, with the output container's dtype.

    Built by :func:`prepare_conv`. For conv2d without a weights zero point whose input zero point
    fits the input container, a call pads the input into a buffer kept per thread and input shape (its border
    holds the input zero point, written once: ``x - zp`` is then zero on every padded tap, exactly
    the C sum over the valid taps), copies the windows once (im2col) and runs a prepared fully
    connected layer on them (:func:`pymli.kernels.fully_connected.prepare_fc`: weights in the
    matmul layout, zero-point correction folded into the bias, the exact float output stage per
    platform, read at each call); a small conv2d of one image (at most :data:`TINY_MACS`) runs
    instead as :class:`FusedLayer` where that is exact (two float64 products over the flat input, a
    few NumPy calls in all). A depthwise layer without a weights zero point keeps a padded
    buffer of ``x - zp`` in the sums' dtype (zero border written once), takes one ``einsum`` over
    its windows and the plain kernel's output stage. Everything else (weights zero points, a zero
    point outside the container, calls beyond :data:`PREPARED_MAX_MACS`) calls the plain kernel
    with copies of the weights and bias.
    """

    def __init__(self, w: np.ndarray, bias: np.ndarray, q: Quant, *, stride: tuple[int, int],
                 dilation: tuple[int, int], pad: tuple[int, int], out_hw: tuple[int, int],
                 bounds: tuple[int, int], depthwise: bool, out_dtype: np.dtype | type) -> None:
        self._w = np.array(w)  # own copies: a caller may rewrite its buffers later
        self._w.flags.writeable = False  # constant: the plain kernel may memoise its working copies
        self._bias = np.array(bias)
        self._q, self._bounds, self._dtype = q, (int(bounds[0]), int(bounds[1])), np.dtype(out_dtype)
        self._geo = {"stride": tuple(stride), "dilation": tuple(dilation), "pad": tuple(pad),
                     "out_hw": tuple(out_hw)}
        self._a, b = _offsets(q)
        self._fc = self._post = None
        if depthwise and not b:
            self._post = _OutputStage(self._bias, q, self._bounds)
            self._dw: dict[str, tuple[np.dtype, np.ndarray, int]] = {}  # per input dtype: (sum dtype, weights, bound)
            self._jit_dw = _jit.PreparedDepthwise(self._w, self._a, self._post.jit_stage, **self._geo)
        elif not depthwise and not b:
            kh, kw, c, n = self._w.shape
            self._fc = prepare_fc(self._w.reshape(kh * kw * c, n), self._bias, q, bounds, self._dtype)
        self._pointwise = self._fc is not None and self._w.shape[:2] == (1, 1) and self._geo["stride"] == (1, 1) \
            and self._geo["pad"] == (0, 0)
        self._kernel = depthwise_conv2d_hwcn if depthwise else conv2d_hwcn
        self._buffers: dict[tuple, np.ndarray] = {}
        # conv2d of few multiply-adds: a FusedLayer per input shape (None: too large a constant)
        self._tiny_ok = (self._fc is not None
                         and out_hw[0] * out_hw[1] * self._w.size <= TINY_MACS)
        self._fused: dict[tuple[int, ...], FusedLayer | None] = {}
        self._group: PreparedGroupConv | None = None  # conv2d: the one-group form of :meth:`single`, made there

    def __call__(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The layer on ``x``.

        Args:
            x: (H, W, C) or (N, H, W, C) container integers.
            out: optional integer array to write the values into: of the result's shape, or any shape
                of its size (the values in C order: e.g. a flat output buffer).

        Returns:
            (Ho, Wo, N_out) or (N, Ho, Wo, N_out) values of the output dtype (``out`` itself when given).
        """
        if self._tiny_ok and type(x) is np.ndarray and x.ndim == 3:
            r = self._tiny(x, out)
            if r is not None:
                return r
        r = self._values(np.asarray(x))
        if out is None:
            return r
        out[...] = r.reshape(out.shape)
        return out

    def single(self, shape: tuple[int, ...], dtype: np.dtype | type) -> Callable[[np.ndarray], np.ndarray] | None:
        """The layer for repeated calls on inputs of one shape and dtype (a model's step): ``f(x)``
        returns what ``self(x)`` returns; for a depthwise layer the compiled loop nest called without
        this layer's per-call dispatch (:meth:`pymli.kernels._jit.PreparedDepthwise.single`; any other
        call goes to ``self``). A conv2d: a tiny one (:data:`TINY_MACS`, one image, also (1, H, W, C))
        its :class:`FusedLayer`; others the one-shape form of the same layer as a
        :class:`PreparedGroupConv` of one group (:meth:`PreparedGroupConv.single`: the compiled integer
        product straight on a padded input buffer, no im2col copy, the output stage compiled: ~2x
        faster than this layer's im2col and prepared fully connected layer below
        :data:`pymli.kernels._parallel.PARALLEL_WORK`).

        Args:
            shape: the input's shape. dtype: its dtype.

        Returns:
            ``f``, or None where there is no such form (the JIT off, large calls, weights zero points).
        """
        shape, dtype = tuple(int(v) for v in shape), np.dtype(dtype)
        if self._fc is not None:
            return self._conv_single(shape, dtype)
        if self._post is None:
            return None
        stage = self._post.jit_stage()
        if stage is None or stage.out_dtype != self._dtype:
            return None
        return self._jit_dw.single(tuple(shape), np.dtype(dtype), self)

    def _conv_single(self, shape: tuple[int, ...], dtype: np.dtype) -> Callable[[np.ndarray], np.ndarray] | None:
        """:meth:`single` of a conv2d (see there)."""
        img = shape[1:] if len(shape) == 4 and shape[0] == 1 else shape
        fused = self.fused(img) if dtype.kind in "iu" else None
        if fused is not None:
            out_shape = shape[:-3] + self._geo["out_hw"] + self._w.shape[3:]
            odt, empty = self._dtype, np.empty

            def tiny(x: np.ndarray) -> np.ndarray:
                if x.shape == shape and x.dtype == dtype:
                    out = empty(out_shape, odt)
                    if fused(x, out):  # type: ignore[misc]  # False: no exact fused form under this platform
                        return out
                return self(x)
            return tiny
        if self._group is None:
            self._group = PreparedGroupConv(self._w, self._bias, self._q, **self._geo,  # type: ignore[arg-type]
                                            bounds=self._bounds, out_dtype=self._dtype, gather=False)
        return self._group.single(shape, dtype)

    def fused(self, shape: tuple[int, ...]) -> FusedLayer | None:
        """The :class:`FusedLayer` this layer runs on (H, W, C) inputs of ``shape`` (a caller may call it
        directly, falling back to the layer when it returns False), or None: no tiny path for them.

        Args:
            shape: (H, W, C) of the input.

        Returns:
            The fused layer, or None.
        """
        if not self._tiny_ok or len(shape) != 3:
            return None
        fused = self._fused.get(shape, False)
        return self._fused_for(shape) if fused is False else fused

    def _tiny(self, x: np.ndarray, out: np.ndarray | None) -> np.ndarray | None:
        """A small conv2d through :class:`FusedLayer` (made on the first call with an input shape),
        written into ``out`` (or a new array); None when it does not apply (the general path then runs)."""
        fused = self._fused.get(x.shape, False)
        if fused is False:
            fused = self._fused_for(x.shape)
        if fused is None:
            return None
        if out is None:
            res = np.empty(self._geo["out_hw"] + self._w.shape[3:], self._dtype)
            return res if fused(x, res) else None
        return out if fused(x, out) else None

    def _fused_for(self, shape: tuple[int, ...]) -> FusedLayer | None:
        """The :class:`FusedLayer` of inputs of ``shape`` (kept), or None when its constants would be large."""
        h, w, c = shape
        kh, kw, _, n = self._w.shape
        (sh, sw), (dh, dw), (top, left), (ho, wo) = (self._geo[k] for k in ("stride", "dilation", "pad", "out_hw"))
        fused = None
        if FusedLayer.size(ho * wo, n, h * w * c) <= TINY_CONSTANTS:
            rows = (np.arange(ho)[:, None] * sh + np.arange(kh)[None, :] * dh - top)[:, None, :, None, None]
            cols = (np.arange(wo)[:, None] * sw + np.arange(kw)[None, :] * dw - left)[None, :, None, :, None]
            ok = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
            taps = np.where(ok, (rows * w + cols) * c + np.arange(c), -1).reshape(ho * wo, kh * kw * c)
            fused = FusedLayer(self._w.reshape(kh * kw * c, n), self._bias, self._q, self._bounds,  # type: ignore[arg-type]
                             taps=taps, n_in=h * w * c)
        if len(self._fused) >= 8:  # a few input shapes at most: keep memory bounded
            self._fused.clear()
        self._fused[shape] = fused
        return fused

    def _values(self, x: np.ndarray) -> np.ndarray:
        """The general paths (see the class docstring)."""
        if self._post is not None:  # the compiled depthwise loop nest (None: JIT off, or not taken)
            r = self._jit_dw(x)
            if r is not None:
                return r if r.dtype == self._dtype else r.astype(self._dtype)
        ho, wo = self._geo["out_hw"]
        small = (x.shape[0] if x.ndim == 4 else 1) * ho * wo * self._w.size <= PREPARED_MAX_MACS
        if self._pointwise and small and x.dtype.kind in "iu" and x.shape[-3:-1] == (ho, wo):
            return self._fc(x)  # 1x1, stride 1, no padding: the input rows are the im2col matrix
        if self._post is not None and _jit.enabled():  # the compiled depthwise loop nest beats the einsum
            r = self._kernel(x, self._w, self._bias, self._q, **self._geo, bounds=self._bounds)
            return r.astype(self._dtype, copy=False)
        xp = self._padded(x) if (self._fc is not None or self._post is not None) and small else None
        if xp is not None and self._post is not None:
            return self._depthwise(xp, x)
        if xp is None:
            r = self._kernel(x, self._w, self._bias, self._q, **self._geo, bounds=self._bounds)
            return r.astype(self._dtype, copy=False)
        kh, kw = self._w.shape[:2]
        (sh, sw), (dh, dw) = self._geo["stride"], self._geo["dilation"]
        cols = _im2col(xp, kh, kw, sh, sw, dh, dw, ho, wo)
        r = self._fc(cols).reshape(xp.shape[0], ho, wo, -1)
        return r if x.ndim == 4 else r[0]

    def _depthwise(self, xp: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Depthwise sums of the centred padded input (one ``einsum`` over the windows), then the
        kernel's output stage (its float plan memoised per platform in the parameters)."""
        kh, kw = self._w.shape[:2]
        (sh, sw), (dh, dw), (ho, wo) = self._geo["stride"], self._geo["dilation"], self._geo["out_hw"]
        _, wd, bound = self._dw_plan(x.dtype)
        acc = np.einsum("nhwijc,ijc->nhwc", _windows(xp, kh, kw, sh, sw, dh, dw, ho, wo), wd)
        r = self._post(acc, bound).astype(self._dtype, copy=False)  # type: ignore[misc]
        return r if x.ndim == 4 else r[0]

    def _padded(self, x: np.ndarray) -> np.ndarray | None:
        """``x`` as (N, Hp, Wp, C) in this layer's kept buffer, or None (no fast path for this input).

        conv2d: the buffer has the input's dtype and a border of the input zero point (None when
        that does not fit the container); depthwise: the sums' dtype, ``x - zp`` inside, zeros around.
        """
        if x.dtype.kind not in "iu":
            return None
        xb = _batch(x)
        key = (threading.get_ident(), xb.shape, x.dtype.char)  # one buffer per thread: calls may overlap
        buf = self._buffers.get(key)
        if buf is None:
            kh, kw = self._w.shape[:2]
            if self._post is None:
                info = np.iinfo(x.dtype)
                if not info.min <= self._a <= info.max:
                    return None
                dt, fill = x.dtype, self._a
            else:
                dt, fill = self._dw_plan(x.dtype)[0], 0
            hp, wp = _geometry((kh, kw), self._geo["stride"], self._geo["dilation"], self._geo["out_hw"])
            if len(self._buffers) >= 8:  # a few threads / input shapes at most: keep memory bounded
                self._buffers.clear()
            buf = self._buffers[key] = np.full((xb.shape[0], hp, wp, xb.shape[3]), fill, dtype=dt)
        top, left = self._geo["pad"]
        n, h, w, _ = xb.shape
        hp, wp = buf.shape[1:3]
        r0, c0 = max(top, 0), max(left, 0)
        r1, c1 = min(top + h, hp), min(left + w, wp)
        if r1 > r0 and c1 > c0:
            src = xb[:, r0 - top:r1 - top, c0 - left:c1 - left]
            if self._post is not None and self._a:  # |x - zp| below the container bound: exact in dt
                np.subtract(src, buf.dtype.type(self._a), out=buf[:, r0:r1, c0:c1], dtype=buf.dtype, casting="unsafe")
            else:
                buf[:, r0:r1, c0:c1] = src
        return buf

    def _dw_plan(self, xdt: np.dtype) -> tuple[np.dtype, np.ndarray, int]:
        """(sum dtype, weights (Kh, Kw, C) in it, bound on the sums) for depthwise inputs of dtype ``xdt``:
        float32 where ``taps * max|x - zp| * max|w|`` is below 2**24 (every product and partial sum an
        exact float32 integer in any order), else the plain kernel's choice."""
        hit = self._dw.get(xdt.char)
        if hit is None:
            kh, kw, _, c = self._w.shape
            bound = kh * kw * container_bound(np.empty(0, xdt), self._a) * container_bound(self._w)
            dt = np.dtype(np.float32) if bound < _F32_EXACT else _depthwise_dtype(bound)
            hit = self._dw[xdt.char] = (dt, self._w.reshape(kh, kw, c).astype(dt), bound)
        return hit


def _im2col(xp: np.ndarray, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, ho: int, wo: int) -> np.ndarray:
    """The (N * ho * wo, kh * kw * C) matrix of the windows of a C-contiguous padded (N, Hp, Wp, C) array
    (a copy; row ``(n, oy, ox)`` holds the window's taps in (ky, kx, c) order).

    Without dilation along the width a window row's ``kw * C`` values are one contiguous run of ``xp``:
    they are copied as one opaque item each (``numpy.void`` of the run's bytes), ``kh`` items per output
    pixel, instead of element by element (~1.5x faster for the 3 channels of an image stem)."""
    n, c = xp.shape[0], xp.shape[3]
    if (dw != 1 and kw > 1) or not c or not xp.flags.c_contiguous:
        return _windows(xp, kh, kw, sh, sw, dh, dw, ho, wo).reshape(n * ho * wo, -1)
    run = np.dtype((np.void, kw * c * xp.itemsize))
    s0, s1, s2 = xp.strides[:3]
    # bounds-checked against the buffer by the ndarray constructor, as _windows
    src = np.ndarray((n, ho, wo, kh), run, buffer=xp, strides=(s0, sh * s1, sw * s2, dh * s1))
    cols = np.empty((n * ho * wo, kh * kw * c), xp.dtype)
    cols.view(run).reshape(n, ho, wo, kh)[...] = src
    return cols


def prepare_conv(w: np.ndarray, bias: np.ndarray, q: Quant, *, stride: tuple[int, int] = (1, 1),
                 dilation: tuple[int, int] = (1, 1), pad: tuple[int, int] = (0, 0), out_hw: tuple[int, int],
                 bounds: tuple[int, int], depthwise: bool = False,
                 out_dtype: np.dtype | type = I64) -> PreparedConv:
    """:func:`conv2d_hwcn` (or :func:`depthwise_conv2d_hwcn`) with weights, bias, parameters and
    geometry fixed: a callable of the input.

    Args:
        w, bias, q, stride, dilation, pad, out_hw, bounds: as for :func:`conv2d_hwcn` (copied:
            later changes to the caller's arrays do not reach the prepared layer).
        depthwise: a depthwise convolution (``w`` is (Kh, Kw, 1, C)).
        out_dtype: dtype of the returned values (e.g. the output container's).

    Returns:
        A :class:`PreparedConv`: ``f(x)`` equals the plain kernel's values on ``x`` as ``out_dtype``,
        under the platform in force at the call.
    """
    return PreparedConv(w, bias, q, stride=stride, dilation=dilation, pad=pad, out_hw=out_hw, bounds=bounds,
                        depthwise=depthwise, out_dtype=out_dtype)


GROUP_CALL_COST = 2048
"""The fixed cost of one integer product call of a prepared group convolution (the native entry, the loop,
the column copy) in units of the product's inner work, one pixel x one 4-byte group of taps x one vector of
output lanes (measured here, u8x16 / s16x16: ~0.3-0.4 ns a unit, ~0.4 us a call without the copy): it weighs
fewer, merged groups against the taps they add (:meth:`PreparedGroupConv._merge`)."""
BLOCK_DIAG_MAX_MACS = 1 << 20
"""Without the compiled products, group convolutions of at most this many multiply-adds with every group
merged (``Ho * Wo * Kh * Kw * C * N`` times the batch) run as one prepared conv2d of block-diagonal weights
(:class:`PreparedConv`: a few NumPy calls of fixed cost, the plain kernel's ~60-100 us); larger ones the plain
kernel's grouped product (merging multiplies its work by the groups). Measured, NumPy kernels: 8x8x16 in
4 groups, 3x3 -> 16 ~23 us against ~62 us, 16x16x16 in 4 groups ~58 us against ~190 us; 16x16x32 in 2 groups
(2.4 M merged) about even, 32x32x64 in 4 groups (38 M) ~1.3x slower."""


class PreparedGroupConv:
    """A group convolution of fixed weights, bias, parameters and geometry: ``prepared(x)`` returns the
    values of :func:`group_conv2d_hwcn` on ``x``, bit for bit, with the output container's dtype.

    Built by :func:`prepare_group_conv`. Everything that depends on the layer, the input's shape and
    dtype, the platform and the JIT switch is derived on the first call with that key and kept
    (:meth:`_plan`):

    * Groups of one input channel (a TFLite depthwise layer with a channel multiplier ``m``: weights
      (Kh, Kw, 1, C * m), output channel ``o`` reading input channel ``o // m``) are a depthwise
      convolution of the input with each channel repeated ``m`` times: output channel ``o``'s sum runs
      over the same taps of the same input values times the same weights, and its output stage (bias,
      per-channel scale, clamp) is the same, so a :class:`PreparedConv` depthwise layer (its compiled
      single-shape form with the JIT on) computes it on the input gathered along the channels.
    * Other groupings merge ``s`` neighbouring groups into one (:meth:`_merged`): weights
      (Kh, Kw, s * C_g, N) holding each output channel's weights at its own group's input channels and
      zeros at the other merged groups' ones. Without weights zero points a zero weight adds nothing
      to any sum (and C's 32-bit accumulator wraps the same sum of the same nonzero terms), while the
      bias and per-channel output stage stay those of the output channel: a convolution with
      ``groups / s`` groups of these weights computes the layer's values. With the JIT the integer
      products of :mod:`pymli.kernels._jit_conv` (the plain kernel's :func:`_conv_int` path) run on a
      padded input buffer kept per shape (its border written once), the weights packed once, the
      output stage compiled (:mod:`pymli.kernels._jit_numba`), all called through their native
      entries (:meth:`_int_runner`); ``s`` fills the products' vector lanes (:meth:`_merge`), and
      calls of :data:`pymli.kernels._parallel.PARALLEL_WORK` or more (the threads) take the plain
      kernel on the merged weights. Without the JIT, small layers are one block-diagonal conv2d
      (``s`` = every group, :data:`BLOCK_DIAG_MAX_MACS`), larger ones the plain kernel.
    * Weights zero points (a zero weight would add ``-w_zp * x``; and C sums a dilated group conv2d's
      input for them with undilated steps, unlike a depthwise layer's), inputs of other ranks or
      dtypes, channel counts the weights do not divide: the plain kernel.
    """

    def __init__(self, w: np.ndarray, bias: np.ndarray, q: Quant, *, stride: tuple[int, int],
                 dilation: tuple[int, int], pad: tuple[int, int], out_hw: tuple[int, int],
                 bounds: tuple[int, int], out_dtype: np.dtype | type, gather: bool = True) -> None:
        """Args: as :func:`prepare_group_conv`; ``gather=False``: groups of one input channel take the
        other groupings' route (a conv2d of one input channel: the integer product of 4-byte tap
        groups beats the depthwise loop nest on the gathered channels for many outputs)."""
        self._w = np.array(w)  # own copies: a caller may rewrite its buffers later
        self._w.flags.writeable = False  # constant: the plain kernel may memoise its working copies
        self._bias = np.array(bias)
        self._q, self._dtype = q, np.dtype(out_dtype)
        self._kw = {"stride": tuple(stride), "dilation": tuple(dilation), "pad": tuple(pad),
                    "out_hw": tuple(out_hw), "bounds": (int(bounds[0]), int(bounds[1]))}
        self._a, self._b = _offsets(q)
        # weights zero points: C's input sums of a dilated group conv2d are not the depthwise kernel's (_wzp_terms)
        self._dw = None if self._w.shape[2] != 1 or self._b or not gather else PreparedConv(
            self._w, self._bias, q, **self._kw, depthwise=True, out_dtype=self._dtype)  # type: ignore[arg-type]
        self._post = _OutputStage(self._bias, q, self._kw["bounds"])  # the compiled stage's constants per platform
        self._merges: dict[tuple[int, int], np.ndarray] = {}  # (groups, merged s) -> weights (read-only)
        self._packs: dict[tuple[int, int, str], list] = {}  # (merged groups, s, product) -> packed weights
        self._convs: dict[int, PreparedConv] = {}  # groups -> the block-diagonal conv2d (no JIT)
        self._plans: dict[tuple, tuple[Callable[[np.ndarray], np.ndarray], bool]] = {}
        self._last: tuple = (None, None, None, None, None)  # (platform, JIT on, shape, dtype, run) of the last call

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The layer on ``x``.

        Args:
            x: (H, W, C) or (N, H, W, C) container integers.

        Returns:
            (Ho, Wo, N_out) or (N, Ho, Wo, N_out) values of the output dtype.
        """
        x = np.asarray(x)
        p, on = get_platform(), _JIT_STATE["on"]
        last = self._last
        if last[0] is p and last[1] is on and last[2] == x.shape and last[3] is x.dtype:
            return last[4](x)  # type: ignore[no-any-return]
        run = self._plan(p, on, x.shape, x.dtype)[0]
        self._last = (p, on, x.shape, x.dtype, run)
        return run(x)

    def single(self, shape: tuple[int, ...], dtype: np.dtype | type) -> Callable[[np.ndarray], np.ndarray] | None:
        """The layer for repeated calls on inputs of one shape and dtype (a model's step): ``f(x)``
        returns what ``self(x)`` returns, calling the compiled form of that shape straight away (groups
        of one channel: the channel gather, then the depthwise layer's :meth:`PreparedConv.single`
        form). Calls on other inputs, under another platform or with the JIT switched off since go to
        ``self``.

        Args:
            shape: the input's shape. dtype: its dtype.

        Returns:
            ``f``, or None where there is no such form (the JIT off, large calls, the plain kernel).
        """
        shape, dtype = tuple(int(v) for v in shape), np.dtype(dtype)
        p, on = get_platform(), _JIT_STATE["on"]
        if not on or len(shape) not in (3, 4):
            return None
        c, n = shape[-1], self._w.shape[3]
        if self._dw is not None and c and n % c == 0:  # groups of one channel
            mult = n // c
            stage = self._dw._post.jit_stage() if mult > 1 else None  # type: ignore[union-attr]
            if stage is not None and stage.out_dtype == self._dtype:
                # tiny maps: the loop nest reads each input channel for its mult outputs (no repeat)
                rep = self._dw._jit_dw.single_repeated(shape, dtype, mult, self)
                if rep is not None:
                    return rep
            dw = self._dw.single(shape[:-1] + (n,), dtype)
            if dw is None:
                return None

            def gathered(x: np.ndarray) -> np.ndarray:
                # each channel repeated: a fresh C-ordered array, as the compiled form takes it (indexing
                # x[..., idx] returns a strided one); faster than take or a broadcast copy on tiny inputs
                return dw(x.repeat(mult, axis=-1))
            return gathered
        run, compiled = self._plan(p, on, shape, dtype)
        if not compiled:
            return None
        state, platform = _JIT_STATE, get_platform

        def f(x: np.ndarray) -> np.ndarray:
            if type(x) is not np.ndarray or x.shape != shape or x.dtype != dtype or platform() is not p \
                    or not state["on"]:
                return self(x)
            return run(x)
        return f

    def _plain(self, x: np.ndarray) -> np.ndarray:
        """The plain kernel on ``x``."""
        r = group_conv2d_hwcn(x, self._w, self._bias, self._q, **self._kw)  # type: ignore[arg-type]
        return r.astype(self._dtype, copy=False)

    def _plan(self, p: Platform, on: object, shape: tuple[int, ...], dtype: np.dtype
              ) -> tuple[Callable[[np.ndarray], np.ndarray], bool]:
        """(the computation for inputs of ``shape`` and ``dtype`` under platform ``p`` with the JIT switch
        ``on``, whether it is a compiled form of that key alone), derived on the first call and kept."""
        key = (p, bool(on), shape, dtype)  # the dtype, not its char: byte order
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= 16:  # a few platforms / input shapes at most: keep memory bounded
                self._plans.clear()
            plan = self._plans[key] = self._choose(bool(on), shape, dtype)
        return plan

    def _choose(self, on: bool, shape: tuple[int, ...], dtype: np.dtype
                ) -> tuple[Callable[[np.ndarray], np.ndarray], bool]:
        """:meth:`_plan`'s choice (see the class docstring)."""
        kh, kw, cg, n = self._w.shape
        c = shape[-1] if len(shape) in (3, 4) else 0
        if self._dw is not None and c and n % c == 0:
            mult, dw = n // c, self._dw

            def gathered(x: np.ndarray) -> np.ndarray:
                return dw(x.repeat(mult, axis=-1))  # input channel o // mult at output channel o
            return gathered, False
        if not c or not cg or c % cg or n % (c // cg) or self._b or dtype.kind not in "iu" or 0 in shape:
            return self._plain, False
        groups = c // cg
        found = _int_applies(np.empty(0, dtype), self._w, groups, self._a, self._q.acc_bits) if on else None
        stage = self._post.jit_stage() if found is not None else None
        if stage is not None:
            s = self._merge(shape, groups, found[1], found[2])
            (ho, wo), nb = self._kw["out_hw"], (shape[0] if len(shape) == 4 else 1)
            work = nb * ho * wo * kh * kw * cg * (n // groups) // (2 if found[2] else 4)  # as _conv_int sizes it
            if work < PARALLEL_WORK:
                run = self._int_runner(shape, dtype, s, groups // s, found, stage)
                if run is not None:
                    return run, True
            if _int_applies(np.empty(0, dtype), self._merged(groups, s), groups // s, self._a,
                            self._q.acc_bits) is None:
                s = 1  # the plain kernel bounds the merged taps as nonzero ones: it would take its float product
            wm, gm, kw_ = self._merged(groups, s), groups // s, self._kw

            def merged(x: np.ndarray) -> np.ndarray:  # the plain kernel's row blocks over the threads
                return conv2d_hwcn(x, wm, self._bias, self._q, **kw_, groups=gm).astype(self._dtype, copy=False)
            return merged, False
        (ho, wo) = self._kw["out_hw"]
        # one group: no merged zeros, the prepared conv2d at any size (it takes the plain kernel beyond its own limit)
        if groups == 1 or ho * wo * kh * kw * c * n * (shape[0] if len(shape) == 4 else 1) <= BLOCK_DIAG_MAX_MACS:
            conv = self._convs.get(groups)
            if conv is None:
                conv = self._convs[groups] = PreparedConv(self._merged(groups, groups), self._bias, self._q,
                                                          **self._kw, depthwise=False,  # type: ignore[arg-type]
                                                          out_dtype=self._dtype)
            return conv, False
        return self._plain, False

    def _merge(self, shape: tuple[int, ...], groups: int, prod: Any, split: bool) -> int:
        """How many neighbouring groups (a divisor of ``groups``) one integer product computes: the least
        estimated time, ``groups / s`` products of :data:`GROUP_CALL_COST` each plus their inner work
        (pixels x 4-byte groups of taps x vectors of lanes, split weights taking two columns: merging more
        groups adds taps, fills lanes and pads fewer channels); ties: the most merged."""
        kh, kw, cg, n = self._w.shape
        ng = n // groups * (2 if split else 1)  # a split weight: two product columns
        (ho, wo), nb = self._kw["out_hw"], (shape[0] if len(shape) == 4 else 1)
        pix, per, lanes = nb * ho * wo, prod.per_group, prod.lanes
        best, best_s = 0, 1
        for s in range(1, groups + 1):
            if groups % s == 0:
                cost = groups // s * (pix * kh * kw * -(-s * cg // per) * -(-s * ng // lanes) + GROUP_CALL_COST)
                if s == 1 or cost <= best:
                    best, best_s = cost, s
        return best_s

    def _merged(self, groups: int, s: int) -> np.ndarray:
        """The weights of a layer of ``groups`` groups with ``s`` neighbouring groups merged (see the class
        docstring): (Kh, Kw, s * C_g, N), read-only (the plain kernel memoises its working copies of
        constant weights), kept."""
        if s == 1:
            return self._w
        wm = self._merges.get((groups, s))
        if wm is None:
            kh, kw, cg, n = self._w.shape
            full = np.zeros((kh, kw, s, cg, n), self._w.dtype)
            o = np.arange(n)
            # output channel o (group o // (n / groups)) reads slot (o's group) % s of its merged group
            full[:, :, o // (n // groups) % s, :, o] = np.moveaxis(self._w, 3, 0)
            wm = full.reshape(kh, kw, s * cg, n)
            wm.flags.writeable = False
            if len(self._merges) >= 8:  # a few channel counts at most: keep memory bounded
                self._merges.clear()
            self._merges[(groups, s)] = wm
        return wm

    def _int_runner(self, shape: tuple[int, ...], dtype: np.dtype, s: int, gm: int, found: tuple,
                    stage: _jit.DepthwiseStage) -> Callable[[np.ndarray], np.ndarray] | None:
        """The compiled computation of inputs of exactly ``shape`` and ``dtype`` with ``s`` groups merged
        into each of ``gm`` (``found``: the product of :func:`_int_applies` on the layer's own groups;
        ``stage``: the output stage's constants of the current platform), or None (a compiled stage
        that cannot take the sums).

        What :func:`_conv_int` computes, with every operand made once: the padded buffer (the
        padding, and the channels beyond each merged group's, hold the input offset, or its uint8
        form; only the interior is written per call), the byte offsets of every pixel of the batch, the
        packed weights. Each product's int32 lanes hold the exact sum of the output channel's own
        nonzero terms (the merged groups' zero weights add 0 at any step) or, where
        :func:`_int_applies` admits a wrapping 32-bit accumulator, that sum modulo 2**32 as C's
        accumulator wraps it: its bounds count the layer's own group's taps, which are every nonzero
        term of a merged lane. Split int16 weights (:func:`_split16`: ``256 * hi + lo``) give each
        merged group's ``lo`` and ``hi`` sums side by side in one product (measured fx16: ~5-15% faster than
        two products into whole ``lo`` / ``hi`` arrays), added as ``256 * hi + lo`` in int64 (two NumPy
        calls). The output stage is the compiled one of
        :func:`pymli.kernels._jit.finish` (the plain kernel's), called directly: its only check, a
        40-bit sum and bias below 2**62, is made here. A call while another thread runs this one
        takes the plain kernel (the buffers are shared).
        """
        mod, prod, split = found
        wm = self._merged(gm * s, s)
        kh, kw, cgm, n = wm.shape
        (sh, sw), (dh, dw), (top, left), (ho, wo) = (self._kw[k] for k in ("stride", "dilation", "pad", "out_hw"))
        shape4 = shape if len(shape) == 4 else (1, *shape)
        nb, h, wd, c = shape4
        a = self._a
        bound = kh * kw * self._w.shape[2] * container_bound(np.empty(0, dtype), a) * container_bound(self._w)
        if not stage.sa8 and not stage.par[0] and bound + int(np.abs(stage.chan).max()) >= 1 << 62:
            return None
        fin = _jit.compiled("_jit_numba")
        if fin is None:
            return None
        ng = n // gm * (2 if split else 1)  # a merged group's product columns (split weights: lo and hi)
        u8 = prod.per_group == 4
        cgp, npad = -(-cgm // prod.per_group) * prod.per_group, -(-ng // prod.lanes) * prod.lanes
        hp, wp = _geometry((kh, kw), (sh, sw), (dh, dw), (ho, wo))
        xp = np.full((nb, hp, wp, gm, cgp), a + 128 if u8 else 0, np.uint8 if u8 else np.int16)
        # the input's interior rows in the buffer: a row's channels side by side when no channel is padded
        r0, c0 = max(top, 0), max(left, 0)
        r1, c1 = min(top + h, hp), min(left + wd, wp)
        inner = r0 < r1 and c0 < c1
        whole = (r0 - top, r1 - top, c0 - left, c1 - left) == (0, h, 0, wd)
        if cgp == cgm:
            src_shape, dst = (nb, h, wd * c), xp.reshape(nb, hp, wp * c)[:, r0:r1, c0 * c:c1 * c]
            cut = (slice(None), slice(r0 - top, r1 - top), slice((c0 - left) * c, (c1 - left) * c))
        else:
            src_shape, dst = (nb, h, wd, gm, cgm), xp[:, r0:r1, c0:c1, :, :cgm]
            cut = (slice(None), slice(r0 - top, r1 - top), slice(c0 - left, c1 - left))
        if u8:
            dst = dst.view(np.int8)  # u = x ^ 0x80 = x + 128, written from the int8 input
        key = (gm, s, prod.name)
        packs = self._packs.get(key)
        if packs is None:  # kept: the same for every input shape and platform
            if len(self._packs) >= 8:  # a few channel counts / products at most: keep memory bounded
                self._packs.clear()
            packs = self._packs[key] = _int_weights(_split16(wm, gm) if split else wm, a, prod, gm)
        offs, roff, l4 = _int_geometry(ho, wo, wp, gm, cgp, xp.itemsize, kh, kw, sh, sw, dh, dw)
        image = hp * wp * gm * cgp * xp.itemsize  # bytes per padded image
        offs = (offs.reshape(-1)[None, :] + np.arange(nb, dtype=I64)[:, None] * image).reshape(-1)
        npix, nw = nb * ho * wo, ng * gm
        acc = np.empty((npix, npad), np.int32)
        sums = acc if gm == 1 and npad == nw else np.empty((npix, nw), np.int32)
        work = []  # (segment offsets, packed weights, product output, its columns to copy into the sums)
        for g in range(gm):
            cols = sums[:, g * ng:(g + 1) * ng]
            direct = npad == ng  # the product writes the merged group's columns straight into the sums
            work.append((np.ascontiguousarray(roff[g]), packs[g], cols if direct else acc,
                         None if direct else (cols, acc[:, :ng])))
        final = sums
        if split:  # per merged group: its lo columns, then its hi ones
            final = np.empty((npix, n), I64)
            halves = sums.reshape(npix, gm, 2, ng // 2)
            lo, hi = (halves[:, 0, i] for i in (0, 1)) if gm == 1 else (halves[:, :, i] for i in (0, 1))
            if gm > 1:
                final = final.reshape(npix, gm, ng // 2)
        sums64 = final.reshape(npix, n)
        odt, chan, par = stage.out_dtype, stage.chan, stage.par
        ro0, pk0, o0, _ = work[0]
        prod_ep = _jit.entry(mod, f"conv_{prod.name}", xp, offs, ro0, l4, *pk0, o0)
        if len({o.flags.c_contiguous for _, _, o, _ in work}) > 1:  # the native entry takes one layout only
            prod_ep = getattr(mod, f"conv_{prod.name}")
        stage_ep = _jit.entry(fin, "finish_sa8" if stage.sa8 else "finish_fx", sums64, chan, par,
                              np.empty((npix, n), odt))
        out_shape = (*shape[:-3], ho, wo, n)
        cast = None if odt == self._dtype else self._dtype
        lock, plain, off = threading.Lock(), self._plain, np.int8(-128) if u8 else np.int16(a)
        xor, subtract, copyto, shift, add, empty = (np.bitwise_xor, np.subtract, np.copyto, np.left_shift, np.add,
                                                    np.empty)
        i16, eight = np.dtype(np.int16), np.int64(8)

        def run(x: np.ndarray) -> np.ndarray:
            if not lock.acquire(False):  # another thread is in this layer's buffers
                return plain(x)
            try:
                if inner:
                    v = x.reshape(src_shape)
                    if not whole:
                        v = v[cut]
                    if u8:
                        xor(v, off, out=dst)
                    elif a:
                        subtract(v, off, out=dst, dtype=i16)
                    else:
                        copyto(dst, v)
                for ro, pk, o, move in work:
                    prod_ep(xp, offs, ro, l4, pk[0], pk[1], pk[2], o)
                    if move is not None:  # the lanes beyond the merged group's columns: dropped
                        copyto(*move)
                if split:
                    shift(hi, eight, out=final, dtype=I64)
                    add(final, lo, out=final)
                out = empty((npix, n), odt)
                stage_ep(sums64, chan, par, out)
            finally:
                lock.release()
            out = out.reshape(out_shape)
            return out if cast is None else out.astype(cast)
        return run


def prepare_group_conv(w: np.ndarray, bias: np.ndarray, q: Quant, *, stride: tuple[int, int] = (1, 1),
                       dilation: tuple[int, int] = (1, 1), pad: tuple[int, int] = (0, 0),
                       out_hw: tuple[int, int], bounds: tuple[int, int],
                       out_dtype: np.dtype | type = I64) -> PreparedGroupConv:
    """:func:`group_conv2d_hwcn` with weights, bias, parameters and geometry fixed: a callable of the input.

    Args:
        w: (Kh, Kw, C // groups, N) weights (the groups follow from the input's C at each call).
        bias, q, stride, dilation, pad, out_hw, bounds: as for :func:`conv2d_hwcn` (copied).
        out_dtype: dtype of the returned values (e.g. the output container's).

    Returns:
        A :class:`PreparedGroupConv`: ``f(x)`` equals the plain kernel's values on ``x`` as ``out_dtype``,
        under the platform in force at the call.
    """
    return PreparedGroupConv(w, bias, q, stride=stride, dilation=dilation, pad=pad, out_hw=out_hw, bounds=bounds,
                             out_dtype=out_dtype)


class PreparedTransposeConv:
    """A transpose convolution of fixed weights, bias, parameters and geometry: ``prepared(x)`` returns the
    values of :func:`transpose_conv2d_hwcn` on ``x``, bit for bit, with the output container's dtype.

    Built by :func:`prepare_transpose_conv`. Without a weights zero point the plain kernel computes the
    stride-1 convolution of the zero-inserted input (the input zero point between the pixels, so that
    ``x - zp`` is 0 there) with the mirrored kernel, padded by ``Kh - 1 - pad_top`` / ``Kw - 1 - pad_left``;
    so does this layer, the zero-inserted input held in a buffer kept per thread and input shape (the
    inserted values written once, the pixels on every call) and the convolution prepared once
    (:class:`PreparedGroupConv` of one group: the compiled integer products with the JIT, else
    :class:`PreparedConv`). The sums are those of the plain kernel's paths (the raw zero-inserted
    input and the input offset, or the centred one with zeros: the same terms), the output stage the
    same. Weights zero points, paddings outside ``0 .. K - 1``, zero points outside the input container
    and other inputs: the plain kernel.
    """

    def __init__(self, w: np.ndarray, bias: np.ndarray, q: Quant, *, stride: tuple[int, int],
                 pad: tuple[int, int], out_hw: tuple[int, int], bounds: tuple[int, int],
                 out_dtype: np.dtype | type) -> None:
        self._w = np.array(w)  # own copies: a caller may rewrite its buffers later
        self._w.flags.writeable = False  # constant: the plain kernel memoises its mirrored copy
        self._bias = np.array(bias)
        self._q, self._dtype = q, np.dtype(out_dtype)
        self._kw = {"stride": (int(stride[0]), int(stride[1])), "pad": (int(pad[0]), int(pad[1])),
                    "out_hw": tuple(out_hw), "bounds": (int(bounds[0]), int(bounds[1]))}
        kh, kw = self._w.shape[:2]
        self._a, b = _offsets(q)
        self._conv = None
        if not b and 0 <= pad[0] < kh and 0 <= pad[1] < kw and min(stride) >= 1:
            self._conv = PreparedGroupConv(self._w[::-1, ::-1], self._bias, q, stride=(1, 1), dilation=(1, 1),
                                           pad=(kh - 1 - pad[0], kw - 1 - pad[1]), out_hw=out_hw, bounds=bounds,
                                           out_dtype=self._dtype)
        self._buffers: dict[tuple, np.ndarray | None] = {}  # (thread, shape, dtype) -> zero-inserted input

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The layer on ``x``.

        Args:
            x: (H, W, C) or (N, H, W, C) container integers.

        Returns:
            (Ho, Wo, N_out) or (N, Ho, Wo, N_out) values of the output dtype.
        """
        x = np.asarray(x)
        key = (_get_ident(), x.shape, x.dtype)
        xd = self._buffers.get(key, False)
        if xd is False:
            xd = self._buffer(x)
            if len(self._buffers) >= 8:  # a few threads / input shapes at most: keep memory bounded
                self._buffers.clear()
            self._buffers[key] = xd
        if xd is None:
            r = transpose_conv2d_hwcn(x, self._w, self._bias, self._q, **self._kw)  # type: ignore[arg-type]
            return r.astype(self._dtype, copy=False)
        sh, sw = self._kw["stride"]
        xd[..., ::sh, ::sw, :] = x
        return self._conv(xd)  # type: ignore[misc]

    def _buffer(self, x: np.ndarray) -> np.ndarray | None:
        """The zero-inserted input buffer of inputs like ``x`` (the input offset between the pixels), or None
        (the plain kernel)."""
        if self._conv is None or x.ndim not in (3, 4) or x.dtype.kind not in "iu" or 0 in x.shape:
            return None
        info = np.iinfo(x.dtype)
        if not info.min <= self._a <= info.max or x.shape[-1] != self._w.shape[2]:
            return None
        (sh, sw), (h, wd) = self._kw["stride"], x.shape[-3:-1]
        return np.full((*x.shape[:-3], (h - 1) * sh + 1, (wd - 1) * sw + 1, x.shape[-1]), self._a, x.dtype)


def prepare_transpose_conv(w: np.ndarray, bias: np.ndarray, q: Quant, *, stride: tuple[int, int],
                           pad: tuple[int, int], out_hw: tuple[int, int], bounds: tuple[int, int],
                           out_dtype: np.dtype | type = I64) -> PreparedTransposeConv:
    """:func:`transpose_conv2d_hwcn` with weights, bias, parameters and geometry fixed: a callable of the input.

    Args:
        w: (Kh, Kw, C, N) weights; bias, q, stride, pad, out_hw, bounds: as for :func:`transpose_conv2d_hwcn`
            (copied).
        out_dtype: dtype of the returned values (e.g. the output container's).

    Returns:
        A :class:`PreparedTransposeConv`: ``f(x)`` equals the plain kernel's values on ``x`` as ``out_dtype``,
        under the platform in force at the call.
    """
    return PreparedTransposeConv(w, bias, q, stride=stride, pad=pad, out_hw=out_hw, bounds=bounds, out_dtype=out_dtype)
