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
from .formats import ElType, enum_lookup
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


# ------------------------------------------------------------------------------ argument checks
# quant.py stands below checks/ and graph/ (it cannot use pymli.graph.args): its own few checks.
def _bad(status: Status, what: str, message: str) -> MliError:
    return MliError(status, f"{what}: {message}")


def _el(el_type: Any, what: str = "quant") -> ElType:
    """An element type from the enum, its C value or its name (``"SA_8"``, ``"sa8"``, ``"MLI_EL_SA_8"``, any case)."""
    e = enum_lookup(ElType, el_type, norm=lambda s: s.strip().upper().removeprefix("MLI_EL_").replace("_", ""))
    if e is not None:
        return e  # type: ignore[return-value]
    raise _bad(Status.TYPE_MISMATCH, what, f"el_type {el_type!r:.40}: one of {', '.join(e.name for e in ElType)}")


def _floats(array: Any, what: str) -> np.ndarray:
    """Float data as float32 (what ``mli_hlp_convert_tensor`` reads from ``MLI_EL_FP_32``): numeric,
    rank 0..4, not empty, every value a finite float32."""
    if array is None or isinstance(array, (str, bytes, dict)):
        raise _bad(Status.BAD_TENSOR, what, f"data {type(array).__name__}: an array of numbers expected")
    try:
        a = np.asarray(array)
    except (TypeError, ValueError) as e:
        raise _bad(Status.BAD_TENSOR, what, f"data is not an array of numbers ({e})") from None
    if a.dtype.kind not in "biuf":
        raise _bad(Status.BAD_TENSOR, what, f"data of dtype {a.dtype}: numbers expected")
    if a.ndim > MLI_MAX_RANK:
        raise _bad(Status.BAD_TENSOR, what, f"rank {a.ndim} > {MLI_MAX_RANK}")
    if a.size == 0:
        raise _bad(Status.BAD_TENSOR, what, f"empty data (shape {a.shape}): MLI tensors hold at least one element")
    with np.errstate(over="ignore", invalid="ignore"):
        x = a.astype(np.float32)
    if not np.all(np.isfinite(x)):
        raise _bad(Status.BAD_TENSOR, what, "data must be finite float32 values (NaN, inf or beyond float32 found)")
    return x


def _reals(v: Any, name: str, what: str, *, positive: bool = False) -> np.ndarray:
    """Finite real value(s) as a 1-D float64 array (a scalar or a 1-D sequence)."""
    if isinstance(v, (str, bytes, dict)) or v is None:
        raise _bad(Status.BAD_FUNC_CFG, what, f"{name} = {v!r:.40}: a number or an array of numbers expected")
    try:
        a = np.asarray(v)
    except (TypeError, ValueError):
        raise _bad(Status.BAD_FUNC_CFG, what, f"{name} = {v!r:.40}: numbers expected") from None
    if a.dtype.kind not in "iuf" or a.ndim > 1 or a.size == 0:
        raise _bad(Status.BAD_FUNC_CFG, what, f"{name} = {v!r:.40}: a number or a 1-D array of numbers expected")
    with np.errstate(over="ignore", invalid="ignore"):
        f = a.astype(np.float64).reshape(-1)
    if not np.all(np.isfinite(f)) or (positive and np.any(f <= 0)):
        raise _bad(Status.BAD_FUNC_CFG, what, f"{name} = {f.tolist()}: {'positive ' if positive else ''}finite "
                                              "numbers expected")
    return f


