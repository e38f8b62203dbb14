"""Quantise float data into MLI tensors and back.

:func:`quantize` chooses the quantisation parameters the way MLI users do when they are not given,
then converts exactly as ``mli_hlp_convert_tensor`` does from ``MLI_EL_FP_32``; :func:`dequantize`
is the C conversion to ``MLI_EL_FP_32``. Parameter choice:

* FX_8 / FX_16: the largest ``frac_bits`` with which the data (or ``range``) converts without
  saturating (:func:`choose_fx_frac_bits`);
* SA_8: asymmetric, from the minimum and maximum (widened to include 0):
  ``scale = (max - min) / 254`` as a normalised 16-bit ``scale`` with ``scale_frac_bits``, and
  ``zero_point = round(-(max + min) / 2 / scale)``; per tensor, or per index of ``dim``;
* SA_32 (biases): symmetric, ``scale = max|x| / (2**31 - 1)``, zero point 0. For a bias of an
  sa8 MAC kernel, pass ``scale`` and ``scale_frac_bits`` = the product of the input and weights
  scales, as MLI requires.

Example:
    >>> import numpy as np
    >>> from pymli.quant import quantize, dequantize
    >>> t = quantize(np.array([-1.0, 0.5, 0.25], np.float32), "FX_8")
    >>> t.frac_bits, t.numpy().tolist()
    (7, [-128, 64, 32])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from .arith.convert import (
    bit_length,
    dequantize_float,
    float_scale,
    quant_multiplier,
    quantize_float,
    round_half_away,
    split_scale,
)
from .errors import MliError, Status
from .formats import ElType
from .tensor import MLI_MAX_RANK, Tensor

__all__ = ["quantize", "dequantize", "choose_fx_frac_bits", "choose_sa_params", "fx_frac_for_range", "sa_scale_repr",
           "float_to_mli_scale", "bias_scale", "sa8_range_params", "quantize_values"]

_FRAC_MIN, _FRAC_MAX = -128, 127  # int8 fields


def _along(p: Any, ndim: int, axis: int | None) -> np.ndarray:
    """Parameter value(s) shaped to broadcast along ``axis`` of an ``ndim``-d array."""
    v = np.asarray(p, np.int64).reshape(-1)
    if v.size == 1 or axis is None:
        return v.reshape(()) if v.size == 1 else v
    return v.reshape([-1 if i == axis else 1 for i in range(ndim)])


def _to_container(x: np.ndarray, el: ElType, scale: Any, frac_bits: Any, zero_point: Any,
                  axis: int | None = None) -> np.ndarray:
    """float32 -> container values as ``mli_hlp_convert_tensor`` from ``MLI_EL_FP_32`` computes them."""
    nd = x.ndim
    q = quantize_float(x, _along(scale, nd, axis), _along(frac_bits, nd, axis), _along(zero_point, nd, axis), el.bits)
    return np.asarray(q).astype(el.dtype)


def _from_container(x: np.ndarray, scale: Any, frac_bits: Any, zero_point: Any, axis: int | None = None) -> np.ndarray:
    """Container values -> float32 as ``mli_hlp_convert_tensor`` to ``MLI_EL_FP_32`` computes them."""
    nd = x.ndim
    return dequantize_float(x.astype(np.int64), _along(scale, nd, axis), _along(frac_bits, nd, axis),
                            _along(zero_point, nd, axis))


def _el(el_type: ElType | str) -> ElType:
    return ElType[el_type.removeprefix("MLI_EL_")] if isinstance(el_type, str) else ElType(el_type)


def _minmax(x: np.ndarray, dim: int, rng: Any) -> tuple[np.ndarray, np.ndarray]:
    """Minimum and maximum per index of ``dim`` (1-element arrays for ``dim < 0``)."""
    if rng is not None:
        lo, hi = (np.asarray(v, dtype=np.float64).reshape(-1) for v in rng)
        return lo, hi
    if x.size == 0:
        return np.zeros(1), np.zeros(1)
    if dim < 0:
        return np.asarray([np.min(x)], np.float64), np.asarray([np.max(x)], np.float64)
    axes = tuple(i for i in range(x.ndim) if i != dim)
    return np.min(x, axis=axes).astype(np.float64), np.max(x, axis=axes).astype(np.float64)


def choose_fx_frac_bits(data: npt.ArrayLike | None, el_type: ElType | str = ElType.FX_16, *,
                        range: tuple[float, float] | None = None) -> int:
    """The largest ``frac_bits`` with which ``data`` (or ``range``) converts to ``el_type`` unsaturated.

    Args:
        data: float values (ignored when ``range`` is given).
        el_type: FX_8 or FX_16.
        range: (min, max) of the values to represent.

    Returns:
        frac_bits in [-128, 127]; ``bits - 1`` for all-zero data.
    """
    el = _el(el_type)
    if not el.is_fx:
        raise ValueError(f"choose_fx_frac_bits needs an FX type, not {el.c_name}")
    x = None if data is None else np.asarray(data, dtype=np.float32)
    lo, hi = _minmax(x if x is not None else np.zeros(0, np.float32), -1, range)
    lo_v, hi_v = float(np.min(lo)), float(np.max(hi))
    if not (np.isfinite(lo_v) and np.isfinite(hi_v)):
        raise ValueError("choose_fx_frac_bits: data must be finite")
    qmin, qmax = -(1 << (el.bits - 1)), (1 << (el.bits - 1)) - 1
    maxabs = max(abs(lo_v), abs(hi_v))
    if maxabs == 0.0:
        return el.bits - 1

    def fits(fb: int) -> bool:
        q = float_scale(np.asarray([lo_v, hi_v], np.float32), quant_multiplier(1, fb))
        return bool(np.all((q >= qmin) & (q <= qmax)))

    fb = int(np.clip((el.bits - 1) - np.frexp(maxabs)[1], _FRAC_MIN, _FRAC_MAX))
    while fb > _FRAC_MIN and not fits(fb):
        fb -= 1
    while fb < _FRAC_MAX and fits(fb + 1):
        fb += 1
    return fb


def choose_sa_params(data: npt.ArrayLike | None, el_type: ElType | str = ElType.SA_8, *, dim: int = -1,
                     range: tuple[Any, Any] | None = None,
                     scale: Any = None, zero_point: Any = None,
                     symmetric: bool = False, levels: float = 254, round_up: bool = False,
                     zero_point_at: str = "centre") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Zero points, 16-bit scales and ``scale_frac_bits`` for SA data (see the module docstring).

    The default policy is MLI's test quantiser's; :mod:`pymli.models` networks use ``levels=255``,
    ``round_up=True`` (the calibrated range always fits) and ``zero_point_at="min"``.

    Args:
        data: float values (ignored when ``range`` is given).
        el_type: SA_8 (asymmetric) or SA_32 (symmetric, zero point 0).
        dim: per-axis dimension, or -1 for one set of parameters.
        range: (min, max), scalars or per-axis arrays, instead of the data's.
        scale: real-valued scale(s) to use instead of choosing them (zero points follow).
        zero_point: SA_8 zero point(s) to keep; the scale is then the smallest that fits the range
            around them (MLI's weights need zero point 0).
        symmetric: shorthand for ``zero_point=0`` (the usual choice for weights).
        levels: SA_8 steps the range [min, max] is divided into (254 or 255; fewer keep headroom).
        round_up: round the 16-bit scale up, never below the real step (else to nearest).
        zero_point_at: SA_8 zero point ``"centre"`` (``round(-(max + min) / 2 / step)``) or ``"min"``
            (``-128 - round(min / step)``: the minimum lands on -128).

    Returns:
        (zero_point, scale, scale_frac_bits): int16, int16, int8 arrays (one entry per index of
        ``dim``, or one entry).
    """
    el = _el(el_type)
    if not el.is_sa:
        raise ValueError(f"choose_sa_params needs an SA type, not {el.c_name}")
    x = None if data is None else np.asarray(data, dtype=np.float32)
    if x is None and range is None:
        raise ValueError("choose_sa_params needs data or a range")
    lo, hi = _minmax(x if x is not None else np.zeros(0, np.float32), dim, range)
    lo, hi = np.broadcast_arrays(np.minimum(lo, 0.0), np.maximum(hi, 0.0))
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError("choose_sa_params: data must be finite")
    if symmetric and zero_point is None:
        zero_point = 0
    fixed_zp = None
    if zero_point is not None and el is ElType.SA_8:
        fixed_zp = np.broadcast_to(np.asarray(zero_point, np.float64).reshape(-1), lo.shape)
        if np.any(fixed_zp < -128) or np.any(fixed_zp > 127):
            raise ValueError(f"choose_sa_params: zero point {np.asarray(zero_point).tolist()} outside int8")
    if scale is None:
        if fixed_zp is not None:
            # Smallest step putting hi at or below 127 and lo at or above -128 around the zero point.
            up = np.where(fixed_zp < 127, hi / np.maximum(127.0 - fixed_zp, 1.0), np.where(hi > 0, np.inf, 0.0))
            down = np.where(fixed_zp > -128, -lo / np.maximum(fixed_zp + 128.0, 1.0), np.where(lo < 0, np.inf, 0.0))
            real = np.maximum(up, down)
        elif el is ElType.SA_8:
            real = (hi - lo) / float(levels)
        else:
            real = np.maximum(np.abs(lo), np.abs(hi)) / float(2**31 - 1)
        real = np.where(real > 0, real, 1.0)
    else:
        real = np.broadcast_to(np.asarray(scale, dtype=np.float64).reshape(-1), lo.shape)
        if np.any(real <= 0):
            raise ValueError("choose_sa_params: scales must be positive")
    # A 16-bit scale with int8 frac_bits spans [2**-113, 32767 * 2**128]: clamp chosen scales into it
    # (data with a smaller range then quantise to the zero point).
    if scale is None:
        real = np.clip(real, 2.0**-113, 2.0**127)
    s, frac = split_scale(real, 16, round_up=round_up)
    if np.any(frac > _FRAC_MAX) or np.any(frac < _FRAC_MIN):
        raise ValueError(f"choose_sa_params: scale {real} outside the 16-bit scale / int8 frac_bits range")
    if fixed_zp is not None:
        zp = fixed_zp
    elif el is ElType.SA_8:
        q_real = s.astype(np.float64) * np.ldexp(1.0, -frac)
        if zero_point_at == "min":
            zp = np.clip(-128 - round_half_away(lo / q_real), -128, 127)
        else:
            zp = np.clip(round_half_away(-(hi + lo) / 2.0 / q_real), -128, 127)
    else:
        zp = np.zeros_like(s)
    return zp.astype(np.int16), s.astype(np.int16), frac.astype(np.int8)


