"""Pythonic ReLU family: ``relu``, ``leaky_relu``, ``prelu`` over :class:`pymli.Tensor`.

Each function allocates a dense output, runs the checked MLI function of the input's type
(``mli_krn_<op>_{fx8,fx16,sa8}``) and returns the new tensor.

Example:
    >>> import numpy as np
    >>> from pymli import Tensor, ops
    >>> x = Tensor.from_numpy(np.array([-100, -3, 0, 5, 120], np.int8), "FX_8", frac_bits=4)
    >>> ops.relu(x, "relu6").numpy().tolist()
    [0, 0, 0, 5, 96]
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..capi.types import PreluCfg, ReluCfg, ReluType
from ..checks import validate_tensor
from ..errors import MliError, Status
from ..graph import args
from ..graph.activation import relu_type as _relu_type
from ..graph.registry import Op, require
from ..tensor import Tensor, dense_strides

__all__ = ["relu", "leaky_relu", "prelu"]

def _like(x: Tensor, what: str, **params: Any) -> Tensor:
    """A dense zero tensor of ``x``'s shape and type with ``x``'s quantisation unless overridden."""
    if x.el_type.is_sa:
        q = dict(zero_point=x.zero_point, scale=x.scale, scale_frac_bits=x.scale_frac_bits, dim=x.dim)
        given = {k: v for k, v in params.items() if v is not None}
        if given:
            if x.dim >= 0:
                raise MliError(Status.BAD_FUNC_CFG, f"{what}: output quantisation for a per-axis input")
            q.update(args.quant_fields(given, x.el_type, "output quantisation", what=what))
    else:
        q = dict(frac_bits=x.frac_bits)
    return Tensor.zeros(list(x.shape[: x.rank]), x.el_type, **q)


def relu(x: Tensor, kind: ReluType | str | int = ReluType.GEN) -> Tensor:
    """Rectified linear unit of ``x``.

    Args:
        x: an fx8, fx16 or sa8 tensor (sa8: per-tensor quantisation).
        kind: ``"gen"`` (max(x, 0), default), ``"relu1"`` (clamp to [-1, 1]), ``"relu6"`` (clamp to
            [0, 6]), ``"none"`` (identity), or a :class:`ReluType`.

    Returns:
        A new tensor with ``x``'s quantisation.

    Raises:
        MliError: BAD_TENSOR (not a tensor), TYPE_MISMATCH, BAD_FUNC_CFG (an unknown ``kind``, any case
            of its name) or as ``mli_krn_relu_*`` (e.g. INCOMPATEBLE_TENSORS for per-axis sa8 input).
    """
    args.tensor(x, "x", what="relu")
    fn = require(Op.RELU, x.el_type, what="relu")
    cfg = ReluCfg(_relu_type(kind))
    validate_tensor(x)
    out = _like(x, "relu")
    fn(x, cfg, out)
    return out


def leaky_relu(x: Tensor, slope: Tensor, *, zero_point: int | None = None, scale: int | None = None,
               scale_frac_bits: int | None = None) -> Tensor:
    """Leaky ReLU: ``x`` for ``x >= 0``, ``slope * x`` below.

    Args:
        x: an fx8, fx16 or sa8 tensor.
        slope: a scalar tensor of ``x``'s type (rank 0 with ``value``, or one element).
        zero_point, scale, scale_frac_bits: sa8 only, the output quantisation (default: ``x``'s).

    Returns:
        A new tensor (fx: ``x``'s frac_bits, as MLI requires).

    Raises:
        MliError: BAD_TENSOR (not a tensor), TYPE_MISMATCH, BAD_FUNC_CFG (output fields outside their
            C types) or the status of ``mli_krn_leaky_relu_*``.
    """
    args.tensor(x, "x", what="leaky_relu")
    args.tensor(slope, "slope", what="leaky_relu")
    fn = require(Op.LEAKY_RELU, x.el_type, what="leaky_relu")
    validate_tensor(x)
    out = _like(x, "leaky_relu", zero_point=zero_point, scale=scale, scale_frac_bits=scale_frac_bits)
    fn(x, slope, out)
    return out


def _slopes_along(x: Tensor, slopes: Tensor, axis: int) -> Tensor:
    """A 1-D slope tensor seen with ``x``'s rank: its length on ``axis``, 1 elsewhere.

    MLI reads the slopes as ``slope_ptr[0 .. shape[axis] - 1]`` whatever their strides (see
    :mod:`pymli.capi.activation`), so dense strides describe the same reads.
    """
    if axis < 0 or slopes.rank != 1 or x.rank == 1:
        return slopes
    shape = [1] * x.rank
    shape[axis] = int(slopes.shape[0])
    return dataclasses.replace(slopes, shape=shape, mem_stride=dense_strides(shape), rank=x.rank)


def prelu(x: Tensor, slopes: Tensor, axis: int = -1, *, zero_point: int | None = None, scale: int | None = None,
          scale_frac_bits: int | None = None) -> Tensor:
    """Parametric ReLU: one negative slope per index of ``axis`` (one for all if ``axis < 0``).

    Args:
        x: an fx8, fx16 or sa8 tensor.
        slopes: slopes of ``x``'s type: a 1-D tensor of length ``x.shape[axis]`` or a tensor of
            ``x``'s rank with that length on ``axis`` and 1 elsewhere; a scalar tensor if ``axis < 0``.
        axis: the dimension the slopes run along.
        zero_point, scale, scale_frac_bits: sa8 only, the output quantisation (default: ``x``'s).

    Returns:
        A new tensor.

    Raises:
        MliError: BAD_TENSOR (not a tensor), TYPE_MISMATCH, BAD_FUNC_CFG (axis not an int or >= rank,
            output fields outside their C types) or the status of ``mli_krn_prelu_*``.
    """
    what = "prelu"
    args.tensor(x, "x", what=what)
    args.tensor(slopes, "slopes", what=what)
    fn = require(Op.PRELU, x.el_type, what=what)
    axis = args.integer(axis, "axis", what=what, lo=args.INT32[0], hi=args.INT32[1])
    if axis < -1:
        axis = -1
    if axis >= x.rank:
        raise MliError(Status.BAD_FUNC_CFG, f"{what}: axis {axis} >= rank {x.rank}")
    validate_tensor(x)
    out = _like(x, what, zero_point=zero_point, scale=scale, scale_frac_bits=scale_frac_bits)
    fn(x, _slopes_along(x, slopes, axis), PreluCfg(axis), out)
    return out
