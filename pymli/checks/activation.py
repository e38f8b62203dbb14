"""Checks of ``mli_krn_relu_*``, ``mli_krn_leaky_relu_*`` and ``mli_krn_prelu_*``.

Mirrors ``mli_chk_relu*``, ``mli_chk_leaky_relu*`` and ``mli_chk_prelu*`` of ``mli_check.cc``.
"""

from __future__ import annotations

from typing import Any

from ..errors import Status
from ..formats import ElType
from ..tensor import Tensor
from .tensor import (check_quant_params, check_scalar_tensor, check_tensor, check_tensor_private, fail,
                     inner_most_dimension_is_one, same_shape, shape_at)

__all__ = ["check_relu", "check_leaky_relu", "check_prelu"]

# Zero-point ranges of mli_chk_tensor_quant_params: int8 range for data, 14 bits for slopes.
_ZP_BYTE = 7
_ZP_SLOPE = 14


def _check_io_common(fn: str, inp: Tensor, out: Tensor) -> None:
    if out.el_type != inp.el_type:
        fail(Status.TYPE_MISMATCH, f"{fn}: out type {out.el_type.c_name} != in type {inp.el_type.c_name}")
    if not same_shape(inp, out):
        fail(Status.SHAPE_MISMATCH, f"{fn}: in shape {inp.shape[:inp.rank]} != out shape {out.shape[:out.rank]}")


def _check_type(fn: str, el: ElType, *tensors: Tensor) -> None:
    for t in tensors:
        if t.el_type != el:
            fail(Status.TYPE_MISMATCH, f"{fn}: {t.el_type.c_name} tensor, {el.c_name} expected")


def _check_sa_params(fn: str, inp: Tensor, out: Tensor | None, slope: Tensor | None) -> None:
    """Quantisation requirements of the sa8 versions: byte-range zero points, per-tensor params."""
    check_quant_params(inp, _ZP_BYTE)
    if out is not None:
        check_quant_params(out, _ZP_BYTE)
    if slope is not None:
        check_quant_params(slope, _ZP_SLOPE)
    for name, t in (("in", inp), ("out", out), ("slope_coeff", slope)):
        if t is not None and t.dim >= 0:
            fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: {name} must be quantised per tensor (dim={t.dim})")


def _check_fx_frac(fn: str, inp: Tensor, out: Tensor) -> None:
    if out.frac_bits != inp.frac_bits:
        fail(Status.SPEC_PARAM_MISMATCH, f"{fn}: out frac_bits {out.frac_bits} != in frac_bits {inp.frac_bits}")


def _check_slope_and_params(fn: str, el: ElType, inp: Tensor, slope: Tensor, out: Tensor) -> None:
    """The slope's type and the quantisation checks shared by leaky ReLU and PReLU."""
    if slope.el_type != inp.el_type:
        fail(Status.TYPE_MISMATCH, f"{fn}: slope type {slope.el_type.c_name} != in type {inp.el_type.c_name}")
    _check_type(fn, el, inp, slope)
    if el.is_sa:
        _check_sa_params(fn, inp, out, slope)
    else:
        _check_fx_frac(fn, inp, out)


def check_relu(fn: str, el: ElType, inp: Tensor, cfg: Any, out: Tensor) -> None:
    """``mli_chk_relu_<type>``: valid tensors of one type and shape, innermost stride 1, a cfg.

    Args:
        fn: the MLI function name (for messages).
        el: the element type of the function.
        inp, out: input and output tensors.
        cfg: ``mli_relu_cfg`` (``None`` is NULL).

    Raises:
        MliError: BAD_TENSOR, NOT_ENGH_MEM, BAD_FUNC_CFG, TYPE_MISMATCH, SHAPE_MISMATCH or
            INCOMPATEBLE_TENSORS.
    """
    check_tensor(inp)
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, f"{fn}: NULL cfg")
    check_tensor(out)
    _check_io_common(fn, inp, out)
    if not (inner_most_dimension_is_one(inp) and inner_most_dimension_is_one(out)):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: innermost mem_stride must be 1")
    _check_type(fn, el, inp)
    if el is ElType.SA_8:
        _check_sa_params(fn, inp, None, None)


def check_leaky_relu(fn: str, el: ElType, inp: Tensor, slope: Tensor, out: Tensor) -> None:
    """``mli_chk_leaky_relu_<type>``: as ReLU, plus a scalar slope of the same type.

    Args:
        fn: the MLI function name; el: its element type.
        inp, out: input and output tensors; slope: the scalar slope (rank 0 or one element).

    Raises:
        MliError: BAD_TENSOR, TYPE_MISMATCH, SHAPE_MISMATCH, INCOMPATEBLE_TENSORS or
            SPEC_PARAM_MISMATCH (fx: out frac_bits != in frac_bits).
    """
    check_tensor(inp)
    check_tensor(out)
    _check_io_common(fn, inp, out)
    if not (inner_most_dimension_is_one(inp) and inner_most_dimension_is_one(out)):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: innermost mem_stride must be 1")
    check_scalar_tensor(slope)
    _check_slope_and_params(fn, el, inp, slope, out)


def _check_any_tensor(t: Tensor) -> None:
    """``mli_chk_tensor`` also for a rank-0 tensor, whose value C reads as the data pointer."""
    if t is not None and t.rank == 0:
        if int(t.value) == 0:
            fail(Status.BAD_TENSOR, "rank-0 tensor: its zero value reads as a NULL data pointer")
        check_tensor_private([], [], 0, t.capacity, t.el_type.size)
        return
    check_tensor(t)


def check_prelu(fn: str, el: ElType, inp: Tensor, slope: Tensor, cfg: Any, out: Tensor) -> None:
    """``mli_chk_prelu_<type>``: slopes of shape ``in.shape[axis]`` on the axis and 1 elsewhere.

    Args:
        fn: the MLI function name; el: its element type.
        inp, out: input and output tensors; slope: the slopes.
        cfg: ``mli_prelu_cfg`` (``axis``; -1: a scalar slope).

    Raises:
        MliError: BAD_TENSOR, BAD_FUNC_CFG, TYPE_MISMATCH, SHAPE_MISMATCH,
            INCOMPATEBLE_TENSORS or SPEC_PARAM_MISMATCH.
    """
    check_tensor(inp)
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, f"{fn}: NULL cfg")
    axis = int(cfg.axis)
    if axis == -1:
        check_scalar_tensor(slope)
    else:
        _check_any_tensor(slope)
    check_tensor(out)
    _check_io_common(fn, inp, out)
    if axis >= inp.rank:
        fail(Status.BAD_FUNC_CFG, f"{fn}: axis {axis} >= rank {inp.rank}")
    ok = inner_most_dimension_is_one(inp) and inner_most_dimension_is_one(out)
    if axis != -1:
        ok &= inner_most_dimension_is_one(slope)
        for i in range(inp.rank):
            want = shape_at(inp, i) if i == axis else 1
            ok &= shape_at(slope, i) == want
    if not ok:
        fail(Status.INCOMPATEBLE_TENSORS,
             f"{fn}: innermost mem_stride must be 1 and slope shape {slope.shape[:slope.rank]} must be "
             f"in.shape[{axis}] on the axis and 1 elsewhere")
    _check_slope_and_params(fn, el, inp, slope, out)