def fx_frac_for_range(max_abs: float, bits: int, headroom_bits: int = 0, *, max_frac: int | None = None) -> int:
    """Largest ``frac_bits`` with which ``max_abs`` fits a signed ``bits``-bit FX value unrounded.

    ``max_abs * 2**frac <= 2**(bits - 1) - 1``, minus ``headroom_bits`` extra integer bits, and at
    most ``max_frac`` (e.g. ``in + weights`` fractional bits of a MAC layer's output).

    Args:
        max_abs: largest magnitude to represent.
        bits: container bits (8 or 16).
        headroom_bits: integer bits kept free.
        max_frac: upper bound of the result.

    Returns:
        frac_bits; for zero (or non-finite) ``max_abs``: ``max_frac`` if given, else ``bits - 1``.
    """
    if not np.isfinite(max_abs) or max_abs <= 0:
        return int(max_frac) if max_frac is not None else bits - 1
    frac = math.floor(math.log2(((1 << (bits - 1)) - 1) / max_abs)) - headroom_bits
    return int(frac) if max_frac is None else min(int(frac), int(max_frac))


def sa_scale_repr(step: npt.ArrayLike, *, round_up: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Real scale factors as MLI's ``scale * 2**-scale_frac_bits`` with ``scale`` in [2**14, 2**15).

    Args:
        step: positive real scale(s) (non-positive values are taken as 1).
        round_up: never make the represented step smaller than asked (else to nearest, ties away).

    Returns:
        (scale, scale_frac_bits) as int64 arrays (see :func:`pymli.arith.convert.split_scale`).
    """
    st = np.atleast_1d(np.asarray(step, np.float64))
    st = np.where(st > 0, st, 1.0)
    scale, sfb = split_scale(st, 16, round_up=round_up)
    return scale.astype(np.int64), sfb.astype(np.int64)


def float_to_mli_scale(s: float) -> tuple[int, int]:
    """A positive real scale as MLI's ``(scale, scale_frac_bits)`` pair.

    The mantissa is kept to 15 significant bits: ``scale`` lies in ``[2**14, 2**15)`` and
    ``scale_frac_bits = 14 - floor(log2(s))``, rounded to nearest with ties away from zero, exactly
    (a rounding up to ``2**15`` becomes ``(2**14, scale_frac_bits - 1)``). The relative error is at
    most ``2**-15``.

    Raises:
        ValueError: ``s`` not positive and finite, or ``scale_frac_bits`` outside MLI's int8 field
            (scales outside about ``[2**-113, 2**14]``).
    """
    s = float(s)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"scale {s!r} is not a positive finite number")
    q, sfb = (int(v) for v in split_scale(s, 16))
    if not _FRAC_MIN <= sfb <= _FRAC_MAX:
        raise ValueError(f"scale {s!r} needs scale_frac_bits {sfb}, outside MLI's int8 range")
    return q, sfb


def bias_scale(in_scale: int, in_frac: int, w_scale: npt.ArrayLike, w_frac: npt.ArrayLike
               ) -> tuple[np.ndarray, np.ndarray]:
    """SA_32 bias parameters MLI's ``mli_chk_bias_scale_asym`` accepts: in scale x weights scale.

    The (up to 30-bit) product of the 16-bit scales is brought back to 15 bits by a right shift
    rounding half up (integer arithmetic), and the shift is taken off the fractional bits.

    Args:
        in_scale, in_frac: the input's scale and scale_frac_bits.
        w_scale, w_frac: the weights' scale(s) and scale_frac_bits (per channel or one).

    Returns:
        (scale, scale_frac_bits) int64 arrays of the weights' length.
    """
    ws = np.atleast_1d(np.asarray(w_scale, np.int64))
    wf = np.atleast_1d(np.asarray(w_frac, np.int64))
    prod = int(in_scale) * ws
    sh = np.maximum(bit_length(prod).astype(np.int64) - 15, 0)
    sc = np.where(sh > 0, (prod + (np.int64(1) << np.maximum(sh - 1, 0))) >> sh, prod)
    over = sc >= (1 << 15)
    sc = np.where(over, sc >> 1, sc)
    sh = sh + over
    return sc.astype(np.int64), (int(in_frac) + wf - sh).astype(np.int64)


def sa8_range_params(lo: float, hi: float, **policy: Any) -> tuple[int, int, int]:
    """Per-tensor SA_8 ``(zero_point, scale, scale_frac_bits)`` for values spanning [lo, hi].

    Args:
        lo, hi: the range (widened to include 0).
        **policy: keyword options of :func:`choose_sa_params` (``levels``, ``round_up``,
            ``zero_point_at``).
    """
    zp, sc, sfb = choose_sa_params(None, ElType.SA_8, range=(lo, hi), **policy)
    return int(zp[0]), int(sc[0]), int(sfb[0])


def quantize_values(x: npt.ArrayLike, step: npt.ArrayLike, zero_point: npt.ArrayLike, el_type: ElType | str
                    ) -> np.ndarray:
    """Offline quantisation of float data: ``round(x / step) + zero_point`` saturated to ``el_type``.

    Rounding to nearest, ties away from zero (:func:`pymli.arith.convert.round_half_away`, in float64):
    the convention of every offline conversion in pymli (network quantiser, TFLite graph boundary).
    ``step`` and ``zero_point`` broadcast against ``x``.

    Returns:
        An array of ``el_type``'s container dtype.
    """
    el = _el(el_type)
    q = round_half_away(np.asarray(x, np.float64) / np.asarray(step, np.float64)) + np.asarray(zero_point, np.int64)
    lo, hi = -(1 << (el.bits - 1)), (1 << (el.bits - 1)) - 1
    return np.clip(q, lo, hi).astype(el.dtype)


def quantize(array: npt.ArrayLike, el_type: ElType | str, *, frac_bits: int | None = None, dim: int = -1,
             zero_point: Any = None, scale: Any = None, scale_frac_bits: Any = None,
             range: tuple[Any, Any] | None = None, symmetric: bool = False) -> Tensor:
    """A new dense tensor of ``el_type`` holding ``array`` quantised as ``mli_hlp_convert_tensor`` does.

    Args:
        array: float data, rank 0 to 4.
        el_type: FX_8, FX_16, SA_8, SA_32 or FP_32 (an :class:`ElType` or its name).
        frac_bits: FX fractional bits (chosen from the data when ``None``).
        dim: SA per-axis dimension (-1: per tensor).
        zero_point: SA zero point(s) (chosen when ``None``).
        scale: SA scale(s): integers with ``scale_frac_bits``, or real values without it
            (chosen from the data when ``None``).
        scale_frac_bits: fractional bits of integer ``scale`` values.
        range: (min, max) (scalars, or per-axis arrays for SA) to choose parameters from instead of
            the data.
        symmetric: SA_8 with zero point 0 (what MLI's MAC kernels require of weights).

    Returns:
        The quantised :class:`Tensor`.

    Raises:
        MliError: BAD_TENSOR for a rank above 4 or a bad ``dim``.
        ValueError: parameters that cannot be represented.
    """
    el = _el(el_type)
    x = np.asarray(array, dtype=np.float32)
    if x.ndim > MLI_MAX_RANK:
        raise MliError(Status.BAD_TENSOR, f"quantize: rank {x.ndim} > {MLI_MAX_RANK}")
    if el is ElType.FP_32:
        return Tensor.from_numpy(x.copy(), el)
    if el.is_fx:
        fb = choose_fx_frac_bits(x, el, range=range) if frac_bits is None else int(frac_bits)
        q = _to_container(x, el, 1, fb, 0)
        return Tensor.from_numpy(q, el, frac_bits=fb)
    if not el.is_sa:
        raise MliError(Status.NOT_SUPPORTED, f"quantize: {el.c_name} has no container")
    if dim >= x.ndim or (dim < -1):
        raise MliError(Status.BAD_TENSOR, f"quantize: dim {dim} for rank {x.ndim}")
    n = x.shape[dim] if dim >= 0 else 1
    if scale is not None and scale_frac_bits is not None:
        sc = np.broadcast_to(np.asarray(scale, np.int64).reshape(-1), (n,))
        sfb = np.broadcast_to(np.asarray(scale_frac_bits, np.int64).reshape(-1), (n,))
        if zero_point is None:
            real = sc.astype(np.float64) * np.ldexp(1.0, -sfb)
            zp = choose_sa_params(x, el, dim=dim, range=range, scale=real)[0]
        else:
            zp = zero_point
    else:
        zp_c, sc, sfb = choose_sa_params(x, el, dim=dim, range=range, scale=scale,
                                         zero_point=zero_point if scale is None else None, symmetric=symmetric)
        zp = zp_c if zero_point is None else zero_point
    zp = np.broadcast_to(np.asarray(zp, np.int64).reshape(-1), (n,))
    for name, v, lo_, hi_ in (("zero_point", zp, -32768, 32767), ("scale", sc, 1, 32767),
                              ("scale_frac_bits", sfb, -128, 127)):
        if np.any(v < lo_) or np.any(v > hi_):
            raise ValueError(f"quantize: {name} {np.asarray(v).tolist()} outside [{lo_}, {hi_}]")
    axis = dim if dim >= 0 else None
    q = _to_container(x, el, sc, sfb, zp, axis)
    if dim >= 0:
        return Tensor.from_numpy(q, el, zero_point=zp.copy(), scale=sc.copy(), scale_frac_bits=sfb.copy(), dim=dim)
    return Tensor.from_numpy(q, el, zero_point=int(zp[0]), scale=int(sc[0]), scale_frac_bits=int(sfb[0]))


def dequantize(t: Tensor) -> np.ndarray:
    """The tensor's values as float32, exactly as ``mli_hlp_convert_tensor`` to ``MLI_EL_FP_32`` computes them.

    Returns:
        float32 array of shape ``t.shape`` (0-d for a rank-0 tensor).
    """
    el = t.el_type
    x = t.numpy()
    if el is ElType.FP_32:
        return x.astype(np.float32)
    if el.is_fx:
        return _from_container(x, 1, int(t.frac_bits), 0)
    if not el.is_sa:
        raise MliError(Status.NOT_SUPPORTED, f"dequantize: {el.c_name} has no container")
    if t.dim >= 0:
        n = x.shape[t.dim]
        params = [np.asarray(getattr(t, k), np.int64).reshape(-1)[:n] for k in ("scale", "scale_frac_bits", "zero_point")]
        return _from_container(x, params[0], params[1], params[2], t.dim)
    return _from_container(x, int(t.scale), int(t.scale_frac_bits), int(t.zero_point))