def _ints(v: Any, name: str, what: str, lo: int, hi: int, n: int | None = None,
          status: Status = Status.BAD_FUNC_CFG) -> np.ndarray:
    """Integer value(s) in ``[lo, hi]`` (a C field's range) as a 1-D int64 array, of 1 or ``n`` entries."""
    if isinstance(v, (bool, np.bool_, str, bytes, dict)) or v is None:
        raise _bad(status, what, f"{name} = {v!r:.40}: an integer or an array of integers expected")
    try:
        a = np.asarray(v)
    except (TypeError, ValueError):
        raise _bad(status, what, f"{name} = {v!r:.40}: integers expected") from None
    if a.dtype.kind not in "iu" and not (a.dtype == object and all(
            isinstance(e, int) and not isinstance(e, bool) for e in a.reshape(-1).tolist())):
        raise _bad(status, what, f"{name} = {v!r:.40}: integers expected")
    vals = [int(e) for e in a.reshape(-1).tolist()]
    if a.ndim > 1 or not vals or (n is not None and len(vals) not in (1, n)):
        want = "1" if n is None or n == 1 else f"1 or {n}"
        raise _bad(status, what, f"{name} = {vals[:8]}: {want} value(s) expected")
    if min(vals) < lo or max(vals) > hi:
        raise _bad(status, what, f"{name} = {vals[:8]} outside [{lo}, {hi}]")
    return np.asarray(vals, np.int64)


def _int(v: Any, name: str, what: str, lo: int, hi: int, status: Status = Status.BAD_FUNC_CFG) -> int:
    if isinstance(v, np.ndarray) and v.ndim > 0:
        raise _bad(status, what, f"{name} = {v!r:.40}: one integer expected")
    return int(_ints(v, name, what, lo, hi, 1, status)[0])


