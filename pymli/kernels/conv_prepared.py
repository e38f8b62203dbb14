"""Prepared convolutions: :func:`prepare_conv` fixes one layer's weights, bias, parameters and
geometry once and returns a callable of the input (:class:`PreparedConv`): the fixed per-call
cost of small convolutions (padding, parameter derivation, output-stage plans) is paid once.

A module of its own: it builds on :mod:`pymli.kernels.fully_connected`, which imports
:mod:`pymli.kernels.convolution` (in that module it would close an import cycle).
"""

from __future__ import annotations

import threading

import numpy as np

from . import _jit
from .convolution import (
    _F32_EXACT,
    Quant,
    _batch,
    _depthwise_dtype,
    _geometry,
    _offsets,
    _OutputStage,
    _windows,
    container_bound,
    conv2d_hwcn,
    depthwise_conv2d_hwcn,
)
from .fully_connected import prepare_fc

__all__ = ["PreparedConv", "prepare_conv"]

I64 = np.int64
PREPARED_MAX_MACS = 1 << 21
"""Calls of more multiply-adds than this take the plain kernel (row blocks over the threads, no
whole-batch im2col copy): the fixed per-call cost the prepared path saves no longer matters there."""


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
            self._jit_dw = _jit.PreparedDepthwise(self._w, self._a, self._post.jit_stage, **self._geo)
        elif not depthwise and not b:
            kh, kw, c, n = self._w.shape
            self._fc = prepare_fc(self._w.reshape(kh * kw * c, n), self._bias, q, bounds, self._dtype)
        self._pointwise = self._fc is not None and self._w.shape[:2] == (1, 1) and self._geo["stride"] == (1, 1) \
            and self._geo["pad"] == (0, 0)
        self._kernel = depthwise_conv2d_hwcn if depthwise else conv2d_hwcn
        self._buffers: dict[tuple, np.ndarray] = {}

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The layer on ``x``.

        Args:
            x: (H, W, C) or (N, H, W, C) container integers.

        Returns:
            (Ho, Wo, N_out) or (N, Ho, Wo, N_out) values of the output dtype.
        """
        x = np.asarray(x)
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
