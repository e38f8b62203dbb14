"""Prepared convolutions: :func:`prepare_conv` fixes one layer's weights, bias, parameters and
geometry once and returns a callable of the input (:class:`PreparedConv`): the fixed per-call
cost of small convolutions (padding, parameter derivation, output-stage plans) is paid once.

A module of its own: it builds on :mod:`pymli.kernels.fully_connected`, which imports
:mod:`pymli.kernels.convolution` (in that module it would close an import cycle).
"""

from __future__ import annotations

import threading

import numpy as np

from ..arith.requant import _cast_plan, sa8_bias_bound, sa8_out_params
from ..config import Platform, get_platform
from ..formats import RoundMode
from . import _jit
from .convolution import (
    _F32_EXACT,
    _F64_EXACT,
    Quant,
    Sa8Quant,
    _batch,
    _depthwise_dtype,
    _geometry,
    _offsets,
    _OutputStage,
    _eff_offset,
    _windows,
    container_bound,
    conv2d_hwcn,
    depthwise_conv2d_hwcn,
)
from .fully_connected import prepare_fc

try:  # the ufuncs themselves: no Python-level argument handling (tiny arrays: most of a call)
    from numpy._core.umath import clip as _clip
except ImportError:  # pragma: no cover - older NumPy
    _clip = np.clip

__all__ = ["FusedSa8", "PreparedConv", "prepare_conv", "TINY_MACS"]

I64 = np.int64
PREPARED_MAX_MACS = 1 << 21
"""Calls of more multiply-adds than this take the plain kernel (row blocks over the threads, no
whole-batch im2col copy): the fixed per-call cost the prepared path saves no longer matters there."""
TINY_MACS = 1 << 12
"""sa8 conv2d calls of at most this many multiply-adds (one image) take :class:`FusedSa8` after one
gather (im2col with the padding) from a float64 copy of the input: a few NumPy calls in all."""
_I32_MAX = (1 << 31) - 1
_MAX_STAGES = 16
_dot, _floor, _rint, _add = np.dot, np.floor, np.rint, np.add


