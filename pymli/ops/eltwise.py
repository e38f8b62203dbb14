"""Pythonic element-wise arithmetic: ``add``, ``sub``, ``mul``, ``minimum``, ``maximum``.

Operands are :class:`~pymli.Tensor` s of one element type (FX_8, FX_16 or SA_8) and the same shape,
or one of them a scalar tensor (rank 0 or a single element). The output quantisation is either
given, or chosen from a float calibration of the result: the float result of the operation on the
dequantised inputs is quantised through :mod:`pymli.quant` (FX: the most fractional bits with which
it converts unsaturated, :func:`~pymli.quant.choose_fx_frac_bits`; SA_8: ``scale = (max - min) / 254``
with a 16-bit mantissa, zero point at the centre, :func:`~pymli.quant.sa8_range_params`).
min/max keep the inputs' quantisation (MLI requires equal input parameters there).

Example:
    >>> import numpy as np, pymli
    >>> a = pymli.Tensor.from_numpy(np.array([1, -2, 3], np.int16), "FX_16", frac_bits=4)
    >>> pymli.ops.add(a, a, frac_bits=4).numpy().tolist()
    [2, -4, 6]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..arith.eltwise import EltOp
from ..checks import tensor_is_scalar
from ..checks.eltwise import check_eltwise
from ..errors import MliError, Status
from ..graph import args
from ..graph.registry import Op, require
from ..quant import choose_fx_frac_bits, sa8_range_params
from ..tensor import Tensor, dense_strides
from ._doc import sections

__all__ = ["add", "sub", "mul", "minimum", "maximum"]

_OPS = {"add": Op.ADD, "sub": Op.SUB, "mul": Op.MUL, "min": Op.MIN, "max": Op.MAX}
_ELT = {"add": EltOp.ADD, "sub": EltOp.SUB, "mul": EltOp.MUL, "minimum": EltOp.MIN, "maximum": EltOp.MAX}
_FLOAT_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _to_float(t: Tensor) -> np.ndarray:
    q = t.numpy().astype(np.float64)
    if t.el_type.is_fx:
        return q / 2.0 ** int(t.frac_bits)
    if t.el_type.is_sa and t.dim < 0:
        return (q - int(t.zero_point)) * int(t.scale) / 2.0 ** int(t.scale_frac_bits)
    raise MliError(Status.NOT_SUPPORTED, f"cannot dequantise {t.el_type.name} with dim={t.dim}")


def _calibrated(op: str, x: Tensor, y: Tensor) -> dict[str, int]:
    """Output fields chosen from the float result of ``op`` on the dequantised operands."""
    v = _FLOAT_OPS[op](_to_float(x), _to_float(y))
    if x.el_type.is_fx:
        return {"frac_bits": choose_fx_frac_bits(v, x.el_type)}
    lo, hi = (float(np.min(v)), float(np.max(v))) if v.size else (0.0, 0.0)
    zp, scale, sfb = sa8_range_params(lo, hi)
    return {"zero_point": zp, "scale": scale, "scale_frac_bits": sfb}


def _out_shape(x: Tensor, y: Tensor) -> list[int]:
    """MLI's rule: the output has the shape of the first non-scalar operand, else of ``y``."""
    return list(x.shape[: x.rank]) if not tensor_is_scalar(x) else list(y.shape[: y.rank])


def _precheck(what: str, fn_name: str, x: Tensor, y: Tensor, shape: list[int]) -> None:
    """MLI's checks of the operands, run before the calibration reads them (on a scratch output of the
    inputs' type: the real output is checked again by the call)."""
    n = int(np.prod(shape)) if shape else 1
    args.check_alloc(shape, x.el_type, what=what)
    # shaped as the real output: a rank-0 result is a rank-0 struct with a data buffer (see _binary)
    scratch = Tensor(data=np.zeros(n, x.el_type.dtype), capacity=n * x.el_type.size, shape=list(shape),
                     mem_stride=dense_strides(shape), rank=len(shape), el_type=x.el_type)
    check_eltwise(fn_name, x, y, scratch, _ELT[what], x.el_type)


