"""Fully connected layer of MLI (``kernels/common/mli_krn_fully_connected``) as a pure NumPy function.

``out[o] = requant(sum_i (x[i] - in_zp) * w[i, o] + bias[o])`` with the accumulator, bias and
requantisation of the C reference (see :mod:`pymli.arith.requant`). The dot products are an exact
matrix product (float BLAS within its exactness bound, int64 beyond). As in C, the weights
zero-point additives (``-w_zp * sum(x) + in_zp * w_zp * N``) are summed apart and added to the
accumulator with saturation.

:func:`prepare_fc` fixes the weights, bias and parameters of one layer and returns a callable of the
input (:class:`PreparedFc`): the per-call work is one exact float matrix product and a handful of
ufuncs, with the zero-point correction folded into the bias and the requantisation constants
prepared once per platform (the rounding of the platform in force at each call). With the optional
JIT (:mod:`pymli.kernels._jit`) the ufuncs after the product are one compiled pass straight into the
output container (:func:`pymli.kernels._jit.finish`, the convolutions' output stage), and int8 x int8
products (sa8, fx8) of int32 sums are the convolutions' compiled integer products
(:mod:`pymli.kernels._jit_conv`: AVX-512 / AVX VNNI, or int16 on AVX-512 BW / AVX2) on the weights
packed once per layer (:meth:`PreparedFc._int_rows`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..arith.requant import _cast_plan, add_bias, fx_bias, sa8_bias_bound, sa8_out_params, wrap_acc
from ..arith.rounding import clip_ufunc as _clip
from ..arith.rounding import limits
from ..config import Platform, get_platform
from ..formats import RoundMode
from . import _jit
from ._blas import SMALL_PRODUCT, blas_single_thread
from ._parallel import PARALLEL_WORK, get_threads, pool_pays, record_time, run_parts
from .convolution import (
    FxQuant,
    Sa8Quant,
    _eff_offset,
    _int_product,
    _int_weights,
    _max_abs,
    _scratch,
    container_bound,
    exact_matmul,
    finish,
)

__all__ = ["PreparedFc", "fully_connected", "prepare_fc", "prepare_pointwise"]

I64 = np.int64


def fully_connected(x: np.ndarray, w: np.ndarray, bias: np.ndarray, q: FxQuant | Sa8Quant,
                    bounds: tuple[int, int]) -> np.ndarray:
    """``mli_krn_fully_connected_*``.

    Args:
        x: (N_in,) or (..., N_in) input values (container integers). Leading axes are a batch
            (each row is one independent call).
        w: (N_in, M_out) weights.
        bias: (M_out,) bias.
        q: :class:`FxQuant` or :class:`Sa8Quant` (for the ``_ext_bias`` variant pass ``in_zp = 0``).
        bounds: fused-ReLU clamp.

    Returns:
        int64 output values, shape (..., M_out).
    """
    x = np.asarray(x)
    if isinstance(q, Sa8Quant):
        a, b = _eff_offset(q.in_zp), _eff_offset(q.w_zp)
        xb = container_bound(x, a)
        xc = x.astype(np.int16 if xb < (1 << 15) else I64) - a if a else x
    else:
        a = b = 0
        xc, xb = x, container_bound(x)
    # The input is small next to the weights: scanning it can tighten the bound enough for a
    # single float32 product; the weights keep their container bound.
    if xc.size <= w.size // 8:
        # _max_abs works in Python ints: np.abs of an int16 -32768 would wrap to -32768.
        xb = min(xb, _max_abs(xc))
    acc, bound = exact_matmul(xc, w, xb, container_bound(w))
    if b:
        bound = None  # type: ignore[assignment]
        # in_additive + zp_additive: a separate 32-bit sum added with saturation.
        n = x.shape[-1]
        other = wrap_acc(-b * np.asarray(x, dtype=I64).sum(axis=-1, keepdims=True) + q.in_zp * q.w_zp * n, 32)
        acc = add_bias(wrap_acc(acc, 32), other, 32)
    return finish(acc, bias, q, bounds, bound)


_F32_EXACT = 1 << 24
_F64_EXACT = 1 << 53
_I32_MAX = (1 << 31) - 1
_MAX_STAGES = 16
_F32_MIN = 1 << 16
"""Weights from this many elements are kept in float32 only, when that is exact."""
_TILE_MAX = 1 << 16
"""Outputs of the largest block of rows whose per-channel constants are tiled to its shape (two
float64 arrays of up to 512 KB per layer and block size); larger products go by blocks of rows."""
_MAX_TILES = 8
_GEMM_ONE_THREAD = 1 << 18
"""Matrix products (two or more rows and columns) of fewer multiply-adds than this run on one OpenBLAS
thread whatever its setting (``interface/gemm.c``: one thread below ``65536 * GEMM_MULTITHREAD_THRESHOLD``,
4 by default): the JIT path takes no thread pin around them (entering and leaving it costs ~1.5 us, a
tenth of a 6x6 pointwise layer). Matrix-vector products keep the pin from :data:`SMALL_PRODUCT` on."""
_INT_MIN_MACS = 1 << 14
"""Calls of this many multiply-adds or more take the integer product when there is one (below, the
float product's fewer Python steps win)."""
SMALL_FC_NS = 1400.0
"""The one-shape form of a fully connected layer takes the compiled scalar loop (:meth:`PreparedFc._small_single`)
while its estimated inner work (:func:`_small_pays`) stays below this many nanoseconds plus
:data:`SMALL_FC_ROW_NS` a row: about the fixed cost of the integer product's form (buffers, two native calls)
over the loop's. Measured: 1152 -> 10 (a small model's classifier) 5.0 us in the loop, 2.9 us through the
integer product; 256 -> 10 1.7 us against 2.6 us; 36 rows of 12 -> 8 2.2 us against 2.9 us."""
SMALL_FC_ROW_NS = 14.0
"""The integer product form's cost per row beyond the loop's (input conversion, output stage)."""


def _small_pays(n: int, k: int, m: int) -> bool:
    """Whether ``n`` rows of ``k`` inputs and ``m`` outputs take the compiled scalar loop rather than the
    integer product (:data:`SMALL_FC_NS`): the loop spends ~1 + 0.4 m ns per input value of a row, ~4 ns from
    8 outputs on (measured, m = 1 .. 32)."""
    return n * k * min(4.0, 1.0 + 0.4 * m) < SMALL_FC_NS + SMALL_FC_ROW_NS * n


_KEEP_BYTES = 1 << 16
"""Integer products whose buffers take at most this many bytes keep them per layer and thread (at most
:data:`_MAX_TILES` row counts): a small layer's call skips three scratch lookups (~1 us)."""
_F32_PRODUCT = 1 << 15
"""Calls of this many multiply-adds or more take the float32 product when it is exact (sgemm runs
~1.3-2x faster than dgemm from there on; below, the conversion of the result to float64 costs more
than the product saves)."""


class PreparedFc:
    """:func:`fully_connected` of fixed weights, bias and parameters: ``prepared(x)`` returns what
    ``fully_connected(x, w, bias, q, bounds).astype(out_dtype)`` returns, bit for bit.

    Built by :func:`prepare_fc`. The constants depend on the platform (rounding mode, FULL_ACCU: the
    sa8 bias precision, the output multipliers and shifts, the fx bias alignment) and on the input
    container; they are derived on the first call under each platform / input dtype and kept, so a
    change of :func:`pymli.config.use_platform` takes effect on the next call.

    The fast path is one exact float matrix product and a few ufuncs in float64 (see
    :meth:`_float_stage` for why every step is exact); with the JIT, the product and the compiled
    output stage (:meth:`_jit_stage`), the product in int32 through an integer product of
    :mod:`pymli.kernels._jit_conv` for int8 inputs and weights (:meth:`_int_rows`; the product is
    chosen when the stage is derived: ``convolution.INT_PRODUCT``). Where its preconditions fail (an accumulator
    that can wrap, weights zero points, shifts outside the exact range, FULL_ACCU products beyond
    2**53) the call goes through :func:`fully_connected`.
    """

    def __init__(self, w: np.ndarray, bias: np.ndarray, q: FxQuant | Sa8Quant, bounds: tuple[int, int],
                 out_dtype: np.dtype | type = I64) -> None:
        self._w = np.array(w)  # own contiguous copies: a caller may rewrite its buffers later
        self._bias = np.array(bias)
        self._q = q
        self._bounds = (int(bounds[0]), int(bounds[1]))
        self._dtype = np.dtype(out_dtype)
        w64 = self._w.astype(I64)
        self._colsum = w64.sum(axis=0)
        # |partial sum of column o| <= max|x| * sum_i |w[i, o]|: a tighter bound than K * max|w|
        self._l1 = np.abs(w64).sum(axis=0)
        self._l1max = int(self._l1.max()) if self._l1.size else 0
        self._stages: dict[tuple[int, str], tuple[Platform, Callable[[np.ndarray], np.ndarray]]] = {}
        self._w8: np.ndarray | None = None  # the weights as int8 (for the integer products), when they fit
        self._packs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # packed per product name
        # (platform, input dtype, stage) of the last call: a repeated call skips the key and the dict
        self._last: tuple[Platform | None, np.dtype | None, Callable[[np.ndarray], np.ndarray] | None] = (None, None, None)

    def __call__(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The layer on ``x``.

        Args:
            x: (N_in,) or (..., N_in) container integers.
            out: optional integer array of the result's shape to write the values into.

        Returns:
            (..., M_out) values of ``out_dtype`` (``out`` itself when given).
        """
        x = np.asarray(x)
        p = get_platform()
        last = self._last
        if last[0] is p and last[1] is x.dtype:  # the common case: the previous call's stage
            y = last[2](x)
        else:
            y = self._lookup(p, x.dtype)(x)
        if out is None:
            return y.astype(self._dtype, copy=False)
        out[...] = y
        return out

    def single(self, shape: tuple[int, ...], dtype: np.dtype | type = np.int8
               ) -> Callable[[np.ndarray], np.ndarray] | None:
        """The layer for repeated calls on int8 inputs of one shape (a model's step): ``f(x)`` returns what
        ``self(x)`` returns, with the per-call work of a small layer in one Python frame (the input's
        conversion, the integer product and the compiled output stage on buffers of its own; see
        :meth:`_int_rows`). Calls under another platform than the current one, with the JIT switched off,
        or on other inputs are passed on to ``self``.

        Args:
            shape: the input's shape (..., N_in). dtype: its dtype.

        Returns:
            ``f``, or None where the layer takes no integer product on such inputs (inputs other than
            int8 among them), or may split the call over threads (large calls, whose fixed cost does not
            matter).
        """
        if np.dtype(dtype) != np.int8:
            return None
        stage = self._lookup(get_platform(), np.dtype(np.int8))
        make = getattr(stage, "single", None)
        return None if make is None else make(tuple(int(v) for v in shape))

    def _lookup(self, p: Platform, xdt: np.dtype) -> Callable[[np.ndarray], np.ndarray]:
        """The stage of platform ``p`` and input dtype ``xdt`` (derived on first use), kept as the last one."""
        key = (id(p), xdt.char)
        st = self._stages.get(key)
        if st is None or st[0] is not p:  # the entry holds the platform: its id cannot be reused meanwhile
            if len(self._stages) >= _MAX_STAGES:  # platforms made afresh for every call: keep a few
                self._stages.clear()
            st = self._stages[key] = (p, self._stage(p, xdt))
        self._last = (p, xdt, st[1])
        return st[1]

    def _plain(self, x: np.ndarray) -> np.ndarray:
        return fully_connected(x, self._w, self._bias, self._q, self._bounds)

    def _stage(self, p: Platform, xdt: np.dtype, jit: bool = True) -> Callable[[np.ndarray], np.ndarray]:
        """The computation for inputs of dtype ``xdt`` under platform ``p`` (in force); ``jit=False``: the
        NumPy one even where the JIT's output stage would run (:meth:`_jit_stage`)."""
        if xdt.kind not in "iu" or self._w.dtype.kind not in "iu" or self._bias.dtype.kind not in "iu":
            return self._plain
        q = self._q
        lo, hi = self._bounds
        xb = container_bound(np.empty(0, xdt))
        up = p.round_mode is RoundMode.UP
        m = self._colsum.shape[0]
        if isinstance(q, Sa8Quant):
            a, b = _eff_offset(q.in_zp), _eff_offset(q.w_zp)
            acc_b = container_bound(np.empty(0, xdt), a) * self._l1  # per channel, on |sum((x - a) * w)|
            if b or (acc_b.size and int(acc_b.max()) >= 1 << 31):
                return self._plain  # weights zero points, or an accumulator that may wrap
            compiled = self._jit_stage(xb, q, a, p, xdt) if jit and _jit.enabled() else None
            if compiled is not None:
                return compiled
            bias_r, _ = sa8_bias_bound(self._bias, p.full_accu)
            acc_b = acc_b + np.abs(bias_r)  # bound on |acc + bias| per channel
            mul, shift = sa8_out_params(q.in_scale, q.in_frac, q.out_scale, q.out_frac, q.w_scales, q.w_fracs,
                                        p.full_accu)
            plan = _cast_plan(mul.tobytes(), shift.tobytes(), p.full_accu, p.round_mode)
            sh = np.broadcast_to(plan.sh["l"], (m,))
            mul = np.broadcast_to(plan.mul["l"], (m,))
            shmax = int(sh.max()) if m else 0
            if p.full_accu:
                pre = np.zeros(m, I64)
                clip16 = clip16_i = False
                kb = kb_i = int((acc_b * np.abs(mul)).max()) if m else 0  # bound on |acc * mul|
                # acc + bias must not saturate (|acc * mul| < 2**53 below keeps the product exact)
                ok = not m or int(acc_b.max()) <= _I32_MAX
            else:
                pre = np.broadcast_to(plan.pre["l"], (m,))
                ok = True
                # the saturations of acc + bias and of ROUND_UP's pre-shift rounding add only matter
                # for |acc| >= 2**23 (pre <= 8): the 16-bit saturation that follows covers them
                a16 = int(((acc_b >> pre) + 1).max()) if m else 0
                clip16 = a16 > (1 << 15) - 1 and not self._sat16_redundant(mul, sh, int(q.out_zp), lo, hi)
                kb = (min(a16, 1 << 15) if clip16 else a16) * (int(np.abs(mul).max()) if m else 0)  # on |a16 * mul|
                # the int32 stage clamps to 16 bits as C does, also where that cannot change an output
                clip16_i = a16 > (1 << 15) - 1
                kb_i = min(a16, 1 << 15) * (int(np.abs(mul).max()) if m else 0)
            zp = int(q.out_zp)
            # the product and its rounding half exact in float64 (and, to add both at once, the zero point)
            if not ok or (m and (int(sh.min()) < 0 or shmax > 52)) or kb + (1 << shmax >> 1) >= _F64_EXACT:
                return self._plain
            merge = up and kb + ((abs(zp) + 1) << shmax) < _F64_EXACT
            c = bias_r - a * self._colsum
            # output stage of C: sat16(r), + zp, sat8 / ReLU clamp: one clamp of r + zp (clamps compose)
            olo, ohi = max(lo, -128), min(hi, 127)
            lo_f, hi_f = float(min(max(zp - (1 << 15), olo), ohi)), float(min(max(zp + (1 << 15) - 1, olo), ohi))
            ints = None
            if up and m:
                # ROUND_UP in int32 (for products taken in float32, see _float_stage): every value
                # below fits: the accumulator with bias and rounding half, the 16-bit value times the
                # multiplier with the rounding half and the zero point shifted up
                pre64, sh64, mul64 = (np.asarray(v, I64) for v in (pre, sh, mul))
                c1 = c + ((1 << pre64) >> 1)
                if int((acc_b + ((1 << pre64) >> 1)).max()) <= _I32_MAX and int(np.abs(c1).max()) <= _I32_MAX \
                        and kb_i + (1 << shmax >> 1) + (abs(zp) << shmax) <= _I32_MAX:
                    ints = _IntStage(c1, pre64, mul64, ((1 << sh64) >> 1) + zp * (1 << sh64), sh64, clip16_i,
                                     int(lo_f), int(hi_f))
            return self._float_stage(xb, pre, c, up, None, clip16, mul.astype(np.float64) * np.ldexp(1.0, -sh),
                                     float(zp), merge, (lo_f, hi_f), ints)
        # FX: accumulator of 32 bits (wraps) or 40 bits (int64 in C)
        acc_b = xb * self._l1
        compiled = self._jit_stage(xb, q, 0, p, xdt) if jit and _jit.enabled() else None
        if compiled is not None:
            return compiled
        fb = fx_bias(self._bias, q.bias_shift, q.acc_bits)
        s = int(q.out_shift)
        tot_b = int((acc_b + np.abs(fb)).max()) if m else 0
        cb32 = q.acc_bits <= 32
        if (int(acc_b.max()) if m else 0) >= (1 << 31 if cb32 else _F64_EXACT) or not 0 <= s <= (31 if cb32 else 52) \
                or tot_b + (1 << s) >= _F64_EXACT:
            return self._plain
        out_lo, out_hi = limits(q.out_bits)
        lo_f, hi_f = float(min(max(out_lo, lo), hi)), float(min(max(out_hi, lo), hi))
        sat = None
        if cb32 and (tot_b > _I32_MAX or (up and tot_b + (1 << s >> 1) > _I32_MAX)):
            # sat32(acc + bias), then ROUND_UP's rounding add saturating at INT32_MAX
            sat = (-(1 << 31), _I32_MAX - (1 << s >> 1) if up else _I32_MAX)
        return self._float_stage(xb, np.full(m, s, I64), fb, up, sat, False, None, 0.0, False, (lo_f, hi_f))

    def _jit_stage(self, xb: int, q: FxQuant | Sa8Quant, a: int, p: Platform, xdt: np.dtype
                   ) -> Callable[[np.ndarray], np.ndarray] | None:
        """The layer as an exact product and the JIT's compiled output stage, or None (the product
        cannot be exact, the stage leaves the shifts to NumPy). The product is float (BLAS), or for int8
        inputs and int8-range weights from :data:`_INT_MIN_MACS` multiply-adds on, the integer product
        of :mod:`pymli.kernels._jit_conv` (:meth:`_int_rows`: the same exact ``x @ w`` in int32).

        Why it computes what :func:`fully_connected` computes: the product ``x @ w`` of the raw input
        (|partial sums| <= ``xb * max_o sum_i |w[i, o]|``, checked below 2**24 for float32, 2**53 for
        float64, and for sa8 and 32-bit MLI_FX below 2**31: the stage's 32-bit wrap of the sum is then
        the identity) is exact.
        sa8: ``acc = sum((x - a) * w) = x @ w - a * colsum`` (the caller checked ``|acc| < 2**31``: C's
        accumulator does not wrap), so the stage's first step ``sat32(x @ w + (bias' - a * colsum))``,
        with ``bias'`` the bias after its precision reduction (:func:`sa8_bias_bound`, as the stage
        derives it), is C's ``add_bias(acc, bias')``; then the stage's own sa8 result cast and clamp.
        FX (``a = 0``): the stage of :func:`finish` on the exact sum.

        Args:
            xb: bound on ``|x|`` (the input container). q: the parameters. a: the sa8 input offset
                (0 for FX). p: the platform (in force). xdt: the input dtype.

        Returns:
            the computation ``x -> outputs`` in the stage's container, or None.
        """
        bound = xb * self._l1max
        # the stage wraps sa8 and 32-bit MLI_FX sums to 32 bits (C's accumulator; here the identity)
        if bound >= (_F64_EXACT if isinstance(q, FxQuant) and q.acc_bits > 32 else 1 << 31):
            return None
        if isinstance(q, Sa8Quant):
            mul, shift = sa8_out_params(q.in_scale, q.in_frac, q.out_scale, q.out_frac, q.w_scales, q.w_fracs,
                                        p.full_accu)
            st = _jit.sa8_stage(self._bias, mul, shift, int(q.out_zp), self._bounds)
            if st is not None and a:
                chan = st.chan.copy()  # the stage is memoised by value: a copy with the offset's correction
                chan[0] -= a * self._colsum
                st = _jit.DepthwiseStage(st.sa8, chan, st.par, st.out_dtype)
        else:
            st = _jit.fx_stage(self._bias, q.bias_shift, q.out_shift, q.acc_bits, q.out_bits, self._bounds)
        mod = _jit.compiled("_jit_numba")
        if st is None or mod is None:
            return None
        # the compiled stage of _jit.finish, called directly (its checks hold for every call here: float
        # sums of the stage's channel count, no 40-bit sum near 2**62) without its ~2 us of Python
        kernel = mod.finish_sa8 if st.sa8 else mod.finish_fx
        chan, par, odt = st.chan, st.par, st.out_dtype
        w32 = self._w.astype(np.float32) if bound < _F32_EXACT else None
        # large weights in float32 only (exact); small ones also in float64 for small calls (no conversion)
        w64 = None if w32 is not None and self._w.size >= _F32_MIN else self._w.astype(np.float64)
        f32_from = 0 if w64 is None else _F32_PRODUCT if w32 is not None else math.inf
        m = self._w.shape[1]
        big = -(-SMALL_PRODUCT // max(m, 1))
        enabled, numpy_stage = _jit.enabled, None
        # the exact sums x @ w in int32 (|x @ w| <= bound < 2**31, checked above)
        found = self._int_rows(xdt, bound) if bound < 1 << 31 else None
        int_rows, fuse = (None, None) if found is None else found

        def rows(x2: np.ndarray) -> np.ndarray:
            """Product and stage of rows ``x2`` into a fresh array (a block of :func:`run_parts` may be
            abandoned on a worker and finish later: it writes nothing shared)."""
            macs = x2.size * m
            if int_rows is not None and macs >= _INT_MIN_MACS:
                out = np.empty((x2.shape[0], m), odt)
                if out.size:
                    y = int_rows(x2)
                    kernel(y, chan, par, out)  # int32 sums, the very values of the float product below
                return out
            ws = w32 if macs >= f32_from else w64
            if x2.size >= big and (macs >= _GEMM_ONE_THREAD or x2.shape[0] < 2 or m < 2):
                with blas_single_thread(macs):
                    y = np.dot(x2, ws)
            else:
                y = np.dot(x2, ws)
            out = np.empty(y.shape, odt)
            if out.size:
                kernel(y, chan, par, out)
            return out

        def run(x: np.ndarray) -> np.ndarray:
            nonlocal numpy_stage
            if not enabled():  # the JIT was switched off since: the NumPy stage of this platform
                numpy_stage = numpy_stage or self._stage(p, x.dtype, jit=False)
                return numpy_stage(x)
            # np.dot of an N-d array does not reach BLAS's matrix product: rows
            x2 = x if x.ndim == 2 else x.reshape(math.prod(x.shape[:-1]), x.shape[-1])
            n = x2.shape[0]
            threads = get_threads() if x.size * m >= PARALLEL_WORK and n >= 2 else 1
            if threads == 1:
                out = rows(x2)
            else:
                # one block of rows per thread (each one BLAS product and its stage, GIL released in
                # both), or this thread alone, whichever has been the faster for this shape lately
                site = ("fc-jit", id(chan), n)
                pooled = pool_pays(site)
                t0 = time.perf_counter()
                if pooled:
                    parts = min(n, threads)
                    cuts = [n * i // parts for i in range(parts + 1)]
                    out = np.concatenate(run_parts(lambda i: rows(x2[cuts[i]:cuts[i + 1]]), parts, threads=parts))
                else:
                    out = rows(x2)
                record_time(site, pooled, time.perf_counter() - t0)
            return out if x.ndim == 2 else out.reshape(*x.shape[:-1], m)

        def single(shape: tuple[int, ...]) -> Callable[[np.ndarray], np.ndarray] | None:
            """:meth:`PreparedFc.single` under this stage's platform: the integer product whatever the
            size below :data:`PARALLEL_WORK` (fused, its fixed cost is a few calls: below
            :data:`_INT_MIN_MACS` too it beats :func:`rows`' float product), but for layers whose compiled
            scalar loop is faster still (:func:`_small_pays`)."""
            n, k = math.prod(shape[:-1]), self._w.shape[0]
            if fuse is None or odt != self._dtype or shape[-1] != k or n * k * m >= PARALLEL_WORK:
                return None  # no integer product, or a call that run() may split over threads
            if n * k * m < _INT_MIN_MACS and _small_pays(n, k, m):
                small = self._small_single(shape, st.sa8, chan, par, odt, p)
                if small is not None:
                    return small
            return fuse(shape, "finish_sa8" if st.sa8 else "finish_fx", chan, par, odt, p, self)
        run.single = single  # type: ignore[attr-defined]
        return run

    def _small_single(self, shape: tuple[int, ...], sa8: bool, chan: np.ndarray, par: np.ndarray, odt: np.dtype,
                      p: Platform) -> Callable[[np.ndarray], np.ndarray] | None:
        """The one-shape form of a layer of fewer than :data:`_INT_MIN_MACS` multiply-adds: the product
        and the output stage in one compiled call (:mod:`pymli.kernels._jit_fc`: the exact int64 sums
        ``x @ w`` through the stage of ``finish_sa8`` / ``finish_fx`` with constants ``chan``, ``par``),
        through its native entry for any input layout, on the layer's own copies of the weights and
        constants: no buffers shared between calls. Calls on another shape or dtype, under another
        platform than ``p`` or with the JIT off go to the layer itself. None without numba.

        The caller checked what the integer product needs: int8 inputs, int8-range weights
        (``self._w8``), ``|x @ w| < 2**31``.
        """
        mod = _jit.compiled("_jit_fc")
        if mod is None or self._w8 is None:
            return None
        n, k = math.prod(shape[:-1]), shape[-1]
        m = self._w8.shape[1]
        # own C-contiguous writeable copies: exactly the entry's argument types
        w8 = np.array(self._w8, np.int8, order="C")
        ch, pr = np.array(chan, I64, order="C"), np.array(par, I64, order="C")
        entry = mod.small_entry(sa8, odt)
        out_shape = shape[:-1] + (m,)
        flat, rows = out_shape == (n, m), len(shape) == 2
        i8, empty, platform, on = np.dtype(np.int8), np.empty, get_platform, _jit.is_on

        def small(x: np.ndarray) -> np.ndarray:
            if x.shape != shape or x.dtype != i8 or platform() is not p or not on():
                return self(x)
            out = empty(out_shape, odt)
            entry(x if rows else x.reshape(n, k), w8, ch, pr, out if flat else out.reshape(n, m))
            return out
        return small

    def _int_rows(self, xdt: np.dtype, bound: int
                  ) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[..., Any]] | None:
        """(``x2 -> x2 @ w`` (int32, (n, M) scratch buffer of this thread), its fused form with an output
        stage for calls of one fixed shape (``fuse``, see there)) through the integer
        product of :mod:`pymli.kernels._jit_conv` that conv2d takes (:func:`_int_product`, chosen when
        the stage is derived), or None: the JIT has none here, inputs other than int8, weights beyond
        int8, or sums that may reach 2**31 (``bound``).

        The layer is a 1x1 convolution of ``n`` pixels: pixel ``i``'s row at byte ``i * row`` of a
        (n, Kp) buffer (``Kp``: ``K`` padded to the product's values per 4-byte group), one segment of
        ``Kp`` values. The weights are packed once per product (:func:`_int_weights`, kept on the layer).
        uint8 products: the buffer holds ``u = x ^ 0x80 = x + 128`` and each sum starts from
        ``-128 * sum_k w[k, n]`` (:func:`_int_weights` with offset 0): ``sum_k u_k w_k - 128 sum_k w_k
        = x @ w``. int16 products: the buffer holds ``x`` widened, sums start from 0. The padded
        columns ``K..Kp`` meet zero weights (their values, left uninitialised, add 0). Every instruction
        adds modulo 2**32 (``vpdpbusd`` does not saturate; ``vpmaddwd``'s pairs of int8-range products
        stay far below its saturation), so each int32 lane holds ``x @ w`` modulo 2**32: the exact sum,
        as ``|x @ w| <= bound < 2**31``.
        """
        if xdt != np.int8 or bound >= 1 << 31 or self._w.dtype.kind not in "iu" or not self._w.size:
            return None
        if self._w8 is None:
            w8 = self._w
            if int(w8.min()) < -128 or int(w8.max()) > 127:
                return None
            self._w8 = w8.astype(np.int8, copy=False)
        found = _int_product()
        if found is None:
            return None
        mod, prod = found
        k, m = self._w8.shape
        pack = self._packs.get(prod.name)
        if pack is None:
            pack = self._packs[prod.name] = _int_weights(self._w8.reshape(1, 1, k, m), 0, prod, 1)[0]
        product = getattr(mod, f"conv_{prod.name}")
        u8 = prod.per_group == 4
        dt = np.dtype(np.uint8 if u8 else np.int16)
        kp = -(-k // prod.per_group) * prod.per_group
        npad = pack[2].shape[0]
        row = kp * dt.itemsize
        roff, l4, flip = np.zeros(1, I64), row // 4, np.uint8(0x80)
        offs_all = np.zeros(0, I64)  # row offsets of the largest call so far (replaced, never written)
        local = threading.local()  # per thread: row count -> its buffers, for small calls

        def buffers(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
            """(input columns to write, input buffer, row offsets, padded sums, contiguous sums or None)
            of ``n`` rows: this thread's scratch buffers."""
            nonlocal offs_all
            offs = offs_all  # one read: blocks on other threads may replace it meanwhile
            if n > offs.shape[0]:
                offs = offs_all = np.arange(max(n, 2 * offs.shape[0]), dtype=I64) * row
            xs = _scratch(("fc int product", (n, kp), dt))
            acc = _scratch(("fc int sums", (n, npad), np.int32))
            # the compiled stage runs ~4x slower on a strided view: the sums of the m outputs side by side
            sums = None if npad == m else _scratch(("fc int sums m", (n, m), np.int32))
            return xs[:, :k], xs, offs[:n], acc, sums

        def int_rows(x2: np.ndarray) -> np.ndarray:
            n = x2.shape[0]
            kept = getattr(local, "bufs", None)
            if kept is None:
                kept = local.bufs = {}
            bufs = kept.get(n)
            if bufs is None:
                bufs = buffers(n)
                # small calls keep their buffers (no per-call lookups; a few row counts); large ones
                # take them from the scratch (shared by the layers) on every call
                if n * (kp * dt.itemsize + 8 * npad) <= _KEEP_BYTES:
                    if len(kept) >= _MAX_TILES:
                        kept.clear()
                    kept[n] = bufs
            cols, xs, offs, acc, sums = bufs
            if u8:
                np.bitwise_xor(x2.view(np.uint8), flip, out=cols)
            else:
                cols[...] = x2
            product(xs, offs, roff, l4, *pack, acc)
            if sums is None:
                return acc
            np.copyto(sums, acc[:, :m])
            return sums

        def fuse(shape: tuple[int, ...], stage: str, chan: np.ndarray, par: np.ndarray, odt: np.dtype,
                 p: Platform, other: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
            """``x -> stage(x @ w)`` for int8 ``x`` of exactly ``shape`` (``n`` rows) under platform ``p``:
            :func:`int_rows` and the output stage (``stage``: its name in :mod:`pymli.kernels._jit_numba`;
            constants ``chan``, ``par``; container ``odt``) in one Python frame, on buffers of its own,
            the compiled functions called through their native entries (:func:`_jit.entry`: every
            argument but the fresh output is one of these buffers, whose types never change). A call on
            another shape or dtype, under another platform, with the JIT off, or overlapping another
            call on another thread goes to ``other``."""
            n = math.prod(shape[:-1])
            xs = np.zeros((n, kp), dt)  # the padded columns stay 0 (they meet zero weights)
            acc = np.empty((n, npad), np.int32)
            sums = acc if npad == m else np.empty((n, m), np.int32)
            wide = acc[:, :m]
            cols = xs[:, :k].reshape(shape)  # a view: only the leading axis is split
            offs = np.arange(n, dtype=I64) * row
            w0, w1, w2 = pack
            prod_ep = _jit.entry(mod, f"conv_{prod.name}", xs, offs, roff, l4, w0, w1, w2, acc)
            stage_mod = _jit.compiled("_jit_numba")
            if stage_mod is None:
                return other
            stage_ep = _jit.entry(stage_mod, stage, sums, chan, par, np.empty((n, m), odt))
            out_shape = shape[:-1] + (m,)
            flat = out_shape == (n, m)  # the output needs no view for the stage
            lock, i8, u8v = threading.Lock(), np.dtype(np.int8), np.dtype(np.uint8)
            xor, copyto, empty, platform, on = np.bitwise_xor, np.copyto, np.empty, get_platform, _jit.is_on

            def fused(x: np.ndarray) -> np.ndarray:
                if x.shape != shape or x.dtype != i8 or platform() is not p or not on() \
                        or not lock.acquire(False):
                    return other(x)
                try:
                    if u8:
                        xor(x.view(u8v), flip, out=cols)
                    else:
                        cols[...] = x
                    prod_ep(xs, offs, roff, l4, w0, w1, w2, acc)
                    if sums is not acc:
                        copyto(sums, wide)
                    out = empty(out_shape, odt)
                    stage_ep(sums, chan, par, out if flat else out.reshape(n, m))
                finally:
                    lock.release()
                return out
            return fused
        return int_rows, fuse

    @staticmethod
    def _sat16_redundant(mul: np.ndarray, sh: np.ndarray, zp: int, lo: int, hi: int) -> bool:
        """Whether the 16-bit saturation before the multiplier cannot change an output.

        The output is monotone in the saturated value ``a``; it can only differ from the output of
        the unsaturated value where ``a`` is beyond a 16-bit limit, and there it is already the
        clamp's bound when ``round(limit * mul * 2**-sh) + zp`` reaches it (the rounding moves by at
        most 1/2), on both sides and for every channel.
        """
        scale = mul.astype(np.float64) * np.ldexp(1.0, -sh)
        top, bot = scale * ((1 << 15) - 1), scale * -(1 << 15)
        olo, ohi = max(lo, -128), min(hi, 127)
        return bool(np.all(np.maximum(top, bot) - 0.5 + zp >= ohi) and np.all(np.minimum(top, bot) + 0.5 + zp <= olo))

    def _float_stage(self, xb: int, pre: np.ndarray, c: np.ndarray, up: bool, sat: tuple[int, int] | None,
                     clip16: bool, scale: np.ndarray | None, zp: float, merge: bool,
                     clamp: tuple[float, float], ints: _IntStage | None = None
                     ) -> Callable[[np.ndarray], np.ndarray]:
        """``clamp(round2(sat16(round1(sat(x @ w + c) / 2**pre)) * scale) + zp)`` in floats, exact.

        Why exact: ``x @ w`` is a sum of integer products whose every partial sum is bounded by
        ``max|x| * sum_i |w[i, o]|``; below 2**24 (float32) or 2**53 (float64) it is computed
        exactly in any summation order. Scaling the weights and ``c`` by ``2**-pre`` (a power of
        two, no underflow) keeps every value exact, and ``round1`` (floor of ``v + 1/2`` for
        ROUND_UP, ``rint``, half to even, for ROUND_CONVERGENT) of an exact value is exact.
        ``sat`` (integer bounds on the accumulator) is scaled alike and applied before the rounding;
        ``clip16`` clamps the rounded value to 16 bits. ``scale`` (sa8: the multiplier times
        ``2**-shift``) times that value is exact when the integer product stays below 2**53, and so is
        ``round2`` (the caller checks the bound with the rounding half added). ``zp`` is added after
        ``rint`` (half to even depends on parity); with ROUND_UP it is added with the half when
        ``merge`` (the caller checked that this sum is exact too).

        ``ints`` (sa8, ROUND_UP): for calls that take the float32 product, the same in int32 on the
        unscaled product (the exact accumulator, below 2**24): ``(acc + c + 2**(pre-1)) >> pre`` is
        ``floor((acc + c) / 2**pre + 1/2)``, and ``(v * mul + 2**(sh-1) + zp * 2**sh) >> sh`` is
        ``floor(v * mul / 2**sh + 1/2) + zp`` (arithmetic shifts floor); the caller checked that
        every sum fits int32. Half the bytes per pass of the float64 stage (~1.3-1.5x faster).
        """
        if xb * self._l1max >= _F64_EXACT:
            return self._plain
        inv = np.ldexp(1.0, -pre)
        # float32 halves the memory a product reads and doubles BLAS's rate; small products stay in
        # float64 (no conversion of the result). Exact: every partial sum is below 2**24 (checked
        # here), and the scaled weights w * 2**-pre are integers of at most 16 bits times a power of
        # two, exact in float32.
        ws64 = self._w.astype(np.float64) * inv
        f32_ok = xb * self._l1max < _F32_EXACT
        ws32 = ws64.astype(np.float32) if f32_ok else None
        if f32_ok and self._w.size >= _F32_MIN:
            ws64, f32_from = None, 0  # large weights: float32 only
        else:
            f32_from = _F32_PRODUCT if f32_ok else math.inf
        rnd1 = bool(pre.size and pre.max() > 0)
        h1 = 0.5 if up and rnd1 else 0.0
        cs = c * inv + h1
        lim1 = None if sat is None else (sat[0] * inv + h1, sat[1] * inv + h1)
        add2 = (0.5 + zp if merge else 0.5) if up else 0.0
        zp_after = 0.0 if merge else zp
        m = self._w.shape[1]
        big = -(-SMALL_PRODUCT // max(m, 1))  # inputs from this size on make a product worth a switch
        # per-channel constants (bias, scale) in the product's shape (_Tiles); scalars as 0-d arrays
        # (as fast as one shape; Python floats are converted per call)
        cs1 = np.ascontiguousarray(np.broadcast_to(np.asarray(cs, np.float64), (m,)))
        sc1 = None if scale is None else np.ascontiguousarray(np.broadcast_to(scale, (m,)))
        for a in (cs1, sc1):
            if a is not None:
                a.flags.writeable = False
        chunk = max(_TILE_MAX // max(m, 1), 1)  # rows of a tile: larger products go by blocks of rows
        tiles = _Tiles((cs1, sc1))
        itiles = None
        wi = None
        if ints is not None and f32_ok:
            wi = self._w.astype(np.float32)  # unscaled: x @ wi is the accumulator itself
            itiles = _Tiles(ints.vectors)
        lim_r = None if lim1 is None else (np.array(lim1[0]), np.array(lim1[1]))
        add2_r = np.array(add2) if up else None
        zp_r = np.array(zp_after) if zp_after else None
        lo, hi = np.array(clamp[0]), np.array(clamp[1])
        c16_lo, c16_hi = np.array(-32768.0), np.array(32767.0)
        add, floor, rint, multiply = np.add, np.floor, np.rint, np.multiply

        def stage(y: np.ndarray, cs_t: np.ndarray, sc_t: np.ndarray | None) -> None:
            """Everything after the product, in place on float64 ``y`` (constants of its shape)."""
            add(y, cs_t, y)
            if lim_r is not None:
                _clip(y, lim_r[0], lim_r[1], y)
            if rnd1:
                (floor if up else rint)(y, y)
            if clip16:
                _clip(y, c16_lo, c16_hi, y)
            if sc_t is not None:
                multiply(y, sc_t, y)
                if add2_r is not None:
                    add(y, add2_r, y)
                    floor(y, y)
                else:
                    rint(y, y)
            if zp_r is not None:
                add(y, zp_r, y)
            _clip(y, lo, hi, y)  # integral values: the caller casts or stores them

        def run(x: np.ndarray) -> np.ndarray:
            if x.ndim > 2:  # np.dot of an N-d array does not reach BLAS's matrix product
                return run(x.reshape(math.prod(x.shape[:-1]), x.shape[-1])).reshape(*x.shape[:-1], m)
            macs = x.size * m
            ws = (ws32 if wi is None else wi) if macs >= f32_from else ws64
            if x.size >= big:
                with blas_single_thread(macs):
                    y = np.dot(x, ws)
            else:
                y = np.dot(x, ws)  # (K,) or (N, K) . (K, M): matmul's result, less call overhead
            # (the product is dropped as soon as it is converted: fewer large buffers alive, fewer
            # fresh pages for the allocator to fault in)
            if ws is wi:
                y = y.astype(np.int32)
                st, tl = ints.run, itiles  # type: ignore[union-attr]
            else:
                if ws is ws32:
                    y = y.astype(np.float64)  # then same-type adds: faster than one mixed-type add
                st, tl = stage, tiles
            if y.ndim == 1:
                st(y, *tl[None])
            elif y.shape[0] <= chunk:
                st(y, *tl[y.shape[0]])
            else:
                _by_blocks(y, st, tl, chunk)
            return y
        return run


class _Tiles(dict):  # type: ignore[type-arg]
    """The per-channel vectors ``vecs`` (each (M,) or None) in a product's shape: ``tiles[None]`` the
    vectors, ``tiles[n]`` each tiled to (n, M) (made on first use, read-only; a few row counts kept).
    A ufunc on operands of one shape skips NumPy's broadcasting, which costs ~0.5 us on a one-row
    layer and runs ~2x slower on many rows of a few dozen channels."""

    def __init__(self, vecs: tuple[np.ndarray | None, ...]) -> None:
        super().__init__({None: vecs})
        self.vecs = vecs

    def __missing__(self, n: int | None) -> tuple[np.ndarray | None, ...]:
        if n is None:
            return self.vecs
        t = tuple(None if v is None else np.tile(v, (n, 1)) for v in self.vecs)
        for a in t:
            if a is not None:
                a.flags.writeable = False
        if len(self) > _MAX_TILES:  # batch sizes changing from call to call: keep a few
            self.clear()
            self[None] = self.vecs
        self[n] = t
        return t


def _by_blocks(y: np.ndarray, stage: Callable[..., None], tiles: _Tiles, chunk: int) -> np.ndarray:
    """``stage(y, *constants)`` in place on (N, M) ``y`` by blocks of ``chunk`` C-contiguous rows,
    with the constants in each block's shape. Returns ``y``."""
    for s in range(0, y.shape[0], chunk):
        blk = y[s:s + chunk]
        stage(blk, *tiles[blk.shape[0]])
    return y


class _IntStage:
    """The sa8 ROUND_UP output stage in int32 (see :meth:`PreparedFc._float_stage`): per-channel
    ``c`` (bias, input zero-point correction and the first rounding half), shifts ``pre`` and ``sh``,
    multipliers ``mul``, ``add`` (second rounding half plus the output zero point times ``2**sh``),
    the 16-bit clamp, the output clamp ``[lo, hi]``."""

    def __init__(self, c: np.ndarray, pre: np.ndarray, mul: np.ndarray, add: np.ndarray, sh: np.ndarray,
                 clip16: bool, lo: int, hi: int) -> None:
        m = c.shape[0]

        def vec(v: np.ndarray) -> np.ndarray:
            a = np.ascontiguousarray(np.broadcast_to(v, (m,)), np.int32)
            a.flags.writeable = False
            return a
        # uniform shifts as 0-d arrays (no tiles), per-channel ones as vectors
        self._pre = np.array(pre[0], np.int32) if m and np.all(pre == pre[0]) else None
        self._sh = np.array(sh[0], np.int32) if m and np.all(sh == sh[0]) else None
        self._shift1 = bool(m and pre.max() > 0)
        self.vectors = (vec(c), vec(mul), vec(add), None if self._pre is not None else vec(pre),
                        None if self._sh is not None else vec(sh))
        self._clip16 = clip16
        self._lo, self._hi = np.array(lo, np.int32), np.array(hi, np.int32)
        self._l16, self._h16 = np.array(-32768, np.int32), np.array(32767, np.int32)

    def run(self, y: np.ndarray, c: np.ndarray, mul: np.ndarray, add: np.ndarray, pre: np.ndarray | None,
            sh: np.ndarray | None) -> None:
        """The stage in place on int32 accumulators ``y`` (constants of its shape)."""
        np.add(y, c, y)
        if self._shift1:
            np.right_shift(y, self._pre if pre is None else pre, y)
        if self._clip16:
            _clip(y, self._l16, self._h16, y)
        np.multiply(y, mul, y)
        np.add(y, add, y)
        np.right_shift(y, self._sh if sh is None else sh, y)
        _clip(y, self._lo, self._hi, y)


def prepare_fc(w: np.ndarray, bias: np.ndarray, q: FxQuant | Sa8Quant, bounds: tuple[int, int],
               out_dtype: np.dtype | type = I64) -> PreparedFc:
    """:func:`fully_connected` with the weights, bias and parameters fixed: a callable of the input.

    Args:
        w, bias, q, bounds: as for :func:`fully_connected` (copied: later changes to the caller's
            arrays do not reach the prepared layer).
        out_dtype: dtype of the returned values (e.g. the output container's).

    Returns:
        A :class:`PreparedFc`: ``f(x)`` equals ``fully_connected(x, w, bias, q, bounds).astype(out_dtype)``
        under the platform in force at the call.
    """
    return PreparedFc(w, bias, q, bounds, out_dtype)


def prepare_pointwise(w: np.ndarray, bias: np.ndarray, q: FxQuant | Sa8Quant, bounds: tuple[int, int],
                      out_dtype: np.dtype | type = I64) -> PreparedFc | None:
    """A 1x1 convolution of stride 1 without padding as the prepared fully connected layer of its
    weights: every output pixel is the product of its input pixel's channels, so ``f(x)`` on
    ``(..., H, W, C_in)`` integers equals ``conv2d_hwcn(x, w, bias, q, stride=(1, 1), pad=(0, 0),
    out_hw=(H, W), bounds=bounds)`` (the caller checks the geometry and the integer input).

    Unlike :func:`pymli.kernels.conv_prepared.prepare_conv`, which takes the plain kernel beyond its
    per-call size limit, any size goes through the prepared product (for 1x1 layers it runs ~2x the
    plain kernel's rate at 4 M multiply-adds: no im2col copy, the int32 output stage).

    Args:
        w: (1, 1, C_in, C_out) weights (HWCN).
        bias, q, bounds, out_dtype: as for :func:`prepare_fc`.

    Returns:
        The :class:`PreparedFc`, or None for other weights shapes and for weights with a zero point
        (the convolution's weights offset is not the fully connected layer's).
    """
    if w.ndim != 4 or w.shape[:2] != (1, 1) or (isinstance(q, Sa8Quant) and _eff_offset(q.w_zp)):
        return None
    return prepare_fc(w.reshape(w.shape[2], w.shape[3]), bias, q, bounds, out_dtype)