def _flag(v: Any, name: str, what: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise _bad(Status.BAD_FUNC_CFG, what, f"{name} = {v!r:.40}: True or False expected")
    return bool(v)


def _range(rng: Any, what: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(min, max)``: two finite reals, or two equal-length 1-D arrays (per axis)."""
    if rng is None:
        return None
    if not isinstance(rng, (tuple, list)) or len(rng) != 2:
        raise _bad(Status.BAD_FUNC_CFG, what, f"range = {rng!r:.60}: (min, max) expected")
    lo, hi = _reals(rng[0], "range min", what), _reals(rng[1], "range max", what)
    if lo.size != hi.size and 1 not in (lo.size, hi.size):
        raise _bad(Status.BAD_FUNC_CFG, what, f"range: {lo.size} minima and {hi.size} maxima")
    return lo, hi


def _minmax(x: np.ndarray, dim: int, rng: Any) -> tuple[np.ndarray, np.ndarray]:
    """Minimum and maximum per index of ``dim`` (1-element arrays for ``dim < 0``)."""
    if rng is not None:
        return rng
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
        frac_bits in [-128, 127]; ``bits - 1`` for all-zero data (or no data and no range).

    Raises:
        MliError: TYPE_MISMATCH for an element type that is not FX (names in any case); BAD_TENSOR
            for data that is not a non-empty array of finite numbers; BAD_FUNC_CFG for a malformed range.
    """
    what = "choose_fx_frac_bits"
    el = _el(el_type, what)
    if not el.is_fx:
        raise _bad(Status.TYPE_MISMATCH, what, f"an FX type expected, not {el.c_name}")
    rng = _range(range, what)
    x = _floats(data, what) if data is not None and rng is None else None
    lo, hi = _minmax(x if x is not None else np.zeros(0, np.float32), -1, rng)
    lo_v, hi_v = float(np.min(lo)), float(np.max(hi))
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

    Raises:
        MliError: TYPE_MISMATCH for an element type that is not SA (names in any case); BAD_TENSOR
            for data that is not a non-empty array of finite numbers, or a ``dim`` outside its rank;
            BAD_FUNC_CFG for a malformed range, scale, zero point (outside int8), policy value, or a
            scale the 16-bit scale / int8 ``scale_frac_bits`` pair cannot hold.
    """
    what = "choose_sa_params"
    el = _el(el_type, what)
    if not el.is_sa:
        raise _bad(Status.TYPE_MISMATCH, what, f"an SA type expected, not {el.c_name}")
    rng = _range(range, what)
    if data is None and rng is None:
        raise _bad(Status.BAD_TENSOR, what, "data or a range needed")
    x = _floats(data, what) if rng is None else None
    dim = _int(dim, "dim", what, -1, (MLI_MAX_RANK if x is None else x.ndim) - 1, Status.BAD_TENSOR)
    symmetric = _flag(symmetric, "symmetric", what)
    round_up = _flag(round_up, "round_up", what)
    levels = float(_reals(levels, "levels", what, positive=True)[0])
    if zero_point_at not in ("centre", "min"):
        raise _bad(Status.BAD_FUNC_CFG, what, f"zero_point_at = {zero_point_at!r:.40}: 'centre' or 'min'")
    lo, hi = _minmax(x if x is not None else np.zeros(0, np.float32), dim, rng)
    lo, hi = np.broadcast_arrays(np.minimum(lo, 0.0), np.maximum(hi, 0.0))
    if symmetric and zero_point is None:
        zero_point = 0
    fixed_zp = None
    if zero_point is not None and el is ElType.SA_8:
        fixed_zp = np.broadcast_to(_ints(zero_point, "zero_point", what, -128, 127, lo.size).astype(np.float64),
                                   lo.shape)
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
        sc = _reals(scale, "scale", what, positive=True)
        if sc.size not in (1, lo.size):
            raise _bad(Status.BAD_FUNC_CFG, what, f"scale: {sc.size} values for {lo.size} slices")
        real = np.broadcast_to(sc, lo.shape)
    # A 16-bit scale with int8 frac_bits spans [2**-113, 32767 * 2**128]: clamp chosen scales into it
    # (data with a smaller range then quantise to the zero point).
    if scale is None:
        real = np.clip(real, 2.0**-113, 2.0**127)
    s, frac = split_scale(real, 16, round_up=round_up)
    if np.any(frac > _FRAC_MAX) or np.any(frac < _FRAC_MIN):
        raise _bad(Status.BAD_FUNC_CFG, what, f"scale {real.tolist()} outside the 16-bit scale / int8 "
                                              "scale_frac_bits range")
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

    Raises:
        MliError: BAD_FUNC_CFG for a ``max_abs`` that is not a real number, ``bits`` not in 2..64,
            or non-integer ``headroom_bits`` / ``max_frac``.
    """
    what = "fx_frac_for_range"
    if isinstance(max_abs, (bool, np.bool_)) or not isinstance(max_abs, (int, float, np.integer, np.floating)):
        raise _bad(Status.BAD_FUNC_CFG, what, f"max_abs = {max_abs!r:.40}: a real number expected")
    bits = _int(bits, "bits", what, 2, 64)
    headroom_bits = _int(headroom_bits, "headroom_bits", what, -(2**31), 2**31 - 1)
    if max_frac is not None:
        max_frac = _int(max_frac, "max_frac", what, -(2**31), 2**31 - 1)
    max_abs = float(max_abs)
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

    Raises:
        MliError: BAD_FUNC_CFG for steps that are not finite real numbers (a scalar or a 1-D array).
    """
    st = _reals(step, "step", "sa_scale_repr")
    _flag(round_up, "round_up", "sa_scale_repr")
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
        MliError: BAD_FUNC_CFG (a ``ValueError``) for ``s`` not a positive finite number, or a
            ``scale_frac_bits`` outside MLI's int8 field (scales outside about ``[2**-113, 2**14]``).
    """
    what = "float_to_mli_scale"
    if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, float, np.integer, np.floating)):
        raise _bad(Status.BAD_FUNC_CFG, what, f"scale {s!r:.40} is not a real number")
    s = float(s)
    if not (math.isfinite(s) and s > 0):
        raise _bad(Status.BAD_FUNC_CFG, what, f"scale {s!r} is not a positive finite number")
    q, sfb = (int(v) for v in split_scale(s, 16))
    if not _FRAC_MIN <= sfb <= _FRAC_MAX:
        raise _bad(Status.BAD_FUNC_CFG, what, f"scale {s!r} needs scale_frac_bits {sfb}, outside MLI's int8 range")
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

    Raises:
        MliError: BAD_FUNC_CFG for values that are not integers of their C fields (positive int16
            scales, int8 fractional bits) or weights arrays of different lengths.
    """
    what = "bias_scale"
    in_scale = _int(in_scale, "in_scale", what, 1, 32767)
    in_frac = _int(in_frac, "in_frac", what, _FRAC_MIN, _FRAC_MAX)
    ws = _ints(w_scale, "w_scale", what, 1, 32767)
    wf = _ints(w_frac, "w_frac", what, _FRAC_MIN, _FRAC_MAX)
    if ws.size != wf.size and 1 not in (ws.size, wf.size):
        raise _bad(Status.BAD_FUNC_CFG, what, f"{ws.size} weights scales and {wf.size} fractional bits")
    ws, wf = np.broadcast_arrays(ws, wf)
    prod = in_scale * ws
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

    Returns:
        (zero_point, scale, scale_frac_bits) as Python ints.

    Raises:
        MliError: BAD_FUNC_CFG for bounds that are not finite real numbers or another policy key
            (and what :func:`choose_sa_params` raises).
    """
    unknown = set(policy) - {"levels", "round_up", "zero_point_at"}
    if unknown:
        raise _bad(Status.BAD_FUNC_CFG, "sa8_range_params", f"unknown options {sorted(unknown)}")
    for name, v in (("lo", lo), ("hi", hi)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise _bad(Status.BAD_FUNC_CFG, "sa8_range_params", f"{name} = {v!r:.40}: a real number expected")
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

    Raises:
        MliError: TYPE_MISMATCH for an element type without an integer container; BAD_TENSOR for ``x``
            that is not numeric or not finite; BAD_FUNC_CFG for non-positive or non-finite steps,
            non-integer zero points, or shapes that do not broadcast.
    """
    what = "quantize_values"
    el = _el(el_type, what)
    if not (el.is_fx or el.is_sa):
        raise _bad(Status.TYPE_MISMATCH, what, f"{el.c_name} has no integer container")
    try:
        xa = np.asarray(x)
        st = np.asarray(step)
        zpa = np.asarray(zero_point)
    except (TypeError, ValueError):
        raise _bad(Status.BAD_FUNC_CFG, what, "x, step and zero_point must be numeric arrays") from None
    if xa.dtype.kind not in "biuf":
        raise _bad(Status.BAD_TENSOR, what, f"x of dtype {xa.dtype}: numbers expected")
    zp_int = zpa.dtype.kind in "iu" or (zpa.dtype.kind == "f" and bool(np.all(np.isfinite(zpa) & (zpa == np.round(zpa)))))
    if st.dtype.kind not in "iuf" or not zp_int:
        raise _bad(Status.BAD_FUNC_CFG, what, f"step ({st.dtype}) must be real, zero_point ({zpa.dtype}) integer")
    xa, st = xa.astype(np.float64), st.astype(np.float64)
    if not np.all(np.isfinite(xa)):
        raise _bad(Status.BAD_TENSOR, what, "x must be finite")
    if not np.all(np.isfinite(st)) or np.any(st <= 0):
        raise _bad(Status.BAD_FUNC_CFG, what, "steps must be positive and finite")
    try:
        np.broadcast_shapes(xa.shape, st.shape, zpa.shape)
    except ValueError:
        raise _bad(Status.BAD_FUNC_CFG, what, f"shapes x {xa.shape}, step {st.shape}, zero_point {zpa.shape} "
                                              "do not broadcast") from None
    # clipped before the integer conversion (saturated below anyway): no float -> int64 overflow
    q = round_half_away(np.clip(xa / st, -(2.0**62), 2.0**62)) + zpa.astype(np.int64)
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
        MliError: TYPE_MISMATCH for an unknown element type (names in any case) or one without a
            container; BAD_TENSOR for data that is not a non-empty array of finite float32 numbers of
            rank 0 to 4, or a ``dim`` outside it; BAD_FUNC_CFG for parameters of the wrong kind for
            ``el_type`` (``frac_bits`` for SA, SA fields for FX), of the wrong type or length, or
            outside their C fields (int8 ``frac_bits`` / ``scale_frac_bits``, int16 ``zero_point``,
            positive int16 ``scale``).
    """
    what = "quantize"
    el = _el(el_type, what)
    x = _floats(array, what)
    symmetric = _flag(symmetric, "symmetric", what)
    rng = _range(range, what)
    sa_given = [k for k, v in (("zero_point", zero_point), ("scale", scale), ("scale_frac_bits", scale_frac_bits))
                if v is not None]
    if el is ElType.FP_32:
        return Tensor.from_numpy(x.copy(), el)
    if el.is_fx:
        if sa_given or symmetric:
            raise _bad(Status.BAD_FUNC_CFG, what, f"{el.name} takes frac_bits only (got {sa_given or 'symmetric'})")
        _int(dim, "dim", what, -1, -1)  # FX has no per-axis parameters
        fb = choose_fx_frac_bits(x, el, range=rng) if frac_bits is None else _int(frac_bits, "frac_bits", what,
                                                                                   _FRAC_MIN, _FRAC_MAX)
        q = _to_container(x, el, 1, fb, 0)
        return Tensor.from_numpy(q, el, frac_bits=fb)
    if not el.is_sa:
        raise _bad(Status.TYPE_MISMATCH, what, f"{el.c_name} has no container")
    if frac_bits is not None:
        raise _bad(Status.BAD_FUNC_CFG, what, f"{el.name} takes zero_point / scale / scale_frac_bits, not frac_bits")
    dim = _int(dim, "dim", what, -1, x.ndim - 1, Status.BAD_TENSOR)
    n = x.shape[dim] if dim >= 0 else 1
    if scale_frac_bits is not None and scale is None:
        raise _bad(Status.BAD_FUNC_CFG, what, "scale_frac_bits without scale")
    if zero_point is not None:
        zero_point = _ints(zero_point, "zero_point", what, -32768, 32767, n)
    if scale is not None and scale_frac_bits is not None:
        sc = np.broadcast_to(_ints(scale, "scale", what, 1, 32767, n), (n,))
        sfb = np.broadcast_to(_ints(scale_frac_bits, "scale_frac_bits", what, _FRAC_MIN, _FRAC_MAX, n), (n,))
        if zero_point is None:
            real = sc.astype(np.float64) * np.ldexp(1.0, -sfb)
            zp = choose_sa_params(x, el, dim=dim, range=rng, scale=real)[0]
        else:
            zp = zero_point
    else:
        if el is ElType.SA_8 and zero_point is not None and scale is None:
            _ints(zero_point, "zero_point", what, -128, 127, n)  # chosen around: must lie in the container
        zp_c, sc, sfb = choose_sa_params(x, el, dim=dim, range=rng, scale=scale,
                                         zero_point=zero_point if scale is None else None, symmetric=symmetric)
        zp = zp_c if zero_point is None else zero_point
    zp = np.broadcast_to(np.asarray(zp, np.int64).reshape(-1), (n,))
    for name, v, lo_, hi_ in (("zero_point", zp, -32768, 32767), ("scale", sc, 1, 32767),
                              ("scale_frac_bits", sfb, -128, 127)):
        if np.any(v < lo_) or np.any(v > hi_):
            raise _bad(Status.BAD_FUNC_CFG, what, f"{name} {np.asarray(v).tolist()} outside [{lo_}, {hi_}]")
    axis = dim if dim >= 0 else None
    q = _to_container(x, el, sc, sfb, zp, axis)
    if dim >= 0:
        return Tensor.from_numpy(q, el, zero_point=zp.copy(), scale=sc.copy(), scale_frac_bits=sfb.copy(), dim=dim)
    return Tensor.from_numpy(q, el, zero_point=int(zp[0]), scale=int(sc[0]), scale_frac_bits=int(sfb[0]))


def _struct_params(t: Any, what: str) -> tuple[ElType, int]:
    """The fields of ``t`` that :func:`dequantize` reads, checked against their C types: (el_type, rank)."""
    if not isinstance(t, Tensor):
        raise _bad(Status.BAD_TENSOR, what, f"{type(t).__name__}: a pymli.Tensor expected")
    if not isinstance(t.el_type, ElType):
        raise _bad(Status.BAD_TENSOR, what, f"el_type {t.el_type!r:.40}: an ElType expected")
    rank = _int(t.rank, "rank", what, 0, MLI_MAX_RANK, Status.BAD_TENSOR)
    if not isinstance(t.shape, (list, tuple, np.ndarray)) or len(t.shape) < rank:
        raise _bad(Status.BAD_TENSOR, what, f"shape {t.shape!r:.40}: {rank} dimensions expected")
    shape = _ints(list(t.shape[:rank]) or [1], "shape", what, 1, 2**31 - 1, None, Status.BAD_TENSOR)
    if rank and (not isinstance(t.mem_stride, (list, tuple, np.ndarray)) or len(t.mem_stride) < rank):
        raise _bad(Status.BAD_TENSOR, what, f"mem_stride {t.mem_stride!r:.40}: {rank} entries expected")
    if rank:
        _ints(list(t.mem_stride[:rank]), "mem_stride", what, 0, 2**31 - 1, None, Status.BAD_TENSOR)
    el = t.el_type
    if not el.supported:
        raise _bad(Status.NOT_SUPPORTED, what, f"{el.c_name} has no container in MLI 2.0")
    if rank > 0 and not (isinstance(t.data, np.ndarray) and t.data.dtype == el.dtype):
        raise _bad(Status.BAD_TENSOR, what, f"data {type(t.data).__name__}: a NumPy array of {el.dtype} expected")
    if rank == 0:
        if el.is_fp:
            _reals(t.value, "value", what)
        else:
            _int(t.value, "value", what, -(1 << (el.bits - 1)), (1 << (el.bits - 1)) - 1, Status.BAD_TENSOR)
    if el.is_fx:
        _int(t.frac_bits, "frac_bits", what, _FRAC_MIN, _FRAC_MAX, Status.BAD_TENSOR)
    elif el.is_sa:
        dim = _int(t.dim, "dim", what, -(2**31), 2**31 - 1, Status.BAD_TENSOR)
        if dim >= rank:
            raise _bad(Status.BAD_TENSOR, what, f"quantisation dim {dim} >= rank {rank}")
        n = int(shape[dim]) if dim >= 0 else 1
        for name, lo, hi in (("zero_point", -32768, 32767), ("scale", 1, 32767), ("scale_frac_bits", _FRAC_MIN, _FRAC_MAX)):
            v = getattr(t, name)
            if dim >= 0:
                arr = _ints(v, name, what, lo, hi, None, Status.BAD_TENSOR)
                if arr.size < n:
                    raise _bad(Status.BAD_TENSOR, what, f"per-axis {name} holds {arr.size} < shape[{dim}] = {n} values")
            else:
                _int(v, name, what, lo, hi, Status.BAD_TENSOR)
    return el, rank


def dequantize(t: Tensor) -> np.ndarray:
    """The tensor's values as float32, exactly as ``mli_hlp_convert_tensor`` to ``MLI_EL_FP_32`` computes them.

    Returns:
        float32 array of shape ``t.shape`` (0-d for a rank-0 tensor).

    Raises:
        MliError: BAD_TENSOR for a non-tensor or a struct whose fields lie outside their C types
            (rank, shape, mem_stride, frac_bits, per-axis ``dim >= rank``, per-axis arrays shorter
            than ``shape[dim]``, non-positive scales), or data the tensor cannot be read from;
            NOT_SUPPORTED for an element type without a container.
    """
    el, _ = _struct_params(t, "dequantize")
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

