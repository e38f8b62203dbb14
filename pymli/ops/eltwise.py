"""Pythonic element-wise arithmetic: ``add``, ``sub``, ``mul``, ``minimum``, ``maximum``.

Operands are :class:`~pymli.Tensor` s of one element type (FX_8, FX_16 or SA_8) and the same shape,
or one of them a scalar tensor (rank 0 or a single element). The output quantisation is either
given, or chosen from a float calibration of the result: the float result of the operation on the
dequantised inputs is quantised the way the golden generator does (FX: the most fractional bits
that fit; SA_8: ``scale = (max - min) / 254`` with a 16-bit mantissa, zero point at the centre).
min/max keep the inputs' quantisation (MLI requires equal input parameters there).

Example:
    >>> import numpy as np, pymli
    >>> a = pymli.Tensor.from_numpy(np.array([1, -2, 3], np.int16), "FX_16", frac_bits=4)
    >>> pymli.ops.add(a, a, frac_bits=4).numpy().tolist()
    [2, -4, 6]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..checks import tensor_is_scalar
from ..errors import MliError, Status
from ..formats import ElType
from ..tensor import Tensor

__all__ = ["add", "sub", "mul", "minimum", "maximum"]

_SUFFIX = {ElType.FX_8: "fx8", ElType.FX_16: "fx16", ElType.SA_8: "sa8"}
_FLOAT_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _to_float(t: Tensor) -> np.ndarray:
    q = t.numpy().astype(np.float64)
    if t.el_type.is_fx:
        return q / 2.0 ** int(t.frac_bits)
    if t.el_type.is_sa and t.dim < 0:
        return (q - int(t.zero_point)) * int(t.scale) / 2.0 ** int(t.scale_frac_bits)
    raise MliError(Status.NOT_SUPPORTED, f"cannot dequantise {t.el_type.name} with dim={t.dim}")


def _fx_frac_bits(values: np.ndarray, el: ElType) -> int:
    """Most fractional bits such that every value fits the container after rounding."""
    top = 2 ** (el.bits - 1) - 1
    m = float(np.max(np.abs(values))) if values.size else 0.0
    fb = el.bits - 1
    while fb > -32 and round(m * 2.0 ** fb) > top:
        fb -= 1
    return fb


def _sa8_params(values: np.ndarray) -> dict[str, int]:
    lo, hi = float(np.min(values, initial=0.0)), float(np.max(values, initial=0.0))
    if hi - lo < 1e-30:
        hi = lo + 1.0
    scale = (hi - lo) / 254.0
    _, exp = math.frexp(scale)
    sfb = 15 - exp
    s16 = min(int(round(scale * 2.0 ** sfb)), 32767)
    zp = int(-((hi + lo) / 2.0) / scale + 0.5)  # C's (int) cast: truncation toward zero
    return dict(scale=s16, scale_frac_bits=sfb, zero_point=max(-128, min(127, zp)))


def _out_shape(x: Tensor, y: Tensor) -> list[int]:
    """MLI's rule: the output has the shape of the first non-scalar operand, else of ``y``."""
    return list(x.shape[: x.rank]) if not tensor_is_scalar(x) else list(y.shape[: y.rank])


def _binary(op: str, x: Tensor, y: Tensor, frac_bits: int | None, quant: dict[str, int] | None) -> Tensor:
    from .. import capi

    suffix = _SUFFIX.get(x.el_type)
    if suffix is None:
        raise MliError(Status.TYPE_MISMATCH, f"{op}: supports FX_8, FX_16 and SA_8, not {x.el_type.name}")
    el = x.el_type
    shape = _out_shape(x, y)
    params: dict[str, Any]
    if op in ("min", "max"):
        params = dict(frac_bits=x.frac_bits) if el.is_fx else dict(
            zero_point=int(x.zero_point), scale=int(x.scale), scale_frac_bits=int(x.scale_frac_bits))
        if el.is_fx and frac_bits is not None:
            params["frac_bits"] = frac_bits
        if el.is_sa and quant is not None:
            params.update(quant)
    elif el.is_fx:
        if frac_bits is None:
            frac_bits = _fx_frac_bits(_FLOAT_OPS[op](_to_float(x), _to_float(y)), el)
        params = dict(frac_bits=frac_bits)
    else:
        params = dict(quant) if quant is not None else _sa8_params(_FLOAT_OPS[op](_to_float(x), _to_float(y)))
    out = Tensor.zeros(shape or [1], el, **params)
    if not shape:  # a rank-0 result: MLI stores it at the data pointer of a rank-0 output
        out.rank, out.shape, out.mem_stride = 0, [], []
    getattr(capi, f"mli_krn_eltwise_{op}_{suffix}")(x, y, out)
    if not shape:
        out.value, out.data, out.capacity = out.data[0].item(), None, 0
    return out


def add(x: Tensor, y: Tensor, *, frac_bits: int | None = None, quant: dict[str, int] | None = None) -> Tensor:
    """Element-wise ``x + y`` (``mli_krn_eltwise_add_*``), saturated.

    Args:
        x, y: tensors of one element type; one may be a scalar tensor.
        frac_bits: FX output fractional bits (default: calibrated from the float result).
        quant: SA_8 output ``{"scale", "scale_frac_bits", "zero_point"}`` (default: calibrated).

    Returns:
        A new dense tensor.

    Raises:
        MliError: with the status MLI gives for the same operands.
    """
    return _binary("add", x, y, frac_bits, quant)


def sub(x: Tensor, y: Tensor, *, frac_bits: int | None = None, quant: dict[str, int] | None = None) -> Tensor:
    """Element-wise ``x - y`` (``mli_krn_eltwise_sub_*``); see :func:`add`."""
    return _binary("sub", x, y, frac_bits, quant)


def mul(x: Tensor, y: Tensor, *, frac_bits: int | None = None, quant: dict[str, int] | None = None) -> Tensor:
    """Element-wise ``x * y`` (``mli_krn_eltwise_mul_*``); see :func:`add`."""
    return _binary("mul", x, y, frac_bits, quant)


def minimum(x: Tensor, y: Tensor, *, frac_bits: int | None = None, quant: dict[str, int] | None = None) -> Tensor:
    """Element-wise minimum (``mli_krn_eltwise_min_*``); the output keeps the inputs' quantisation
    unless ``frac_bits`` / ``quant`` say otherwise."""
    return _binary("min", x, y, frac_bits, quant)


def maximum(x: Tensor, y: Tensor, *, frac_bits: int | None = None, quant: dict[str, int] | None = None) -> Tensor:
    """Element-wise maximum (``mli_krn_eltwise_max_*``); see :func:`minimum`."""
    return _binary("max", x, y, frac_bits, quant)
