"""TFLM UNIDIRECTIONAL_SEQUENCE_LSTM, integer paths of ``lstm_eval`` (int8 8x8->16 and 16x8).

Per step and gate: ``FC(x) + FC(h)`` (int16, saturating), then the int16 sigmoid / tanh of
``reference_integer_ops`` (a 256-entry sigmoid table with linear interpolation); the cell state
(int16, scale a power of two) is ``f * c + i * g`` with TFLM's ``MulElementwise`` requantisation and
an optional clip; the hidden state is ``o * tanh(c)`` requantised to the hidden tensor. No peephole,
projection or layer normalisation (TFLM micro rejects them).

The input FCs of all steps are one exact BLAS product before the time loop (they do not depend on the
state); the loop itself is one compiled call with the JIT (:mod:`pymli.kernels._jit_lstm`: the recurrent
product, both requantisations, the gate tables, cell and hidden update), else NumPy per step with every
constant prepared once (the same values: tests/tflm/test_lstm_fast.py). A small operator with constant
weights (:func:`prepare_unidirectional_sequence_lstm`) is one compiled call in all, input products included.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import MliError, Status
from ..kernels import _jit
from ..kernels._blas import SMALL_PRODUCT, blas_single_thread
from . import quant_util as qu
from ._tables import SIGMOID_Q16
from .quant_util import quantize_multiplier

__all__ = ["sigmoid_int16", "tanh_int16", "checked_log2", "LstmGate", "LstmParams", "lstm_params",
           "unidirectional_sequence_lstm", "prepare_unidirectional_sequence_lstm", "GATES"]

GATES = ("input", "forget", "cell", "output")


def _sigmoid_table(x: np.ndarray, input_multiplier: int, input_left_shift: int,
                   step_bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shared front of the int16 sigmoid and tanh: rescale ``x``, look up ``SIGMOID_Q16`` at ``|v|``.

    Returns ``(v, uh, interp)``: the rescaled input (int64), its table index ``|v| >> step_bits`` before
    clamping, and the linear interpolation between the two entries scaled by ``2**step_bits``.
    """
    m, sh = (3 << input_left_shift, 0) if input_multiplier == 0 else (input_multiplier, input_left_shift)
    rnd = (1 << (sh - 1)) if sh > 0 else 0
    v = (x.astype(np.int64) * m + rnd) >> sh
    a = np.abs(v)
    uh = a >> step_bits
    idx = np.minimum(uh, 254)
    ua, ub = SIGMOID_Q16[idx], SIGMOID_Q16[idx + 1]
    return v, uh, (ua << step_bits) + (a & ((1 << step_bits) - 1)) * (ub - ua)


def sigmoid_int16(x: np.ndarray, input_multiplier: int = 0, input_left_shift: int = 0) -> np.ndarray:
    """TFLM ``reference_integer_ops::Logistic`` for int16 (Q3.12 in -> Q0.15 out by default).

    Args:
        x: int16 values.
        input_multiplier: 0 for a power-of-two input scale (then ``3 << input_left_shift``).
        input_left_shift: right shift applied after the multiplier (rounding half up).

    Returns:
        int16 array.
    """
    v, uh, interp = _sigmoid_table(x, input_multiplier, input_left_shift, 9)
    r = np.where(uh >= 255, 0x7FFF << 10, interp)
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1) >> 10
    return qu.wrap(r, 16).astype(np.int16)


def tanh_int16(x: np.ndarray, input_multiplier: int = 0, input_left_shift: int = 0) -> np.ndarray:
    """TFLM ``reference_integer_ops::Tanh`` for int16 (the same table at twice the argument).

    Args:
        x: int16 values.
        input_multiplier: 0 for a power-of-two input scale (then ``3 << input_left_shift``).
        input_left_shift: right shift applied after the multiplier.

    Returns:
        int16 array (Q0.15).
    """
    v, uh, interp = _sigmoid_table(x, input_multiplier, input_left_shift, 8)
    r = np.where(uh >= 255, 0xFFFF << 8, interp)
    r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1) >> 8
    return qu.wrap(r, 16).astype(np.int16)


