"""Arithmetic of MLI's recurrent kernels: RNN dense, LSTM cell and GRU cell.

The recurrent kernels of MLI 2.0.2 combine several families of integer operations; the one that
is specific to them is mirrored here by small vectorised helpers (the kernels in
:mod:`pymli.kernels.recurrent` only orchestrate them): the dense part (``rnn_dense_op`` of
``bricks/impl/mli_krn_rnn_dense_op_ref.h``), one MAC series per input, each series rescaled on its
own to the intermediate format (``ir_rnn_result_requantize``), the partial results added with
saturation and cast to the output container (``ir_result_cast_relu_store``).

The parts shared with the other kernels come from :mod:`pymli.arith.requant` (bias alignment, sa8
output multipliers, ``define_quant_params``), :mod:`pymli.arith.eltwise` (the element-wise
products and sums inside the cells, ``eltwise_perform_operation``, taken here in the operand
order and tuple layout of the cells) and the sigmoid / tanh lookups the cells apply to their
gates from :mod:`pymli.arith.lut`. All helpers compute in int64 and model the
C container widths explicitly (``bits`` arguments); rounding follows the current platform through
:mod:`pymli.arith.rounding`.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

from ..formats import RoundMode
from .eltwise import EltOp, fx_eltwise, fx_params, sa8_eltwise, sa8_params
from .requant import acc_container_bits
from .rounding import add_sat, asr_rnd, limits, norm_cast, round_mode, sat, trunc_div, wrap

__all__ = [
    "c_div",
    "norm_cast",
    "mac",
    "MacPlan",
    "fx_ir_requantize",
    "sa_ir_requantize",
    "sa_ir_cast",
    "eltwise_fx",
    "eltwise_sa8",
    "K_SIGM_OUT",
    "K_TANH_OUT",
    "RoundShift",
    "SaSeriesPlan",
    "FxSeriesPlan",
    "FusedGates",
    "fx_mul_plan",
    "fx_addsub_plan",
]

I64 = np.int64

# Output quantisation the sa8 sigmoid / tanh give their result (zero point, scale_frac_bits; scale 1).
K_SIGM_OUT = (-128, 8)
K_TANH_OUT = (0, 7)


# ---------------------------------------------------------------------------------- basics
c_div = trunc_div
"""C integer division (truncation toward zero): :func:`pymli.arith.rounding.trunc_div`."""


class MacPlan:
    """The weights of MAC series prepared once: ``plan(x)`` = ``sum_j x[..., j] * w[g, j, m]``.

    ``w``: (G, N, M) int. Calls return exact int64 (..., G, M). float64 BLAS is used when every
    partial sum is provably below 2**53 (N * max|x| * wmax, exact in a double), int64
    arithmetic otherwise; ``wmax`` bounds ``|w|`` (the container's limit for 8- and 16-bit weights). ``colsum`` holds ``sum_j w[g, j, m]`` (the zero-point additive).
    """

    def __init__(self, w: npt.ArrayLike) -> None:
        w = np.asarray(w)
        if w.dtype.kind not in "iu":
            w = w.astype(I64)
        self.g, self.n, self.m = w.shape
        self._w = w
        if w.dtype.itemsize <= 2:  # the container's limit bounds |w|
            self.wmax = 1 << (8 * w.dtype.itemsize - 1)
        else:
            self.wmax = max(-int(w.min(initial=0)), int(w.max(initial=0)))

    @functools.cached_property
    def w2f(self) -> np.ndarray:
        """The weights as float64 ``(N, G * M)`` (exact: int weights are far below 2**53)."""
        return self._layout().astype(np.float64)

    def _layout(self) -> np.ndarray:
        """The weights ``(N, G * M)`` in their own (narrow) type: one pass, before the conversion."""
        return self._w[0] if self.g == 1 else np.moveaxis(self._w, 1, 0).reshape(self.n, self.g * self.m)

    def scaled(self, scale: np.ndarray) -> np.ndarray:
        """The weights times a per-gate factor as float64 ``(N, G * M)``, in one pass.

        Args:
            scale: float64 ``(G, 1)``; every product must be exact (the caller's bound).

        Returns:
            A new float64 array.
        """
        return np.multiply(np.moveaxis(self._w, 1, 0), scale[None], dtype=np.float64,
                           order="C").reshape(self.n, self.g * self.m)

    @functools.cached_property
    def w2(self) -> np.ndarray:
        """The weights as int64 ``(N, G * M)``."""
        return self._layout().astype(I64)

    @functools.cached_property
    def colsum(self) -> np.ndarray:
        """Sum of the weights over their input axis (int64), for the zero-point correction."""
        return self._w.sum(axis=1, dtype=I64)

    def __call__(self, x: npt.ArrayLike) -> np.ndarray:
        x = np.asarray(x, dtype=I64)
        lead = x.shape[:-1]
        if self.n == 0:
            return np.zeros(lead + (self.g, self.m), dtype=I64)
        if self.n * int(np.abs(x).max(initial=0)) * self.wmax < 2**53:
            r = (x.astype(np.float64) @ self.w2f).astype(I64)
        else:
            r = x @ self.w2
        return r.reshape(lead + (self.g, self.m))


def mac(x: npt.ArrayLike, w: npt.ArrayLike) -> np.ndarray:
    """Exact dot products ``sum_j x[..., j] * w[g, j, m]``: ``MacPlan(w)(x)``.

    Args:
        x: int values ``(..., N)``.
        w: int weights ``(G, N, M)``.

    Returns:
        int64 array ``(..., G, M)``.
    """
    return MacPlan(w)(x)


# ---------------------------------------------------------------------------------- dense
def fx_ir_requantize(acc: npt.ArrayLike, out_shift: int, acc_bits: int) -> np.ndarray:
    """``ir_rnn_result_requantize`` for FX: rounding shift of one series to the output format.

    Args:
        acc: accumulators, any shape.
        out_shift: right shift; a negative one is a saturating left shift.
        acc_bits: 40 (``mli_acc40_t``, an int64 in the reference build; the shift is capped at 39)
            or 32 (``mli_acc32_t``).

    Returns:
        int64 array, shape of ``acc``.
    """
    cb = acc_container_bits(acc_bits)
    if cb == 64:
        out_shift = min(out_shift, 39)
    return asr_rnd(acc, out_shift, cb)


def sa_ir_requantize(acc: npt.ArrayLike, mul: npt.ArrayLike, shift: npt.ArrayLike) -> np.ndarray:
    """``ir_rnn_result_requantize`` (sa8): 64-bit product, rounding shift, saturation to int32.

    Args:
        acc: int32 accumulators, any shape.
        mul, shift: multiplier(s) and shift(s) broadcasting against ``acc``.

    Returns:
        int64 array of int32 values, the broadcast shape.
    """
    mul = np.asarray(mul, dtype=I64)
    prod = np.asarray(acc, dtype=I64) * mul
    # |acc| <= 2**31 bounds the product for RoundShift's plain (x + half) >> n.
    shift_plan = RoundShift(np.minimum(shift, 63), 64, (1 << 31) * int(np.abs(mul).max(initial=0)))
    return sat(shift_plan(prod), 32)


def sa_ir_cast(acc: npt.ArrayLike, out_zp: int) -> np.ndarray:
    """``ir_result_cast_relu_store`` (sa8): to int16, add the zero point, saturate to int8.

    Args:
        acc: int32 values, any shape.
        out_zp: output zero point.

    Returns:
        int64 array of int8 values, shape of ``acc``.
    """
    return sat(add_sat(sat(acc, 16), out_zp, 16), 8)


# ---------------------------------------------------------------------------------- eltwise
def eltwise_fx(op: str, a: npt.ArrayLike, b: npt.ArrayLike, fa: int, fb: int, fo: int,
               io_bits: int = 16) -> np.ndarray:
    """``eltwise_perform_operation`` for FX (no conversion): :func:`pymli.arith.eltwise.fx_eltwise`.

    Args:
        op: ``"add"``, ``"sub"`` or ``"mul"``.
        a, b: int operands, broadcastable shapes.
        fa, fb, fo: frac_bits of a, b and the output.
        io_bits: container bits (8 or 16).

    Returns:
        int64 array of output values, the broadcast shape.
    """
    e = EltOp(op)
    return np.asarray(fx_eltwise(e, a, b, fx_params(e, fa, fb, fo, io_bits), io_bits), dtype=I64)


def eltwise_sa8(op: str, a: npt.ArrayLike, b: npt.ArrayLike, qa: tuple[int, int, int],
                qb: tuple[int, int, int], qo: tuple[int, int, int]) -> np.ndarray:
    """``eltwise_perform_operation`` for sa8 (with conversion): :func:`pymli.arith.eltwise.sa8_eltwise`
    with the parameters ``eltwise_prepare_and_run`` derives for per-tensor quantisation.

    Args:
        op: ``"add"``, ``"sub"`` or ``"mul"``.
        a, b: int8 operands, broadcastable shapes.
        qa, qb, qo: ``(zero_point, scale, scale_frac_bits)`` of a, b and the output.

    Returns:
        int64 array of int8 values, the broadcast shape.
    """
    e = EltOp(op)
    return sa8_eltwise(e, a, b, sa8_params(e, *((s, f, z) for z, s, f in (qa, qb, qo))))


# ---------------------------------------------------------------------------------- planned steps
# The cells apply the same shifts, multipliers and weights at every time step to arrays of a few
# hundred values, where NumPy's per-call overhead dominates. The plans below fix everything that
# does not change between steps once per call and prove, from bounds on the operands, which
# saturations cannot trigger, so that a step is a handful of array operations. Whatever cannot be
# proven falls back to the general helpers above (same results, more operations).

I64_MAX = (1 << 63) - 1


class RoundShift:
    """``asr_rnd(x, n, bits)`` for a fixed shift ``n`` (an int or a per-row array) and ``|x| <= x_bound``.

    For ``1 <= n <= bits - 1`` (and ``x_bound + 2**(n-1)`` within int64) ROUND_UP is
    ``(x + half) >> n``, with the rounding add capped at the type's maximum when
    ``x_bound + half`` can exceed it (the C add saturates; adding a positive half never reaches
    the minimum); ROUND_CONVERGENT is
    ``(x + half - 1 + ((x >> n) & 1)) >> n``: with ``x = k * 2**n + f``, ``0 <= f < 2**n``, the
    sum carries into ``k`` exactly when ``f > half`` or ``f == half`` and ``k`` is odd (a tie goes
    to the even neighbour). Other shifts use :func:`~pymli.arith.rounding.asr_rnd` itself.
    """

    def __init__(self, n: npt.ArrayLike, bits: int, x_bound: int, mode: RoundMode | None = None) -> None:
        self.mode = round_mode(mode)
        self.bits = bits
        nmax = bits - 1
        if np.ndim(n) == 0:  # one shift: plain Python ints
            self.n = int(n)  # type: ignore[arg-type]
            half = 1 << max(self.n - 1, 0)
            max_half = half
            self.fast = 1 <= self.n <= nmax and int(x_bound) + half <= I64_MAX
        else:
            self.n = n_arr = np.asarray(n, dtype=I64)
            self.fast = bool(n_arr.size) and bool(np.all((n_arr >= 1) & (n_arr <= nmax)))
            if self.fast:
                half = I64(1) << (n_arr - 1)
                max_half = int(half.max())
                self.fast = int(x_bound) + max_half <= I64_MAX
        if not self.fast:
            return
        self.half = half
        self.half_m1 = half - 1
        self.up = self.mode is RoundMode.UP
        hi = limits(bits)[1]
        self.cap = hi if int(x_bound) + max_half > hi else None

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if not self.fast:
            return asr_rnd(x, self.n, self.bits, self.mode)
        if self.up:
            r = x + self.half
            if self.cap is not None:
                r = np.minimum(r, self.cap)
            return r >> self.n
        return (x + self.half_m1 + ((x >> self.n) & 1)) >> self.n

    def out_bound(self, x_bound: int) -> int:
        """A bound on ``|result|`` for ``|x| <= x_bound``.

        Args:
            x_bound: a bound on the input magnitude.

        Returns:
            The bound on the output magnitude.
        """
        if self.fast or (isinstance(self.n, int) and self.n >= 0):
            return int(x_bound)
        return (1 << (self.bits - 1))


def _plan_dot(w: MacPlan, x_bound: int):
    """Exact ``x @ w`` for ``|x| <= x_bound`` (float64 when every partial sum stays below 2**53)."""
    if w.n == 0:
        return lambda x: np.zeros(x.shape[:-1] + (w.g * w.m,), I64), 0
    bound = w.n * int(x_bound) * w.wmax
    if bound < 2**53:  # w.w2f converted on the first call
        return (lambda x: (x.astype(np.float64) @ w.w2f).astype(I64)), bound
    w2 = w.w2
    return (lambda x: x @ w2), bound


class SaSeriesPlan:
    """One sa8 MAC series of a recurrence, per step: int8 values ``x`` (..., N) to ``(..., G, M)``.

    The same as ``_sa_series`` + the per-series part of the sum in :mod:`pymli.kernels.recurrent`:
    ``sum_j (x_j - x_zp) * w[g, j, m]`` wrapped to 32 bits, plus the weight-zero-point additive
    (saturating), then :func:`sa_ir_requantize` with ``mul`` / ``shift`` (G, 1).
    For int8 ``x`` and an int8-range zero point, ``|x - x_zp| <= 128 + |x_zp|``.
    """

    def __init__(self, w: MacPlan, x_zp: int, w_zp: int, mul: np.ndarray, shift: np.ndarray) -> None:
        self.g, self.m, self.n = w.g, w.m, w.n
        self.w = w
        self.x_zp, self.w_zp = int(x_zp), int(w_zp)
        self.dot, bound = _plan_dot(w, 128 + abs(self.x_zp))
        self.wrap = bound > (1 << 31) - 1
        acc_bound = 1 << 31 if (self.wrap or self.w_zp) else bound
        self.mul = np.asarray(mul, dtype=I64)
        shift = np.minimum(np.asarray(shift, dtype=I64), 63)
        self.prod_bound = prod_bound = acc_bound * int(np.abs(self.mul).max(initial=0))
        self.shift = RoundShift(shift, 64, prod_bound)
        # ir_rnn_result_requantize saturates to int32; skipped when the shifted product provably fits.
        # |(p + half) >> n| <= (|p| >> n) + 1 for n >= 1.
        self.sat = not (self.shift.fast and (prod_bound >> int(shift.min())) + 1 < (1 << 31) - 1)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        acc = self.dot(x - self.x_zp).reshape(x.shape[:-1] + (self.g, self.m))
        if self.wrap:
            acc = wrap(acc, 32)
        if self.w_zp:
            other = wrap(-self.w_zp * x.sum(axis=-1) + self.n * self.x_zp * self.w_zp, 32)
            acc = add_sat(acc, other[..., None, None], 32)
        r = self.shift(acc * self.mul)
        return sat(r, 32) if self.sat else r


class FxSeriesPlan:
    """One FX MAC series of a recurrence, per step: values ``x`` (..., N) within 16 bits to ``(..., G, M)``.

    ``fx_ir_requantize(wrap_acc(x @ w, acc_bits), out_shift, acc_bits)``; :attr:`bound` bounds the result.
    """

    def __init__(self, w: MacPlan, out_shift: int, acc_bits: int) -> None:
        self.g, self.m = w.g, w.m
        self.w = w
        cb = 32 if acc_bits <= 32 else 64
        self.dot, bound = _plan_dot(w, 1 << 15)
        self.dot_bound = bound
        self.wrap = cb == 32 and bound > (1 << 31) - 1
        if self.wrap:
            bound = 1 << 31
        shift = min(out_shift, 39) if cb == 64 else out_shift
        self.shift = RoundShift(shift, cb, bound)
        self.bound = self.shift.out_bound(bound)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        acc = self.dot(x).reshape(x.shape[:-1] + (self.g, self.m))
        if self.wrap:
            acc = wrap(acc, 32)
        return self.shift(acc)


_F64_EXACT = 1 << 53


class FusedGates:
    """``clip(xr[t] + plan(x), bits) + offset`` of one recurrent series per step, as intp, in float64.

    ``plan`` is an :class:`SaSeriesPlan` or :class:`FxSeriesPlan`, ``xr`` (T, G, M) the input part
    of every frame (``|xr| <= x_bound``); ``offset`` turns the codes into indices of a table that
    starts at the lowest code. The multiplier and the power-of-two shift of each gate are folded
    into float64 weights ``w * mul * 2**-n`` and the weight-sum term of the input zero point into a
    constant, so a step is one product, the rounding, the clip and the cast: ROUND_UP is
    ``floor(y + 0.5)`` with the 0.5, ``xr`` and the offset folded into one constant (and the floor
    left to the cast, a truncation, when the clipped values are not negative); ROUND_CONVERGENT is
    ``rint(y)`` (ties to even) then ``+ xr + offset``. Exact: every integer ``x * w * mul``, every
    partial sum of the product, the zero-point constant and ``(xr + offset) * 2**n`` are integers
    below 2**53 in units of ``2**-n`` (checked by :meth:`of`), so no float operation rounds and the
    rounding of the real quotient is the rounding of the C shift. :meth:`of` returns None where
    the plan needs a wrap, a saturation or a shift that this cannot mirror.
    """

    def __init__(self, w: np.ndarray, k: np.ndarray | None, xr: np.ndarray, up: bool, bits: int,
                 offset: int, shape: tuple[int, int]) -> None:
        lo, hi = limits(bits)
        self.wf = w
        self.shape = shape
        self.up = up
        self.lo, self.hi = float(lo + offset), float(hi + offset)
        self.floor = lo + offset < 0
        if up:  # floor(y + k + 0.5) + xr + offset = floor(y + (k + xr + offset + 0.5)) for integer xr + offset
            self.c = xr + (offset + 0.5 if k is None else k + (offset + 0.5))
        else:
            self.k, self.xr = k, xr + offset

    @classmethod
    def of(cls, plan: "SaSeriesPlan | FxSeriesPlan", xr: np.ndarray, x_bound: int, bits: int,
           offset: int = 0) -> "FusedGates | None":
        """The fused step of ``plan`` with input parts ``xr``, or None if it would not be exact.

        Args:
            plan: the recurrent series (weights, multipliers, shifts).
            xr: input parts ``(T, G, M)`` (int), ``|xr| <= x_bound``.
            x_bound: a bound on ``|xr|``.
            bits: the clip (8 or 16 bits: the LUT input).
            offset: added to the clipped codes.

        Returns:
            A :class:`FusedGates` or None.
        """
        rs = plan.shift
        if not rs.fast or rs.cap is not None or getattr(plan, "wrap", False) or plan.w.n == 0:
            return None
        n = np.asarray(rs.n, dtype=I64).reshape(-1, 1) + np.zeros((plan.g, 1), I64)
        if isinstance(plan, SaSeriesPlan):
            if plan.w_zp or plan.sat:
                return None
            # |x . w * mul| <= 128 * N * wmax * |mul| and |zp * colsum * mul| <= |zp| * N * wmax * |mul|:
            # the plan's bound on the product is their sum.
            mul, bound = plan.mul.reshape(-1, 1), plan.prod_bound
        else:
            mul, bound = np.ones((plan.g, 1), I64), plan.dot_bound
        if bound + (int(x_bound) + abs(offset) + 1) * (1 << int(n.max())) >= _F64_EXACT:
            return None
        scale = np.ldexp(mul.astype(np.float64), -n)  # (G, 1): mul * 2**-n, exact
        zp = getattr(plan, "x_zp", 0)
        k = -zp * (plan.w.colsum * scale) if zp else None
        return cls(plan.w.scaled(scale), k, np.asarray(xr, np.float64), rs.up, bits, offset, (plan.g, plan.m))

    def __call__(self, x: np.ndarray, t: int) -> np.ndarray:
        """The clipped ``xr[t] + plan(x)`` plus the offset for the values ``x`` (N,), as intp (G, M)."""
        y = (x.astype(np.float64) @ self.wf).reshape(self.shape)
        if self.up:
            y += self.c[t]
            if self.floor:
                np.floor(y, out=y)
        else:
            if self.k is not None:
                y += self.k
            np.rint(y, out=y)
            y += self.xr[t]
        np.maximum(y, self.lo, out=y)
        np.minimum(y, self.hi, out=y)
        return y.astype(np.intp)


def fx_mul_plan(fa: int, fb: int, fo: int, io_bits: int = 16, a_max: int | None = None):
    """``eltwise_fx("mul", a, b, fa, fb, fo, io_bits)`` as a function of operands within ``io_bits``.

    The product of two such values is at most ``2**(2 * io_bits - 2)`` in magnitude, or
    ``a_max * 2**(io_bits - 1)`` for ``|a| <= a_max``. When the rounded product provably stays within
    ``io_bits`` (ROUND_UP gives at most ``(p + half) >> n`` and at least ``(-p + half) >> n`` for
    ``|product| <= p``; ROUND_CONVERGENT at most that and at least ``(-p + half - 1) >> n``) the
    saturation is left out.

    Args:
        fa, fb, fo: frac_bits of the two operands and the output.
        io_bits: container bits (8 or 16).
        a_max: a bound on ``|a|`` (default: the container's).

    Returns:
        A function ``(a, b) -> int64 array`` of the saturated products.
    """
    post = min(fa + fb - fo, 2 * io_bits - 1)
    p = (1 << (io_bits - 1)) * (1 << (io_bits - 1) if a_max is None else int(a_max))
    rs = RoundShift(post, 64, p)
    lo, hi = limits(io_bits)
    if rs.fast and rs.cap is None and (p + rs.half) >> post <= hi and (-p + rs.half - 1) >> post >= lo:
        if rs.up:
            half = rs.half
            return lambda a, b: (a * b + half) >> post
        return lambda a, b: rs(a * b)
    return lambda a, b: np.minimum(np.maximum(rs(a * b), lo), hi)


def fx_addsub_plan(op: str, fa: int, fb: int, fo: int, io_bits: int = 16):
    """``eltwise_fx(op, a, b, fa, fb, fo, io_bits)`` for ``op`` "add" / "sub" and operands within ``io_bits``.

    The operands are aligned by a left shift ``s`` of the one with fewer frac bits; with
    ``|a|, |b| <= 2**(io_bits - 1)`` and ``2**(io_bits - 1 + s1) + 2**(io_bits - 1 + s2) < 2**31``
    neither the saturating 32-bit shifts nor the saturating 32-bit sum can saturate, so they are
    plain int64 operations; the output shift is a :class:`RoundShift` (none when 0) and the
    result is saturated to ``io_bits``. Other formats use :func:`eltwise_fx` itself.

    Args:
        op: ``"add"`` or ``"sub"``.
        fa, fb, fo: frac_bits of the two operands and the output.
        io_bits: container bits (8 or 16).

    Returns:
        A function ``(a, b) -> int64 array`` equal to :func:`eltwise_fx` on such operands.
    """
    s1, s2 = max(fb - fa, 0), max(fa - fb, 0)
    post = min(max(fa, fb) - fo, 2 * io_bits - 1)
    bound = (1 << (io_bits - 1 + s1)) + (1 << (io_bits - 1 + s2))
    if op not in ("add", "sub") or bound > (1 << 31) - 1 or post < 0:
        return lambda a, b: eltwise_fx(op, a, b, fa, fb, fo, io_bits)
    lo, hi = limits(io_bits)
    combine = np.add if op == "add" else np.subtract
    rs = RoundShift(post, 64, bound) if post else None

    def run(a: npt.ArrayLike, b: npt.ArrayLike) -> np.ndarray:
        acc = combine(np.left_shift(a, s1, dtype=I64) if s1 else a, np.left_shift(b, s2, dtype=I64) if s2 else b,
                      dtype=I64)
        if rs is not None:
            acc = rs(acc)
        return np.minimum(np.maximum(acc, lo), hi)

    return run
