"""TFLM reference ADD / SUB (int8, int16, int32), MUL, MINIMUM / MAXIMUM, with NumPy broadcasting."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import MliError, Status
from ..kernels import _jit
from . import quant_util as qu
from .quant_util import quantize_multiplier

__all__ = ["AddSubParams", "add_sub_params", "add_sub", "prepare_add_sub", "add_sub_int32", "mul_params", "mul",
           "minimum_maximum", "sum_params", "add_n", "cumsum"]


@dataclass(frozen=True)
class AddSubParams:
    """``ArithmeticParams`` of a quantised ADD / SUB (TFLM ``CalculateOpDataAdd`` / ``...Sub``)."""

    input1_offset: int
    input2_offset: int
    output_offset: int
    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int


def add_sub_params(s1: float, zp1: int, s2: float, zp2: int, so: float, zpo: int, *,
                   int16: bool, sub: bool) -> AddSubParams:
    """TFLM's ADD / SUB Prepare: rescale both inputs to twice the larger input scale.

    ADD computes the ratios in double from the float32 scales; SUB computes
    ``2 * max(s1, s2)`` and the ratios in float32 and converts to double afterwards (as the two
    TFLM sources differ).

    Args:
        s1: input 1 scale (float32 value). zp1: its zero point.
        s2: input 2 scale. zp2: its zero point.
        so: output scale. zpo: output zero point.
        int16: int16 output (left shift 15) rather than int8 (20).
        sub: SUB's float32 arithmetic rather than ADD's double.

    Returns:
        the :class:`AddSubParams`.
    """
    ls = 15 if int16 else 20
    f1, f2, fo = np.float32(s1), np.float32(s2), np.float32(so)
    if sub:
        twice = np.float32(2) * max(f1, f2)
        r1 = float(np.float32(f1 / twice))
        r2 = float(np.float32(f2 / twice))
        ro = float(np.float32(twice / (np.float32(1 << ls) * fo)))
    else:
        twice = 2.0 * float(max(f1, f2))
        r1 = float(f1) / twice
        r2 = float(f2) / twice
        ro = twice / ((1 << ls) * float(fo))
    m1, sh1 = quantize_multiplier(r1)
    m2, sh2 = quantize_multiplier(r2)
    mo, sho = quantize_multiplier(ro)
    return AddSubParams(-int(zp1), -int(zp2), int(zpo), ls, m1, sh1, m2, sh2, mo, sho)


def add_sub(x1: np.ndarray, x2: np.ndarray, p: AddSubParams, *, act_min: int, act_max: int,
            sub: bool = False) -> np.ndarray:
    """TFLM quantised ``Add`` / ``Sub`` (int8, int16; broadcasting as ``BroadcastAdd6DSlow``).

    Args:
        x1: int8 / int16 input 1.
        x2: input 2 of the same dtype, broadcastable with ``x1``.
        p: :func:`add_sub_params`.
        act_min: clamp low.
        act_max: clamp high.
        sub: subtract instead of add.

    Returns:
        the broadcast result in the inputs' dtype.

    Raises:
        MliError: mismatched dtypes.
    """
    if x1.dtype != x2.dtype or x1.dtype not in (np.int8, np.int16):
        raise MliError(Status.TYPE_MISMATCH, f"{x1.dtype} / {x2.dtype}")
    a = _scaled_input(x1, p.input1_offset, p.left_shift, p.input1_multiplier, p.input1_shift)
    b = _scaled_input(x2, p.input2_offset, p.left_shift, p.input2_multiplier, p.input2_shift)
    raw = qu.wrap(a - b if sub else a + b, 32)
    out = qu.multiply_by_quantized_multiplier_smaller_than_one_exp(
        raw, p.output_multiplier, p.output_shift) + p.output_offset
    return np.clip(out, act_min, act_max).astype(x1.dtype)


def _scaled_input(x: np.ndarray, offset: int, left_shift: int, multiplier: int, shift: int) -> np.ndarray:
    """One input of :func:`add_sub` rescaled to the common scale (int64 array of int32 values)."""
    a = qu.wrap((x.astype(np.int64) + offset) << left_shift, 32)
    return qu.multiply_by_quantized_multiplier_smaller_than_one_exp(a, multiplier, shift)


_INDEX = {np.dtype(np.int8): np.uint8, np.dtype(np.int16): np.uint16}


def prepare_add_sub(p: AddSubParams, dtype: np.dtype | type, *, act_min: int, act_max: int, sub: bool = False,
                    const1: np.ndarray | None = None, const2: np.ndarray | None = None
                    ) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    """:func:`add_sub` prepared: int8 as the table of its results over every pair of input values (one
    gather a call; with the JIT on and inputs that repeat along their leading axes only, one compiled call:
    :func:`pymli.kernels._jit_lut.gather_pairs`); int16 with each input's rescaling (element-wise) as a
    table over its 65536 values, or computed once for a constant input, a call gathering, adding, and
    applying the output rescaling with its constants bound (the same values); int16 inputs of one size with
    the JIT on: that step as one compiled call (:func:`pymli.kernels._jit_requant.add_sub16`).

    Args:
        p: :func:`add_sub_params`. dtype: the inputs' dtype (int8 / int16).
        act_min: clamp low. act_max: clamp high. sub: subtract.
        const1: input 1 when constant. const2: input 2 when constant.

    Returns:
        ``add_sub(x1, x2) -> array`` (a constant input's argument is ignored), or None (int16 with an
        output shift above 0, which only the general function handles).
    """
    dt = np.dtype(dtype)
    if dt == np.int8:  # every (x1, x2) pair: a 256 x 256 table of add_sub's own results, one gather a call
        v = np.arange(256, dtype=np.uint8).view(np.int8)
        table = add_sub(np.repeat(v, 256), np.tile(v, 256), p, act_min=act_min, act_max=act_max, sub=sub)
        table.flags.writeable = False
        hi1 = None if const1 is None else np.asarray(const1, dt).view(np.uint8).astype(np.intp) << 8
        lo2 = None if const2 is None else np.asarray(const2, dt).view(np.uint8).astype(np.intp)

        plans: dict[tuple, tuple | None] = {}  # (input shapes) -> (output shape, repeats of x1, of x2) or None
        gather: list = [None]  # the compiled gather, once found (its module's guard kept)
        state, empty = _jit._STATE, np.empty  # the JIT switch, read per call (set_enabled)

        def add_sub8(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
            if hi1 is None and lo2 is None and state["on"]:
                key = (x1.shape, x2.shape)
                plan = plans.get(key, False)
                if plan is False:
                    plan = plans[key] = _pairs_plan(*key)
                g = gather[0]
                if g is None and plan is not None:
                    lut = _jit.compiled("_jit_lut")
                    g = gather[0] = None if lut is None else lut.gather_pairs
                if g is not None and plan is not None:
                    # the same gather as one compiled call (tiny tensors: ~1/3 of the NumPy one's time)
                    shape, r1, r2 = plan
                    out = empty(shape, table.dtype)
                    g(table, _repeated(x1, r1), _repeated(x2, r2), out.reshape(-1))
                    return out
            if hi1 is None:
                i = x1.view(np.uint8).astype(np.intp)
                i <<= 8
            else:
                i = hi1
            return np.take(table, np.bitwise_or(i, x2.view(np.uint8) if lo2 is None else lo2))
        return add_sub8
    if dt not in _INDEX or p.output_shift > 0:
        return None
    index = _INDEX[dt]
    values = np.arange(1 << (8 * dt.itemsize), dtype=index).view(dt)

    def side(offset: int, m: int, sh: int, const: np.ndarray | None) -> np.ndarray:
        src = values if const is None else np.asarray(const, dt)
        t = _scaled_input(src, offset, p.left_shift, m, sh)
        t.flags.writeable = False
        return t
    t1 = side(p.input1_offset, p.input1_multiplier, p.input1_shift, const1)
    t2 = side(p.input2_offset, p.input2_multiplier, p.input2_shift, const2)
    wrap = int(np.abs(t1).max(initial=0)) + int(np.abs(t2).max(initial=0)) >= 1 << 31
    mo, so, zo = p.output_multiplier, p.output_shift, p.output_offset
    lo, hi = int(act_min), int(act_max)

    # the compiled step (one call, the same values): int16, multiplier and shift as its mbqm32 takes them,
    # broadcasting where each input repeats along the leading axes only (its own index: the output's modulo
    # its size)
    jit_ok = dt == np.int16 and 0 <= mo < 1 << 31 and so >= -31
    none = np.zeros(0, np.uint16)
    f1, f2 = t1.reshape(-1), t2.reshape(-1)
    shapes: dict[tuple, tuple | None] = {}  # (input shapes) -> the output's, or None: not the compiled step

    def add_sub_(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        key = (t1.shape if const1 is not None else x1.shape, t2.shape if const2 is not None else x2.shape)
        shape = shapes[key] if key in shapes else shapes.setdefault(key, _leading_broadcast(*key))
        if jit_ok and shape is not None:
            jit = _jit.compiled("_jit_requant")
            if jit is not None:
                out = np.empty(shape, dt)
                jit.add_sub16(none if const1 is not None else x1.reshape(-1).view(index),
                              none if const2 is not None else x2.reshape(-1).view(index), f1, f2, out.reshape(-1),
                              sub, mo, so, zo, lo, hi)
                return out
        a = t1 if const1 is not None else np.take(t1, x1.view(index))
        b = t2 if const2 is not None else np.take(t2, x2.view(index))
        raw = np.subtract(a, b) if sub else np.add(a, b)
        return qu.requantize_clamp(raw, mo, so, zo, lo, hi, dt, wrap)
    return add_sub_


def _pairs_plan(s1: tuple, s2: tuple) -> tuple | None:
    """(output shape, times input 1 repeats, times input 2 repeats) of inputs of shapes ``s1``, ``s2`` that
    repeat along the leading axes only (:func:`_leading_broadcast`), else None."""
    shape = _leading_broadcast(s1, s2)
    if shape is None:
        return None
    n = math.prod(shape)
    return shape, n // math.prod(s1), n // math.prod(s2)


def _repeated(x: np.ndarray, reps: int) -> np.ndarray:
    """``x``'s values in row-major order, the whole sequence ``reps`` times (1-D)."""
    if reps == 1:
        return x.reshape(-1)
    out = np.empty((reps, x.size), x.dtype)
    out[...] = x.reshape(-1)
    return out.reshape(-1)