@functools.lru_cache(maxsize=32)
def _int16_table(tanh: bool, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    """:func:`sigmoid_int16` / :func:`tanh_int16` of every int16, indexed by the input's uint16 bit pattern."""
    x = np.arange(1 << 16, dtype=np.uint16).view(np.int16)
    f = tanh_int16 if tanh else sigmoid_int16
    t = f(x, input_multiplier, input_left_shift)
    t.flags.writeable = False
    return t


def _lut16(x: np.ndarray, tanh: bool, input_multiplier: int = 0, input_left_shift: int = 0) -> np.ndarray:
    """:func:`sigmoid_int16` / :func:`tanh_int16` of an int16 array by table lookup (same values)."""
    return np.take(_int16_table(tanh, int(input_multiplier), int(input_left_shift)), x.view(np.uint16))


def checked_log2(x: float) -> tuple[int, bool]:
    """TFLM ``CheckedLog2``: ``(round(log2 x), |fraction| < 1e-3)`` in float32."""
    lg = np.float32(math.log(np.float32(x))) * (np.float32(1.0) / np.float32(math.log(np.float32(2.0))))
    rd = np.round(lg) if abs(lg - np.trunc(lg)) != 0.5 else np.trunc(lg) + np.sign(lg)
    return int(rd), bool(abs(lg - rd) < 1e-3)


@dataclass(frozen=True)
class LstmGate:
    """One gate: input and recurrent FC (weights, bias, requantisation to Q3.12)."""

    w_in: np.ndarray
    w_rec: np.ndarray
    bias: np.ndarray | None
    in_multiplier: int
    in_shift: int
    rec_multiplier: int
    rec_shift: int


@dataclass(frozen=True)
class LstmParams:
    """Everything TFLM's integer LSTM Prepare derives (``PrepareGateParametersInteger``)."""

    gates: dict
    input_zp: int
    hidden_zp: int
    cell_scale_power: int
    quantized_cell_clip: int
    cell_clip: float
    forget_cell: tuple[int, int]
    input_cell: tuple[int, int]
    output_hidden: tuple[int, int]
    cell_tanh: bool
    fused: _Fused | None = None


@dataclass(frozen=True)
class _Fused:
    """The four gates side by side (columns in :data:`GATES` order): weights transposed for ``x @ w``,
    biases (0 where a gate has none), multipliers and shifts per column; the input weights also as float32
    and float64 and the largest column sum of their magnitudes (:func:`_input_products`); the recurrent
    weights also as float64 (:func:`_steps`) and, for the compiled time loop, as int32 (C-contiguous) with
    the largest column sum of their magnitudes, and whether its multipliers and shifts suit that loop."""

    w_in: np.ndarray
    w_rec: np.ndarray
    bias: np.ndarray
    m_in: np.ndarray
    s_in: np.ndarray
    m_rec: np.ndarray
    s_rec: np.ndarray
    w_rec32: np.ndarray
    rec_abs: int
    w_in_f32: np.ndarray
    w_in_f64: np.ndarray
    in_abs: int
    w_rec_f64: np.ndarray
    jit_ok: bool


#: Below this depth a float64 product of int16-range values and int8 weights is exact whatever the
#: summation order: 2**20 * 2**17 * 2**8 = 2**45 < 2**53.
_F64_DEPTH = 1 << 20


def _fuse(gates: dict) -> _Fused:
    cols = [gates[g] for g in GATES]
    w_in = np.concatenate([q.w_in.astype(np.int64) for q in cols], 0).T
    w_rec = np.concatenate([q.w_rec.astype(np.int64) for q in cols], 0).T
    bias = np.concatenate([np.zeros(q.w_in.shape[0], np.int64) if q.bias is None else q.bias.astype(np.int64)
                           for q in cols])

    def per_col(name: str) -> np.ndarray:
        return np.concatenate([np.full(q.w_in.shape[0], getattr(q, name), np.int64) for q in cols])
    w_rec = np.ascontiguousarray(w_rec)
    return _Fused(w_in, w_rec, bias, per_col("in_multiplier"), per_col("in_shift"), per_col("rec_multiplier"),
                  per_col("rec_shift"), w_rec.astype(np.int32), int(np.abs(w_rec).sum(0).max(initial=0)),
                  w_in.astype(np.float32), w_in.astype(np.float64), int(np.abs(w_in).sum(0).max(initial=0)),
                  w_rec.astype(np.float64), _jit_ok(per_col("in_multiplier"), per_col("in_shift"))
                  and _jit_ok(per_col("rec_multiplier"), per_col("rec_shift")))


def _jit_ok(m: np.ndarray, s: np.ndarray) -> bool:
    """Whether :mod:`pymli.kernels._jit_lstm` takes these multipliers and shifts: non-negative multipliers,
    shifts of at least -31 (as ``QuantizeMultiplier`` makes them)."""
    return bool((np.asarray(m) >= 0).all() and (np.asarray(s) >= -31).all())


#: float32 sums are exact while every partial sum is an integer below 2**24 in magnitude.
_F32_EXACT = 1 << 24

#: The range of the LSTM's input / hidden types (a dict lookup: ``np.iinfo`` costs ~1 us a call).
_RANGE = {np.dtype(np.int8): (-128, 127), np.dtype(np.int16): (-32768, 32767)}


def _input_products(xs: np.ndarray, zp: int, fz: _Fused) -> np.ndarray:
    """The input FCs of every step at once, ``(xs - zp) @ w_in`` without the bias: exact integer values in
    float32 when ``max |x - zp| * max_col sum |w|`` bounds every partial sum below :data:`_F32_EXACT`, else
    in float64 (:data:`_F64_DEPTH`), else int64; on one BLAS thread."""
    lo, hi = _RANGE[xs.dtype]
    bound = max(hi - zp, zp - lo) * fz.in_abs
    macs = xs.shape[0] * fz.w_in.size
    if macs < SMALL_PRODUCT:  # one thread anyway
        return _products(xs, zp, fz, bound)
    with blas_single_thread(macs):
        return _products(xs, zp, fz, bound)


def _products(xs: np.ndarray, zp: int, fz: _Fused, bound: int) -> np.ndarray:
    """:func:`_input_products`' choice of type and its product."""
    if bound < _F32_EXACT:
        return np.subtract(xs, np.float32(zp), dtype=np.float32) @ fz.w_in_f32
    if fz.w_in.shape[0] < _F64_DEPTH:
        return np.subtract(xs, np.float64(zp), dtype=np.float64) @ fz.w_in_f64
    return np.subtract(xs, zp, dtype=np.int64) @ fz.w_in


def _dot(x: np.ndarray, w: np.ndarray, w_f64: np.ndarray) -> np.ndarray:
    """Exact int64 ``x @ w`` (float64 BLAS on ``w_f64``, the same weights, within the depth bound of
    :data:`_F64_DEPTH`)."""
    if w.shape[0] < _F64_DEPTH:
        return (x.astype(np.float64) @ w_f64).astype(np.int64)
    return x.astype(np.int64) @ w


def _fc_multiplier(s_in: float, s_w: float) -> tuple[int, int]:
    prod = np.float32(s_in) * np.float32(s_w)  # float32 product (GetQuantizedConvolutionMultipler)
    return quantize_multiplier(float(prod) / float(np.float32(2.0**-12)))


def lstm_params(*, input_scale: float, input_zp: int, hidden_scale: float, hidden_zp: int,
                cell_scale: float, weights: dict, bias: dict, w_in_scale: dict, w_rec_scale: dict,
                cell_clip: float, cell_tanh: bool = True) -> LstmParams:
    """TFLM's integer LSTM Prepare.

    Args:
        input_scale: input scale. input_zp: input zero point.
        hidden_scale: hidden (output state) scale. hidden_zp: its zero point.
        cell_scale: cell state scale (a power of two).
        weights: ``{gate: (w_in (state, input) int8, w_rec (state, state) int8)}`` for the gates
            in :data:`GATES`.
        bias: ``{gate: int32 / int64 (state,) or None}``.
        w_in_scale: ``{gate: float32 scale}``. w_rec_scale: ``{gate: float32 scale}``.
        cell_clip: the op's cell clip (0: none).
        cell_tanh: the cell gate's activation is tanh (else sigmoid).

    Returns:
        the :class:`LstmParams`.
    """
    gates = {}
    for g in GATES:
        mi, si = _fc_multiplier(input_scale, w_in_scale[g])
        mr, sr = _fc_multiplier(hidden_scale, w_rec_scale[g])
        gates[g] = LstmGate(weights[g][0], weights[g][1], bias[g], mi, si, mr, sr)
    csp, _ = checked_log2(cell_scale)
    qclip = int(min(max(float(np.float32(cell_clip)) / float(np.float32(cell_scale)), -32768.0),
                    32767.0))
    s15 = 2.0**-15
    cs = float(np.float32(cell_scale))
    fc = quantize_multiplier(s15 * cs / cs)
    ic = quantize_multiplier(s15 * s15 / cs)
    oh = quantize_multiplier(s15 * s15 / float(np.float32(hidden_scale)))
    return LstmParams(gates, int(input_zp), int(hidden_zp), csp, qclip, float(cell_clip), fc, ic, oh,
                      cell_tanh, _fuse(gates))


def _clamp(x: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``np.clip`` of an int64 array with int bounds, as two ufuncs (np.clip's argument handling costs more
    than the clamp on the LSTM's small vectors)."""
    return np.minimum(np.maximum(x, lo), hi)


def _requant16(acc: np.ndarray, m: np.ndarray, s: np.ndarray, wide: bool) -> np.ndarray:
    """A gate FC's accumulator to Q3.12 (int64 multiplier for 16x8, int32 wrap for 8x8), saturated to int16."""
    if wide:
        r = qu.multiply_by_quantized_multiplier_int64(acc, m, s)
    else:
        r = qu.multiply_by_quantized_multiplier(qu.wrap(acc, 32), m, s)
    return _clamp(r, -32768, 32767)


@dataclass(frozen=True)
class _Rq:
    """``MultiplyByQuantizedMultiplier(int32 x, m, s)`` planned once for :func:`_rq`: the multiplier(s), the
    right shift(s), their half and where they are positive, whether some shift is to the left, whether the
    plan holds (no right shift of 32 or more, no multiplier of ``-2**31``: else :func:`_rq` takes
    :mod:`quant_util`'s general form)."""

    m: np.ndarray | int
    s: np.ndarray | int
    right: np.ndarray | int
    half: np.ndarray | int
    rpos: np.ndarray | bool
    left: bool
    plain: bool


def _rq_plan(m: np.ndarray | int, s: np.ndarray | int) -> _Rq:
    ma, sa = np.asarray(m, np.int64), np.asarray(s, np.int64)
    right = np.maximum(-sa, 0)
    plain = not bool((right >= 32).any() or (ma == -(1 << 31)).any())
    half = (np.int64(1) << np.minimum(right, 62)) >> 1
    if ma.ndim == 0:
        return _Rq(int(ma), int(sa), int(right), int(half), int(right) > 0, int(sa) > 0, plain)
    return _Rq(ma, sa, right, half, right > 0, bool((sa > 0).any()), plain)


def _rq(x: np.ndarray, q: _Rq, int32: bool) -> np.ndarray:
    """``quant_util.multiply_by_quantized_multiplier(x, q.m, q.s)`` in fewer NumPy calls: with no left shift and
    ``x`` already int32 values (``int32``) the wrap is the identity; SRDHM is ``(x * m + 2**30) >> 31`` for
    multipliers other than ``-2**31``; ``RoundingDivideByPOT`` by shifts of 1..31 is
    ``(x + half - [x < 0]) >> right`` (by 0: ``x``)."""
    if not q.plain:
        return qu.multiply_by_quantized_multiplier(x, q.m, q.s)
    if q.left:
        x = qu.wrap(x << np.maximum(q.s, 0), 32)
    elif not int32:
        x = qu.wrap(x, 32)
    r = x * q.m
    r += 1 << 30
    r >>= 31
    if q.rpos is False:
        return r
    neg = r < 0
    if q.rpos is not True:
        neg &= q.rpos
    r += q.half
    r -= neg
    r >>= q.right
    return r


def unidirectional_sequence_lstm(x: np.ndarray, p: LstmParams, hidden: np.ndarray, cell: np.ndarray,
                                 *, time_major: bool = False
                                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TFLM integer ``EvalLstm``: every step of every batch.

    Args:
        x: int8 / int16 input, (batch, time, input) or (time, batch, input) if ``time_major``.
        p: :func:`lstm_params`.
        hidden: hidden state (batch, state), ``x``'s dtype.
        cell: int16 cell state (batch, state).
        time_major: layout of ``x`` and of the output.

    Returns:
        ``(output (x's layout, state), new hidden, new cell)``.

    Raises:
        MliError: dtype or shape mismatch.
    """
    if x.dtype not in (np.int8, np.int16) or hidden.dtype != x.dtype or cell.dtype != np.int16:
        raise MliError(Status.TYPE_MISMATCH, f"LSTM x {x.dtype} hidden {hidden.dtype} cell {cell.dtype}")
    seq = np.swapaxes(x, 0, 1) if not time_major else x  # (T, B, I)
    nt, nb = seq.shape[0], seq.shape[1]
    fz = p.fused if p.fused is not None else _fuse(p.gates)
    ns = fz.w_rec.shape[0]
    h = hidden.reshape(nb, -1).astype(np.int64)
    c = cell.reshape(nb, -1).astype(np.int64)
    wide = x.dtype == np.int16
    hlo, hhi = _RANGE[x.dtype]
    # the input FCs of every step at once (they do not depend on the recurrence)
    xin = _input_products(seq.reshape(nt * nb, -1), p.input_zp, fz).reshape(nt, nb, 4 * ns)
    sh = 15 + p.cell_scale_power - 3
    ctanh = (3, -sh) if sh < 0 else (0, sh)  # the cell state's tanh: its input scale
    jit = _jit.compiled("_jit_lstm")
    if jit is not None and fz.jit_ok and min(p.forget_cell[0], p.input_cell[0], p.output_hidden[0]) >= 0 \
            and min(p.forget_cell[1], p.input_cell[1], p.output_hidden[1]) >= -31:  # as _jit_ok
        out, h, c = _steps_jit(jit, xin, h, c, p, fz, wide, ctanh, hlo, hhi)
    else:
        gin = _requant16(xin.astype(np.int64) + fz.bias, fz.m_in, fz.s_in, wide)
        out, h, c = _steps(gin, h, c, p, fz, wide, ctanh, hlo, hhi)
    out = out.astype(x.dtype)
    if not time_major:
        out = np.swapaxes(out, 0, 1)
    return out, h.astype(x.dtype).reshape(hidden.shape), c.astype(np.int16).reshape(cell.shape)


def _steps(gin: np.ndarray, h: np.ndarray, c: np.ndarray, p: LstmParams, fz: _Fused, wide: bool,
           ctanh: tuple[int, int], hlo: int, hhi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The recurrence in NumPy, one step at a time: ``(outputs (T, B, U), last hidden, last cell)``, int64."""
    ns = fz.w_rec.shape[0]
    rec_q, fc_q, ic_q, oh_q = (_rq_plan(fz.m_rec, fz.s_rec), _rq_plan(*p.forget_cell), _rq_plan(*p.input_cell),
                               _rq_plan(*p.output_hidden))
    rec32 = max(hhi - p.hidden_zp, p.hidden_zp - hlo) * fz.rec_abs < (1 << 31)  # no wrap of the products
    outs = []
    for t in range(gin.shape[0]):  # the recurrence is sequential
        acc = _dot(h - p.hidden_zp, fz.w_rec, fz.w_rec_f64)
        if wide:
            rec = qu.multiply_by_quantized_multiplier_int64(acc, fz.m_rec, fz.s_rec)
        else:
            rec = _rq(acc, rec_q, rec32)
        gates = _clamp(gin[t] + _clamp(rec, -32768, 32767), -32768, 32767).astype(np.int16)  # columns: i, f, g, o
        sig = _lut16(gates, False).astype(np.int64)
        i, f, o = sig[:, :ns], sig[:, ns:2 * ns], sig[:, 3 * ns:]
        g = _lut16(gates[:, 2 * ns:3 * ns], True).astype(np.int64) if p.cell_tanh else sig[:, 2 * ns:3 * ns]
        # int16 products: int32 values
        c = _clamp(_rq(f * c, fc_q, True), -32768, 32767)
        c = _clamp(c + _clamp(_rq(i * g, ic_q, True), -32768, 32767), -32768, 32767)
        if p.cell_clip > 0:
            c = _clamp(c, -p.quantized_cell_clip, p.quantized_cell_clip)
        tc = _lut16(c.astype(np.int16), True, *ctanh).astype(np.int64)
        h = _clamp(_rq(tc * o, oh_q, True) + p.hidden_zp, hlo, hhi)
        outs.append(h)
    return np.stack(outs, 0), h, c


def _steps_jit(jit: object, xin: np.ndarray, h: np.ndarray, c: np.ndarray, p: LstmParams, fz: _Fused, wide: bool,
               ctanh: tuple[int, int], hlo: int, hhi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The input part's bias and requantisation and :func:`_steps` as one compiled call
    (:func:`pymli.kernels._jit_lstm.lstm_steps`) on the products of :func:`_input_products`: int32 recurrent
    products and accumulators when every column's sum is bounded below ``2**31`` (``|h - zp| * sum |w|``),
    else int64."""
    nt, nb, n4 = xin.shape
    bound = max(hhi - p.hidden_zp, p.hidden_zp - hlo) * fz.rec_abs
    w = fz.w_rec32 if bound < (1 << 31) else fz.w_rec
    h, c = np.array(h, np.int64), np.array(c, np.int64)  # own, C-contiguous: written in place
    out = np.empty((nt, nb, n4 // 4), np.int64)
    k = np.array([*p.forget_cell, *p.input_cell, *p.output_hidden, hlo, hhi,
                  p.quantized_cell_clip if p.cell_clip > 0 else 0], np.int64)
    jit.lstm_steps(xin, fz.bias, fz.m_in, fz.s_in, h, c, w, np.empty(n4, w.dtype), fz.m_rec, fz.s_rec, wide,
                   p.hidden_zp, _int16_table(False, 0, 0), _int16_table(True, 0, 0), _int16_table(True, *ctanh),
                   p.cell_tanh, k, out)
    return out, h, c


#: Input products (steps x batch x input x 4 x state MACs) up to which a prepared operator is one compiled
#: call (:func:`pymli.kernels._jit_lstm.lstm_op`, scalar int64 products); larger ones take BLAS for them.
_WHOLE_MACS = 1 << 16

_INT16 = np.dtype(np.int16)


def prepare_unidirectional_sequence_lstm(p: LstmParams, dtype: np.dtype, *, time_major: bool = False
                                         ) -> Callable[[np.ndarray, np.ndarray, np.ndarray],
                                                       tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`unidirectional_sequence_lstm` with constant parameters, prepared: with the JIT on (at the
    call) and at most :data:`_WHOLE_MACS` input products, one compiled call
    (:func:`pymli.kernels._jit_lstm.lstm_op`: the same values) on operands derived here once; else
    :func:`unidirectional_sequence_lstm`.

    Args:
        p: :func:`lstm_params` (its ``fused`` gates are used). dtype: the input's type (int8 or int16).
        time_major: layout of the input and of the output.

    Returns:
        ``step(x, hidden, cell) -> (output, new hidden, new cell)``, as :func:`unidirectional_sequence_lstm`.
    """
    fz = p.fused if p.fused is not None else _fuse(p.gates)
    dt = np.dtype(dtype)
    ni, ns = fz.w_in.shape[0], fz.w_rec.shape[0]
    n4 = 4 * ns
    ok = fz.jit_ok and dt in _RANGE and min(p.forget_cell[0], p.input_cell[0], p.output_hidden[0]) >= 0 \
        and min(p.forget_cell[1], p.input_cell[1], p.output_hidden[1]) >= -31  # as _jit_ok
    hlo, hhi = _RANGE.get(dt, (0, 0))
    sh = 15 + p.cell_scale_power - 3
    ctanh = (3, -sh) if sh < 0 else (0, sh)
    wv = np.ascontiguousarray(np.concatenate([fz.w_in, fz.w_rec, np.stack([fz.bias, fz.m_in, fz.s_in, fz.m_rec,
                                                                           fz.s_rec])]), np.int64)
    k = np.array([p.input_zp, p.hidden_zp, dt == _INT16, p.cell_tanh, time_major, *p.forget_cell, *p.input_cell,
                  *p.output_hidden, hlo, hhi, p.quantized_cell_clip if p.cell_clip > 0 else 0], np.int64)
    tabs = np.stack([_int16_table(False, 0, 0), _int16_table(True, 0, 0), _int16_table(True, *ctanh)]) if ok \
        else None
    entry: list[Callable[..., None]] = []  # the compiled operator's native entry, made on the first JIT call
    on, empty = _jit.is_on, np.empty

    def step(x: np.ndarray, hidden: np.ndarray, cell: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if ok and on() and x.dtype == dt and hidden.dtype == dt and cell.dtype == _INT16 and x.ndim == 3 \
                and x.shape[2] == ni and x.size * n4 <= _WHOLE_MACS:
            if not entry:
                jit = _jit.compiled("_jit_lstm")
                if jit is not None:
                    entry.append(jit.op_entry(dt))
            if entry:
                nb = x.shape[1] if time_major else x.shape[0]
                # the reshapes check the states' sizes (the compiled call does not check bounds)
                h0 = hidden if hidden.shape == (nb, ns) else hidden.reshape(nb, ns)
                c0 = cell if cell.shape == (nb, ns) else cell.reshape(nb, ns)
                out, h, c = empty((x.shape[0], x.shape[1], ns), dt), empty((nb, ns), dt), empty((nb, ns), _INT16)
                entry[0](x, h0, c0, wv, k, tabs, out, h, c)
                return (out, h if h.shape == hidden.shape else h.reshape(hidden.shape),
                        c if c.shape == cell.shape else c.reshape(cell.shape))
        return unidirectional_sequence_lstm(x, p, hidden, cell, time_major=time_major)
    return step