class FusedSa8:
    """The sa8 output stage of a small layer (conv2d or fully connected, no weights zero point) fused
    into two float64 matrix products: per call ``dot``, a rounding (and the 16-bit saturation where it
    can matter), ``dot``, a clip and the last rounding written into the output container (for tiny arrays each NumPy call is most of the cost).

    ``stage(cols, out)`` takes the im2col rows ``cols`` (P, K + 1): the K input values of each output
    position (container integers as float64, padded taps holding the input zero point) and a last
    column of ones, and writes the (P, N) results into ``out`` (any integer array of that shape).
    The values are :func:`pymli.kernels.fully_connected.fully_connected`'s, bit for bit.

    Why exact: the first product is ``(x @ w + c) * 2**-pre`` plus the rounding half (``c`` the
    reduced bias minus ``zp * colsum(w)``: the ones column times a last weights row), with one more
    output column that is exactly 1; every term is an integer times ``2**-pre`` and every partial sum
    is bounded by ``(max|x| * sum|w| + |c| + 1) * 2**-pre``, checked below 2**53 in those units: it
    is exact in any summation order, and so is its rounding (``floor`` of ``v + 1/2`` for ROUND_UP,
    ``rint`` for ROUND_CONVERGENT). The second product multiplies the rounded value ``r`` by the
    diagonal ``mul * 2**-sh`` and adds, through the ones column, the second rounding half (with
    ROUND_UP also the output zero point): ``r * mul`` is an integer below the checked bound, the
    terms are multiples of ``2**-sh`` (the other channels contribute exact zeros), so the sum is
    exact. Clamps commute with ``floor`` / ``rint`` at integer bounds. The conditions are those of
    the prepared fully connected layer's float stage; where one fails (an accumulator that may wrap,
    FULL_ACCU sums that may saturate, shifts or products outside the exact range)
    :meth:`stage` returns None and the caller takes its general path.
    """

    def __init__(self, w: np.ndarray, bias: np.ndarray, q: Sa8Quant, bounds: tuple[int, int]) -> None:
        """Args:
            w: (K, N) integer weights; bias: (N,) integers (both copied into the constants);
            q: the layer's :class:`~pymli.kernels.convolution.Sa8Quant`; bounds: the fused ReLU clamp.
        """
        self._w = np.array(w, dtype=I64)
        self._bias = np.array(bias)
        self._q, self._bounds = q, (int(bounds[0]), int(bounds[1]))
        self._l1 = np.abs(self._w).sum(axis=0)
        self._stages: dict[tuple[int, str], tuple[Platform, object]] = {}

    def stage(self, xdt: np.dtype) -> object:
        """The fused computation for inputs of container dtype ``xdt`` under the platform in force:
        a callable ``(cols, out) -> None``, or None (no exact fused form: take the general path)."""
        p = get_platform()
        key = (id(p), xdt.char)
        st = self._stages.get(key)
        if st is None or st[0] is not p:  # the entry holds the platform: its id cannot be reused meanwhile
            if len(self._stages) >= _MAX_STAGES:
                self._stages.clear()
            st = self._stages[key] = (p, self._build(p, xdt))
        return st[1]

    def _build(self, p: Platform, xdt: np.dtype) -> object:
        q, (lo, hi) = self._q, self._bounds
        if xdt.kind not in "iu" or self._bias.dtype.kind not in "iu" or _eff_offset(q.w_zp):
            return None
        a = _eff_offset(q.in_zp)
        info = np.iinfo(xdt)
        if not info.min <= a <= info.max:  # padded taps hold a: it must be a container value
            return None
        k, m = self._w.shape
        if not m:
            return None
        acc_b = container_bound(np.empty(0, xdt), a) * self._l1  # per channel, on |sum((x - a) * w)|
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
        c = bias_r - a * self._w.sum(axis=0)
        xb = container_bound(np.empty(0, xdt))
        first = xb * int(self._l1.max()) + int(np.abs(c).max()) + (1 << int(pre.max()))  # units of 2**-pre
        if int(sh.min()) < 0 or shmax > 52 or first >= _F64_EXACT or kb + ((abs(zp) + 1) << shmax) >= _F64_EXACT:
            return None
        merge = up  # the zero point is added with the rounding half (exact: the bound just checked)
        inv = np.ldexp(1.0, -pre)
        rnd1 = bool(pre.max() > 0)
        w1 = np.zeros((k + 1, m + 1))
        w1[:k, :m] = self._w * inv
        w1[k, :m] = c * inv + (0.5 if up and rnd1 else 0.0)
        w1[k, m] = 1.0  # the ones column, kept through the first rounding
        w2 = np.zeros((m + 1, m))
        w2[np.arange(m), np.arange(m)] = mul.astype(np.float64) * np.ldexp(1.0, -sh)
        w2[m] = (0.5 + zp if merge else 0.5) if up else 0.0
        olo, ohi = max(lo, -128), min(hi, 127)
        # output stage of C: sat16(r), + zp, sat8 / ReLU clamp: one clamp of r + zp (clamps compose)
        lo_f, hi_f = float(min(max(zp - (1 << 15), olo), ohi)), float(min(max(zp + (1 << 15) - 1, olo), ohi))
        rnd = _floor if up else _rint
        if merge:
            def run(cols: np.ndarray, out: np.ndarray) -> None:
                y = _dot(cols, w1)
                if rnd1:
                    rnd(y, out=y)
                if clip16:  # the ones column stays 1
                    _clip(y, -32768.0, 32767.0, out=y)
                z = _dot(y, w2)
                _clip(z, lo_f, hi_f, out=z)
                _floor(z, out=z)
                out[...] = z  # integral values in the output container's range
        else:
            zf, lz, hz = float(zp), lo_f - zp, hi_f - zp

            def run(cols: np.ndarray, out: np.ndarray) -> None:
                y = _dot(cols, w1)
                if rnd1:
                    rnd(y, out=y)
                if clip16:  # the ones column stays 1
                    _clip(y, -32768.0, 32767.0, out=y)
                z = _dot(y, w2)
                rnd(z, out=z)
                _clip(z, lz, hz, out=z)
                _add(z, zf, out=z)
                out[...] = z  # integral values in the output container's range
        return run


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
    platform, read at each call). A depthwise layer without a weights zero point keeps a padded
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
        elif not depthwise and not b:
            kh, kw, c, n = self._w.shape
            self._fc = prepare_fc(self._w.reshape(kh * kw * c, n), self._bias, q, bounds, self._dtype)
        self._pointwise = self._fc is not None and self._w.shape[:2] == (1, 1) and self._geo["stride"] == (1, 1) \
            and self._geo["pad"] == (0, 0)
        self._kernel = depthwise_conv2d_hwcn if depthwise else conv2d_hwcn
        self._buffers: dict[tuple, np.ndarray] = {}
        self._fused = None
        if self._fc is not None and isinstance(q, Sa8Quant) and out_hw[0] * out_hw[1] * self._w.size <= TINY_MACS:
            kh, kw, c, n = self._w.shape
            self._fused = FusedSa8(self._w.reshape(kh * kw * c, n), self._bias, q, self._bounds)
        self._gathers: dict[tuple, tuple] = {}  # (platform, fused stage, _gather_plan's) per thread and input

    def __call__(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The layer on ``x``.

        Args:
            x: (H, W, C) or (N, H, W, C) container integers.
            out: optional integer array of the result's shape to write the values into.

        Returns:
            (Ho, Wo, N_out) or (N, Ho, Wo, N_out) values of the output dtype (``out`` itself when given).
        """
        if self._fused is not None and type(x) is np.ndarray and x.ndim == 3:
            r = self._tiny(x, out)
            if r is not None:
                return r
        r = self._values(np.asarray(x))
        if out is None:
            return r
        out[...] = r
        return out

    def _tiny(self, x: np.ndarray, out: np.ndarray | None) -> np.ndarray | None:
        """A small sa8 conv2d through :class:`FusedSa8`: the input copied into a float64 buffer kept per
        thread and input shape (after it, the input zero point for the padded taps and a one), one
        gather of the im2col rows by a precomputed index, the fused stage written into the output.
        None when the fused stage does not apply (the general path then runs)."""
        key = (threading.get_ident(), x.shape, x.dtype.char)  # one buffer per thread: calls may overlap
        g = self._gathers.get(key)
        p = get_platform()
        if g is None or g[0] is not p:
            if len(self._gathers) >= 8:  # a few threads / input shapes at most: keep memory bounded
                self._gathers.clear()
            g = self._gathers[key] = (p, self._fused.stage(x.dtype), *self._gather_plan(x.shape))  # type: ignore[union-attr]
        _, stage, buf, inner, idx, shape2 = g
        if stage is None:
            return None
        inner[...] = x
        if out is not None and out.flags.c_contiguous:
            stage(buf.take(idx), out.reshape(shape2))
            return out
        res = np.empty(self._geo["out_hw"] + (shape2[1],), self._dtype)
        stage(buf.take(idx), res.reshape(shape2))
        if out is None:
            return res
        out[...] = res
        return out

    def _gather_plan(self, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
        """(float64 buffer of ``H*W*C + 2`` values, its (H, W, C) view for the input, im2col index,
        (positions, channels) of the result).

        The buffer ends in the input zero point (read by every padded tap) and a one (the ones
        column of :class:`FusedSa8`); row ``p`` of the index lists output position ``p``'s taps in the
        weights' (Kh, Kw, C) order, then the one."""
        h, w, c = shape
        kh, kw = self._w.shape[:2]
        (sh, sw), (dh, dw), (top, left), (ho, wo) = (self._geo[k] for k in ("stride", "dilation", "pad", "out_hw"))
        size = h * w * c
        buf = np.empty(size + 2)
        buf[size], buf[size + 1] = self._a, 1.0
        rows = (np.arange(ho)[:, None] * sh + np.arange(kh)[None, :] * dh - top)[:, None, :, None, None]
        cols = (np.arange(wo)[:, None] * sw + np.arange(kw)[None, :] * dw - left)[None, :, None, :, None]
        ok = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
        flat = (rows * w + cols) * c + np.arange(c)
        idx = np.where(ok, flat, size).reshape(ho * wo, kh * kw * c)
        idx = np.concatenate([idx, np.full((ho * wo, 1), size + 1)], axis=1).astype(np.intp)
        return buf, buf[:size].reshape(h, w, c), idx, (ho * wo, self._w.shape[3])

    def _values(self, x: np.ndarray) -> np.ndarray:
        """The general paths (see the class docstring)."""
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
        win = _windows(xp, kh, kw, sh, sw, dh, dw, ho, wo)
        cols = win.reshape(xp.shape[0] * ho * wo, -1)  # im2col: the one copy of the windows
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