def _leading_broadcast(s1: tuple, s2: tuple) -> tuple | None:
    """The broadcast shape of ``s1`` and ``s2`` when each, less its leading 1s, is a suffix of it (then
    element ``i`` of the row-major output takes element ``i % size`` of each input), else None."""
    out = max(s1, s2, key=lambda s: (len(s), int(np.prod(s))))
    for s in (s1, s2):
        core = s[next((k for k, n in enumerate(s) if n != 1), len(s)):]
        if core != out[len(out) - len(core):] or 0 in s:
            return None
    return out if np.broadcast_shapes(s1, s2) == out else None


def add_sub_int32(x1: np.ndarray, x2: np.ndarray, *, act_min: int = -(2**31),
                  act_max: int = 2**31 - 1, sub: bool = False) -> np.ndarray:
    """TFLM int32 ADD / SUB (no quantisation): wrapping sum, clamped.

    Args:
        x1: int32 input. x2: int32 input, broadcastable.
        act_min: clamp low. act_max: clamp high.
        sub: subtract.

    Returns:
        int32 result.
    """
    r = x1.astype(np.int64) - x2 if sub else x1.astype(np.int64) + x2
    return np.clip(qu.wrap(r, 32), act_min, act_max).astype(np.int32)


def mul_params(s1: float, s2: float, so: float) -> tuple[int, int]:
    """TFLM MUL Prepare: ``QuantizeMultiplier(double(s1) * double(s2) / double(so))``."""
    return quantize_multiplier(float(np.float32(s1)) * float(np.float32(s2)) / float(np.float32(so)))