def _binary(op: str, x: Tensor, y: Tensor, frac_bits: int | None, quant: dict[str, int] | None) -> Tensor:
    what = {"min": "minimum", "max": "maximum"}.get(op, op)
    args.tensor(x, "x", what=what)
    args.tensor(y, "y", what=what)
    fn = require(_OPS[op], x.el_type, what=what)
    el = x.el_type
    shape = _out_shape(x, y)
    if frac_bits is not None:
        frac_bits = args.integer(frac_bits, "frac_bits", what=what, lo=args.INT8[0], hi=args.INT8[1])
    if quant is not None:
        if not el.is_sa:
            raise MliError(Status.BAD_FUNC_CFG, f"{what}: quant is for SA_8 operands; use frac_bits for {el.name}")
        quant = args.quant_fields(quant, el, "quant", what=what)
    _precheck(what, fn.__name__, x, y, shape)
    params: dict[str, Any]
    if op in ("min", "max"):
        params = dict(frac_bits=x.frac_bits) if el.is_fx else dict(
            zero_point=int(x.zero_point), scale=int(x.scale), scale_frac_bits=int(x.scale_frac_bits))
        if el.is_fx and frac_bits is not None:
            params["frac_bits"] = frac_bits
        if el.is_sa and quant is not None:
            params.update(quant)
    elif el.is_fx:
        params = dict(frac_bits=frac_bits) if frac_bits is not None else _calibrated(op, x, y)
    else:
        params = dict(quant) if quant is not None else _calibrated(op, x, y)
    out = Tensor.zeros(shape or [1], el, **params)
    if not shape:  # a rank-0 result: MLI stores it at the data pointer of a rank-0 output
        out.rank, out.shape, out.mem_stride = 0, [], []
    fn(x, y, out)
    if not shape:
        out.value, out.data, out.capacity = out.data[0].item(), None, 0
    return out


_BINARY_SECTIONS = """
Args:
    x, y: tensors of one element type (FX_8, FX_16 or SA_8) and one shape; one may be a scalar tensor.
    frac_bits: FX output fractional bits (default: {default}).
    quant: SA_8 output ``{{"scale", "scale_frac_bits", "zero_point"}}`` (default: {default}).

Returns:
    A new dense tensor of the operands' element type and the non-scalar operand's shape (rank 0
    when both are scalars).

Raises:
    MliError: BAD_TENSOR (not a tensor), BAD_FUNC_CFG (``frac_bits`` / ``quant`` outside their C
        types, ``quant`` for FX operands) or the status MLI gives for the same operands (shapes
        that differ, types, per-axis SA), before anything is computed.
"""


def _public(op: str, name: str, summary: str, default: str) -> Callable[..., Tensor]:
    """The public function ``name`` running the MLI element-wise ``op``, documented by ``summary`` and
    :data:`_BINARY_SECTIONS` (``default``: what the output quantisation is when not given)."""

    def fn(x: Tensor, y: Tensor, *, frac_bits: int | None = None, quant: dict[str, int] | None = None) -> Tensor:
        return _binary(op, x, y, frac_bits, quant)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = summary
    return sections(_BINARY_SECTIONS, default=default)(fn)


_CALIBRATED, _KEPT = "calibrated from the float result", "the inputs' quantisation"
add = _public("add", "add", "Element-wise ``x + y`` (``mli_krn_eltwise_add_*``), saturated.", _CALIBRATED)
sub = _public("sub", "sub", "Element-wise ``x - y`` (``mli_krn_eltwise_sub_*``), saturated.", _CALIBRATED)
mul = _public("mul", "mul", "Element-wise ``x * y`` (``mli_krn_eltwise_mul_*``), saturated.", _CALIBRATED)
minimum = _public("min", "minimum", "Element-wise minimum (``mli_krn_eltwise_min_*``).", _KEPT)
maximum = _public("max", "maximum", "Element-wise maximum (``mli_krn_eltwise_max_*``).", _KEPT)