def mul(x1: np.ndarray, x2: np.ndarray, *, zp1: int, zp2: int, zpo: int, multiplier: int,
        shift: int, act_min: int, act_max: int) -> np.ndarray:
    """TFLM ``reference_integer_ops::Mul`` (int8 / int16 with offsets), broadcasting.

    Args:
        x1: int8 / int16 input. x2: same dtype, broadcastable.
        zp1: zero point 1. zp2: zero point 2. zpo: output zero point.
        multiplier: :func:`mul_params` multiplier. shift: its shift.
        act_min: clamp low. act_max: clamp high.

    Returns:
        the product in the inputs' dtype.
    """
    prod = qu.wrap((x1.astype(np.int64) - zp1) * (x2.astype(np.int64) - zp2), 32)
    out = qu.multiply_by_quantized_multiplier(prod, multiplier, shift) + zpo
    return np.clip(out, act_min, act_max).astype(x1.dtype)


def minimum_maximum(x1: np.ndarray, x2: np.ndarray, *, maximum: bool) -> np.ndarray:
    """TFLM MINIMUM / MAXIMUM: element-wise on the raw values (same quantisation), broadcasting.

    Args:
        x1: input. x2: input of the same dtype, broadcastable.
        maximum: MAXIMUM if True, MINIMUM otherwise.

    Returns:
        the result in the inputs' dtype.
    """
    return (np.maximum if maximum else np.minimum)(x1, x2)


def sum_params(input_scale: float, input_zp: int, output_scale: float, output_zp: int) -> dict:
    """TFLM ADD_N / CUMSUM int8 Prepare: inputs rescaled to twice their scale with a left shift of
    20 (``QuantizeMultiplierSmallerThanOneExp`` for both factors).

    Returns:
        dict with offset, multipliers and shifts.
    """
    twice = 2.0 * float(np.float32(input_scale))
    mi, si = quantize_multiplier(float(np.float32(input_scale)) / twice)
    mo, so = quantize_multiplier(twice / ((1 << 20) * float(np.float32(output_scale))))
    return dict(input_offset=-int(input_zp), output_offset=int(output_zp), left_shift=20,
                input_multiplier=mi, input_shift=si, output_multiplier=mo, output_shift=so)


def _scaled(v: np.ndarray, p: dict) -> np.ndarray:
    return qu.multiply_by_quantized_multiplier_smaller_than_one_exp(
        qu.wrap(np.asarray(v, np.int64) << p["left_shift"], 32), p["input_multiplier"], p["input_shift"])


def _out(acc: np.ndarray, p: dict) -> np.ndarray:
    r = qu.multiply_by_quantized_multiplier_smaller_than_one_exp(
        qu.wrap(acc, 32), p["output_multiplier"], p["output_shift"]) + p["output_offset"]
    return np.clip(r, -128, 127).astype(np.int8)


def add_n(xs: list[np.ndarray], p: dict) -> np.ndarray:
    """TFLM ``reference_ops::AddN`` for int8: the accumulator starts at the scaled input offset
    itself (the C code's ``x = input1_offset``), then adds every scaled input.

    Args:
        xs: int8 inputs of one shape and quantisation.
        p: :func:`sum_params`.

    Returns:
        int8 sum.
    """
    acc = _scaled(np.full(xs[0].shape, p["input_offset"]), p)
    for x in xs:  # one vectorised term per input tensor
        acc = qu.wrap(acc + _scaled(x.astype(np.int64) + p["input_offset"], p), 32)
    return _out(acc, p)


def cumsum(x: np.ndarray, axis: int, p: dict, *, exclusive: bool = False,
           reverse: bool = False) -> np.ndarray:
    """TFLM ``reference_ops::CumSum`` for int8 (accumulator starting at the scaled input offset).

    Args:
        x: int8 input. axis: summation axis. p: :func:`sum_params`.
        exclusive: exclude the current element. reverse: sum from the end.

    Returns:
        int8 array of ``x``'s shape.
    """
    ax = axis % x.ndim
    y = _scaled(x.astype(np.int64) + p["input_offset"], p)
    if reverse:
        y = np.flip(y, ax)
    init = _scaled(np.array(p["input_offset"]), p)
    c = qu.wrap(np.cumsum(y, axis=ax) + init, 32)  # int32 wrap at the end equals wrapping each step
    if exclusive:
        c = np.concatenate([np.broadcast_to(init, c.take([0], axis=ax).shape), c.take(
            range(c.shape[ax] - 1), axis=ax)], axis=ax)
    if reverse:
        c = np.flip(c, ax)
    return _out(c, p)
